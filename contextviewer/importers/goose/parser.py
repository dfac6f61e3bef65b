"""Goose's session store (``~/.local/share/goose/sessions/sessions.db``) -> normalized records (pure, no
Django). No Goose CLI installs here from a package registry (its releases are GitHub binaries; PyPI's
``goose-sdk`` is its provider SDK, with no session store), so these facts come from its own source,
``crates/goose/src/session/session_manager.rs`` (schema version 17), ``conversation/message.rs`` and
``context_mgmt/mod.rs``:

- ``sessions``: ``id`` (``YYYYMMDD_<n>``), ``name``, ``session_type`` (user, scheduled, sub_agent,
  hidden, terminal, gateway, acp), ``working_dir``, ``created_at``/``updated_at`` (SQLite
  ``CURRENT_TIMESTAMP`` text, UTC), ``provider_name``, ``model_config_json`` (``{"model_name", ...}``),
  ``parent_session_id`` (a sub-agent's parent), ``parent_delegation`` (JSON, for a foreground
  sub-agent: ``parent_delegate_message_id``, the parent's message that delegated to it), the session's
  token totals;
- ``messages``: ``message_id``, ``session_id``, ``role`` (user, assistant), ``content_json`` (a JSON
  list of ``MessageContent``, tagged by ``type``: ``text``, ``image`` {data, mimeType},
  ``toolRequest`` {id, toolCall: {status: success, value: {name, arguments}} | {status: error, error}},
  ``toolResponse`` {id, toolResult: {status: success, value: {content: [...], isError}} | {status:
  error, error}}, ``thinking``, ``redactedThinking``, ``systemNotification``, ``toolConfirmationRequest``,
  ``actionRequired``, ``frontendToolRequest``), ``created_timestamp`` (Unix seconds), ``metadata_json``
  (``{userVisible, agentVisible}``). Goose reads them back ordered by ``created_timestamp, id``;
- ``usage_ledger`` (schema 15 on): one row per model call, ``created_timestamp`` (written when the call
  ended), ``model``, ``input_tokens`` (cache reads and writes counted inside: Goose adds Anthropic's
  back in), ``output_tokens``, ``cache_read_tokens``, ``cache_write_tokens``, ``is_compaction`` (the
  summarizer's call); a ``cost_source = 'carried_forward'`` row is totals carried over from before the
  ledger existed, not a call.

Mapping: every top session (no parent in the store) is a conversation; a session whose parent is in the
store is a sub-agent of its top session (records with ``agent_id`` = its id), linked by an ``AgentLink``
to the first tool request of the parent's message that delegated to it (``parent_delegation``), else
unlinked. A message is one record (uuid = its ``message_id``); a user message of tool responses only is
a ``tool`` message. A run of assistant messages with no other message between is one model call, whose
usage is the next ledger row of its session written at or after it (none: a call of zero usage,
flagged ``usage_unmeasured``, shown as estimated).

Compaction (``compact_messages``): Goose keeps the old messages, marks them ``agentVisible: false``, and
adds a summary (a user message, ``userVisible: false, agentVisible: true``), an assistant continuation
message (agent-only, Goose's own text, not a model's) and, for an automatic compaction, a copy of the last
user prompt (a later compaction hides those from the agent too). So a user message hidden from the user
and followed by an assistant message hidden from the user, after agent-invisible ones, is a summary: a ``system``
``compact_boundary`` marker before it and a ``FoldRecord`` (trigger ``manual`` when the continuation is
Goose's text for a compaction asked by the user, ``auto`` for its two others; no token figures: Goose
writes none for a compaction). The summarizer's ledger row (``is_compaction``) is a model call placed at
the marker (it read the history being put away). Nothing here raises.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextviewer.core.records import AgentLink, BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.charm.store import main_of
from contextviewer.importers.common import compact_json, pos_int, str_or_none as _str, tool_call
from contextviewer.importers.driver import unexpected
from contextviewer.importers.formats import ParseInput, SessionFiles
from contextviewer.importers.goose.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    NAME,
    is_goose_store,
    sniff,
)
from contextviewer.importers.sqlite_db import connect_read_only, tables

# The continuation texts of context_mgmt/mod.rs, told apart by a phrase of each.
MANUAL_CONTINUATION = "produced at the user's request"
AUTO_CONTINUATIONS = ("no longer fits in your context",)


def when(value: Any) -> datetime | None:
    """Unix seconds (milliseconds told apart by magnitude, as Goose does), or SQLite's UTC text."""
    if value.__class__ is str:
        try:
            dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return dt if dt.tzinfo else dt.replace(tzinfo=UTC)
    if value.__class__ is not int or value <= 0:
        return None
    try:
        return datetime.fromtimestamp(value / 1000 if value > 10_000_000_000 else value, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _json(text: Any) -> Any:
    if text.__class__ is not str:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _visibility(meta: Any) -> tuple[bool, bool]:
    """(user visible, agent visible); both by default, as Goose's ``MessageMetadata``."""
    meta = meta if meta.__class__ is dict else {}
    return meta.get("userVisible") is not False, meta.get("agentVisible") is not False


def _result_text(result: Any) -> tuple[str, bool, int]:
    """A tool response's (text, is_error, images): its content's texts, or its error."""
    if result.__class__ is not dict:
        return "", False, 0
    if result.get("status") == "error":
        return str(result.get("error") or "error"), True, 0
    value = result.get("value")
    is_error = False
    if value.__class__ is dict:
        is_error = value.get("isError") is True
        value = value.get("content")
    texts, images = [], 0
    for item in value if value.__class__ is list else []:
        if item.__class__ is not dict:
            continue
        if item.get("type") == "image":
            images += 1
        elif item.get("text").__class__ is str:
            texts.append(item["text"])
        elif item.get("type") == "resource" and (item.get("resource") or {}).get("text").__class__ is str:
            texts.append(item["resource"]["text"])
    return "\n".join(texts), is_error, images


def _blocks(content: list) -> list[Block]:
    blocks: list[Block] = []
    for item in content:
        kind = item.get("type") if item.__class__ is dict else None
        if kind == "text":
            blocks.append(Block("text", text=item.get("text") if item.get("text").__class__ is str else ""))
        elif kind == "image":
            data = item.get("data") if item.get("data").__class__ is str else ""
            blocks.append(Block("image", media_type=_str(item.get("mimeType")) or "image/png", data_size=len(data)))
        elif kind in ("toolRequest", "frontendToolRequest"):
            call = item.get("toolCall") if item.get("toolCall").__class__ is dict else {}
            value = call.get("value") if call.get("value").__class__ is dict else {}
            if call.get("status") == "error":
                blocks.append(Block("other", text=f"invalid tool call: {call.get('error')}", raw_type=kind))
            else:
                blocks.append(tool_call(_str(item.get("id")), _str(value.get("name")), value.get("arguments") or {}))
        elif kind == "toolResponse":
            text, is_error, images = _result_text(item.get("toolResult"))
            blocks.append(Block("tool_result", text=text, tool_id=_str(item.get("id")), is_error=is_error, images=images))
        elif kind == "thinking":
            blocks.append(Block("thinking", text=item.get("thinking") if item.get("thinking").__class__ is str else ""))
        elif kind == "redactedThinking":
            blocks.append(Block("thinking", text="[redacted thinking]"))
        elif kind == "systemNotification":
            blocks.append(Block("other", text=_str(item.get("msg")) or "", raw_type=kind))
        else:
            blocks.append(Block("other", text=compact_json(item), raw_type=kind if kind.__class__ is str else "(none)"))
    return blocks


@dataclass
class _Ses:
    row: dict
    messages: list[dict] = field(default_factory=list)
    ledger: list[dict] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.row.get("id"))

    @property
    def model(self) -> str | None:
        config = _json(self.row.get("model_config_json"))
        return _str(config.get("model_name")) if config.__class__ is dict else None


