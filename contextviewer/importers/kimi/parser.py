"""Kimi CLI session folders -> normalized records. Checked against what Kimi CLI 1.51.0 wrote and sent,
run offline against a scripted model server (ops/drivers/kimi.py, issue 39); the format's facts from
its own source (soul/context.py, soul/kimisoul.py ``compact_context``, soul/compaction.py,
utils/path.py ``next_available_rotation``, tools/agent/).

Pure. A session is a folder ``<work folder hash>/<session id>/``:

- ``context.jsonl``: what the model is given, one record a line: ``{"role": "_system_prompt",
  "content"}``, ``{"role": "_checkpoint", "id"}`` (before each prompt and step), ``{"role": "_usage",
  "token_count"}`` (the context size: the call's input before its answer, input + output after), and
  messages in the Chat Completions shape Kimi sends (``user``, ``assistant`` with ``tool_calls``,
  ``tool`` with ``tool_call_id``; ``content`` a string or text / think / image parts). One model
  call per assistant message.
- A compaction (``compact_context``: automatic when the context plus the 50,000 reserved for the
  answer reaches the window, or 85 % of it; ``/compact``) moves the file aside to
  ``context_<n>.jsonl`` (n = 1, 2, ...: the oldest first) and starts a new one: the system prompt, a
  checkpoint, a user message ``<system>Previous context has been compacted. Here is the compaction
  output:</system>`` + the summary, then copies of the last two user / assistant messages (with their
  tool messages), then a ``_usage`` estimate. Each new file that starts so is a fold: that message is
  its summary, the copies are the earlier messages it kept (found at the end of the file before:
  not stored twice). An undo moves the file aside too, without a summary: the new file goes on.
- ``wire.jsonl``: the UI's events; its ``StatusUpdate`` events (outside a ``SubagentEvent``) hold
  each main call's ``token_usage`` (``input_other``, ``input_cache_read``, ``input_cache_creation``,
  ``output``) and ``message_id``, in call order: the usage read when they match the calls one to
  one, else the ``_usage`` figures around each answer (input before it, output = after - before).
  A ``CompactionBegin`` after a ``TurnBegin`` whose input is ``/compact`` is a manual fold.
- ``state.json``: ``custom_title`` is the title. ``subagents/<agent id>/``: a sub-agent's own
  ``context.jsonl`` and ``wire.jsonl``, ``meta.json`` (``subagent_type``, ``description``); it is
  linked to the ``Agent`` call whose result says ``agent_id: <id>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextviewer.core.harness import Harness
from contextviewer.core.records import AgentLink, BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import TimeSpan, json_arguments, json_kind, pos_int, str_or_none, timestamp, tool_call
from contextviewer.importers.formats import ParseInput, SessionFiles, SubagentFile
from contextviewer.importers.kimi.entry import (  # noqa: F401 - the light part
    CONTEXT,
    ENTRY,
    NAME,
    ROTATED,
    folder_of,
    is_session_folder,
    sniff,
)
from contextviewer.importers.lines import Line, iter_lines

COMPACTED = "<system>Previous context has been compacted"  # soul/compaction.py COMPACTION_OUTPUT_PREFIX
AGENT_ID = re.compile(r"^agent_id:\s*(\S+)", re.MULTILINE)
WORKDIR = re.compile(r"The current working directory is `([^`]+)`")
SUBAGENTS = "subagents"


def _dict(value: Any) -> dict:
    return value if value.__class__ is dict else {}


def content_blocks(content: Any) -> list[Block]:
    """A message's ``content``: a string, or text / think / image_url parts (one block each)."""
    if content.__class__ is str:
        return [Block("text", text=content)] if content else []
    blocks = []
    for part in content if content.__class__ is list else ():
        part = _dict(part)
        kind = part.get("type")
        if kind == "text" and str_or_none(part.get("text")):
            blocks.append(Block("text", text=part["text"]))
        elif kind == "think":
            blocks.append(Block("thinking", text=part.get("think") if part.get("think").__class__ is str else ""))
        elif kind in ("image_url", "audio_url", "video_url"):
            blocks.append(Block("image" if kind == "image_url" else "other", text="", raw_type=kind))
        elif kind is not None and kind != "text":
            blocks.append(Block("other", text="", raw_type=str(kind)[:60]))
    return blocks


def _text(blocks: list[Block]) -> str:
    return "\n".join(b.text for b in blocks if b.kind == "text")


@dataclass
class _Line:
    file: str
    line_no: int
    offset: int
    raw: str
    obj: dict


