"""One turn of a conversation as the reader opens it: its messages (a bounded window of them) as
blocks, each tool call with its result under it and its readable view (tool_display.py); a block
in full ("Load the rest"); the bytes of an image kept in a message's raw record.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from contextviewer.importers import formats

from contextviewer.display import rendering
from contextviewer.viewer import tool_agents, tool_display as tools, tool_shell
from contextviewer.viewer.conversation_page import branch_marks
from contextviewer.conversations.models import Conversation, Message

MESSAGES_PER_TURN_PAGE = 120  # messages of one expanded turn per request
# ... and at most about this many characters of their content (issue 23: a turn of Read results
# rendered as one 900 KB fragment); the rest comes with the next request, as the reader scrolls.
TURN_PAGE_CHARS = 25_000
MESSAGE_CHARS_SHOWN = 24_000  # what one message can weigh at most once clipped for display


def _weight(m: Message) -> int:
    """About how much of `m` the fragment shows: its strings, each as far as the page shows it."""
    total = 0
    stack: list[Any] = [m.blocks or []]
    while stack and total < MESSAGE_CHARS_SHOWN:
        item = stack.pop()
        if isinstance(item, str):
            total += min(len(item), rendering.BLOCK_LIMIT * 4)
        elif isinstance(item, dict):
            stack.extend(v for k, v in item.items() if k not in ("data", "signature"))
        elif isinstance(item, list):
            stack.extend(item)
    return min(total, MESSAGE_CHARS_SHOWN)
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}


@dataclass
class BlockView:
    message_id: int
    index: int
    kind: str
    mode: str  # markdown | ansi | plain | json | image | other
    text: str = ""
    clip: rendering.Clip | None = None
    ansi: list[rendering.Segment] | None = None
    ansi_tail: list[rendering.Segment] | None = None  # a clipped ANSI block's tail, coloured the same way
    tool_name: str = ""
    tool_id: str = ""
    is_error: bool = False
    media_type: str = ""
    data_size: int = 0
    image_index: int | None = None
    images: list[int] = field(default_factory=list)  # image indices inside a tool result
    raw_type: str = ""
    result: BlockView | None = None  # a tool call's result, shown under it
    result_tokens: dict | None = None
    subagent: Conversation | None = None
    tool_input: Any = None
    extra: dict | None = None  # a tool result's run as the log records it beside the text (Block.extra)
    logged_text: str | None = None  # a tool result's text as logged, where `text` shows it otherwise
    tool: tools.ToolView | None = None  # a tool call as people read it (None: the generic view)

    @property
    def element_id(self) -> str:
        return f"b-{self.message_id}-{self.index}"


@dataclass
class MessageView:
    message: Message
    blocks: list[BlockView]
    tokens: list[tuple[str, int]]
    branch_of: int | None = None  # on an abandoned branch: the turn the log went on with
    branch_starts: bool = False  # the first message shown of a run on an abandoned branch (badged)
    # The later records of the same response (Claude Code writes one line per content block, all
    # with the response's message id), shown in this one message with their blocks.
    merged: list[Message] = field(default_factory=list)

    @property
    def token_total(self) -> int:
        return (self.message.token_total or 0) + sum(m.token_total or 0 for m in self.merged)

    @property
    def last_position(self) -> int:
        return self.merged[-1].position if self.merged else self.message.position

    @property
    def css_class(self) -> str:
        """The message element's classes (conversation.html#turn-body): its role, meta, on a branch."""
        meta = " meta" if self.message.is_meta else ""
        branch = " branch" if self.branch_of is not None else ""
        return f"message role-{self.message.role}{meta}{branch}"


@dataclass
class TurnView:
    turn: int
    messages: list[MessageView]
    more_from: int | None  # position to continue from, when the turn has more messages