def _read(conn: sqlite3.Connection, bad: list[BadLine]) -> list[_Ses]:
    sessions: dict[str, _Ses] = {}
    for row in conn.execute("SELECT * FROM sessions"):
        d = dict(row)
        sessions[str(d.get("id"))] = _Ses(d)
    for row in conn.execute("SELECT * FROM messages ORDER BY created_timestamp, id"):
        d = dict(row)
        content = _json(d.get("content_json"))
        if content.__class__ is not list:
            bad.append(BadLine(0, 0, f"Goose message {d.get('message_id') or d.get('id')}: its content_json is not a JSON list"))
            content = []
        d["content"] = content
        sid = str(d.get("session_id"))
        sessions.setdefault(sid, _Ses({"id": sid})).messages.append(d)
    if "usage_ledger" in tables(conn):
        for row in conn.execute("SELECT * FROM usage_ledger ORDER BY id"):
            d = dict(row)
            if d.get("cost_source") != "carried_forward" and str(d.get("session_id")) in sessions:
                sessions[str(d.get("session_id"))].ledger.append(d)
    return sorted(sessions.values(), key=lambda s: (_str(s.row.get("created_at")) or "~", s.id))


class _Writer:
    """The records of one top session and its sub-agent sessions."""

    def __init__(self, top: str):
        self.top = top
        self.n = 0
        self.calls: list[UsageRecord] = []
        self.folds: list[FoldRecord] = []
        self.links: list[AgentLink] = []
        self.models: dict[str, None] = {}
        self.requests: dict[str, tuple[str, int]] = {}  # message id -> (its first tool request id, record no)

    def _record(self, **kwargs) -> MessageRecord:
        self.n += 1
        return MessageRecord(line_no=self.n, offset=0, session_id=self.top, **kwargs)

    def _usage(self, mid: str, line_no: int, row: dict | None, model: str | None, agent, ts) -> UsageRecord:
        call = UsageRecord(api_message_id=mid, request_id=None, message_uuid=mid, line_no=line_no, model=model,
                           agent_id=agent, timestamp=ts)
        if row is not None:
            total_in = pos_int(row.get("input_tokens"))
            call.cache_read = pos_int(row.get("cache_read_tokens"))
            call.cache_write = pos_int(row.get("cache_write_tokens"))
            call.input_uncached = max(0, total_in - call.cache_read - call.cache_write)
            call.output = pos_int(row.get("output_tokens"))
        return call

    def session(self, ses: _Ses, agent: str | None) -> Iterator[MessageRecord]:
        kind = "inline" if agent else None
        calls = [r for r in ses.ledger if not r.get("is_compaction")]
        summaries = [r for r in ses.ledger if r.get("is_compaction")]
        archived = False  # an agent-invisible message was seen: a summary may follow
        call_open = False  # the previous record was an assistant message of the open call
        fold: FoldRecord | None = None
        seen = [_visibility(_json(m.get("metadata_json"))) for m in ses.messages]
        for i, msg in enumerate(ses.messages):
            role = _str(msg.get("role")) or ""
            user_visible, agent_visible = seen[i]
            ts = when(msg.get("created_timestamp"))
            mid = _str(msg.get("message_id")) or f"{ses.id}:{msg.get('id')}"
            blocks = _blocks(msg["content"])
            raw = compact_json({k: v for k, v in msg.items() if k != "content"})
            if archived and _is_summary(ses.messages, seen, i):
                yield from self._fold(ses, mid, ts, agent, kind, summaries)
                fold = self.folds[-1]
                fold.summary_uuid = mid
                fold.summary_text = "\n".join(b.text for b in blocks if b.kind == "text")
                record = self._record(role="user", record_type="user", raw=raw, blocks=blocks, uuid=mid, timestamp=ts,
                                      agent_id=agent, agent_kind=kind, is_compact_summary=True)
                archived, call_open = False, False
                yield record
                continue
            synthetic = role == "assistant" and fold is not None and not user_visible
            tool_only = role == "user" and blocks and all(b.kind == "tool_result" for b in blocks)
            record = self._record(
                role="tool" if tool_only else role if role in ("user", "assistant") else "other",
                record_type=role or "(none)", raw=raw, blocks=blocks, uuid=mid, timestamp=ts,
                agent_id=agent, agent_kind=kind,
                flags={"agent_visible": False} if not agent_visible else {},
            )
            if not agent_visible:
                archived = True
            if synthetic:  # Goose's own continuation text after a summary: no model wrote it
                fold.trigger = "manual" if MANUAL_CONTINUATION in _text(blocks) else (
                    "auto" if any(t in _text(blocks) for t in AUTO_CONTINUATIONS) else None)
                record.flags["synthetic"] = True
                fold = None
                yield record
                continue
            fold = None
            if role == "assistant":
                first = next((b.tool_id for b in blocks if b.kind == "tool_call" and b.tool_id), None)
                if first is not None:
                    self.requests[mid] = (first, record.line_no)
                if call_open:
                    record.api_message_id = self.calls[-1].api_message_id
                else:
                    row = _take(calls, msg.get("created_timestamp"))
                    model = (_str(row.get("model")) if row else None) or ses.model
                    record.api_message_id = mid
                    call = self._usage(mid, record.line_no, row, model, agent, when(row.get("created_timestamp")) if row else ts)
                    if row is None:
                        record.flags["usage_unmeasured"] = True
                    self.calls.append(call)
                    if model:
                        self.models[model] = None
                record.model = self.calls[-1].model
                call_open = True
            else:
                call_open = False
            yield record

    def _fold(self, ses: _Ses, mid: str, ts, agent, kind, summaries: list[dict]) -> Iterator[MessageRecord]:
        marker = self._record(role="system", record_type="compaction", subtype="compact_boundary",
                              raw=compact_json({"summary_message_id": mid}),
                              blocks=[Block("text", text="Conversation compacted")], uuid=f"{mid}:boundary",
                              timestamp=ts, agent_id=agent, agent_kind=kind)
        row = _take(summaries, None)
        if row is not None:
            model = _str(row.get("model")) or ses.model
            marker.api_message_id = marker.uuid
            self.calls.append(self._usage(marker.uuid, marker.line_no, row, model, agent, when(row.get("created_timestamp"))))
        self.folds.append(FoldRecord(line_no=marker.line_no, boundary_uuid=marker.uuid, kind="compact", trigger=None,
                                     tokens_before=None, timestamp=ts, agent_id=agent))
        yield marker