def read_lines(path: Path, max_line_bytes: int, bad: list[BadLine]) -> list[_Line]:
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
            if obj.__class__ is not dict or obj.get("role").__class__ is not str:
                what = json_kind(obj) if obj.__class__ is not dict else "an object without a role"
                bad.append(BadLine(item.line_no, item.offset, f"{path.name} line {item.line_no} is {what}, not a Kimi CLI context record"))
                continue
            out.append(_Line(path.name, item.line_no, item.offset, text, obj))
    return out


def context_files(folder: Path) -> list[Path]:
    """The context files oldest first: context_1.jsonl, context_2.jsonl, ..., context.jsonl."""
    rotated = []
    for path in folder.iterdir():
        m = ROTATED.match(path.name)
        if m and path.is_file():
            rotated.append((int(m.group(1)), path))
    return [p for _n, p in sorted(rotated)] + ([folder / CONTEXT] if (folder / CONTEXT).is_file() else [])


def _same(a: dict, b: dict) -> bool:
    """A message the compaction copied into the new file, and the one it copied."""
    keys = ("role", "content", "tool_calls", "tool_call_id")
    return all(a.get(k) == b.get(k) for k in keys)


class _Session(TimeSpan):
    def __init__(self, source: ParseInput, folder: Path):
        super().__init__()
        self.source, self.folder = source, folder
        self.session = folder.name
        self.bad: list[BadLine] = []
        self.records: list[MessageRecord] = []
        self.calls: list[UsageRecord] = []
        self.folds: list[FoldRecord] = []
        self.usage: list[tuple[int, int | None]] = []  # per call: (input before, context after)
        self.cwd: str | None = None
        self.window: int | None = None
        self.base = 0  # lines of the files read before: positions run on across the files
        self.file_start = 0  # where the messages of the file read last begin in what was read

    def run(self) -> Iterator[Record]:
        files = context_files(self.folder)
        sent: list[tuple[str, dict]] = []  # (uuid, message) of the messages read, in order
        for n, path in enumerate(files):
            lines = read_lines(path, self.source.max_line_bytes, self.bad)
            self._file(path, lines, sent, first=n == 0)
            self.base += max((ln.line_no for ln in lines), default=0)
        self._measure()
        links = self._links() if self.source.agent_id is None else []
        yield from self.bad
        yield from self.records
        yield from self.calls
        yield from self.folds
        yield from links
        yield self.info()

    def _file(self, path: Path, lines: list[_Line], sent: list[tuple[str, dict]], first: bool) -> None:
        messages = [ln for ln in lines if not ln.obj["role"].startswith("_")]
        summary = messages[0] if messages and not first else None
        if summary is not None and not (summary.obj["role"] == "user" and _text(content_blocks(summary.obj.get("content"))).startswith(COMPACTED)):
            summary = None
        kept: list[str] = []
        copies: set[int] = set()
        if summary is not None:
            # The copies: the messages after the summary up to the first record of Kimi's own.
            after = lines[lines.index(summary) + 1:]
            run = []
            for ln in after:
                if ln.obj["role"].startswith("_"):
                    break
                run.append(ln)
            # Found at the end of what was read before (the kept messages, in order).
            if run and len(run) <= len(sent) and all(_same(a.obj, b) for a, (_u, b) in zip(run, sent[-len(run):])):
                kept = [u for u, _m in sent[-len(run):]]
                copies = {id(ln) for ln in run}
        elif not first:
            # An undo (revert_to): the new file starts with the lines of the one before up to the
            # checkpoint it went back to. Those are that file's messages again: not stored twice.
            before = [m for _u, m in sent[self.file_start:]]
            for ln, old in zip(messages, before):
                if not _same(ln.obj, old):
                    break
                copies.add(id(ln))
        self.file_start = len(sent)
        last_usage: int | None = None
        pending_call: int | None = None  # index in self.usage of the last answer, awaiting its after-figure
        for ln in lines:
            role = ln.obj["role"]
            if role == "_system_prompt":
                if self.cwd is None and ln.obj.get("content").__class__ is str and (m := WORKDIR.search(ln.obj["content"])):
                    self.cwd = m.group(1)
                continue
            if role == "_checkpoint":
                continue
            if role == "_usage":
                count = ln.obj.get("token_count")
                count = count if count.__class__ is int and count >= 0 else None
                if pending_call is not None:
                    self.usage[pending_call] = (self.usage[pending_call][0], count)
                    pending_call = None
                else:
                    last_usage = count
                continue
            if id(ln) in copies:
                continue
            record = self._message(ln)
            if ln is summary:
                record.is_compact_summary, record.is_meta = True, True
                marker = MessageRecord(line_no=record.line_no, offset=record.offset, role="system", record_type="compaction", raw=ln.raw,
                                       blocks=[Block("text", text="Kimi CLI compacted the context")],
                                       uuid=f"{record.uuid}:boundary", subtype="compact_boundary", session_id=self.session)
                self.records.append(marker)
                self.folds.append(FoldRecord(line_no=record.line_no, boundary_uuid=marker.uuid, kind="compact", trigger=None,
                                             tokens_before=None, summary_uuid=record.uuid,
                                             summary_text=_text(record.blocks).split("</system>", 1)[-1].strip(),
                                             preserved_uuids=kept, metadata={"file": path.name}))
            self.records.append(record)
            sent.append((record.uuid, ln.obj))
            if record.role == "assistant":
                record.api_message_id = record.uuid
                self.usage.append((last_usage or 0, None))
                self.calls.append(UsageRecord(api_message_id=record.uuid, request_id=None, message_uuid=record.uuid,
                                              line_no=record.line_no, model=None, timestamp=record.timestamp))
                pending_call, last_usage = len(self.usage) - 1, None
            else:
                pending_call, last_usage = None, None

    def _message(self, ln: _Line) -> MessageRecord:
        obj = ln.obj
        role = obj["role"]
        uuid = f"{ln.file.removesuffix('.jsonl')}:{ln.line_no}"
        record = MessageRecord(line_no=self.base + ln.line_no, offset=self.base + ln.line_no, role="other", record_type=role[:60], raw=ln.raw,
                               uuid=uuid, session_id=self.session)
        blocks = content_blocks(obj.get("content"))
        if role == "assistant":
            record.role = "assistant"
            for call in obj.get("tool_calls") if obj.get("tool_calls").__class__ is list else ():
                fn = _dict(_dict(call).get("function"))
                blocks.append(tool_call(str_or_none(_dict(call).get("id")), str_or_none(fn.get("name")), json_arguments(fn.get("arguments"))))
        elif role == "tool":
            record.role = "tool"
            blocks = [Block("tool_result", text=_text(blocks), tool_id=str_or_none(obj.get("tool_call_id")))]
        elif role in ("user", "system"):
            record.role = role
            record.is_meta = role == "user" and _text(blocks).startswith("<system>")
        record.blocks = blocks
        return record

    # -- usage: wire.jsonl's StatusUpdates where they match the calls, else the _usage figures

    def _measure(self) -> None:
        status, compactions, turns = self._wire()
        measured = len(status) == len(self.calls)
        by_uuid = {r.uuid: r for r in self.records}
        prompts = [r for r in self.records if r.role == "user" and not r.is_meta]
        k = 0
        for text, when in turns:  # each turn's prompt, when it was typed (a /compact turn writes none)
            found = next((i for i in range(k, len(prompts)) if _text(prompts[i].blocks).strip() == text.strip()), None)
            if found is not None:
                prompts[found].timestamp, k = when, found + 1
        for n, call in enumerate(self.calls):
            if measured:
                payload, when = status[n]
                call.timestamp = by_uuid[call.message_uuid].timestamp = when
                usage = _dict(payload.get("token_usage"))
                call.input_uncached = pos_int(usage.get("input_other"))
                call.cache_read = pos_int(usage.get("input_cache_read"))
                call.cache_write = pos_int(usage.get("input_cache_creation"))
                call.output = pos_int(usage.get("output"))
                call.request_id = str_or_none(payload.get("message_id"))
            else:
                before, after = self.usage[n]
                call.input_uncached = before
                call.output = max(0, after - before) if after is not None and before else 0
        for fold, manual in zip(self.folds, compactions):
            fold.trigger = "manual" if manual else "auto"

    def _wire(self) -> tuple[list[tuple[dict, Any]], list[bool], list[tuple[str, Any]]]:
        """The main agent's StatusUpdate payloads with their times, in order; for each compaction
        whether a ``/compact`` turn asked for it; each turn's input with its time."""
        status: list[tuple[dict, Any]] = []
        compactions: list[bool] = []
        turns: list[tuple[str, Any]] = []
        path = self.folder / "wire.jsonl"
        try:
            text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        except OSError:
            text = ""
        turn = ""
        for line in text.splitlines():
            try:
                event = json.loads(line)
            except (ValueError, RecursionError):
                continue
            message = _dict(_dict(event).get("message"))
            kind, payload = message.get("type"), _dict(message.get("payload"))
            when = self.saw(timestamp(_dict(event).get("timestamp")))
            if kind == "TurnBegin":
                turn = payload.get("user_input") if payload.get("user_input").__class__ is str else ""
                turns.append((turn, when))
            elif kind == "StatusUpdate" and payload.get("token_usage").__class__ is dict:
                status.append((payload, when))
                if payload.get("max_context_tokens").__class__ is int and payload["max_context_tokens"] > 0:
                    self.window = payload["max_context_tokens"]
            elif kind == "CompactionBegin":
                compactions.append(turn.strip().startswith("/compact"))
        return status, compactions, turns

    def _links(self) -> list[AgentLink]:
        """Each sub-agent under the Agent call whose result names its id (``agent_id: <id>``)."""
        calls = {b.tool_id: (r, b) for r in self.records for b in r.blocks if b.kind == "tool_call" and b.tool_id}
        out = []
        for r in self.records:
            for b in r.blocks:
                if b.kind != "tool_result" or b.tool_id not in calls:
                    continue
                m = AGENT_ID.search(b.text or "")
                if m is None or not (self.folder / SUBAGENTS / m.group(1)).is_dir():
                    continue
                record, block = calls[b.tool_id]
                meta = _read_json(self.folder / SUBAGENTS / m.group(1) / "meta.json")
                out.append(AgentLink(m.group(1), block.tool_id, record.line_no, str_or_none(meta.get("subagent_type")),
                                     str_or_none(meta.get("description"))))
        return out

    def info(self) -> SessionInfo:
        state = _read_json(self.folder / "state.json")
        title = str_or_none(state.get("custom_title"))
        if title is None:
            first = next((r for r in self.records if r.role == "user" and not r.is_meta), None)
            text = _text(first.blocks).strip() if first else ""
            title = text.splitlines()[0][:200] if text else None
        return SessionInfo(external_id=self.session, title=title, cwd=self.cwd, window=self.window, started_at=self.started_at,
                           ended_at=self.ended_at)