def block_view(message: Message, index: int, block: dict, image_index: int | None, full: bool = False) -> BlockView:
    kind = block.get("kind") or "other"
    text = block.get("text") or ""
    if not isinstance(text, str):
        text = str(text)
    view = BlockView(message_id=message.id, index=index, kind=kind, mode="plain", text=text)
    view.tool_name = str(block.get("tool_name") or "")
    view.tool_id = str(block.get("tool_id") or "")
    view.is_error = bool(block.get("is_error"))
    view.raw_type = str(block.get("raw_type") or "")
    if kind == "tool_result" and isinstance(block.get("extra"), dict):
        view.extra = block["extra"]
    if kind == "tool_result":
        _readable_result(view, text)
    if kind == "tool_call":
        view.mode = "json"
        view.tool_input = block.get("tool_input")
        view.text = rendering.tool_input_text(view.tool_input, text)
    elif kind == "image":
        view.mode = "image"
        view.media_type = str(block.get("media_type") or "")
        view.data_size = int(block.get("data_size") or 0)
        view.image_index = image_index
        return view
    elif kind == "text" and (message.role == "assistant" or message.is_compact_summary):
        view.mode = "markdown"
    elif kind == "other":
        view.mode = "other"
    if rendering.has_ansi(view.text):
        # Terminal output anywhere (a result, a pasted log, an action line): colours kept as
        # classes, every other escape dropped; Markdown gets the text without them.
        if view.mode == "markdown":
            view.text = rendering.strip_ansi(view.text)
        else:
            view.mode = "ansi"
    view.clip = rendering.clip(view.text, limit=10**12 if full else rendering.BLOCK_LIMIT)
    if view.clip.clipped:
        view.mode = "ansi" if view.mode == "ansi" else "plain"  # a clipped head is shown verbatim
    if view.mode == "ansi":
        view.ansi = rendering.ansi_segments(view.clip.head)
        if view.clip.tail:
            view.ansi_tail = rendering.ansi_segments(view.clip.tail)
        view.clip = rendering.Clip("", rendering.strip_ansi(view.clip.tail), view.clip.hidden)
    return view


def _readable_result(view: BlockView, text: str) -> None:
    """A result as it reads: a shell's output the log wrote as JSON (Codex's `{"output": ...}`) as
    that output; a result the log wrote as a JSON string as its text, line breaks and all; CRLF line
    ends as LF. The text as logged stays in `logged_text` for the tool's view, which reads its shape."""
    output = tool_shell.logged_output(text)
    if output is None:
        decoded = tool_agents.decode_escapes(text)
        output = decoded if decoded != text and "\n" in decoded else text
    output = output.replace("\r\n", "\n")
    if output != text:
        view.text, view.logged_text = output, text


def _message_blocks(message: Message, full: bool = False) -> list[BlockView]:
    views = []
    image_index = 0
    for i, b in enumerate(message.blocks or []):
        if not isinstance(b, dict):
            b = {"kind": "other", "text": str(b)}
        v = block_view(message, i, b, image_index if b.get("kind") == "image" else None, full)
        if b.get("kind") == "image":
            image_index += 1
        elif b.get("kind") == "tool_result" and b.get("images"):
            count = int(b.get("images") or 0)
            v.images = list(range(image_index, image_index + count))
            image_index += count
        views.append(v)
    return views


def turn_view(conv: Conversation, turn: int, from_position: int | None = None) -> TurnView:
    qs = Message.objects.filter(conversation=conv, turn=turn).order_by("position")
    if from_position is not None:
        qs = qs.filter(position__gte=from_position)
    rows = list(qs.defer("raw")[: MESSAGES_PER_TURN_PAGE + 1])
    budget, keep = TURN_PAGE_CHARS, 0
    for keep, m in enumerate(rows[:MESSAGES_PER_TURN_PAGE], start=1):
        budget -= _weight(m)
        if budget <= 0:
            break
    more_from = rows[keep].position if len(rows) > keep else None
    rows = rows[:keep]
    per_message = [(m, _message_blocks(m)) for m in rows]
    # Tool calls sit with their results: a result found in this window moves under its call.
    calls = {b.tool_id: b for _, blocks in per_message for b in blocks if b.kind == "tool_call" and b.tool_id}
    children = {}
    if calls:
        children = {c.parent_tool_use_id: c for c in conv.children.filter(parent_tool_use_id__in=list(calls)).only("id", "title", "external_id", "agent_type", "message_count", "parent_tool_use_id")}
    out = []
    marks = branch_marks(conv).positions if rows else {}
    for m, blocks in per_message:
        kept = []
        for b in blocks:
            if b.kind == "tool_result" and b.tool_id in calls and calls[b.tool_id].result is None:
                calls[b.tool_id].result = b
                calls[b.tool_id].result_tokens = m.tokens
                continue
            if b.kind == "tool_call":
                b.subagent = children.get(b.tool_id)
            kept.append(b)
        if m.role == "assistant":  # the "\n\n" a split response starts with is not content
            kept = [b for b in kept if not (b.kind == "text" and not b.text.strip())] or ([] if blocks else kept)
        branch_of = marks.get(m.position)
        prev = out[-1] if out else None
        if prev is not None and _same_response(prev, m, branch_of):
            prev.blocks.extend(kept)
            prev.merged.append(m)
            totals = dict(prev.tokens)
            for k, v in (m.tokens or {}).items():
                if v:
                    totals[k] = totals.get(k, 0) + v
            prev.tokens = sorted(totals.items(), key=lambda kv: -kv[1])
            continue
        if kept or not blocks or m.role == "assistant":
            tokens_by_kind = sorted(((k, v) for k, v in (m.tokens or {}).items() if v), key=lambda kv: -kv[1])
            starts = branch_of is not None and (not out or out[-1].branch_of != branch_of)
            out.append(MessageView(m, kept, tokens_by_kind, branch_of, starts))
    _tool_views(list(calls.values()))
    return TurnView(turn, out, more_from)


