"""Cursor's agent transcripts -> normalized records (pure, no Django).

No Cursor agent runs here (the IDE and its CLI need a cursor.com login; ../shared/docs/stack-notes.md) and
no transcripts under an open license were found, so these facts come from other readers' source (facts
carry over, code does not; tests/cursor_transcripts.py writes a sample from them):

- HulkInTherapy/potsherd, ``docs/formats/cursor.md`` (commit 2d019e70) and its adapter's header (code
  index file 60233273945), characterised on 857 real records: ``~/.cursor/projects/<project
  slug>/agent-transcripts/<chat>/<chat>.jsonl`` and ``<chat>/subagents/<agent>.jsonl`` (the path is the
  only link: no id joins a ``Subagent`` call to its child file); the slug is the folder's path with its
  leading ``/`` dropped and each ``/`` and ``_`` made ``-`` (not invertible: a path found in the
  transcript is checked against it); a record is exactly ``{"role": "user" | "assistant", "message":
  {"content": [...]}}``, no ids, no ``type``, no times but a user prompt's ``<timestamp>Friday, May 8,
  2026, 6:05 AM (UTC+5:30)</timestamp>`` before its ``<user_query>``; blocks ``{type: text, text}`` and
  ``{type: tool_use, name, input}`` with no id, ``input`` an object or a string (``ApplyPatch``); no tool
  results, no model, no title, no usage; a ``<user_query>`` not followed by a newline is Cursor's own
  injected continuation ("The above subagent result is already visible to the user..."); each assistant
  record is a whole message (parallel tool calls in one); a tool name may hold a newline; files end
  without one; the session's end is the file's modification time;
- wesm/agentsview, ``internal/parser/cursor.go``, ``cursor_test.go``, ``discovery.go`` and
  ``types.go`` (commit aea2eb12): the earlier layout ``agent-transcripts/<chat>.jsonl`` or ``<chat>.txt``
  (``.jsonl`` preferred when both exist), content also a plain string, Anthropic-shaped blocks with
  ``thinking`` and ``tool_use`` ids in some; the ``.txt`` transcript: ``user:`` / ``assistant:`` lines
  open each message, the user's text inside ``<user_query>``, an assistant's ``[Thinking]``, ``[Tool call]
  <name>`` and ``[Tool result]`` markers each followed by an indented body (a line at the left margin
  ends it), the rest prose; the slug also turns ``.`` into ``-``.

Mapping: a chat is one conversation (``<chat>``); its sub-agent files are sub-agent conversations under
it (group), linked to the chat's ``Subagent``/``Task`` call when it made exactly one (the only pairing the
format allows without guessing). A message's uuid is ``<chat>:<line>`` (the file is only appended to).
Each assistant record is one model call with no usage (Cursor writes none: usage 0, flagged
``usage_unmeasured``, shown as estimated). A tool call gets the id ``<chat>:<line>:<n>`` where it has none;
the JSONL has no results, so its calls stay unanswered; a ``.txt`` transcript's ``[Tool result]`` answers
its call (same name, oldest first), and its assistant text is split into one message per model call at
each result. The working folder is an absolute folder named in the tool inputs whose slug is the
project folder's name. Not read, because the files do not hold them: usage, model, compactions (none is
recorded), the chat's title (in Cursor's ``state.vscdb``; the first prompt stands for it). Nothing here
raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from contextviewer.core.records import AgentLink, BadLine, Block, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import compact_json, json_kind, str_or_none, tool_call
from contextviewer.importers.cursor.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    NAME,
    SUBAGENTS,
    TRANSCRIPTS,
    in_transcripts,
    sniff,
)
from contextviewer.importers.driver import unexpected
from contextviewer.importers.cursor.text import read_text_transcript
from contextviewer.importers.formats import ParseInput, SessionFiles, SubagentFile
from contextviewer.importers.jsondoc import read_text

WHAT = "a Cursor agent transcript"
STAMP = re.compile(r"<timestamp>\s*(?:\w+,\s*)?(\w+ \d{1,2}, \d{4}), (\d{1,2}:\d{2}) ([AP]M)"
                   r"(?:\s*\(UTC([+-]\d{1,2})(?::(\d{2}))?\))?\s*</timestamp>")
QUERY = "<user_query>"
SPAWN = frozenset({"Subagent", "Task"})
ABSOLUTE = re.compile(r"(?:^|[\s'\"=])(/[^\s'\"]+)")


def stamp(text: str) -> datetime | None:
    """A prompt's ``<timestamp>``, its UTC offset read as written (none: UTC)."""
    m = STAMP.search(text)
    if m is None:
        return None
    try:
        local = datetime.strptime(f"{m.group(1)} {m.group(2)} {m.group(3)}", "%B %d, %Y %I:%M %p")
    except ValueError:
        return None
    hours = int(m.group(4) or 0)
    minutes = int(m.group(5) or 0) * (-1 if hours < 0 or (m.group(4) or "").startswith("-") else 1)
    return local.replace(tzinfo=timezone(timedelta(hours=hours, minutes=minutes))).astimezone(UTC)


