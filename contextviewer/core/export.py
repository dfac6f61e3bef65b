"""Exporters from plain message dicts (pure, no Django): OpenAI chat messages, Anthropic messages
and Markdown, what every writer shares, and the export targets. An agent's own session file is
written by its own module: core/export_claude.py (Claude Code JSONL), core/export_codex.py (Codex
rollout); the format declares it as its export target (``Format.export``).

Messages are dicts as core.build uses them: role (user | assistant | tool | system | other),
blocks (dicts with a "kind"), and optionally timestamp (datetime or ISO text), is_meta,
is_compact_summary, subtype, model, api_message_id, turn, usage. Blocks may carry what the stored
blocks leave in the raw line: "signature" (thinking), "data" (image base64), "content" (a tool
result's own content list, images included).

Every exporter returns what it wrote and notes saying what it left out and why (never silently):
thinking without a signature (the API rejects it), bookkeeping lines, tool calls whose result is
missing (core.build.repair_tool_pairs).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import uuid as uuidlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .build import repair_tool_pairs

DEFAULT_MODEL = "claude-sonnet-4-5"
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """``text`` as it can be written in UTF-8: a lone surrogate (a log's "\\ud800" escape without
    its other half: a tool's name, an argument) becomes U+FFFD, two halves of a pair the character
    they stand for. An export holding one failed to encode (issue 40: a 500 on a Codex export)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@dataclass
class Export:
    content: str
    notes: list[str] = field(default_factory=list)
    session_id: str | None = None  # Claude Code: the id to resume

    def __post_init__(self):
        self.content = well_formed(self.content)
        self.notes = [well_formed(n) for n in self.notes]


class _Notes:
    def __init__(self):
        self.counts: dict[str, int] = {}
        self.extra: list[str] = []

    def add(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    def render(self) -> list[str]:
        return self.extra + [f"{n} × {what}" for what, n in self.counts.items()]


# --- shared preparation -----------------------------------------------------------------------


def conversational(messages: Sequence[dict], notes: _Notes | None = None, keep_fold_markers: bool = False,
                   keep_system: frozenset[str] = frozenset()) -> list[dict]:
    """The messages an agent would replay: user, assistant and tool messages (and fold markers
    when asked, and system lines of the subtypes in `keep_system`), with tool calls and results paired."""
    out = []
    for m in messages:
        role = m.get("role")
        if (m.get("flags") or {}).get("queued") is True:
            # Typed while the agent worked: the agent read it only where the harness delivered it
            # (a later user line of its own), or never (taken back, dropped).
            if notes is not None:
                notes.add("queued line left out (typed while the agent worked; the agent read it where it was delivered)")
        elif role in ("user", "assistant", "tool"):
            out.append(m)
        elif keep_fold_markers and role == "system" and m.get("subtype") == "compact_boundary":
            out.append(m)
        elif role == "system" and m.get("subtype") in keep_system:
            out.append(m)
        elif notes is not None:
            notes.add(f"{role} line{'' if role == 'other' else ' (' + (m.get('subtype') or 'no subtype') + ')'} left out (bookkeeping, not sent to the model)")
    repaired, repair_notes = repair_tool_pairs(out)
    if notes is not None:
        notes.extra.extend(repair_notes)
    return repaired


def _short_hash(value: str, n: int = 24) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:n]


def export_session_id(seed: str) -> str:
    """A stable session id for the export of one conversation (never the source's own id, so that
    importing the export next to its source creates a new conversation)."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"contextviewer-export:{seed}"))


def _timestamp(value) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return dt if dt.tzinfo else dt.replace(tzinfo=UTC)
    return None


def _iso(dt: datetime) -> str:
    dt = dt.astimezone(UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _tool_input(block: dict) -> dict:
    value = block.get("tool_input")
    if isinstance(value, dict):
        return value
    if value is None:
        text = block.get("text") or ""
        try:
            parsed = json.loads(text) if text else {}
        except ValueError:
            parsed = {"input": text}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return {"input": value}


def _image_block(media_type: str | None, data: str | None) -> dict | None:
    media_type = (media_type or "").lower()
    if media_type in IMAGE_TYPES and isinstance(data, str) and data:
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return None


def _result_content(block: dict, notes: _Notes) -> str | list:
    """A tool result's content: its own content list when it carried images, else its text."""
    content = block.get("content")
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                if part["text"].strip():  # the API refuses empty text blocks
                    parts.append({"type": "text", "text": part["text"]})
            elif isinstance(part, dict) and part.get("type") == "image":
                source = part.get("source") if isinstance(part.get("source"), dict) else {}
                image = _image_block(source.get("media_type"), source.get("data"))
                if image:
                    parts.append(image)
                else:
                    notes.add("image in a tool result left out (no data)")
            elif isinstance(part, str) and part.strip():
                parts.append({"type": "text", "text": part})
        if parts:
            return parts
    if block.get("images"):
        notes.add("image in a tool result left out (no data)")
    return block.get("text") or ""


def anthropic_blocks(m: dict, notes: _Notes, tool_name=lambda n: n or "tool", tool_id=lambda i: i) -> list[dict]:
    """Anthropic content blocks of one message (Claude Code writes the same shapes)."""
    out = []
    for b in m.get("blocks") or ():
        kind = b.get("kind")
        text = b.get("text") or ""
        if kind == "text":
            if text.strip():
                out.append({"type": "text", "text": text})
            elif text:
                notes.add("whitespace-only text block left out (the API refuses empty text)")
        elif kind == "thinking":
            if b.get("raw_type") == "redacted_thinking":
                notes.add("redacted thinking block left out")
            elif b.get("signature") and text:
                out.append({"type": "thinking", "thinking": text, "signature": b["signature"]})
            elif text:
                notes.add("thinking block left out (no signature: the API would reject it)")
        elif kind == "tool_call":
            out.append({"type": "tool_use", "id": tool_id(b.get("tool_id")), "name": tool_name(b.get("tool_name")), "input": _tool_input(b)})
        elif kind == "tool_result":
            block = {"type": "tool_result", "tool_use_id": tool_id(b.get("tool_id")), "content": _result_content(b, notes)}
            if b.get("is_error"):
                block["is_error"] = True
            out.append(block)
        elif kind == "image":
            image = _image_block(b.get("media_type"), b.get("data"))
            if image:
                out.append(image)
            else:
                notes.add("image left out (no data)")
                out.append({"type": "text", "text": f"[image{': ' + b['media_type'] if b.get('media_type') else ''} not exported]"})
        else:
            label = b.get("raw_type") or kind or "other"
            if text:
                out.append({"type": "text", "text": f"[{label}] {text}"})
            else:
                notes.add(f"{label} block without text left out")
    return out


# --- OpenAI and Anthropic ---------------------------------------------------------------------


def _groups(messages: Sequence[dict], notes: _Notes) -> list[tuple[str, list[dict]]]:
    """Alternating (role, Anthropic blocks) groups: consecutive same-role messages merged, tool
    results first in their user group, every tool_use answered in the very next user group.

    Parallel calls of one API message may be written one line per call with results in between
    (Claude Code writes a result as soon as its tool has run): while calls of the open assistant
    group are unanswered, what the user side says is held back and a later assistant line joins
    that group, so the calls end up together and their results together right after them."""
    groups = _alternating(messages, notes)
    changed = True
    while changed:  # each repair can make another necessary: repeat until none changes anything
        changed = _answer_calls(groups, notes)
        changed = _drop_stray_results(groups, notes) or changed
        groups, merged = _merge_neighbours(groups)
        changed = changed or merged
    _order_results(groups)
    if groups and groups[0][0] == "assistant":
        groups.insert(0, ["user", [{"type": "text", "text": "(The exported conversation begins with an assistant message.)"}]])
        notes.extra.append("A user message was put first: the conversation began with an assistant message.")
    return [(role, blocks) for role, blocks in groups]


def _alternating(messages: Sequence[dict], notes: _Notes) -> list[list]:
    """[role, blocks] groups of the conversational messages as they come, same-role ones merged; a
    block on the side the API does not take it from left out; what the user side says while calls of
    the last assistant group are unanswered held back, and put after that group once they are."""
    groups: list[list] = []
    open_calls: set[str] = set()  # calls of the last assistant group still waiting for a result
    held: list[dict] = []  # user-side blocks that came while calls were open
    for m in conversational(messages, notes):
        role = "assistant" if m.get("role") == "assistant" else "user"
        blocks = anthropic_blocks(m, notes)
        misplaced = "tool_result" if role == "assistant" else "tool_use"
        if any(b["type"] == misplaced for b in blocks):
            blocks = [b for b in blocks if b["type"] != misplaced]
            notes.add(f"{misplaced} in a {role} message left out (the API takes it only from the other side)")
        if not blocks:
            continue
        if role == "assistant" or not open_calls:
            if groups and groups[-1][0] == role:
                groups[-1][1].extend(blocks)
            else:
                groups.append([role, blocks])
            if role == "assistant":
                open_calls |= {b["id"] for b in blocks if b["type"] == "tool_use"}
            continue
        held.extend(blocks)
        open_calls -= {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"}
        if not open_calls:
            groups.append(["user", held])
            held = []
    if held:
        groups.append(["user", held])
    return groups


def _answer_calls(groups: list[list], notes: _Notes) -> bool:
    """One pass over the groups, in place: a user group's tool results first; in an assistant group
    a call repeating an id, and a call the next group does not answer, left out. True when a call
    was left out."""
    changed = False
    for i, (role, blocks) in enumerate(groups):
        if role == "user":
            results = [b for b in blocks if b["type"] == "tool_result"]
            if results and blocks[: len(results)] != results:
                groups[i][1] = results + [b for b in blocks if b["type"] != "tool_result"]
            continue
        ids = [b["id"] for b in blocks if b["type"] == "tool_use"]
        if len(ids) != len(set(ids)):
            seen_ids: set[str] = set()
            kept = []
            for b in blocks:
                if b["type"] == "tool_use":
                    if b["id"] in seen_ids:
                        continue
                    seen_ids.add(b["id"])
                kept.append(b)
            groups[i][1] = blocks = kept
            notes.add("tool call repeating an id in the same message left out", len(ids) - len(seen_ids))
            changed = True
        calls = {b["id"] for b in blocks if b["type"] == "tool_use"}
        nxt = groups[i + 1][1] if i + 1 < len(groups) else []
        answered = {b["tool_use_id"] for b in nxt if b["type"] == "tool_result"}
        missing = calls - answered
        if missing:
            groups[i][1] = [b for b in blocks if not (b["type"] == "tool_use" and b["id"] in missing)]
            notes.add("tool call whose result was not in the next user message left out", len(missing))
            changed = True
    return changed


def _drop_stray_results(groups: list[list], notes: _Notes) -> bool:
    """In place: a tool result that answers no call of the assistant group just before it (or
    answers one a second time) left out. True when one was."""
    changed = False
    for i, (role, blocks) in enumerate(groups):
        if role != "user":
            continue
        prev = groups[i - 1][1] if i > 0 and groups[i - 1][0] == "assistant" else []
        calls = {b["id"] for b in prev if b["type"] == "tool_use"}
        seen: set[str] = set()
        stray = []
        for b in blocks:
            if b["type"] == "tool_result":
                if b["tool_use_id"] not in calls or b["tool_use_id"] in seen:
                    stray.append(b)
                seen.add(b["tool_use_id"])
        if stray:
            groups[i][1] = [b for b in blocks if not any(b is x for x in stray)]
            notes.add("tool result not answering the assistant message before it left out", len(stray))
            changed = True
    return changed


def _merge_neighbours(groups: list[list]) -> tuple[list[list], bool]:
    """The groups with the empty ones left out and neighbours of one role merged, and whether any were."""
    changed = False
    merged: list[list] = []
    for role, blocks in groups:
        if not blocks:
            changed = True
            continue
        if merged and merged[-1][0] == role:
            merged[-1][1] = merged[-1][1] + blocks
            changed = True
        else:
            merged.append([role, blocks])
    return merged, changed


def _order_results(groups: list[list]) -> None:
    """Results in the order of their calls (OpenAI lists tool messages in tool_calls order), in place."""
    for i in range(1, len(groups)):
        if groups[i][0] == "user" and groups[i - 1][0] == "assistant":
            order = {b["id"]: n for n, b in enumerate(groups[i - 1][1]) if b["type"] == "tool_use"}
            results = sorted((b for b in groups[i][1] if b["type"] == "tool_result"), key=lambda b: order[b["tool_use_id"]])
            groups[i][1] = results + [b for b in groups[i][1] if b["type"] != "tool_result"]


def anthropic(messages: Sequence[dict], *, model: str = "") -> Export:
    notes = _Notes()
    groups = _groups(messages, notes)
    doc = {"model": model or DEFAULT_MODEL, "messages": [{"role": r, "content": b} for r, b in groups]}
    return Export(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", notes.render())


def openai_function_name(name: str | None) -> str:
    return (re.sub(r"[^a-zA-Z0-9_-]+", "_", name or "tool").strip("_") or "tool")[:64]


def openai(messages: Sequence[dict], *, model: str = "") -> Export:
    notes = _Notes()
    out: list[dict] = []
    for role, blocks in _groups(messages, notes):
        if role == "assistant":
            text = "\n\n".join(b["text"] for b in blocks if b["type"] == "text")
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": openai_function_name(b["name"]), "arguments": json.dumps(b["input"], ensure_ascii=False)},
                }
                for b in blocks
                if b["type"] == "tool_use"
            ]
            if any(b["type"] == "thinking" for b in blocks):
                notes.add("thinking block left out (OpenAI chat messages have no place for it)")
            msg: dict = {"role": "assistant", "content": text or None}
            if calls:
                msg["tool_calls"] = calls
            if text or calls:
                out.append(msg)
            continue
        parts = []
        for b in blocks:
            if b["type"] == "tool_result":
                content = b["content"]
                if isinstance(content, list):
                    texts = [p["text"] for p in content if p.get("type") == "text"]
                    if len(texts) != len(content):
                        notes.add("image in a tool result left out (OpenAI tool messages carry text)")
                    content = "\n".join(texts)
                out.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": content})
            elif b["type"] == "text":
                parts.append({"type": "text", "text": b["text"]})
            elif b["type"] == "image":
                src = b["source"]
                parts.append({"type": "image_url", "image_url": {"url": f"data:{src['media_type']};base64,{src['data']}"}})
        if parts:
            if all(p["type"] == "text" for p in parts):
                out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
            else:
                out.append({"role": "user", "content": parts})
    doc = {"model": model or "", "messages": out}
    return Export(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", notes.render())


# --- Markdown ---------------------------------------------------------------------------------


def _fence(text: str, info: str = "") -> str:
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def markdown(messages: Sequence[dict], *, title: str = "", meta: Sequence[str] = ()) -> Export:
    notes = _Notes()
    out = [f"# {title or 'Conversation'}", ""]
    for line in meta:
        out.append(f"- {line}")
    if meta:
        out.append("")
    current_turn = None
    for m in conversational(messages, notes):
        turn = m.get("turn")
        if turn is not None and turn != current_turn:
            current_turn = turn
            out += [f"## Turn {turn}", ""]
        who = "Summary" if m.get("is_compact_summary") else {"user": "User", "assistant": "Assistant", "tool": "Tool"}.get(m.get("role"), "Other")
        out += [f"**{who}**", ""]
        for b in m.get("blocks") or ():
            kind = b.get("kind")
            text = b.get("text") or ""
            if kind == "text":
                out += [text, ""]
            elif kind == "thinking":
                if text:
                    out += ["<details><summary>thinking</summary>", "", _fence(text), "", "</details>", ""]
            elif kind == "tool_call":
                out += [f"Tool call `{b.get('tool_name') or 'tool'}`:", "", _fence(json.dumps(_tool_input(b), ensure_ascii=False, indent=2), "json"), ""]
            elif kind == "tool_result":
                out += [("Tool error:" if b.get("is_error") else "Tool result:"), "", _fence(text), ""]
            elif kind == "image":
                out += [f"*[image{': ' + b['media_type'] if b.get('media_type') else ''}]*", ""]
            elif text:
                out += [_fence(text, ""), ""]
    return Export("\n".join(out).rstrip() + "\n", notes.render())


# --- targets: builds, pages, the API and the command line name none of them --------------------
# The plain targets below are every conversation's; an agent's own session file is its format's to
# declare (``Format(export=Target(...))`` in importers/<format>.py, written by its writer module:
# core/export_claude.py, core/export_codex.py), and builds/services.py puts the two together (EXPORT_TARGETS).


@dataclass(frozen=True, slots=True)
class ExportMeta:
    """What a writer may need of the conversation besides its messages."""

    session_seed: str  # a stable seed for an exported session id (project, agent, external id)
    base: str  # the file name's stem for a plain export ("conversation-12")
    title: str = ""
    heading: str = ""  # Markdown's title: the title, else the external id
    header: Sequence[str] = ()  # Markdown's lines under the title
    cwd: str = ""
    git_branch: str = ""
    model: str = ""


@dataclass(frozen=True, slots=True)
class Written:
    content: str
    notes: list[str]
    filename: str
    session_id: str | None = None
    resume_hint: str = ""  # how to resume it, for an agent's own session file

    def __post_init__(self):
        for name in ("content", "filename", "resume_hint"):
            object.__setattr__(self, name, well_formed(getattr(self, name)))
        object.__setattr__(self, "notes", [well_formed(n) for n in self.notes])


@dataclass(frozen=True, slots=True)
class Target:
    name: str  # the ?format= value; a format's own session file: the format's name
    label: str
    content_type: str
    write: object  # (messages, ExportMeta) -> Written
    agent_session: bool = False  # an agent's own session file: honest only for that agent's conversations
    resume_help: str = ""  # how to continue its file in the agent, for the pages
    continue_commands: object = None  # (filename, session_id, cwd, download path) -> the shell commands that resume it


def shell_path(path: str) -> str:
    """A path for a shell command line: quoted when it holds anything but plain characters."""
    return path if path == "~" or path.startswith("~/") and shlex.quote(path[2:]) == path[2:] else shlex.quote(path)


def _plain(suffix: str, writer) -> object:
    def write(messages: Sequence[dict], meta: ExportMeta) -> Written:
        result = writer(messages, meta)
        return Written(result.content, result.notes, f"{meta.base}.{suffix}")

    return write


# What any conversation can be exported to, one line each, in the order they are offered (after the
# formats' own session files).
TARGETS: tuple[Target, ...] = (
    Target("openai", "OpenAI messages", "application/json",
           _plain("openai.json", lambda m, meta: openai(m, model=meta.model))),
    Target("anthropic", "Anthropic messages", "application/json",
           _plain("anthropic.json", lambda m, meta: anthropic(m, model=meta.model))),
    Target("markdown", "Markdown", "text/markdown; charset=utf-8",
           _plain("md", lambda m, meta: markdown(m, title=meta.heading, meta=meta.header))),
)


def offered(targets: Sequence[Target], agent: str | None) -> list[str]:
    """The names of the `targets` a conversation written by ``agent`` can be exported to honestly: an
    agent's own session file only for that agent's conversations (another agent's tools, ids and
    usage would be passed off as its own)."""
    return [t.name for t in targets if not t.agent_session or t.name == agent]