def _same_response(prev: MessageView, m: Message, branch_of: int | None) -> bool:
    """`m` is a later record of the response `prev` shows (same assistant message id, same branch)."""
    first = prev.message
    return (
        m.role == "assistant" and first.role == "assistant" and bool(m.api_message_id)
        and m.api_message_id == first.api_message_id and prev.branch_of == branch_of
    )


def _tool_views(calls: list[BlockView]) -> None:
    """Each tool call's readable view, its result's run (stdout and stderr apart, exit code, notes)
    read from the result block's own `extra`, which the importer filled: never from the raw line."""
    for c in calls:
        r = c.result
        c.tool = tools.tool_view(
            c.tool_name,
            c.tool_input,
            (r.text if r.logged_text is None else r.logged_text) if r is not None else None,
            r.is_error if r is not None else False,
            r.extra if r is not None else None,
        )
        if c.tool is not None and c.tool.kind == "bash" and r is not None and r.clip is not None and r.clip.clipped:
            c.tool.shows_result = False  # a long output stays in the result block, with "Load the rest"


RESULT_SEARCH = 200  # messages after a tool call searched for its result (the whole-block page)


def full_block(message: Message, index: int, with_tool: bool = False) -> BlockView | None:
    """A block in full. `with_tool` (the whole-block page): a tool call gets its result and its
    readable view, as in the turn."""
    blocks = message.blocks or []
    if not 0 <= index < len(blocks):
        return None
    b = blocks[index] if isinstance(blocks[index], dict) else {"kind": "other", "text": str(blocks[index])}
    view = block_view(message, index, b, None, full=True)
    if with_tool and view.kind == "tool_call":
        view.result = _result_of(message, index, view.tool_id)
        if view.tool_id:
            view.subagent = message.conversation.children.filter(parent_tool_use_id=view.tool_id).first()
        _tool_views([view])
    return view


def _result_of(message: Message, index: int, tool_id: str) -> BlockView | None:
    """The result of the call `tool_id` made at block `index` of `message`: in the same message
    after it, or in one of the next RESULT_SEARCH messages of its turn."""
    if not tool_id:
        return None
    later = Message.objects.filter(conversation_id=message.conversation_id, turn=message.turn, position__gt=message.position)
    for m in [message, *later.order_by("position").defer("raw")[:RESULT_SEARCH]]:
        for i, b in enumerate(m.blocks or []):
            if m is message and i <= index:
                continue
            if isinstance(b, dict) and b.get("kind") == "tool_result" and str(b.get("tool_id") or "") == tool_id:
                return block_view(m, i, b, None, full=True)
    return None


# --- images -----------------------------------------------------------------------------------


def image_data(message: Message, index: int) -> tuple[str, bytes] | None:
    """The index-th base64 image of a message's raw record, as (media type, bytes). Only PNG, JPEG,
    GIF and WebP whose bytes match their declared type; never a URL (remote images are not fetched).
    Where a format keeps its images is the format's business (importers/formats.py)."""
    fmt = formats.get(message.conversation.agent)
    found = fmt.images(message.raw) if fmt is not None else []
    if not 0 <= index < len(found):
        return None
    source = found[index]
    media_type = str(source.get("media_type") or "").lower()
    if media_type not in IMAGE_TYPES or source.get("type", "base64") != "base64":
        return None
    try:
        data = base64.b64decode(source.get("data") or "", validate=False)
    except (binascii.Error, ValueError):
        return None
    if not _magic_matches(media_type, data):
        return None
    return media_type, data


def _magic_matches(media_type: str, data: bytes) -> bool:
    if media_type == "image/png":
        return data.startswith(b"\x89PNG\r\n\x1a\n")
    if media_type == "image/jpeg":
        return data.startswith(b"\xff\xd8\xff")
    if media_type == "image/gif":
        return data[:6] in (b"GIF87a", b"GIF89a")
    if media_type == "image/webp":
        return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    return False
