"""Cline and Roo Code task folders -> normalized records (pure, no Django). The Cline CLI's session
folders (``~/.cline/data/sessions/<id>/``) are read by ``cli_session.py``; ``parse`` picks by layout.
Three formats read with this module: Cline's (``format.py``), and Roo Code's and Kilo Code's
(``importers/roo_code/``, ``importers/kilo_code/``: the same task folders, told apart by the extension's
globalStorage folder they lie in); so it defines no ``FORMAT`` of its own.

Cline (VS Code extension ``saoudrizwan.claude-dev``) and its fork Roo Code
(``rooveterinaryinc.roo-cline``) keep each task in ``globalStorage/<extension>/tasks/<taskId>/``:

- ``api_conversation_history.json``: what the model is sent, an Anthropic Messages array
  (``{role, content}``, content a string or blocks: text, image, tool_use, tool_result, thinking);
  Cline adds ``modelInfo{modelId, providerId}`` to a message, Roo ``ts`` (epoch ms) and, on the
  summary its "condense context" writes, ``isSummary: true``;
- ``ui_messages.json``: the chat panel, ``ClineMessage[]`` (``{ts, type: "ask"|"say", ask?, say?,
  text?, conversationHistoryIndex?, conversationHistoryDeletedRange?, modelInfo?}``). Each model
  request is a ``say: "api_req_started"`` whose ``text`` is a JSON string ``ClineApiReqInfo``
  (``tokensIn, tokensOut, cacheWrites, cacheReads, cost, cancelReason?, apiProtocol?`` (Roo));
  Roo's condense is a ``say: "condense_context"`` with ``contextCondense{cost, prevContextTokens,
  newContextTokens, summary}``;
- ``task_metadata.json``: ``{files_in_context[], model_usage[{ts, model_id, model_provider_id,
  mode}]}``.

The folder is the session (storage FOLDER; pointing at one of its files reads the folder). An
``api_conversation_history.json`` on its own (uploaded without its folder) is a session too: its
messages as above, and a model call for each assistant message with Cline's ``metrics``
(``tokens{prompt, completion, cached}``: ``prompt`` counts the cached tokens, which are taken out;
no cache write is recorded), its id the task folder's name when it is in one, else its first
message's hash.
Mapping: each history message is a message (a user message made only of tool_result blocks is a
``tool`` message); uuids are the message's ``ts`` where the history has it (Roo), else its
position. Usage: one ``UsageRecord`` per ``api_req_started`` with token figures (measured):
``tokensIn`` = input (uncached; Roo's ``apiProtocol: "openai"`` counts cached tokens inside it, so
they are taken out), ``cacheReads``, ``cacheWrites``, ``tokensOut``; matched to the assistant
message it wrote: the first assistant message after ``conversationHistoryIndex`` (Cline), else
the first assistant message at or after the request's ``ts`` (Roo), else in order. A request whose
message the history no longer holds (a condense dropped it, the request failed) is kept on the
next matched message (flagged). A Roo summary (``isSummary``) gets a ``compact_boundary`` marker
before it and a ``FoldRecord`` (tokens before/after from the matching ``condense_context``; the
messages its condense did not tag ``condenseParent`` preserved). A Cline truncation (a request whose
``conversationHistoryDeletedRange`` is new) is a ``FoldRecord`` without summary: a marker before
the message that request wrote, the messages outside the range preserved, the contexts of the
requests before and after as tokens before/after.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextviewer.core.records import BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import (
    TimeSpan,
    as_list,
    compact_json,
    content_blocks,
    json_kind,
    pos_int,
    str_or_none,
    timestamp,
)
from contextviewer.importers.driver import guarded
from contextviewer.importers.formats import ParseInput, SessionFiles
from contextviewer.importers.jsondoc import Document, read_json_file
from contextviewer.importers.cline.cli_session import parse_session_folder
from contextviewer.importers.cline.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    HISTORY,
    is_cli_file,
    is_cli_session,
    METADATA,
    NAME,
    TASK_FILES,
    UI,
    _is_task_folder,
    in_session_folder,
    sniff,
)


def grouper(name: str):
    """The ``group`` of the format ``name`` (Cline's, or a fork's that reads with this module)."""

    def group(paths: list[Path]) -> list[SessionFiles]:
        """Each path as its task folder, each folder once."""
        folders: dict[Path, None] = {}
        for path in paths:
            if path.is_file() and not in_session_folder(path):
                folders.setdefault(path, None)  # a history file on its own: the file
                continue
            folders.setdefault(path if path.is_dir() else path.parent, None)  # a task's or a CLI session's file: its folder
        return [SessionFiles(format=name, main=folder) for folder in sorted(folders)]

    return group


group = grouper(NAME)


def _dict(value: Any) -> dict:
    return value if value.__class__ is dict else {}


def _read(folder: Path, name: str, bad: list[BadLine], *, required: bool) -> Any:
    path = folder / name
    if not path.is_file():
        if required:
            bad.append(BadLine(0, 0, f"{name} is missing from the task folder"))
        return None
    doc = read_json_file(path)
    if not isinstance(doc, Document):
        bad.append(BadLine(0, 0, f"{name}: {doc.reason}", size=doc.size))
        return None
    return doc.value


def _is_range(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            and 0 <= value[0] <= value[1])


def _request_info(message: dict) -> dict | None:
    text = message.get("text")
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class _Task:
    def __init__(self, folder: Path, bad: list[BadLine]):
        self.folder = folder
        self.session_id = folder.name
        self.bad = bad
        self.messages: list[MessageRecord] = []
        self.history_index: list[int] = []  # history position of each message in self.messages (-1: a marker)
        self.span = TimeSpan()
        self.models: list[str] = []
        # Cline's truncations: (the first message a request wrote with a new deleted range, the range,
        # the context before and after, when)
        self.truncations: list[tuple[MessageRecord, tuple[int, int], int | None, int, Any]] = []

    def _uuid(self, index: int, m: dict, seen: set[str]) -> str:
        ts = m.get("ts")
        uuid = f"ts:{ts}:{m.get('role')}" if isinstance(ts, int) and not isinstance(ts, bool) else f"history:{index + 1}"
        if uuid in seen:
            uuid = f"{uuid}:{index + 1}"
        seen.add(uuid)
        return uuid

    def history(self, items: list) -> None:
        seen: set[str] = set()
        for index, m in enumerate(items):
            n = index + 1
            if not isinstance(m, dict):
                self.bad.append(BadLine(n, n, f"{HISTORY} element {n} is {json_kind(m)}, not a message"))
                continue
            try:
                self._message(index, m, seen)
            except Exception as exc:  # one odd element must not stop the import
                self.bad.append(BadLine(n, n, f"{HISTORY} element {n} could not be read ({exc.__class__.__name__}: {exc})"))

    def _message(self, index: int, m: dict, seen: set[str]) -> None:
        n = index + 1
        role = m.get("role")
        blocks = content_blocks(m.get("content"))
        model_info = _dict(m.get("modelInfo"))
        model = str_or_none(model_info.get("modelId"))
        flags: dict[str, Any] = {}
        for key in ("condenseId", "condenseParent", "truncationParent", "isTruncationMarker"):
            if key in m:
                flags[key] = m[key]
        if role == "assistant":
            kind = "assistant"
        elif role == "user":
            kind = "tool" if blocks and all(b.kind == "tool_result" for b in blocks) else "user"
        else:
            kind = "other"
        uuid = self._uuid(index, m, seen)
        ts = self.span.saw(timestamp(m.get("ts")))
        summary = m.get("isSummary") is True
        if summary:
            marker = MessageRecord(line_no=n, offset=n, role="system", record_type="condense", raw=compact_json({"isSummary": True}),
                                   blocks=[Block("text", text="Roo Code condensed the context: the summary below stands for the earlier messages")],
                                   uuid=f"{uuid}:boundary", subtype="compact_boundary", timestamp=ts, session_id=self.session_id,
                                   is_meta=True)
            self.messages.append(marker)
            self.history_index.append(-1)
        record = MessageRecord(line_no=n, offset=n, role=kind, record_type=str(role or "(none)")[:60], raw=compact_json(m),
                               blocks=blocks, uuid=uuid, timestamp=ts, session_id=self.session_id, model=model,
                               is_compact_summary=summary, flags=flags)
        self.messages.append(record)
        self.history_index.append(index)

    # -- usage

    def usage(self, ui: list, metadata: dict) -> list[UsageRecord]:
        requests: list[tuple[int, dict, dict]] = []  # (ui number, ui message, request info)
        for number, message in enumerate(ui, start=1):
            if not isinstance(message, dict) or message.get("say") != "api_req_started":
                continue
            info = _request_info(message)
            if info is None:
                self.bad.append(BadLine(0, 0, f"{UI} entry {number} (api_req_started) has no readable request info"))
                continue
            if not any(k in info for k in ("tokensIn", "tokensOut", "cacheReads", "cacheWrites")):
                continue  # a request still running, or one that never got an answer: nothing measured
            requests.append((number, message, info))
        assistants = [(i, r) for i, r in enumerate(self.messages) if r.role == "assistant" and not r.is_compact_summary]
        matched = self._match(requests, assistants)
        # A request whose message the history no longer holds: on the next matched message.
        for k in range(len(matched) - 1, -1, -1):
            if matched[k] is None:
                later = next((matched[j] for j in range(k + 1, len(matched)) if matched[j] is not None), None)
                if later is None:
                    later = assistants[-1][0] if assistants else (len(self.messages) - 1 if self.messages else None)
                matched[k] = later
                if later is not None:
                    self.messages[later].flags["unmatched_requests"] = self.messages[later].flags.get("unmatched_requests", 0) + 1
        usage_by_model = sorted((e for e in as_list(metadata.get("model_usage")) if isinstance(e, dict)),
                                key=lambda e: e.get("ts") if isinstance(e.get("ts"), (int, float)) else 0)
        out: list[UsageRecord] = []
        last_range: Any = None
        for (number, message, info), position in zip(requests, matched, strict=True):
            if position is None:
                self.bad.append(BadLine(0, 0, f"{UI} entry {number}: a model call with no message to attach it to"))
                continue
            record = self.messages[position]
            ts = message.get("ts")
            model = str_or_none(_dict(message.get("modelInfo")).get("modelId")) or record.model
            if model is None and isinstance(ts, (int, float)):
                model = next((str_or_none(e.get("model_id")) for e in reversed(usage_by_model)
                              if isinstance(e.get("ts"), (int, float)) and e["ts"] <= ts), None)
            if model is None and usage_by_model:
                model = str_or_none(usage_by_model[0].get("model_id"))
            if model and record.model is None:
                record.model = model
            if model and model not in self.models:
                self.models.append(model)
            when = timestamp(ts)
            if record.timestamp is None:
                record.timestamp = self.span.saw(when)
            tokens_in = pos_int(info.get("tokensIn"))
            read = pos_int(info.get("cacheReads"))
            write = pos_int(info.get("cacheWrites"))
            if info.get("apiProtocol") == "openai":  # Roo: the input count holds the cached tokens
                tokens_in = max(0, tokens_in - read - write)
            call_id = f"req:{ts}" if isinstance(ts, (int, float)) else f"req:{number}"
            if record.api_message_id is None:
                record.api_message_id = call_id
            cost = info.get("cost")
            if isinstance(cost, (int, float)) and not isinstance(cost, bool):
                record.flags["cost"] = round(record.flags.get("cost", 0) + cost, 10)
            if info.get("cancelReason"):
                record.flags["cancel_reason"] = info["cancelReason"]
            out.append(UsageRecord(api_message_id=call_id, request_id=None, message_uuid=record.uuid, line_no=record.line_no,
                                   model=model, input_uncached=tokens_in, cache_write=write, cache_read=read,
                                   output=pos_int(info.get("tokensOut")), timestamp=when))
            deleted = message.get("conversationHistoryDeletedRange")
            if _is_range(deleted) and deleted != last_range:
                before = out[-2].context_size if len(out) > 1 else None
                self.truncations.append((record, tuple(deleted), before, out[-1].context_size, when))
            if _is_range(deleted):
                last_range = deleted
        return out

    def _match(self, requests: list[tuple[int, dict, dict]], assistants: list[tuple[int, MessageRecord]]) -> list[int | None]:
        """The position of the message each request wrote (None: the history no longer holds it)."""
        matched: list[int | None] = [None] * len(requests)
        taken: set[int] = set()
        indexed = [isinstance(m.get("conversationHistoryIndex"), int) for _, m, _ in requests]
        if requests and all(indexed):  # Cline: the history's last message when the request went out
            for k, (_number, message, _info) in enumerate(requests):
                after = message["conversationHistoryIndex"]
                choice = next((i for i, _r in assistants if i not in taken and self.history_index[i] > after), None)
                if choice is not None:
                    taken.add(choice)
                matched[k] = choice
            return matched
        stamps: list = [m.get("ts") if isinstance(m.get("ts"), (int, float)) else None for _, m, _ in requests]
        if requests and all(s is not None for s in stamps) and assistants and all(r.timestamp for _, r in assistants):
            # Roo: each assistant message was written by the latest request that started before it.
            used: set[int] = set()
            for i, record in assistants:
                when = record.timestamp.timestamp() * 1000
                k = next((k for k in range(len(requests) - 1, -1, -1) if k not in used and stamps[k] <= when), None)
                if k is not None:
                    used.add(k)
                    matched[k] = i
            return matched
        for k, (i, _r) in enumerate(assistants[: len(requests)]):  # in order
            matched[k] = i
        return matched

    def metrics_usage(self, items: list) -> list[UsageRecord]:
        """A lone history's model calls: an assistant message's ``metrics`` (``tokens{prompt,
        completion, cached}``, ``prompt`` counting the cached tokens; ``cost``)."""
        out: list[UsageRecord] = []
        for record, index in zip(self.messages, self.history_index, strict=True):
            if index < 0 or record.role != "assistant" or record.is_compact_summary:
                continue
            metrics = _dict(items[index].get("metrics"))
            tokens = _dict(metrics.get("tokens"))
            if not tokens:
                continue
            cached = pos_int(tokens.get("cached"))
            call_id = f"history:{index + 1}"
            record.api_message_id = record.api_message_id or call_id
            cost = metrics.get("cost")
            if isinstance(cost, (int, float)) and not isinstance(cost, bool):
                record.flags["cost"] = cost
            if record.model and record.model not in self.models:
                self.models.append(record.model)
            out.append(UsageRecord(api_message_id=call_id, request_id=None, message_uuid=record.uuid, line_no=record.line_no,
                                   model=record.model, input_uncached=max(0, pos_int(tokens.get("prompt")) - cached),
                                   cache_write=0, cache_read=cached, output=pos_int(tokens.get("completion")),
                                   timestamp=record.timestamp))
        return out

    # -- folds

    def folds(self, ui: list) -> list[FoldRecord]:
        condenses = [_dict(m.get("contextCondense")) | {"ts": m.get("ts")} for m in ui
                     if isinstance(m, dict) and m.get("say") == "condense_context"]
        out: list[FoldRecord] = []
        summaries = [(i, r) for i, r in enumerate(self.messages) if r.is_compact_summary]
        for k, (i, summary) in enumerate(summaries):
            condense = condenses[k] if k < len(condenses) else {}
            boundary = self.messages[i - 1] if i > 0 and self.messages[i - 1].subtype == "compact_boundary" else None
            before = pos_int(condense.get("prevContextTokens")) or None
            after = pos_int(condense.get("newContextTokens")) or None
            if boundary is not None and before:
                boundary.blocks[0].text += f" ({before:,} tokens before, {after or 0:,} after)"
            metadata = {k2: condense[k2] for k2 in ("cost",) if k2 in condense}
            text = "\n".join(b.text for b in summary.blocks if b.kind == "text")
            # Kept across the condense: the messages before it it did not tag (Roo keeps the first);
            # a destructive condense left only those in the file.
            condense_id = summary.flags.get("condenseId")
            tagged = condense_id is not None and any(m.flags.get("condenseParent") == condense_id for m in self.messages[:i])
            preserved = [m.uuid for m in self.messages[:i] if m.role != "system" and not m.is_compact_summary
                         and "condenseParent" not in m.flags] if tagged else [m.uuid for m in self.messages[:1]]
            out.append(FoldRecord(line_no=summary.line_no, boundary_uuid=boundary.uuid if boundary else summary.uuid,
                                  kind="compact", trigger=None, tokens_before=before, tokens_after=after,
                                  preserved_uuids=[u for u in preserved if u],
                                  summary_uuid=summary.uuid, summary_text=text, timestamp=timestamp(condense.get("ts")) or summary.timestamp,
                                  metadata=metadata))
        out.extend(self._truncation_folds())
        return out

    def _truncation_folds(self) -> list[FoldRecord]:
        """Cline's context truncation: from a request on, the history it sends leaves out the
        messages in ``conversationHistoryDeletedRange`` (no summary). A marker before the message
        that request wrote closes the archived segment; the messages before it outside the range
        are kept (preserved)."""
        out: list[FoldRecord] = []
        for record, (start, end), before, after, when in self.truncations:
            i = next(k for k, m in enumerate(self.messages) if m is record)
            preserved = [m.uuid for k, m in enumerate(self.messages[:i]) if m.uuid and self.history_index[k] >= 0
                         and not start <= self.history_index[k] <= end]
            text = (f"Cline truncated the context: history messages {start + 1} to {end + 1} are no longer sent"
                    + (f" ({before:,} tokens before, {after:,} after)" if before else ""))
            marker = MessageRecord(line_no=record.line_no, offset=record.line_no, role="system", record_type="context_truncation",
                                   raw=compact_json({"conversationHistoryDeletedRange": [start, end]}), blocks=[Block("text", text=text)],
                                   uuid=f"truncation:{start}:{end}", subtype="compact_boundary", timestamp=when,
                                   session_id=self.session_id, is_meta=True, flags={"deleted_range": [start, end]})
            self.messages.insert(i, marker)
            self.history_index.insert(i, -1)
            out.append(FoldRecord(line_no=record.line_no, boundary_uuid=marker.uuid, kind="compact", trigger="auto",
                                  tokens_before=before, tokens_after=after, preserved_uuids=preserved, timestamp=when,
                                  metadata={"deleted_range": [start, end]}))
        return out


def _title(ui: list) -> str | None:
    """The task as the chat panel shows it (its first line)."""
    for m in ui:
        if isinstance(m, dict) and m.get("say") == "task" and isinstance(m.get("text"), str) and m["text"].strip():
            return m["text"].strip().splitlines()[0][:200]
    return None


_TASK_TEXT = re.compile(r"<task>\s*(.*?)\s*</task>", re.S)


def _history_title(messages: list[MessageRecord]) -> str | None:
    """A lone history's task: the ``<task>`` of its first user message (its first line)."""
    first = next((m for m in messages if m.role == "user"), None)
    text = "\n".join(b.text or "" for b in first.blocks if b.kind == "text") if first else ""
    found = _TASK_TEXT.search(text)
    lines = found.group(1).strip().splitlines() if found else []
    return lines[0][:200] if lines else None


