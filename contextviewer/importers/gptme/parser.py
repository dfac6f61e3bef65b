"""gptme conversation folders -> normalized records. Checked against what gptme 0.35.1 wrote and sent,
run offline against a scripted model server (ops/drivers/gptme.py, issue 39); the format's facts
from its own source (logmanager/manager.py, message.py, llm/llm_openai.py ``_handle_tools``,
llm/utils.py ``extract_tool_uses_from_assistant_message``, tools/base.py ``toolcall_re``,
tools/autocompact/hook.py and resume.py, tools/subagent/).

Pure. A conversation is a folder ``logs/<name>/``:

- ``conversation.jsonl``: the whole history (the "master" branch), one message a line
  ``{"role": "system"|"user"|"assistant", "content", "timestamp", ...}``. A ``system`` line with a
  ``call_id`` is a tool's result (sent as a ``tool`` message with that ``tool_call_id``); other
  ``system`` lines are the system prompt and notices (sent as system messages; ``ui_only`` ones never
  sent). An ``assistant`` line's content holds its text and its tool calls written as
  ``@<tool>(<call id>): {<arguments as JSON>}`` at the start of a line (outside fenced code), which
  gptme turns back into ``tool_calls`` when it sends the history; its ``metadata.usage``
  (``input_tokens`` uncached, ``output_tokens``, ``cache_read_tokens``, ``cache_creation_tokens``)
  and ``metadata.model`` are the call's. One model call per assistant line.
- A compaction (its autocompact hook, when the context measured from the last call's usage passes
  its budget): a ``user`` line whose ``metadata`` has ``compaction_checkpoint_view`` asks for a
  checkpoint (through the normal turn loop, with tools); the assistant's answer is the checkpoint, and
  gptme switches to a view ``views/compacted-NNN.jsonl``: the leading system lines, an intro ("Previous
  conversation resumed from ..."), the checkpoint as an assistant message, then the recent tail of the
  history kept verbatim (copies of earlier lines), then what follows (written to both files). Each is
  a fold: trigger ``auto``; the checkpoint is its summary (sent as an assistant message), the tail
  lines found in the history by role, time and content are what it kept; the checkpoint request and
  the calls that answered it are its cost, not calls of the conversation. A fold whose view is gone
  keeps its summary (the ``✅ LLM-powered resume completed`` line tells it applied).
  ``compaction.jsonl`` holds gptme's own estimates (``tokens.before_estimated``, chars / 4 of the
  stored text, not what the model was sent): kept in the fold's metadata.
- A sub-agent (``subagent()`` in the ipython tool) writes a folder ``subagent-<id>-<hex>/`` beside its
  parent's, with ``subagent-meta.json`` (``agent_id``, ``prompt``, ``parent_logdir``, ``started_at``):
  a child conversation linked to the ipython call that started it.
- ``config.toml``'s ``[chat] name`` is the title; the system prompt says the version ("You are gptme
  vX") and the working folder ("**Working Directory:** ...").

The markdown tool format (gptme's default; ``tool_format`` in config.toml, else no ``@tool(id)``
call in the log): a fenced block whose language tag names a tool (```` ```shell ````, ```` ```save
<path> ````...) is a call (the log gives it no id: ``<line uuid>:<n>``), and the system lines that
follow it (not hidden) its output, in order; read from gptme's source, not driven here (the scripted
server answers with native tool calls).

A manual ``/compact`` summarizes with a call of its own (in no file) and rewrites the view it is in
(outside a view, conversation.jsonl itself, the full history then kept in ``lossless.jsonl``, read
instead of it): the history gets the ``/compact`` line and the "resume completed" line, where its
fold goes, trigger ``manual``; its summary is the checkpoint of the view written then (found by the
intro's time), its kept lines that view's tail. A fold whose view a later compaction rewrote takes
its kept lines from the head of the new view's tail.

Not read: a trim (``method: trim``) view with no checkpoint; the XML tool format (its calls show as
the assistant's text).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from datetime import timedelta
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextviewer.core.harness import Harness
from contextviewer.core.records import AgentLink, BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import TimeSpan, json_kind, parse_timestamp, pos_int, str_or_none, tool_call
from contextviewer.importers.formats import ParseInput, SessionFiles, SubagentFile
from contextviewer.importers.gptme.entry import (  # noqa: F401 - the light part
    CONVERSATION,
    ENTRY,
    NAME,
    SUBAGENT_META,
    folder_of,
    is_conversation_folder,
    sniff,
)
from contextviewer.importers.lines import Line, iter_lines

LOSSLESS = "lossless.jsonl"
CHECKPOINT_KEY = "compaction_checkpoint_view"
INTRO = "Previous conversation resumed from"  # tools/autocompact/resume.py _CHECKPOINT_INTRO_PREFIX
APPLIED = "✅ LLM-powered resume completed"
MANUAL = "/compact"
ONE_SECOND = timedelta(seconds=1)
# tools/base.py toolcall_re: a tool call starts a line, "@<name>(<call id>): {"
TOOL_CALL = re.compile(r"^@([^\r\n]+?)\(([\w\-:\.]+)\):[ \t]*(?=\{)", re.MULTILINE)
FENCE = re.compile(r"^(`{3,})", re.MULTILINE)
VERSION = re.compile(r"You are gptme v([\w.+-]+)")
WORKDIR = re.compile(r"\*\*Working Directory:\*\*\s*(\S[^\n]*)")
SUBAGENT_CALL = re.compile(r"subagent\(\s*(?:agent_id\s*=\s*)?([\"'])(.+?)\1")


def _dict(value: Any) -> dict:
    return value if value.__class__ is dict else {}


# -- an assistant line's text and tool calls -------------------------------------------------------


def _fenced(content: str) -> list[tuple[int, int]]:
    """Character ranges of the fenced code blocks (a tool call written inside one is an example)."""
    ranges, open_at, fence = [], None, ""
    for m in FENCE.finditer(content):
        if open_at is None:
            open_at, fence = m.start(), m.group(1)
        elif len(m.group(1)) >= len(fence):
            ranges.append((open_at, m.end()))
            open_at = None
    if open_at is not None:
        ranges.append((open_at, len(content)))
    return ranges


def _json_end(s: str, start: int) -> int | None:
    """The end of the JSON object starting at ``start`` (braces counted outside strings)."""
    depth, in_string, escape = 0, False, False
    for i in range(start, len(s)):
        c = s[i]
        if escape:
            escape = False
        elif c == "\\":
            escape = True
        elif c == '"':
            in_string = not in_string
        elif not in_string:
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return i + 1
    return None


def assistant_blocks(content: str) -> list[Block]:
    """An assistant line as sent: the text before each ``@tool(id): {...}`` call, the call, and
    the text after the last one."""
    blocks: list[Block] = []
    fenced = _fenced(content)
    pos = search = 0
    while (m := TOOL_CALL.search(content, search)) is not None:
        inside = next((end for start, end in fenced if start <= m.start() < end), None)
        if inside is not None:
            search = inside
            continue
        end = _json_end(content, m.end())
        if end is None:  # an object cut short: the rest is text
            break
        try:
            args: Any = json.loads(content[m.end():end])
        except (ValueError, RecursionError):
            args = content[m.end():end]
        if content[pos:m.start()].strip():
            blocks.append(Block("text", text=content[pos:m.start()]))
        blocks.append(tool_call(m.group(2), m.group(1).strip(), args))
        pos = search = end
    if content[pos:].strip():
        blocks.append(Block("text", text=content[pos:] if pos else content))
    return blocks


# gptme's markdown tool format (its default): a fenced block whose language tag names a tool
# (tools/base.py ToolUse._from_codeblock: the tag's first word is one of a tool's block_types; save,
# append and patch take the path after it). Its result comes as the system lines that follow.
MARKDOWN_TOOLS = {"shell": "shell", "ipython": "ipython", "py": "ipython", "save": "save", "append": "append",
                  "patch": "patch", "patch_many": "patch_many", "read": "read", "tmux": "tmux", "complete": "complete",
                  "todo": "todo", "gh": "gh", "memory": "memory"}
OPEN_FENCE = re.compile(r"^(`{3,})([^`\n]*)$")


def _markdown_input(tool: str, arg: str, body: str) -> dict:
    if tool == "shell":
        return {"command": body}
    if tool == "ipython":
        return {"code": body}
    if tool in ("save", "append"):
        return {"path": arg, "content": body}
    if tool == "patch":
        return {"path": arg, "patch": body}
    if tool == "read":
        return {"path": arg or body.strip()}
    return {"content": body, **({"args": arg} if arg else {})}


def markdown_blocks(content: str, call_id: str) -> list[Block]:
    """An assistant line of the markdown tool format: its text, and each tool block as a call
    (ids ``<call_id>:<n>``: the format has none)."""
    blocks: list[Block] = []
    lines = content.split("\n")
    text: list[str] = []
    i = 0
    while i < len(lines):
        m = OPEN_FENCE.match(lines[i])
        words = m.group(2).strip().split(" ", 1) if m else [""]
        tool = MARKDOWN_TOOLS.get(words[0])
        if tool is None:
            text.append(lines[i])
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == m.group(1)), None)
        if end is None:
            text.extend(lines[i:])
            break
        if "\n".join(text).strip():
            blocks.append(Block("text", text="\n".join(text)))
        text = []
        arg = words[1].strip() if len(words) > 1 else ""
        blocks.append(tool_call(f"{call_id}:{len(blocks) + 1}", tool, _markdown_input(tool, arg, "\n".join(lines[i + 1:end]))))
        i = end + 1
    if "\n".join(text).strip():
        blocks.append(Block("text", text="\n".join(text)))
    return blocks


# -- reading a folder ------------------------------------------------------------------------------


@dataclass
class _Line:
    index: int  # 0-based line of the history file
    offset: int
    raw: str
    obj: dict


def read_lines(path: Path, max_line_bytes: int, bad: list[BadLine]) -> list[_Line]:
    """The message lines of a JSONL file; each line that is no message a BadLine in ``bad``."""
    out: list[_Line] = []
    try:
        fh = open(path, "rb")
    except OSError as exc:
        bad.append(BadLine(0, 0, f"{path.name} cannot be read: {exc.strerror or exc}"))
        return out
    with fh:
        for item in iter_lines(fh, max_line_bytes=max_line_bytes):
            if not isinstance(item, Line):
                bad.append(item)
                continue
            text = item.data.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError) as exc:
                bad.append(BadLine(item.line_no, item.offset, f"{path.name} line {item.line_no} is not JSON ({exc})", len(item.data)))
                continue
            if obj.__class__ is not dict or obj.get("role").__class__ is not str or obj.get("content").__class__ is not str:
                what = json_kind(obj) if obj.__class__ is not dict else "an object without a role and a text content"
                bad.append(BadLine(item.line_no, item.offset, f"{path.name} line {item.line_no} is {what}, not a gptme message"))
                continue
            out.append(_Line(item.line_no - 1, item.offset, text, obj))
    return out


def _key(obj: dict) -> tuple:
    """What a view's copy of a history line shares with it."""
    when = obj.get("timestamp")
    return (obj["role"], when if when.__class__ is str else None, obj["content"])