def _read_json(path: Path) -> dict:
    try:
        return _dict(json.loads(path.read_text(encoding="utf-8", errors="replace")))
    except (OSError, ValueError, RecursionError):
        return {}


def parse(source: ParseInput) -> Iterator[Record]:
    """A session (or sub-agent) folder, or a context.jsonl on its own (its folder when it has one)."""
    path = source.path
    folder = path if path.is_dir() else (folder_of(path) or None)
    if folder is None:
        if not path.is_file():
            yield BadLine(0, 0, f"{path.name} is no Kimi CLI session folder: it has no {CONTEXT}")
            yield SessionInfo(external_id=path.name)
            return
        folder = path.parent
    if not (folder / CONTEXT).is_file() and not context_files(folder):
        yield BadLine(0, 0, f"{folder.name} is no Kimi CLI session folder: it has no {CONTEXT}")
        yield SessionInfo(external_id=folder.name)
        return
    yield from _Session(source, folder).run()


def _parent(folder: Path) -> Path | None:
    """The session a sub-agent folder (``<session>/subagents/<id>/``) belongs to."""
    if folder.parent.name == SUBAGENTS and is_session_folder(folder.parent.parent):
        return folder.parent.parent
    return None


def group(paths: list[Path]) -> list[SessionFiles]:
    """Each session folder (a file of one stands for it) with its sub-agents' folders."""
    folders: dict[Path, None] = {}
    for path in paths:
        folders.setdefault((path if path.is_dir() else folder_of(path)) or path, None)
    out = []
    for folder in sorted(folders):
        parent = _parent(folder) if folder.is_dir() else None
        if parent is not None:
            if parent not in folders:  # named without its session: under the session's conversation, if imported
                meta = _read_json(folder / "meta.json")
                out.append(SessionFiles(format=NAME, main=None, session_id=parent.name,
                                        subagents=[SubagentFile(folder, folder.name, str_or_none(meta.get("subagent_type")))]))
            continue
        subs = []
        base = folder / SUBAGENTS if folder.is_dir() else None
        for sub in sorted(base.iterdir()) if base is not None and base.is_dir() else ():
            if sub.is_dir() and is_session_folder(sub):
                subs.append(SubagentFile(sub, sub.name, str_or_none(_read_json(sub / "meta.json").get("subagent_type"))))
        out.append(SessionFiles(format=NAME, main=folder, subagents=subs))
    return out


# The harness's rules (Kimi CLI 1.51.0, config.py LoopControl, soul/compaction.py should_auto_compact):
# it compacts when the context reaches 85 % of the window (compaction_trigger_ratio) or when the
# context plus reserved_context_size (50,000) reaches it.
HARNESS = Harness(fold_label="Kimi CLI compact 85 %", fold_fraction=0.85)

FORMAT = ENTRY.format(parse=parse, group=group, harness=HARNESS)