def _is_summary(messages: list[dict], seen: list[tuple[bool, bool]], i: int) -> bool:
    """A compaction's summary: a user message hidden from the user, followed by Goose's continuation (an
    assistant message hidden from the user). Both are agent-only when written; a later compaction puts
    them away too (then hidden from both), so the pair is told by the user's side alone."""
    if messages[i].get("role") != "user" or seen[i][0] or i + 1 >= len(messages):
        return False
    return messages[i + 1].get("role") == "assistant" and not seen[i + 1][0]


def _text(blocks: list[Block]) -> str:
    return "\n".join(b.text for b in blocks if b.kind == "text")


def _seconds(value: Any) -> int | None:
    """Unix seconds of a Goose time (some versions wrote messages' in milliseconds: told apart by
    magnitude, as Goose does)."""
    if value.__class__ is not int:
        return None
    return value // 1000 if value > 10_000_000_000 else value


def _take(rows: list[dict], created: Any) -> dict | None:
    """The first ledger row written at or after ``created`` (any first row when None), taken out."""
    start = _seconds(created)
    for i, row in enumerate(rows):
        at = _seconds(row.get("created_timestamp"))
        if created is None or (at is not None and start is not None and at >= start):
            return rows.pop(i)
    return None


def _records(sessions: list[_Ses]) -> Iterator[Record]:
    by_id = {s.id: s for s in sessions}
    children: dict[str, list[_Ses]] = {}
    tops: list[_Ses] = []
    for ses in sessions:
        parent = _str(ses.row.get("parent_session_id"))
        if parent is not None and parent in by_id and parent != ses.id:
            children.setdefault(parent, []).append(ses)
        else:
            tops.append(ses)
    for top in tops:
        writer = _Writer(top.id)
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
                delegation = _json(ses.row.get("parent_delegation"))
                by = _str(delegation.get("parent_delegate_message_id")) if delegation.__class__ is dict else None
                found = writer.requests.get(by) if by else None
                title = _str(ses.row.get("name"))
                writer.links.append(AgentLink(agent_id=ses.id, tool_use_id=found[0] if found else None,
                                              line_no=found[1] if found else writer.n + 1,
                                              agent_type=_str(ses.row.get("session_type")), description=title))
            yield from writer.session(ses, agent)
        yield from writer.calls
        yield from writer.folds
        yield from writer.links
        times = [m.get("created_timestamp") for s, _ in order for m in s.messages]
        stamps = [t for t in (when(v) for v in times) if t is not None]
        yield SessionInfo(
            external_id=top.id,
            title=_str(top.row.get("name")),
            cwd=_str(top.row.get("working_dir")),
            models=list(writer.models) or ([top.model] if top.model else []),
            started_at=when(top.row.get("created_at")) or (min(stamps) if stamps else None),
            ended_at=max(stamps) if stamps else when(top.row.get("updated_at")),
        )