@dataclass
class _View:
    """A compacted view: the checkpoint it starts from, and the lines it kept after it."""

    name: str
    checkpoint: str
    made: Any  # its intro's time: when the compaction that wrote it ran
    kept: list[tuple] = field(default_factory=list)


def read_views(folder: Path, max_line_bytes: int, bad: list[BadLine]) -> list[_View]:
    """The compacted views; with lossless.jsonl, conversation.jsonl too (a /compact outside a view
    rewrote it as one)."""
    views = []
    paths = sorted((folder / "views").glob("*.jsonl"))
    if (folder / LOSSLESS).is_file() and (folder / CONVERSATION).is_file():
        paths.append(folder / CONVERSATION)
    for path in paths:
        lines = read_lines(path, max_line_bytes, bad)
        at = next((i for i, ln in enumerate(lines[:-1]) if ln.obj["role"] == "system" and ln.obj["content"].startswith(INTRO)
                   and lines[i + 1].obj["role"] == "assistant"), None)
        if at is None:
            continue  # a trim view: no checkpoint (not read)
        views.append(_View(path.stem, lines[at + 1].obj["content"], parse_timestamp(lines[at].obj.get("timestamp")),
                           [_key(ln.obj) for ln in lines[at + 2:]]))
    return views


def _view_for(views: list[_View], start, end) -> tuple[_View | None, bool]:
    """The view a compaction between ``start`` and ``end`` wrote (its intro's time between them), or
    the first one written after it (a later compaction rewrites the view it was in: what it kept is
    still at the head of the new view's tail); whether it is the compaction's own."""
    if start is None or end is None:
        return None, False
    own = next((v for v in views if v.made is not None and start <= v.made <= end + ONE_SECOND), None)
    if own is not None:
        return own, True
    later = sorted((v for v in views if v.made is not None and v.made > end), key=lambda v: v.made)
    return (later[0] if later else None), False


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}


