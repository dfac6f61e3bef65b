"""opencode (and Kilo's) sessions -> normalized records (see ../shared/docs/formats.md §6.2): the
reader both formats share (importers/opencode/parser.py and importers/kilo/parser.py build their
FORMAT on it). Kilo (``@kilocode/cli``) is an opencode fork: ``~/.local/share/kilo/kilo.db`` has
the same tables, message and part shapes (checked on 7.7.7 against opencode 1.18.33).

Two stores hold the same data, and both are read here (storage FOLDER: ``parse`` takes the
folder, or the database file, as ``source.path``):

- opencode ≤ 1.1, the JSON storage folder (``~/.local/share/opencode/storage``):
  ``session/<projectID>/<sessionID>.json``, ``message/<sessionID>/<messageID>.json`` and
  ``part/<messageID>/<partID>.json`` (early builds: ``part/<partID>.json`` with a ``messageID``);
- opencode ≥ 1.2, the SQLite database ``opencode.db``: tables ``session`` (columns), ``message``
  and ``part`` (``id``, ``session_id``/``message_id``, ``time_created``, ``data`` = the same JSON
  without its ids).

Mapping:

- a session is a conversation; a session with a ``parentID`` (a sub-agent run by the ``task``
  tool) becomes a child conversation of its top session (records with ``agent_id`` = its id,
  ``agent_kind="inline"``), linked by an ``AgentLink`` to the task call whose
  ``state.metadata.sessionId`` (or ``task_id:`` output) names it. Grandchildren hang under the top
  session too. A child whose parent is not in the store is imported as a conversation of its own;
- an assistant message is cut at its ``step-finish`` parts: each step (one model call) is one
  assistant message (reasoning -> thinking, text, tool -> tool_call, file/patch/snapshot/agent/
  retry/... -> "other") followed by one ``tool`` message per tool result (``state.output``, or
  ``state.error`` as an error). A result pruned by compaction (``state.time.compacted``) is kept
  as written and flagged ``compacted``;
- usage: each ``step-finish`` part's ``tokens`` is one model call at its step (input = uncached,
  ``cache.write``, ``cache.read``; output = ``output + reasoning``, since opencode counts reasoning
  apart from output); a message with no step-finish but ``tokens`` on the message is one call;
  all-zero token figures are not a measurement and give no call;
- a ``compaction`` part: a ``system`` ``compact_boundary`` marker after its message and a
  ``FoldRecord`` whose summary is the next assistant message with ``summary: true`` (flagged
  ``is_compact_summary``); ``tail_start_id`` (first message kept) gives the preserved messages.
  That summary message is the compaction call (opencode's ``compaction`` agent, the conversation
  so far sent as one text): its usage is the fold's cost (``FoldRecord.cost``), not a
  model call of the conversation. ``tokens_before`` is the measured input of the last call of the
  session (agent) before the fold: opencode records no figure of its own. A summary message no
  compaction part precedes (older stores) is a model call, as before. After the fold opencode
  sends the compaction message as the text "What did we do so far?" (the store keeps the part),
  then the summary, then what follows: an automatic fold goes on by itself with a synthetic user
  message (``metadata.compaction_continue``), Kilo's replays the prompt that overflowed;

Uuids are opencode's own ids (the first step of a message has the message id, later steps
``<id>:step<n>``, tool results ``<part id>:result``), so reading either store again, or both,
stores nothing twice. opencode updates message and part files (rows) in place as a step runs (text
grows, a tool part completes, tokens come with ``step-finish``): the format ``rewrites`` records,
so the ingest updates a stored message whose record changed. Raw records are ``{"info": message, "parts": [...]}`` (the parts of that
record). Nothing here raises: an unreadable file or row is a ``BadLine`` (line 0, its path).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextviewer.core.records import (
    AgentLink,
    BadLine,
    Block,
    FoldRecord,
    MessageRecord,
    Record,
    SessionInfo,
    UsageRecord,
)
from contextviewer.importers.common import compact_json, pos_int as _int, raw_json, str_or_none as _str, tool_call
from contextviewer.importers.driver import unexpected
from contextviewer.importers.sqlite_db import columns as _columns
from contextviewer.importers.opencode.entry import _connect, is_opencode_db

MAX_JSON_BYTES = 64 * 1024 * 1024
TASK_TOOLS = frozenset({"task"})
_TASK_ID = re.compile(r"task_id:\s*(\S+)")
OTHER_PART_TYPES = ("file", "patch", "snapshot", "agent", "subtask", "retry", "compaction")


# -- reading the stores ---------------------------------------------------------------------------


@dataclass
class _Msg:
    info: dict
    parts: list[dict] = field(default_factory=list)


@dataclass
class _Ses:
    id: str
    info: dict
    messages: list[_Msg] | None = None  # loaded when the session is written


def _ms(value: Any) -> datetime | None:
    if value.__class__ not in (int, float) or value != value:
        return None
    try:
        if value > 1e14:  # microseconds
            value = value / 1000
        if value > 1e11:  # milliseconds
            return datetime.fromtimestamp(value / 1000, tz=UTC)
        return datetime.fromtimestamp(value, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _time(obj: dict, key: str) -> Any:
    t = obj.get("time")
    return t.get(key) if t.__class__ is dict else None


class _Folder:
    """The JSON storage folder."""

    def __init__(self, root: Path, bad: list[BadLine]):
        self.root = root
        self.bad = bad
        self._flat_parts: dict[str, list[tuple[str, dict]]] | None = None

    def _load(self, path: Path) -> dict | None:
        rel = path.relative_to(self.root).as_posix()
        try:
            if path.stat().st_size > MAX_JSON_BYTES:
                self.bad.append(BadLine(0, 0, f"{rel} is over {MAX_JSON_BYTES // (1024 * 1024)} MB and was not read"))
                return None
            with open(path, "rb") as fh:
                data = fh.read()
            value = json.loads(data.removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            self.bad.append(BadLine(0, 0, f"{rel} could not be read as JSON ({reason})"))
            return None
        if value.__class__ is not dict:
            self.bad.append(BadLine(0, 0, f"{rel} is not a JSON object"))
            return None
        return value

    @staticmethod
    def _json_files(folder: Path) -> list[Path]:
        try:
            return sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.is_file())
        except OSError:
            return []

    def sessions(self) -> list[_Ses]:
        found: dict[str, _Ses] = {}
        session_dir = self.root / "session"
        if session_dir.is_dir():
            for folder, _dirs, files in sorted(os.walk(session_dir)):
                for name in sorted(files):
                    if not name.endswith(".json"):
                        continue
                    info = self._load(Path(folder) / name)
                    if info is None:
                        continue
                    sid = _str(info.get("id")) or name[: -len(".json")]
                    found.setdefault(sid, _Ses(sid, info))
        message_dir = self.root / "message"
        if message_dir.is_dir():
            for sub in sorted(p for p in message_dir.iterdir() if p.is_dir()):
                found.setdefault(sub.name, _Ses(sub.name, {"id": sub.name}))
        return list(found.values())

    def messages(self, session_id: str) -> list[_Msg]:
        out = []
        for path in self._json_files(self.root / "message" / session_id):
            info = self._load(path)
            if info is None:
                continue
            info.setdefault("id", path.stem)
            info.setdefault("sessionID", session_id)
            out.append(_Msg(info, self._parts(str(info["id"]))))
        return out

    def _parts(self, message_id: str) -> list[dict]:
        parts = []
        for path in self._json_files(self.root / "part" / message_id):
            part = self._load(path)
            if part is not None:
                part.setdefault("id", path.stem)
                part.setdefault("messageID", message_id)
                parts.append((path.name, part))
        parts.extend(self.flat_parts().get(message_id, []))
        parts.sort(key=lambda item: item[0])
        return [p for _, p in parts]

    def flat_parts(self) -> dict[str, list[tuple[str, dict]]]:
        """Early builds kept every part in ``part/`` itself, naming its message inside."""
        if self._flat_parts is None:
            self._flat_parts = {}
            for path in self._json_files(self.root / "part"):
                part = self._load(path)
                if part is None:
                    continue
                message_id = _str(part.get("messageID"))
                if message_id is None:
                    self.bad.append(BadLine(0, 0, f"part/{path.name} names no message (messageID)"))
                    continue
                part.setdefault("id", path.stem)
                self._flat_parts.setdefault(message_id, []).append((path.name, part))
        return self._flat_parts

    def close(self) -> None:
        pass


class _Database:
    """The SQLite store (opencode ≥ 1.2)."""

    def __init__(self, path: Path, bad: list[BadLine]):
        self.bad = bad
        self.db = _connect(path)
        if not is_opencode_db(self.db):
            raise sqlite3.DatabaseError("it has no opencode session, message and part tables")
        self.session_columns = _columns(self.db, "session")

    def _data(self, row: sqlite3.Row, what: str) -> dict | None:
        raw = row["data"]
        try:
            value = json.loads(raw) if raw is not None else {}
        except (ValueError, TypeError, RecursionError) as exc:
            self.bad.append(BadLine(0, 0, f"{what} {row['id']}: its data is not JSON ({exc})"))
            return None
        if value.__class__ is not dict:
            self.bad.append(BadLine(0, 0, f"{what} {row['id']}: its data is not a JSON object"))
            return None
        return value

    def sessions(self) -> list[_Ses]:
        out = []
        for row in self.db.execute("SELECT * FROM session ORDER BY id"):
            d = dict(row)
            info: dict[str, Any] = {
                "id": d.get("id"),
                "projectID": d.get("project_id"),
                "parentID": d.get("parent_id"),
                "directory": d.get("directory"),
                "title": d.get("title"),
                "version": d.get("version"),
                "time": {"created": d.get("time_created"), "updated": d.get("time_updated")},
            }
            info["row"] = {k: v for k, v in d.items() if v is not None and not isinstance(v, bytes)}
            out.append(_Ses(str(d["id"]), info))
        known = {s.id for s in out}
        for (sid,) in self.db.execute("SELECT DISTINCT session_id FROM message ORDER BY session_id"):
            if sid not in known:
                out.append(_Ses(str(sid), {"id": sid}))
        return out

    def messages(self, session_id: str) -> list[_Msg]:
        messages: list[_Msg] = []
        by_id: dict[str, _Msg] = {}
        for row in self.db.execute(
            "SELECT id, session_id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id",
            (session_id,),
        ):
            info = self._data(row, "message")
            if info is None:
                continue
            info = {"id": row["id"], "sessionID": row["session_id"], **info}
            info.setdefault("time", {"created": row["time_created"]})
            msg = _Msg(info)
            messages.append(msg)
            by_id[row["id"]] = msg
        for row in self.db.execute(
            "SELECT id, message_id, time_created, data FROM part WHERE session_id = ? ORDER BY message_id, id",
            (session_id,),
        ):
            msg = by_id.get(row["message_id"])
            part = self._data(row, "part")
            if part is None:
                continue
            if msg is None:
                self.bad.append(BadLine(0, 0, f"part {row['id']}: its message {row['message_id']} is not in the database"))
                continue
            msg.parts.append({"id": row["id"], "sessionID": session_id, "messageID": row["message_id"], **part})
        return messages

    def close(self) -> None:
        self.db.close()


# -- records ----------------------------------------------------------------------------------------


def _model(info: dict) -> str | None:
    model = _str(info.get("modelID"))
    if model is None and info.get("model").__class__ is dict:
        model = _str(info["model"].get("modelID")) or _str(info["model"].get("id"))
    return model


def _tokens(tokens: Any) -> dict[str, int] | None:
    if tokens.__class__ is not dict:
        return None
    cache = tokens.get("cache") if tokens.get("cache").__class__ is dict else {}
    out = {
        "input": _int(tokens.get("input")),
        "output": _int(tokens.get("output")) + _int(tokens.get("reasoning")),
        "cache_read": _int(cache.get("read")),
        "cache_write": _int(cache.get("write")),
    }
    return out if any(out.values()) else None


def _data_url(url: Any) -> tuple[str, str] | None:
    if url.__class__ is str and url.startswith("data:") and ";base64," in url[:200]:
        head, data = url.split(",", 1)
        return head[5:].split(";", 1)[0] or "application/octet-stream", data
    return None


def _other_block(part: dict, kind: str) -> Block:
    if kind == "file":
        text = _str(part.get("filename")) or ""
        url = part.get("url")
        if _data_url(url) is None and url.__class__ is str:
            text = f"{text} ({url})" if text else url
        return Block("other", text=text, raw_type="file")
    if kind == "patch":
        files = part.get("files")
        names = ", ".join(f for f in files if f.__class__ is str) if files.__class__ is list else ""
        return Block("other", text=f"patch {part.get('hash') or ''}: {names}".strip(), raw_type="patch")
    if kind == "subtask":
        return Block("other", text=_str(part.get("prompt")) or _str(part.get("description")) or "", raw_type="subtask")
    if kind == "compaction":
        return Block("other", text="compaction " + ("(auto)" if part.get("auto") else "(manual)"), raw_type="compaction")
    text = part.get("text")
    if text.__class__ is not str:
        text = _str(part.get("snapshot")) or _str(part.get("name")) or ""
    return Block("other", text=text, raw_type=kind or "(none)")


def _steps(parts: list[dict]) -> list[tuple[list[dict], dict | None]]:
    """An assistant message's parts cut into steps: (the step's parts, its ``step-finish`` part or
    None for the last parts when no step-finish ends them); at least one step."""
    steps: list[tuple[list[dict], dict | None]] = []
    current: list[dict] = []
    for part in parts:
        if part.get("type") == "step-finish":
            steps.append((current + [part], part))
            current = []
        else:
            current.append(part)
    if current or not steps:
        steps.append((current, None))
    return steps


def _add_cost(fold: FoldRecord, usage: dict[str, int], model: str | None) -> None:
    """The compaction call's usage on its fold (``FoldRecord.cost``: ``Fold.cost``'s shape)."""
    if fold.cost is None:
        fold.cost = {"calls": 0, "input_uncached": 0, "cache_write": 0, "cache_read": 0, "output": 0, "model": model}
    cost = fold.cost
    cost["calls"] += 1
    cost["input_uncached"] += usage["input"]
    cost["cache_write"] += usage["cache_write"]
    cost["cache_read"] += usage["cache_read"]
    cost["output"] += usage["output"]


def _error_flags(error: Any) -> dict[str, Any]:
    """The flags of the step an error ended: an API error, and its name where it has one."""
    flags: dict[str, Any] = {"api_error": True}
    name = error.get("name") if error.__class__ is dict else None
    if name:
        flags["error"] = str(name)
    return flags


class _Writer:
    """The records of one top session and its sub-agent sessions."""

    def __init__(self, top: str):
        self.top = top
        self.n = 0
        self.calls: list[UsageRecord] = []
        self.folds: list[FoldRecord] = []
        self.links: list[AgentLink] = []
        self.models: dict[str, None] = {}
        self.task_calls: dict[str, tuple[str, int, dict]] = {}  # child session id -> (call id, record no, input)
        self.last_input: int | None = None  # the measured input of the session's last model call so far

    def _record(self, **kwargs) -> MessageRecord:
        self.n += 1
        return MessageRecord(line_no=self.n, offset=0, session_id=self.top, **kwargs)

    def session(self, ses: _Ses, agent: str | None) -> Iterator[MessageRecord]:
        """The records of one session: each message's (an assistant message's steps and tool
        results, or one message), then a marker per compaction part of it (and its fold)."""
        agent_kind = "inline" if agent else None
        pending_fold: FoldRecord | None = None
        self.last_input = None
        uuids_by_message: list[tuple[str, list[str]]] = []
        for msg in ses.messages or []:
            info = msg.info
            mid = str(info.get("id"))
            role = info.get("role")
            ts = _ms(_time(info, "created"))
            if role == "assistant":
                records = self._assistant_message(msg, mid, ts, agent, agent_kind, pending_fold)
            else:
                records = [self._other_message(msg, mid, role, ts, agent, agent_kind)]
            compactions = [p for p in msg.parts if p.get("type") == "compaction"]
            uuids_by_message.append((mid, [r.uuid for r in records]))
            yield from records
            for part in compactions:
                pending_fold = yield from self._compaction(part, mid, ts, agent, agent_kind, uuids_by_message)

    def _assistant_message(self, msg: _Msg, mid: str, ts, agent, agent_kind,
                           pending_fold: FoldRecord | None) -> list[MessageRecord]:
        """The records of an assistant message; a summary (``summary: true``) is the summary of the
        fold before it that has none yet."""
        info = msg.info
        model = _model(info)
        if model:
            self.models[model] = None
        # The summary of a fold that has none yet is the fold's compaction call: its cost, not a call.
        summary = info.get("summary") is True
        compaction_of = pending_fold if summary and pending_fold is not None and pending_fold.summary_uuid is None else None
        records = list(self._assistant(msg, mid, ts, model, agent, agent_kind, compaction_of))
        if info.get("summary") is True and records:
            records[0].is_compact_summary = True
            if pending_fold is not None and pending_fold.summary_uuid is None:
                pending_fold.summary_uuid = records[0].uuid
                pending_fold.summary_text = "\n".join(
                    b.text for r in records for b in r.blocks if b.kind == "text" and b.text
                )
        return records

    def _other_message(self, msg: _Msg, mid: str, role: Any, ts, agent, agent_kind) -> MessageRecord:
        """A user message (or one of another role): text, images given as data URLs, other parts."""
        info = msg.info
        blocks = []
        for part in msg.parts:
            kind = part.get("type")
            if kind == "text":
                blocks.append(Block("text", text=part.get("text") if part.get("text").__class__ is str else ""))
            elif kind == "file" and _data_url(part.get("url")) and str(part.get("mime", "")).startswith("image/"):
                media_type, data = _data_url(part.get("url"))
                blocks.append(Block("image", media_type=media_type, data_size=len(data)))
            else:
                blocks.append(_other_block(part, kind if kind.__class__ is str else "(none)"))
        return self._record(
            role="user" if role == "user" else "other",
            record_type=role if role.__class__ is str and role else "(none)",
            raw=compact_json({"info": info, "parts": msg.parts}),
            blocks=blocks,
            uuid=mid,
            parent_uuid=_str(info.get("parentID")),
            timestamp=ts,
            agent_id=agent,
            agent_kind=agent_kind,
            flags={"synthetic": True} if msg.parts and all(p.get("synthetic") is True for p in msg.parts) else {},
        )

    def _compaction(self, part: dict, mid: str, ts, agent, agent_kind,
                    uuids_by_message: list[tuple[str, list[str]]]) -> Iterator[MessageRecord]:
        """A compaction part: its ``compact_boundary`` marker, then its fold (returned: the next
        summary message is its summary); the messages from ``tail_start_id`` on are kept."""
        marker = self._record(
            role="system",
            record_type="compaction",
            subtype="compact_boundary",
            raw=compact_json(part),
            blocks=[Block("text", text="Conversation compacted" + (" (auto)" if part.get("auto") else ""))],
            uuid=f"{part.get('id') or mid}:boundary",
            timestamp=ts,
            agent_id=agent,
            agent_kind=agent_kind,
        )
        yield marker
        tail = _str(part.get("tail_start_id"))
        preserved: list[str] = []
        if tail is not None:
            ids = [m for m, _ in uuids_by_message]
            if tail in ids:
                for m, uuids in uuids_by_message[ids.index(tail) : -1]:
                    preserved.extend(uuids)
        fold = FoldRecord(
            line_no=marker.line_no,
            boundary_uuid=marker.uuid,
            kind="compact",
            trigger="auto" if part.get("auto") is True else "manual",
            tokens_before=self.last_input,  # opencode records none: the last call's measured input
            preserved_uuids=preserved,
            timestamp=ts,
            agent_id=agent,
            metadata={k: part[k] for k in ("auto", "overflow", "tail_start_id") if k in part},
        )
        self.folds.append(fold)
        return fold

    def _assistant(self, msg: _Msg, mid: str, ts, model, agent, agent_kind,
                   compaction_of: FoldRecord | None = None) -> Iterator[MessageRecord]:
        """An assistant message cut at its ``step-finish`` parts: per step (one model call), an
        assistant message (its usage, when measured, a model call; for the summary a fold's
        compaction call wrote, ``compaction_of``, the fold's cost), then its tool results."""
        info = msg.info
        steps = _steps(msg.parts)
        message_usage = None if any(finish for _, finish in steps) else _tokens(info.get("tokens"))
        error = info.get("error")
        for n, (parts, finish) in enumerate(steps):
            uuid = mid if n == 0 else f"{mid}:step{n + 1}"
            blocks, results = self._step_blocks(parts, uuid)
            flags = _error_flags(error) if error is not None and n == len(steps) - 1 else {}
            record = self._record(
                role="assistant",
                record_type="assistant",
                raw=compact_json({"info": info, "parts": parts}),
                blocks=blocks,
                uuid=uuid,
                parent_uuid=_str(info.get("parentID")),
                timestamp=ts,
                model=model,
                api_message_id=None,
                agent_id=agent,
                agent_kind=agent_kind,
                flags=flags,
            )
            usage = _tokens(finish.get("tokens")) if finish is not None else (message_usage if n == 0 else None)
            if usage is not None and compaction_of is not None:
                _add_cost(compaction_of, usage, model)
            elif usage is not None:
                record.api_message_id = f"{mid}:step{n + 1}" if finish is not None else mid
                self._call(record, usage, _ms(_time(info, "completed")) or ts)
            yield record
            for part, state in results:
                yield from self._result(part, state, uuid, agent, agent_kind)

    def _step_blocks(self, parts: list[dict], uuid: str) -> tuple[list[Block], list[tuple[dict, dict]]]:
        """(blocks, tool parts with their state) of one step; a task call is noted for its
        sub-agent session's link."""
        blocks: list[Block] = []
        results: list[tuple[dict, dict]] = []
        for part in parts:
            kind = part.get("type")
            if kind == "text":
                text = part.get("text")
                blocks.append(Block("text", text=text if text.__class__ is str else ""))
            elif kind == "reasoning":
                text = part.get("text")
                blocks.append(Block("thinking", text=text if text.__class__ is str else ""))
            elif kind == "tool":
                state = part.get("state") if part.get("state").__class__ is dict else {}
                tool_input = state.get("input")
                call_id = _str(part.get("callID")) or _str(part.get("id")) or f"{uuid}:tool{len(blocks)}"
                name = _str(part.get("tool"))
                blocks.append(tool_call(call_id, name, tool_input))
                results.append((part, state))
                if name in TASK_TOOLS:
                    child = self._task_child(state)
                    if child is not None:
                        # The step's message is the next record.
                        self.task_calls.setdefault(
                            child, (call_id, self.n + 1, tool_input if tool_input.__class__ is dict else {})
                        )
            elif kind in ("step-start", "step-finish"):
                continue  # bookkeeping: kept in the raw record; step-finish gives the usage
            else:
                blocks.append(_other_block(part, kind if kind.__class__ is str else "(none)"))
        return blocks, results

    def _call(self, record: MessageRecord, usage: dict[str, int], ts: datetime | None) -> None:
        """The model call of a step (its figures measured), keyed by the step message's api id."""
        self.last_input = usage["input"] + usage["cache_write"] + usage["cache_read"]
        self.calls.append(
            UsageRecord(
                api_message_id=record.api_message_id,
                request_id=None,
                message_uuid=record.uuid,
                line_no=record.line_no,
                model=record.model,
                input_uncached=usage["input"],
                cache_write=usage["cache_write"],
                cache_read=usage["cache_read"],
                output=usage["output"],
                agent_id=record.agent_id,
                timestamp=ts,
            )
        )

    def _result(self, part: dict, state: dict, call_uuid: str, agent, agent_kind) -> Iterator[MessageRecord]:
        status = state.get("status")
        output = state.get("output")
        err = state.get("error")
        if status in ("pending", "running") or (output is None and err is None):
            return
        is_error = status == "error" or (output is None and err is not None)
        text = err if is_error else output
        if text.__class__ is not str:
            text = compact_json(text) if text is not None else ""
        flags: dict[str, Any] = {}
        compacted = _time(state, "compacted")
        if compacted is not None:
            flags["compacted"] = True  # pruned: the model saw "[Old tool result content cleared]"
            flags["compacted_at"] = compacted
        call_id = _str(part.get("callID")) or _str(part.get("id"))
        yield self._record(
            role="tool",
            record_type="tool",
            raw=compact_json(part),
            blocks=[Block("tool_result", text=text, tool_id=call_id, is_error=is_error)],
            uuid=f"{part.get('id') or call_uuid + ':' + str(call_id)}:result",
            parent_uuid=call_uuid,
            timestamp=_ms(_time(state, "end")),
            agent_id=agent,
            agent_kind=agent_kind,
            flags=flags,
        )

    @staticmethod
    def _task_child(state: dict) -> str | None:
        meta = state.get("metadata")
        if meta.__class__ is dict and _str(meta.get("sessionId")):
            return meta["sessionId"]
        output = state.get("output")
        if output.__class__ is str:
            match = _TASK_ID.search(output[:500])
            if match:
                return match.group(1)
        return None


def _sort_key(ses: _Ses) -> tuple:
    created = _time(ses.info, "created")
    return (created if created.__class__ in (int, float) else float("inf"), ses.id)


def _records(store, bad: list[BadLine]) -> Iterator[Record]:
    sessions = sorted(store.sessions(), key=_sort_key)
    yield from bad
    bad.clear()
    by_id = {s.id: s for s in sessions}
    children: dict[str, list[_Ses]] = {}
    tops: list[_Ses] = []
    for ses in sessions:
        parent = _str(ses.info.get("parentID"))
        if parent is not None and parent in by_id and parent != ses.id:
            children.setdefault(parent, []).append(ses)
        else:
            tops.append(ses)
    for top in tops:
        writer = _Writer(top.id)
        started = ended = None
        order = [(top, None)]
        seen = {top.id}
        i = 0
        while i < len(order):  # the top session, then its sub-agents breadth first
            for child in children.get(order[i][0].id, []):
                if child.id not in seen:
                    seen.add(child.id)
                    order.append((child, child.id))
            i += 1
        for ses, agent in order:
            ses.messages = store.messages(ses.id)
            yield from bad
            bad.clear()
            if agent is not None:
                task = writer.task_calls.get(ses.id)
                title = _str(ses.info.get("title"))
                agent_type = None
                if title:
                    match = re.search(r"\(@(\S+) subagent\)\s*$", title)
                    agent_type = match.group(1) if match else None
                if task is not None:
                    call_id, line_no, tool_input = task
                    writer.links.append(
                        AgentLink(
                            agent_id=ses.id,
                            tool_use_id=call_id,
                            line_no=line_no,
                            agent_type=_str(tool_input.get("subagent_type")) or agent_type,
                            description=_str(tool_input.get("description")) or title,
                        )
                    )
                else:
                    writer.links.append(
                        AgentLink(agent_id=ses.id, tool_use_id=None, line_no=writer.n + 1, agent_type=agent_type, description=title)
                    )
            yield from writer.session(ses, agent)
            ses.messages = None
            if agent is None:
                started = _ms(_time(ses.info, "created"))
                ended = _ms(_time(ses.info, "updated"))
        yield from writer.calls
        yield from writer.folds
        yield from writer.links
        yield SessionInfo(
            external_id=top.id,
            title=_str(top.info.get("title")),
            cwd=_str(top.info.get("directory")),
            cli_version=_str(top.info.get("version")),
            models=list(writer.models),
            started_at=started,
            ended_at=ended,
        )


def parse(path: Path | str, label: str = "opencode") -> Iterator[Record]:
    """Records of an opencode store (``label``: the agent that wrote it, for the messages): a JSON
    storage folder, an ``opencode.db`` or a ``kilo.db``. Never raises."""
    path = Path(path)
    bad: list[BadLine] = []
    store = None
    try:
        if path.is_dir():
            store = _Folder(path, bad)
        else:
            try:
                store = _Database(path, bad)
            except sqlite3.Error as exc:
                article = "an" if label[:1].lower() in "aeiou" else "a"
                yield BadLine(0, 0, f"the file is not {article} {label} database ({exc})")
                yield SessionInfo()
                return
        yield from _records(store, bad)
    except (sqlite3.Error, OSError) as exc:
        yield BadLine(0, 0, f"the store could not be read ({exc.__class__.__name__}: {exc})")
        yield SessionInfo()
    except Exception as exc:  # a last resort: never raise
        yield BadLine(0, 0, unexpected(exc))
        yield SessionInfo()
    finally:
        if store is not None:
            try:
                store.close()
            except Exception:  # pragma: no cover
                pass


# -- what the formats share ------------------------------------------------------------------------


def images(raw: str) -> list[dict]:
    """The base64 images of a stored record: image file parts given as data URLs."""
    obj = raw_json(raw)
    parts = obj.get("parts") if isinstance(obj, dict) else None
    found = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, dict) and part.get("type") == "file" and str(part.get("mime", "")).startswith("image/"):
            data = _data_url(part.get("url"))
            if data is not None:
                found.append({"media_type": data[0], "data": data[1]})
    return found