def _history_id(path: Path, items: list) -> str:
    """A lone history's session: its task folder's name (a Cline task id, epoch ms) where it is in
    one, else a hash of its first message (the same file grown keeps it)."""
    if path.parent.name.isdigit():
        return path.parent.name
    first = compact_json(items[0]) if items else path.name
    return "history-" + hashlib.sha256(first.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def parse_history_file(path: Path) -> Iterator[Record]:
    """An ``api_conversation_history.json`` without its task folder: its messages, and its
    assistant messages' ``metrics`` as their model calls."""
    bad: list[BadLine] = []
    items = _read(path.parent, path.name, bad, required=True)
    if items is not None and not isinstance(items, list):
        bad.append(BadLine(0, 0, f"{path.name} is {json_kind(items) if not isinstance(items, dict) else 'a JSON object'}, not a message array"))
        items = None
    items = items or []
    task = _Task(path.parent, bad)
    task.session_id = _history_id(path, items)
    task.history(items)
    usage = task.metrics_usage(items)
    folds = task.folds([])
    yield from bad
    yield from task.messages
    yield from usage
    yield from folds
    yield SessionInfo(external_id=task.session_id, title=_history_title(task.messages), models=task.models,
                      started_at=task.span.started_at, ended_at=task.span.ended_at)


def parse_folder(folder: Path) -> Iterator[Record]:
    bad: list[BadLine] = []
    if folder.is_file() and not in_session_folder(folder):
        yield from parse_history_file(folder)
        return
    if folder.is_file():
        folder = folder.parent
    if not (folder / HISTORY).is_file() and is_cli_session(folder):
        yield from parse_session_folder(folder)
        return
    history = _read(folder, HISTORY, bad, required=True)
    ui = _read(folder, UI, bad, required=False)
    metadata = _read(folder, METADATA, bad, required=False)
    if history is not None and not isinstance(history, list):
        bad.append(BadLine(0, 0, f"{HISTORY} is {json_kind(history) if not isinstance(history, dict) else 'a JSON object'}, not a message array"))
        history = None
    if ui is not None and not isinstance(ui, list):
        bad.append(BadLine(0, 0, f"{UI} is not a JSON array: its model calls are not imported"))
        ui = None
    task = _Task(folder, bad)
    task.history(history or [])
    usage = task.usage(ui or [], _dict(metadata))
    folds = task.folds(ui or [])
    yield from bad
    yield from task.messages
    yield from usage
    yield from folds
    yield SessionInfo(
        external_id=task.session_id,
        title=_title(ui or []),
        models=task.models,
        started_at=task.span.started_at,
        ended_at=task.span.ended_at,
    )


def parse(source: ParseInput) -> Iterator[Record]:
    """Records of one task folder (never raises)."""
    yield from guarded(parse_folder(Path(source.path)))