def _read_json(path: Path) -> dict:
    try:
        return _dict(json.loads(path.read_text(encoding="utf-8", errors="replace")))
    except (OSError, ValueError, RecursionError):
        return {}


def subagent_folders(folder: Path) -> list[tuple[Path, dict]]:
    """The sub-agent folders beside ``folder`` whose subagent-meta.json names it as their parent."""
    out = []
    try:
        siblings = sorted(p for p in folder.parent.iterdir() if p.is_dir() and p != folder)
    except OSError:
        return out
    for sub in siblings:
        if not (sub / SUBAGENT_META).is_file():
            continue
        meta = _read_json(sub / SUBAGENT_META)
        parent = str_or_none(meta.get("parent_logdir"))
        if parent and Path(parent).name == folder.name and is_conversation_folder(sub):
            out.append((sub, meta))
    return out


# -- the records ------------------------------------------------------------------------------------


class _Conversation(TimeSpan):
    def __init__(self, source: ParseInput, folder: Path | None, history: Path):
        super().__init__()
        self.source, self.folder, self.history = source, folder, history
        self.session = folder.name if folder is not None else history.stem
        self.bad: list[BadLine] = []
        self.records: list[MessageRecord] = []
        self.calls: list[UsageRecord] = []
        self.folds: list[FoldRecord] = []
        self.links: list[AgentLink] = []
        self.pending: list[UsageRecord] = []  # the calls of a checkpoint turn: its fold's cost
        self.models: dict[str, None] = {}
        self.version: str | None = None
        self.cwd: str | None = None
        self._compaction_events: list[dict] | None = None
        self.markdown = False  # the markdown tool format: calls in fenced blocks, results in the system lines after
        self.open_calls: list[str] = []  # markdown calls of the last answer awaiting their result

    def uuid(self, index: int) -> str:
        return f"{self.session}:{index + 1}"

    def run(self) -> Iterator[Record]:
        lines = read_lines(self.history, self.source.max_line_bytes, self.bad)
        views = read_views(self.folder, self.source.max_line_bytes, self.bad) if self.folder is not None else []
        folds = self._find_folds(lines, views)
        self.markdown = self._markdown_format(lines)
        for ln in lines:
            try:
                self._line(ln, folds)
            except Exception as exc:  # one odd line must not stop the import
                self.bad.append(BadLine(ln.index + 1, ln.offset, f"{self.history.name} line {ln.index + 1} could not be read "
                                                                 f"({exc.__class__.__name__}: {exc})"))
        if self.folder is not None and self.source.agent_id is None:
            self.links = self._links()
        yield from self.bad
        yield from self.records
        yield from self.calls
        yield from self.folds
        yield from self.links
        yield self.info()

    # -- folds

    def _find_folds(self, lines: list[_Line], views: list[_View]) -> dict[int, dict]:
        """Each applied compaction, by the line its fold goes before: an automatic one's checkpoint
        answer (it is the summary), a manual one's "resume completed" line (its summary is only in
        the view it wrote) -> {trigger, request, turn (its calls), kept, view, summary}."""
        found: dict[int, dict] = {}
        by_key: dict[tuple, int] = {}
        for ln in lines:
            by_key.setdefault(_key(ln.obj), ln.index)
        position = {ln.index: n for n, ln in enumerate(lines)}

        def applied(after: _Line) -> _Line | None:
            return next((x for x in lines[position[after.index] + 1:position[after.index] + 4]
                         if x.obj["role"] == "system" and x.obj["content"].startswith(APPLIED)), None)

        def when(ln: _Line | None):
            return parse_timestamp(ln.obj.get("timestamp")) if ln is not None else None

        for n, ln in enumerate(lines):
            role, content = ln.obj["role"], ln.obj["content"]
            if role == "user" and CHECKPOINT_KEY in _dict(ln.obj.get("metadata")):
                turn = []
                for later in lines[n + 1:]:
                    if later.obj["role"] == "user":
                        break
                    if later.obj["role"] == "assistant":
                        turn.append(later)
                if not turn:
                    continue
                summary, done = turn[-1], applied(turn[-1])
                view, own = _view_for(views, when(ln), when(done) or when(summary))
                if done is None and not (own and view.checkpoint == summary.obj["content"]):
                    continue  # the checkpoint was not applied
                at, trigger, text = summary.index, "auto", summary.obj["content"]
            elif role == "user" and content.strip().split(" ", 1)[0] == MANUAL:
                done = applied(ln)
                if done is None:
                    continue
                view, own = _view_for(views, when(ln), when(done))
                at, trigger, turn, text = done.index, "manual", [], view.checkpoint if view is not None and own else ""
            else:
                continue
            kept = [by_key[k] for k in (view.kept if view else []) if k in by_key and by_key[k] < ln.index]
            found[at] = {"trigger": trigger, "request": ln.index, "turn": [t.index for t in turn], "kept": kept,
                         "view": view.name if view is not None and own else None, "summary": text}
        return found

    def _fold(self, ln: _Line, summary: MessageRecord, fold: dict, ts) -> None:
        marker = MessageRecord(line_no=ln.index + 1, offset=ln.offset, role="system", record_type="compaction", raw=ln.raw,
                               blocks=[Block("text", text="gptme compacted the conversation")], uuid=f"{summary.uuid}:boundary",
                               subtype="compact_boundary", timestamp=ts, session_id=self.session)
        self.records.append(marker)
        cost = [c for c in self.pending if c.api_message_id in {self.uuid(i) for i in fold["turn"]}]
        self.pending = [c for c in self.pending if c not in cost]
        events = self._events()
        event = events[len(self.folds)] if len(self.folds) < len(events) else {}
        self.folds.append(FoldRecord(
            line_no=ln.index + 1,
            boundary_uuid=marker.uuid,
            kind="compact",
            trigger=fold["trigger"],
            tokens_before=None,  # the last call's measured input (gptme's own figure is its chars / 4 estimate)
            summary_uuid=summary.uuid,
            summary_text=fold["summary"],
            preserved_uuids=[self.uuid(i) for i in fold["kept"]],
            timestamp=ts,
            metadata={"view": fold["view"], "method": event.get("method"), "estimated": _dict(event.get("tokens")) or None},
            cost={"calls": len(cost), "input_uncached": sum(c.input_uncached for c in cost),
                  "cache_write": sum(c.cache_write for c in cost), "cache_read": sum(c.cache_read for c in cost),
                  "output": sum(c.output for c in cost), "model": cost[-1].model if cost else None} if cost else None,
        ))

    def _events(self) -> list[dict]:
        """compaction.jsonl's summarize events, in order (gptme's estimates)."""
        if self._compaction_events is None:
            self._compaction_events = []
            path = self.folder / "compaction.jsonl" if self.folder is not None else None
            try:
                text = path.read_text(encoding="utf-8", errors="replace") if path is not None and path.is_file() else ""
            except OSError:
                text = ""
            for line in text.splitlines():
                try:
                    event = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if event.__class__ is dict and event.get("method") != "trim":
                    self._compaction_events.append(event)
        return self._compaction_events

    def _markdown_format(self, lines: list[_Line]) -> bool:
        """The markdown tool format: config.toml says so, or says no format and no answer has an
        ``@tool(id)`` call."""
        chat = _dict(_read_toml(self.folder / "config.toml").get("chat")) if self.folder is not None else {}
        said = chat.get("tool_format")
        if said.__class__ is str:
            return said == "markdown"
        return not any(ln.obj["role"] == "assistant" and TOOL_CALL.search(ln.obj["content"]) for ln in lines)

    # -- one line

    def _line(self, ln: _Line, folds: dict[int, dict]) -> None:
        obj = ln.obj
        role, content, meta = obj["role"], obj["content"], _dict(obj.get("metadata"))
        ts = self.saw(parse_timestamp(obj.get("timestamp")))
        record = MessageRecord(line_no=ln.index + 1, offset=ln.offset, role="other", record_type=role[:60] or "(none)", raw=ln.raw,
                               uuid=self.uuid(ln.index), timestamp=ts, session_id=self.session)
        checkpoint_turn = next((f for f in folds.values() if ln.index in f["turn"] or ln.index == f["request"]), None)
        if role == "system" and str_or_none(obj.get("call_id")):
            record.role, record.record_type = "tool", "tool_result"
            record.blocks = [Block("tool_result", text=content, tool_id=obj["call_id"], tool_name=str_or_none(meta.get("tool")))]
        elif role == "system" and self.open_calls and not any(obj.get(k) is True for k in ("hide", "ui_only", "pinned")):
            record.role, record.record_type = "tool", "tool_result"  # a markdown call's output
            record.blocks = [Block("tool_result", text=content, tool_id=self.open_calls.pop(0))]
        elif role == "system":
            record.role, record.is_meta = "system", True
            record.blocks = [Block("text", text=content)] if content else []
            if obj.get("ui_only") is True:
                record.flags["ui_only"] = True
            self._system(content)
        elif role == "user":
            self.open_calls = []
            record.role = "user"
            record.blocks = [Block("text", text=content)] if content else []
            if CHECKPOINT_KEY in meta:
                record.is_meta, record.record_type = True, "checkpoint_request"
        elif role == "assistant":
            record.role = "assistant"
            self.open_calls = []
            record.blocks = assistant_blocks(content)
            if self.markdown and not any(b.kind == "tool_call" for b in record.blocks):
                record.blocks = markdown_blocks(content, record.uuid)
                self.open_calls = [b.tool_id for b in record.blocks if b.kind == "tool_call"]
            record.model = str_or_none(meta.get("model"))
            if record.model:
                self.models[record.model] = None
            usage = _dict(meta.get("usage"))
            call = UsageRecord(api_message_id=record.uuid, request_id=None, message_uuid=record.uuid, line_no=ln.index + 1,
                               model=record.model, input_uncached=pos_int(usage.get("input_tokens")),
                               cache_write=pos_int(usage.get("cache_creation_tokens")), cache_read=pos_int(usage.get("cache_read_tokens")),
                               output=pos_int(usage.get("output_tokens")), timestamp=ts)
            if checkpoint_turn is not None:
                self.pending.append(call)  # the checkpoint's calls: the fold's cost
            else:
                record.api_message_id = record.uuid
                self.calls.append(call)
        else:
            record.blocks = [Block("other", text=content[:200], raw_type=role[:60])]
        fold = folds.get(ln.index)
        if fold is not None and fold["trigger"] == "manual":
            # The summary of a /compact is not in the history: the view it wrote holds it (RESUME.md
            # the latest one only). It goes where the compaction completed.
            summary = MessageRecord(line_no=ln.index + 1, offset=ln.offset, role="assistant", record_type="checkpoint",
                                    raw=ln.raw, blocks=[Block("text", text=fold["summary"])] if fold["summary"] else [],
                                    uuid=f"{self.uuid(fold['request'])}:summary", timestamp=ts, session_id=self.session,
                                    is_compact_summary=True, is_meta=True)
            self._fold(ln, summary, fold, ts)
            self.records.append(summary)
        elif fold is not None:
            record.is_compact_summary, record.record_type = True, "checkpoint"
            self._fold(ln, record, fold, ts)
        self.records.append(record)

    def _system(self, content: str) -> None:
        if self.version is None and (m := VERSION.search(content[:200])):
            self.version = m.group(1)
        if self.cwd is None and (m := WORKDIR.search(content)):
            self.cwd = m.group(1).strip()

    # -- sub-agents

    def _links(self) -> list[AgentLink]:
        """Each sub-agent folder under the ipython call that started it: the call whose code names
        its id in ``subagent(...)``, else the latest call before it started."""
        calls = [(r, b) for r in self.records for b in r.blocks if b.kind == "tool_call"]
        taken: set[int] = set()
        out = []
        for sub, meta in subagent_folders(self.folder):
            agent = str_or_none(meta.get("agent_id")) or sub.name
            started = meta.get("started_at")

            def named(b: Block) -> bool:
                code = _dict(b.tool_input).get("code")
                return code.__class__ is str and any(m.group(2) == agent for m in SUBAGENT_CALL.finditer(code))

            def before(r: MessageRecord) -> bool:
                return started.__class__ not in (int, float) or r.timestamp is None or r.timestamp.timestamp() <= started + 1

            k = next((k for k, (r, b) in enumerate(calls) if k not in taken and named(b) and before(r)), None)
            if k is None:
                earlier = [k for k, (r, _b) in enumerate(calls) if k not in taken and before(r)]
                k = earlier[-1] if earlier else None
            prompt = str_or_none(meta.get("prompt"))
            description = prompt.splitlines()[0][:200] if prompt else None
            if k is None:
                out.append(AgentLink(sub.name, None, 0, agent, description))
                continue
            taken.add(k)
            out.append(AgentLink(sub.name, calls[k][1].tool_id, calls[k][0].line_no, agent, description))
        return out

    def info(self) -> SessionInfo:
        chat = _dict(_read_toml(self.folder / "config.toml").get("chat")) if self.folder is not None else {}
        title = str_or_none(chat.get("name"))
        if title is None:
            first = next((r for r in self.records if r.role == "user" and not r.is_meta), None)
            text = "\n".join(b.text for b in first.blocks if b.kind == "text").strip() if first else ""
            title = text.splitlines()[0][:200] if text else None
        return SessionInfo(external_id=self.session, title=title, cwd=self.cwd, cli_version=self.version,
                           models=list(self.models), started_at=self.started_at, ended_at=self.ended_at)