def injected(text: str) -> bool:
    """Cursor's own continuation: text right after the first ``<user_query>``, no newline first."""
    at = text.find(QUERY)
    return at >= 0 and not text[at + len(QUERY):].startswith(("\n", "\r"))


def query(text: str) -> str:
    """A prompt's words: inside ``<user_query>`` (to the last closing tag), else the whole text."""
    start, end = text.find(QUERY), text.rfind("</user_query>")
    return text[start + len(QUERY):end].strip() if 0 <= start < end else text.strip()


def slug(folder: str) -> str:
    return re.sub(r"[/\\_.]", "-", folder.lstrip("/\\"))


def _paths(value: Any, out: list[str]) -> None:
    if value.__class__ is str:
        out.extend(m.group(1) for m in ABSOLUTE.finditer(value))
    elif value.__class__ is dict:
        for v in value.values():
            _paths(v, out)
    elif value.__class__ is list:
        for v in value:
            _paths(v, out)


def recover_cwd(project: str | None, inputs: list[Any]) -> str | None:
    """The absolute folder named in the tool inputs (or one of its parents) whose slug is ``project``."""
    if not project:
        return None
    found: list[str] = []
    for value in inputs:
        _paths(value, found)
    for path in found:
        p = Path(path)
        for folder in (p, *p.parents):
            if str(folder) != "/" and slug(str(folder)) == project:
                return str(folder)
    return None


class _Transcript:
    """The records of one transcript, message by message."""

    def __init__(self, path: Path, sid: str, agent: str | None):
        self.path, self.sid, self.agent = path, sid, agent
        self.records: list[MessageRecord] = []
        self.calls: list[UsageRecord] = []
        self.bad: list[BadLine] = []
        self.inputs: list[Any] = []
        self.stamps: list[datetime] = []

    def add(self, line_no: int, role: str, raw: str, blocks: list[Block], **kwargs) -> MessageRecord:
        record = MessageRecord(line_no=line_no, offset=0, role=role, record_type=kwargs.pop("record_type", role), raw=raw,
                               blocks=blocks, uuid=f"{self.sid}:{line_no}", session_id=self.sid, **kwargs)
        self.records.append(record)
        if role == "assistant":
            record.api_message_id = record.uuid
            record.flags["usage_unmeasured"] = True
            self.calls.append(UsageRecord(api_message_id=record.uuid, request_id=None, message_uuid=record.uuid,
                                          line_no=line_no, model=None))
        return record

    def user(self, line_no: int, raw: str, text: str, blocks: list[Block]) -> None:
        ts = stamp(text)
        if ts is not None:
            self.stamps.append(ts)
        record = self.add(line_no, "user", raw, blocks, timestamp=ts)
        if injected(text):
            record.is_meta = True
            record.flags["injected"] = True

    def call(self, line_no: int, n: int, item: dict) -> Block:
        name = str_or_none(item.get("name")) or ""
        first = name.split("\n", 1)[0].strip()
        block = tool_call(str_or_none(item.get("id")) or f"{self.sid}:{line_no}:{n}", first or None, item.get("input"))
        if first != name:
            block.raw_type = "tool_use (its name cut at a line break)"
        self.inputs.append(item.get("input"))
        return block

    def jsonl(self, text: str) -> None:
        for line_no, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                self.bad.append(BadLine(line_no, 0, f"Cursor transcript line {line_no}: not JSON"))
                continue
            message = obj.get("message") if obj.__class__ is dict else None
            content = message.get("content") if message.__class__ is dict else None
            role = obj.get("role") if obj.__class__ is dict else None
            if role not in ("user", "assistant") or content.__class__ not in (list, str):
                what = json_kind(obj) if obj.__class__ is not dict else f"role {role!r}" if role not in ("user", "assistant") \
                    else "no message.content list"
                self.bad.append(BadLine(line_no, 0, f"Cursor transcript line {line_no}: not a Cursor record ({what})"))
                continue
            self._record(line_no, line, role, content)

    def _record(self, line_no: int, raw: str, role: str, content: Any) -> None:
        blocks: list[Block] = []
        for n, item in enumerate([content] if content.__class__ is str else content, start=1):
            kind = item.get("type") if item.__class__ is dict else None
            if item.__class__ is str:
                blocks.append(Block("text", text=item))
            elif kind == "text":
                blocks.append(Block("text", text=item.get("text") if item.get("text").__class__ is str else ""))
            elif kind == "thinking":
                blocks.append(Block("thinking", text=item.get("thinking") if item.get("thinking").__class__ is str else ""))
            elif kind == "tool_use":
                blocks.append(self.call(line_no, n, item))
            else:
                blocks.append(Block("other", text=compact_json(item)[:200], raw_type=kind if kind.__class__ is str else json_kind(item)))
        if role == "user":
            self.user(line_no, raw, "\n".join(b.text for b in blocks if b.kind == "text"), blocks)
        else:
            self.add(line_no, "assistant", raw, blocks)

    def links(self) -> list[AgentLink]:
        """The chat's sub-agents (``<chat>/subagents/*.jsonl``), linked to its one spawn call when it made one."""
        folder = self.path.parent / SUBAGENTS
        if self.agent is not None or self.path.parent.name != self.sid or not folder.is_dir():
            return []
        children = sorted(p for p in folder.iterdir() if p.suffix == ".jsonl")
        spawns = [(r, b) for r in self.records for b in r.blocks if b.kind == "tool_call" and b.tool_name in SPAWN]
        if len(children) != 1 or len(spawns) != 1:
            return []
        record, block = spawns[0]
        args = block.tool_input if block.tool_input.__class__ is dict else {}
        return [AgentLink(children[0].stem, block.tool_id, record.line_no, str_or_none(args.get("subagent_type")),
                          str_or_none(args.get("description")))]

    def info(self) -> SessionInfo:
        project = self._project()
        first = next((r for r in self.records if r.role == "user" and not r.is_meta), None)
        words = query("\n".join(b.text for b in first.blocks if b.kind == "text")) if first else ""
        try:
            mtime = datetime.fromtimestamp(self.path.stat().st_mtime, tz=UTC)
        except (OSError, ValueError, OverflowError):
            mtime = None
        ended = max((t for t in (mtime, *self.stamps) if t is not None), default=None)
        return SessionInfo(external_id=self.sid, title=words.splitlines()[0][:200] if words else None,
                           cwd=recover_cwd(project, self.inputs), started_at=min(self.stamps, default=mtime),
                           ended_at=ended)

    def _project(self) -> str | None:
        """The project folder's name (the slug), above ``agent-transcripts``."""
        for p in self.path.parents:
            if p.name == TRANSCRIPTS:
                return p.parent.name or None
        return None