def group(paths: list[Path]) -> list[SessionFiles]:
    """A store with its ``-wal``/``-shm`` beside it is one source: the companions name it. A session
    file of the old layout beside a store is left out: Goose copied it into the store when it made it
    (``import_legacy``), and wrote only there since."""
    mains = {main_of(p) for p in paths}
    stores = {p.parent for p in mains if p.suffix != ".jsonl"}
    return [SessionFiles(format=NAME, main=p) for p in sorted(mains) if p.suffix != ".jsonl" or p.parent not in stores]


def _legacy(path: Path) -> Iterator[Record]:
    """A session file of the old layout (``storage.rs``: a ``SessionMetadata`` line, then one message
    per line, as the store's ``content_json`` items): read as a store's session with no ledger, so
    every call is of zero usage (the file keeps session totals only, on its first line)."""
    bad: list[BadLine] = []
    meta: dict = {}
    messages: list[dict] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            obj = _json(line)
            if obj.__class__ is not dict:
                bad.append(BadLine(line_no, 0, f"Goose session line {line_no}: not a JSON object"))
            elif line_no == 1 and "role" not in obj and "content" not in obj:
                meta = obj
            elif obj.get("content").__class__ is not list:
                bad.append(BadLine(line_no, 0, f"Goose session line {line_no}: a message without its content list"))
            else:
                messages.append({"id": line_no, "message_id": _str(obj.get("id")) or f"{path.stem}:{line_no}",
                                 "role": obj.get("role"), "content": obj["content"],
                                 "created_timestamp": obj.get("created"), "metadata_json": compact_json(obj.get("metadata"))})
    yield from bad
    if not messages:
        yield SessionInfo()
        return
    ses = _Ses({"id": path.stem, "name": _str(meta.get("description")), "working_dir": _str(meta.get("working_dir"))}, messages)
    records = list(_records([ses]))
    totals = {k: meta[k] for k in ("accumulated_input_tokens", "accumulated_output_tokens", "accumulated_total_tokens") if k in meta}
    first = next((r for r in records if isinstance(r, MessageRecord)), None)
    if totals and first is not None:
        first.flags["session_totals"] = totals
    yield from records


