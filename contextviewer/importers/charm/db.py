"""The SQLite store of Charm Crush (``.crush/crush.db``) and of the Go-era opencode it grew from
(``.opencode/opencode.db``) -> normalized records (pure, no Django). ``crush.py`` and
``opencode_go.py`` are the two formats; this module reads their shared schema.

The store: ``sessions`` (``id``, ``parent_session_id``, ``title``, ``prompt_tokens``,
``completion_tokens``, ``cost``, ``created_at``, ``updated_at``; ``summary_message_id`` since
2025-05, or ``summary`` + ``summarized_at`` in another Go schema), ``messages`` (``id``,
``session_id``, ``role`` user/assistant/tool/system, ``parts`` = a JSON list of ``{type, data}``
with types text/reasoning/image_url/binary/tool_call/tool_result/finish, ``model``, Crush's
``provider`` and ``is_summary_message``, ``created_at``, ``finished_at``) and ``files`` (file
versions, not read). Times are Unix seconds (the schema's comment says milliseconds: told apart by
magnitude), or ISO-8601 text in the other Go schema.

Mapping:

- every session is a conversation; a child ``agent`` session (``parent_session_id`` set, its id
  the parent's agent tool call id, or ``<message id>$$<call id>`` in later Crush) is a sub-agent
  of its top session (records with ``agent_id`` = its id, ``agent_kind="inline"``), linked by an
  ``AgentLink`` to that call. A child whose parent is not in the store is a conversation of its own;
- a message row is one record (uuid = its id): user text/attachments, assistant text, reasoning ->
  thinking, tool_call -> ``tool_call`` (input parsed from its JSON string), and a ``tool`` message
  with one ``tool_result`` per result part (a message can answer several calls);
- a ``finish`` part that is not a normal end (error, canceled, permission_denied, max_tokens,
  content_filter) becomes an "other" block saying so, and ``flags["finish_reason"]``
  (``api_error`` for error);
- usage: the store keeps only session totals, never per call. Each assistant message is one model
  call, emitted with ZERO usage (the pages show such a call as estimated, never measured) and its
  message flagged ``usage_unmeasured``; the session's totals go in its first message's
  ``flags["session_totals"]`` ({prompt_tokens, completion_tokens, cost}, not a call's figure). The
  conversation page shows the cost, summed by the agent over the session's calls (a child session
  keeps its own); the token counts are not shown (in the fixtures they are far below what the
  calls must have read, so they are no sum of them);
- folds: the summary message (``summary_message_id``, ``is_summary_message``; and in Go-opencode an
  assistant message right after a finished assistant turn, with no prompt between: only the
  summarizer writes one there, and the store keeps the id of the last alone) gets a ``system``
  ``compact_boundary`` marker before it and a ``FoldRecord`` with it as summary; the other Go
  schema's ``sessions.summary`` gives a fold at ``summarized_at`` with the summary text. The
  summary's own model call (the summarizer read the history being put away) is placed at the
  marker, so its context is that history, not the empty window after the fold.

The database is never opened in place: with a ``-wal`` beside it (the app writes there first; a
store can hold all its rows in the WAL), the file and its WAL are copied to a temporary folder and
the copy opened, which applies the WAL; without one it is opened read-only. Nothing here raises.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextviewer.core.records import AgentLink, BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import compact_json, json_arguments, raw_json, str_or_none as _str, tool_call
from contextviewer.importers.driver import unexpected
from contextviewer.importers.formats import SessionFiles
from contextviewer.importers.sqlite_db import columns
from contextviewer.importers.charm.store import (  # noqa: F401 - the light part, re-exported
    COMPANION_SUFFIXES,
    CRUSH,
    OPENCODE_GO,
    _KINDS,
    _other_store,
    _stamp,
    classify,
    kind_of,
    main_of,
    opened,
    sniffer,
)

NORMAL_FINISH = frozenset({"", "stop", "end_turn", "tool_use"})
AGENT_TOOLS = frozenset({"agent", "agentic_fetch"})


# -- opening the store ------------------------------------------------------------------------------


def grouper(name: str):
    def group(paths: list[Path]) -> list[SessionFiles]:
        """A database with its ``-wal``/``-shm`` beside it is one source: the companions name it."""
        mains = sorted({main_of(p) for p in paths})
        return [SessionFiles(format=name, main=p) for p in mains]

    return group


# -- values -----------------------------------------------------------------------------------------


def when(value: Any) -> datetime | None:
    """Unix seconds, milliseconds or microseconds (told apart by magnitude), or ISO-8601 text."""
    if value.__class__ is str:
        text = value.strip()
        if not text:
            return None
        try:
            return when(float(text))
        except ValueError:
            pass
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            try:
                dt = datetime.fromisoformat(text[:26].replace("Z", "") + "+00:00")
            except ValueError:
                return None
        return dt if dt.tzinfo else dt.replace(tzinfo=UTC)
    if value.__class__ not in (int, float) or value != value or value <= 0:
        return None
    try:
        if value > 1e14:
            value = value / 1e6
        elif value > 1e11:
            value = value / 1e3
        return datetime.fromtimestamp(value, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _data(part: Any) -> dict:
    data = part.get("data") if part.__class__ is dict else None
    return data if data.__class__ is dict else {}


def _decoded(data: Any) -> bytes | None:
    if data.__class__ is not str:
        return None
    try:
        return base64.b64decode(data, validate=False)
    except (ValueError, TypeError):
        return None


def _binary_block(data: dict) -> Block:
    mime = _str(data.get("MIMEType")) or _str(data.get("mime_type")) or "application/octet-stream"
    raw = data.get("Data")
    if mime.startswith("image/") and raw.__class__ is str:
        return Block("image", media_type=mime, data_size=len(raw))
    name = _str(data.get("Path")) or "attachment"
    body = _decoded(raw) if mime.startswith("text/") else None
    text = f"{name} ({mime})"
    if body is not None:
        text += "\n" + body.decode("utf-8", errors="replace")
    return Block("other", text=text, raw_type="binary")


def _finish_text(data: dict) -> str:
    reason = _str(data.get("reason")) or "unknown"
    words = {"canceled": "canceled", "error": "ended on an error", "permission_denied": "permission denied",
             "max_tokens": "stopped at the output limit", "content_filter": "refused (content filter)"}
    text = f"finish: {words.get(reason, reason)}"
    for key in ("message", "details"):
        if _str(data.get(key)):
            text += "\n" + data[key]
    return text


def _parts(raw: Any) -> list[dict] | None:
    try:
        value = json.loads(raw) if raw.__class__ in (str, bytes) else raw
    except (ValueError, RecursionError):
        return None
    if value.__class__ is not list:
        return None
    return [p for p in value if p.__class__ is dict]


# -- reading ----------------------------------------------------------------------------------------


@dataclass
class _Ses:
    row: dict
    messages: list[dict] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.row.get("id"))


def _sessions(conn: sqlite3.Connection, bad: list[BadLine]) -> list[_Ses]:
    out: dict[str, _Ses] = {}
    for row in conn.execute("SELECT * FROM sessions"):
        d = dict(row)
        out[str(d.get("id"))] = _Ses(d)
    order = "created_at, rowid" if "created_at" in columns(conn, "messages") else "rowid"
    for row in conn.execute(f"SELECT * FROM messages ORDER BY {order}"):
        d = dict(row)
        parts = _parts(d.get("parts"))
        if parts is None:
            bad.append(BadLine(0, 0, f"message {d.get('id')}: its parts are not a JSON list"))
            parts = []
        d["parts"] = parts
        sid = str(d.get("session_id"))
        if sid not in out:
            out[sid] = _Ses({"id": sid})
        out[sid].messages.append(d)
    return sorted(out.values(), key=lambda s: (when(s.row.get("created_at")) or datetime.max.replace(tzinfo=UTC), s.id))


class _Writer:
    """The records of one top session and its sub-agent sessions."""

    def __init__(self, top: str, fmt: str):
        self.top = top
        self.fmt = fmt
        self.n = 0
        self.calls: list[UsageRecord] = []
        self.folds: list[FoldRecord] = []
        self.links: list[AgentLink] = []
        self.models: dict[str, None] = {}
        self.agent_calls: dict[str, tuple[str, int, str, Any]] = {}  # call id -> (call id, record no, tool, input)

    def _record(self, **kwargs) -> MessageRecord:
        self.n += 1
        return MessageRecord(line_no=self.n, offset=0, session_id=self.top, **kwargs)

    def _is_summary(self, ses: _Ses, index: int, msg: dict) -> bool:
        if msg.get("role") != "assistant":
            return False
        if msg.get("id") == ses.row.get("summary_message_id") or msg.get("is_summary_message") in (1, True):
            return True
        if self.fmt != OPENCODE_GO or index == 0:
            return False
        if any(p.get("type") == "tool_call" for p in msg["parts"]):
            return False
        prev = ses.messages[index - 1]
        finish = next((_data(p) for p in prev["parts"] if p.get("type") == "finish"), None)
        return prev.get("role") == "assistant" and finish is not None and finish.get("reason") in ("end_turn", "stop")

    def session(self, ses: _Ses, agent: str | None) -> Iterator[MessageRecord]:
        kind = "inline" if agent else None
        summary = _str(ses.row.get("summary"))
        summarized = when(ses.row.get("summarized_at")) if summary else None
        first = True
        for index, msg in enumerate(ses.messages):
            ts = when(msg.get("created_at"))
            if summary and summarized is not None and ts is not None and ts > summarized:
                yield from self._summary_fold(summary, summarized, agent, kind)
                summary = None
            if self._is_summary(ses, index, msg):
                marker = self._record(
                    role="system", record_type="summary", subtype="compact_boundary",
                    raw=compact_json({"summary_message_id": msg.get("id")}),
                    blocks=[Block("text", text="Conversation summarized")],
                    uuid=f"{msg.get('id')}:boundary", timestamp=ts, agent_id=agent, agent_kind=kind,
                )
                record = self._message(msg, ts, agent, kind)
                record.is_compact_summary = True
                if record.api_message_id is not None:
                    # The summarizer's call read the history the fold puts away: it stands at the
                    # marker (what came before it is its input), not after it.
                    call = self.calls[-1]
                    call.message_uuid, call.line_no = marker.uuid, marker.line_no
                    marker.api_message_id, record.api_message_id = record.api_message_id, None
                yield marker
                self.folds.append(FoldRecord(
                    line_no=marker.line_no, boundary_uuid=marker.uuid, kind="compact", trigger=None, tokens_before=None,
                    summary_uuid=record.uuid, summary_text="\n".join(b.text for b in record.blocks if b.kind == "text"),
                    timestamp=ts, agent_id=agent,
                    metadata={"summary_message_id": msg.get("id"),
                              "current": msg.get("id") == ses.row.get("summary_message_id")},
                ))
            else:
                record = self._message(msg, ts, agent, kind)
            if first:
                totals = {k: ses.row[k] for k in ("prompt_tokens", "completion_tokens", "cost") if k in ses.row}
                if totals:
                    record.flags["session_totals"] = totals
                first = False
            yield record
        if summary:
            yield from self._summary_fold(summary, summarized, agent, kind)

    def _summary_fold(self, summary: str, at: datetime | None, agent, kind) -> Iterator[MessageRecord]:
        marker = self._record(
            role="system", record_type="summary", subtype="compact_boundary", raw=compact_json({"summary": summary}),
            blocks=[Block("text", text="Conversation summarized")], uuid=f"{self.top}:{agent or ''}:summary",
            timestamp=at, agent_id=agent, agent_kind=kind,
        )
        yield marker
        self.folds.append(FoldRecord(line_no=marker.line_no, boundary_uuid=marker.uuid, kind="compact", trigger=None,
                                     tokens_before=None, summary_text=summary, timestamp=at, agent_id=agent))

    def _message(self, msg: dict, ts, agent, kind) -> MessageRecord:
        role = msg.get("role")
        mid = str(msg.get("id"))
        model = _str(msg.get("model"))
        blocks: list[Block] = []
        flags: dict[str, Any] = {}
        hidden = False
        for part in msg["parts"]:
            ptype = part.get("type")
            data = _data(part)
            if ptype == "text":
                text = data.get("text")
                blocks.append(Block("text", text=text if text.__class__ is str else ""))
                hidden = hidden or data.get("hidden") is True
            elif ptype == "reasoning":
                text = data.get("thinking")
                blocks.append(Block("thinking", text=text if text.__class__ is str else ""))
            elif ptype == "tool_call":
                call_id = _str(data.get("id")) or f"{mid}:call{len(blocks)}"
                name = _str(data.get("name"))
                tool_input = json_arguments(data.get("input"))
                blocks.append(tool_call(call_id, name, tool_input))
                if name in AGENT_TOOLS:
                    self.agent_calls.setdefault(call_id, (call_id, self.n + 1, name, tool_input))
            elif ptype == "tool_result":
                text = data.get("content")
                mime = _str(data.get("mime_type")) or ""
                image = mime.startswith("image/") and _str(data.get("data")) is not None
                blocks.append(Block("tool_result", text=text if text.__class__ is str else compact_json(text),
                                    tool_id=_str(data.get("tool_call_id")), tool_name=_str(data.get("name")),
                                    is_error=data.get("is_error") is True, images=1 if image else 0))
            elif ptype == "binary":
                blocks.append(_binary_block(data))
            elif ptype == "image_url":
                url = _str(data.get("url")) or ""
                if url.startswith("data:") and ";base64," in url[:200]:
                    blocks.append(Block("image", media_type=url[5:].split(";", 1)[0], data_size=len(url.split(",", 1)[1])))
                else:
                    blocks.append(Block("other", text=url, raw_type="image_url"))
            elif ptype == "finish":
                reason = _str(data.get("reason")) or ""
                if role == "assistant":
                    flags["finish_reason"] = reason
                if reason not in NORMAL_FINISH:
                    blocks.append(Block("other", text=_finish_text(data), raw_type="finish"))
                    if reason == "error":
                        flags["api_error"] = True
            else:
                text = _str(data.get("text")) or _str(data.get("command")) or ""
                blocks.append(Block("other", text=text, raw_type=ptype if ptype.__class__ is str and ptype else "(none)"))
        row = {k: v for k, v in msg.items() if k != "parts" and not isinstance(v, bytes)}
        record = self._record(
            role=role if role in ("user", "assistant", "tool", "system") else "other",
            record_type=role if role.__class__ is str and role else "(none)",
            raw=compact_json({"message": row, "parts": msg["parts"]}),
            blocks=blocks, uuid=mid, timestamp=ts, model=model if role == "assistant" else None,
            agent_id=agent, agent_kind=kind, is_meta=hidden and role == "user", flags=flags,
        )
        if role == "assistant":
            if model:
                self.models[model] = None
            if _str(msg.get("provider")):
                flags["provider"] = msg["provider"]
            record.api_message_id = mid
            flags["usage_unmeasured"] = True
            self.calls.append(UsageRecord(api_message_id=mid, request_id=None, message_uuid=mid, line_no=record.line_no,
                                          model=model, agent_id=agent, timestamp=when(msg.get("finished_at")) or ts))
        return record


def _agent_call(writer: _Writer, child: str) -> tuple[str, int, str, Any] | None:
    call = writer.agent_calls.get(child)
    if call is None and "$$" in child:
        call = writer.agent_calls.get(child.rsplit("$$", 1)[1])
    return call


def _cwd(path: Path) -> str | None:
    """The project folder: Crush and Go-opencode keep their store in ``<project>/.crush/`` or
    ``<project>/.opencode/``."""
    parent = path.resolve().parent
    return str(parent.parent) if parent.name in (".crush", ".opencode") else None


def _records(sessions: list[_Ses], fmt: str, path: Path) -> Iterator[Record]:
    by_id = {s.id: s for s in sessions}
    children: dict[str, list[_Ses]] = {}
    tops: list[_Ses] = []
    for ses in sessions:
        parent = _str(ses.row.get("parent_session_id"))
        if parent is not None and parent in by_id and parent != ses.id:
            children.setdefault(parent, []).append(ses)
        else:
            tops.append(ses)
    cwd = _cwd(path)
    for top in tops:
        writer = _Writer(top.id, fmt)
        order: list[tuple[_Ses, str | None]] = [(top, None)]
        seen = {top.id}
        i = 0
        while i < len(order):  # the top session, then its sub-agents breadth first
            for child in children.get(order[i][0].id, []):
                if child.id not in seen:
                    seen.add(child.id)
                    order.append((child, child.id))
            i += 1
        for ses, agent in order:
            if agent is not None:
                call = _agent_call(writer, ses.id)
                title = _str(ses.row.get("title"))
                if call is not None:
                    call_id, line_no, tool, tool_input = call
                    prompt = _str(tool_input.get("prompt")) if tool_input.__class__ is dict else None
                    writer.links.append(AgentLink(agent_id=ses.id, tool_use_id=call_id, line_no=line_no, agent_type=tool,
                                                  description=(prompt or title or "")[:200] or None))
                else:
                    writer.links.append(AgentLink(agent_id=ses.id, tool_use_id=None, line_no=writer.n + 1, description=title))
            yield from writer.session(ses, agent)
        yield from writer.calls
        yield from writer.folds
        yield from writer.links
        yield SessionInfo(
            external_id=top.id,
            title=_str(top.row.get("title")),
            cwd=cwd,
            models=list(writer.models),
            started_at=when(top.row.get("created_at")),
            ended_at=when(top.row.get("updated_at")),
        )


def parse(path: Path | str, fmt: str) -> Iterator[Record]:
    """Records of a Crush or Go-opencode store: one conversation per top session. Never raises."""
    path = Path(path)
    bad: list[BadLine] = []
    try:
        with opened(path) as conn:
            if kind_of(conn, path.name.lower()) is None:
                yield BadLine(0, 0, "the file has no sessions and messages tables with message parts: not a Crush or opencode store")
                yield SessionInfo()
                return
            sessions = _sessions(conn, bad)
        yield from bad
        if not sessions:
            yield SessionInfo()
            return
        yield from _records(sessions, fmt, path)
    except (sqlite3.Error, OSError) as exc:
        yield BadLine(0, 0, f"the store could not be read ({exc.__class__.__name__}: {exc})")
        yield SessionInfo()
    except Exception as exc:  # a last resort: never raise
        yield BadLine(0, 0, unexpected(exc))
        yield SessionInfo()


def images(raw: str) -> list[dict]:
    """The base64 images of a stored record: image attachments, data-URL images, image tool results."""
    obj = raw_json(raw)
    parts = obj.get("parts") if isinstance(obj, dict) else None
    found = []
    for part in parts if isinstance(parts, list) else []:
        data = _data(part)
        ptype = part.get("type")
        if ptype == "binary" and str(data.get("MIMEType", "")).startswith("image/") and _str(data.get("Data")):
            found.append({"media_type": data["MIMEType"], "data": data["Data"]})
        elif ptype == "image_url":
            url = _str(data.get("url")) or ""
            if url.startswith("data:") and ";base64," in url[:200]:
                head, body = url.split(",", 1)
                found.append({"media_type": head[5:].split(";", 1)[0], "data": body})
        elif ptype == "tool_result" and str(data.get("mime_type", "")).startswith("image/") and _str(data.get("data")):
            found.append({"media_type": data["mime_type"], "data": data["data"]})
    return found