def parse(source: ParseInput) -> Iterator[Record]:
    """Records of one Cursor transcript (a chat's, or a sub-agent's when ``source.agent_id`` is set).
    Never raises."""
    path = Path(source.path)
    try:
        text, bad = read_text(source, WHAT)
        yield from (BadLine(b.line_no, b.offset, f"{b.reason} (Cursor transcript {path.name})") for b in bad)
        if text is None:
            yield SessionInfo()
            return
        sid = path.stem
        reader = _Transcript(path, sid, source.agent_id)
        if path.suffix == ".txt":
            read_text_transcript(reader, text)
        else:
            reader.jsonl(text)
        yield from reader.bad
        yield from reader.records
        yield from reader.calls
        yield from reader.links()
        yield reader.info()
    except Exception as exc:  # a last resort: never raise
        yield BadLine(0, 0, unexpected(exc))
        yield SessionInfo()


def _chat_of(path: Path) -> str | None:
    """The chat a sub-agent file (``<chat>/subagents/<agent>.jsonl``) belongs to."""
    return path.parent.parent.name if path.parent.name == SUBAGENTS else None


def group(paths: list[Path]) -> list[SessionFiles]:
    """Each chat's transcript with its sub-agents' files; a ``.txt`` beside a ``.jsonl`` of the same chat
    is left to it (Cursor wrote the JSONL since)."""
    mains: dict[Path, list[SubagentFile]] = {}
    orphans: dict[str, list[SubagentFile]] = {}
    subs = [p for p in paths if _chat_of(p) is not None]
    for path in sorted(set(paths) - set(subs)):
        if path.suffix == ".txt" and path.with_suffix(".jsonl") in paths:
            continue
        mains[path] = []
    for sub in sorted(subs):
        chat = _chat_of(sub)
        owner = next((m for m in mains if m.stem == chat and m.parent.name == chat), None)
        entry = SubagentFile(sub, sub.stem)
        (mains[owner] if owner is not None else orphans.setdefault(chat, [])).append(entry)
    out = [SessionFiles(format=NAME, main=m, subagents=s) for m, s in mains.items()]
    out += [SessionFiles(format=NAME, main=None, subagents=s, session_id=chat) for chat, s in sorted(orphans.items())]
    return out


FORMAT = ENTRY.format(parse=parse, group=group)