def parse(source: ParseInput) -> Iterator[Record]:
    """Records of a Goose ``sessions.db``: one conversation per top session; or of a session file of
    the old layout. Never raises."""
    path = Path(source.path)
    bad: list[BadLine] = []
    try:
        if path.suffix == ".jsonl":
            yield from _legacy(path)
            return
        conn = connect_read_only(path, row_factory=sqlite3.Row)
        try:
            if not is_goose_store(conn):
                yield BadLine(0, 0, "not a Goose sessions.db: it has no sessions and messages tables with Goose's "
                                    "columns (working_dir; session_id, role, content_json, created_timestamp)")
                yield SessionInfo()
                return
            sessions = _read(conn, bad)
        finally:
            conn.close()
        yield from bad
        if not sessions:
            yield SessionInfo()
            return
        yield from _records(sessions)
    except (sqlite3.Error, OSError) as exc:
        yield BadLine(0, 0, f"the Goose sessions.db could not be read ({exc.__class__.__name__}: {exc})")
        yield SessionInfo()
    except Exception as exc:  # a last resort: never raise
        yield BadLine(0, 0, unexpected(exc))
        yield SessionInfo()


FORMAT = ENTRY.format(
    parse=parse,
    group=group,
    multi_session=True,
    rewrites=True,  # a compaction rewrites the metadata of the messages it puts away
)