def parse(source: ParseInput) -> Iterator[Record]:
    """A conversation folder (its history: lossless.jsonl when a manual /compact left one, else
    conversation.jsonl), or a conversation.jsonl on its own."""
    path = source.path
    folder = path if path.is_dir() else folder_of(path)
    if folder is not None:
        history = folder / LOSSLESS if (folder / LOSSLESS).is_file() else folder / CONVERSATION
    else:
        history = path
    if not history.is_file():
        yield BadLine(0, 0, f"{path.name} is no gptme conversation folder: it has no {CONVERSATION}")
        yield SessionInfo(external_id=path.name)
        return
    yield from _Conversation(source, folder, history).run()


def group(paths: list[Path]) -> list[SessionFiles]:
    """Each conversation folder (a file of one stands for it) with the sub-agent folders beside it
    that name it as their parent; a sub-agent folder whose parent is there is read with it."""
    folders: dict[Path, None] = {}
    for path in paths:
        folders.setdefault((path if path.is_dir() else folder_of(path)) or path, None)
    out: list[SessionFiles] = []
    for folder in sorted(folders):
        meta = _read_json(folder / SUBAGENT_META) if folder.is_dir() else {}
        parent = folder.parent / Path(str_or_none(meta.get("parent_logdir")) or "").name if meta else None
        if parent is not None and parent != folder and is_conversation_folder(parent):
            if parent not in folders:  # named without its parent: under the parent's conversation, if imported
                out.append(SessionFiles(format=NAME, main=None, session_id=parent.name,
                                        subagents=[SubagentFile(folder, folder.name, str_or_none(meta.get("agent_id")))]))
            continue  # else read with its parent
        subs = [SubagentFile(sub, sub.name, str_or_none(m.get("agent_id"))) for sub, m in subagent_folders(folder)] if folder.is_dir() else []
        out.append(SessionFiles(format=NAME, main=folder, subagents=subs))
    return out


# The harness's rules (gptme 0.35.1, util/context_budget.py and tools/autocompact/decision.py): one
# budget is the only trigger, the context measured from the last call's usage (input + cache) plus
# its estimate of what followed; by default min(0.9 x window, window - max output - 1,000, 256k):
# 90 % of the window where the output reserve is smaller.
HARNESS = Harness(fold_label="gptme budget 90 %", fold_fraction=0.90)

FORMAT = ENTRY.format(parse=parse, group=group, harness=HARNESS)
