"""Hermes Agent's session store (``~/.hermes/state.db``) -> normalized records (pure, no Django).
Checked against what Hermes Agent 0.19.0 (PyPI ``hermes-agent``) wrote, run offline here against a
scripted Chat Completions server (``hermes --provider openai-api -m scripted -z PROMPT``, compacting
in place, its default, and by rotation), and its
own source (``hermes_state.py``, ``agent/conversation_compression.py``,
``agent/context_compressor.py``, ``tools/delegate_tool.py``):

- ``sessions``: ``id``, ``source`` (cli, subagent, a gateway's platform), ``model``, ``cwd``,
  ``title``, ``parent_session_id``, ``started_at``/``ended_at`` (Unix seconds, float),
  ``end_reason`` (``compression`` when a compaction ended it and forked a continuation), the
  session's token totals (``input_tokens``, ``output_tokens``, ``cache_read_tokens``,
  ``cache_write_tokens``, ``reasoning_tokens``, ``api_call_count``);
- ``messages``: one row per OpenAI-shaped message: ``role`` (user, assistant, tool, system),
  ``content`` (text), ``tool_calls`` (JSON list of ``{id, function: {name, arguments}}``),
  ``tool_call_id`` and ``tool_name`` (a tool row), ``reasoning``, ``timestamp``, ``token_count``
  (left empty by 0.19.0), ``finish_reason``, ``active`` and ``compacted`` (an in-place compaction
  sets ``active = 0, compacted = 1`` on the rows it put away);
- ``session_model_usage``: per session and model, totals; ``task = 'compression'`` is the
  summarizer's.

Hermes records no usage per model call: every call is of zero usage, flagged ``usage_unmeasured``,
and the session's totals are kept in its first message's flags.

Mapping: a session with no parent in the store is a conversation; a child whose parent ended with
``end_reason = 'compression'`` continues it (Hermes's rotation, ``compression.in_place: false``; a
sub-agent started after it is the continuation's child); any other child (a
``delegate_task`` sub-agent, ``source = 'subagent'``) is a sub-agent of its conversation, linked to the
parent's last ``delegate_task`` call made before it started. An assistant row is one model call
(Chat Completions: one response, one message).

Compaction: Hermes writes the compacted list (the protected head, copied; its summary, a message
starting with ``SUMMARY_PREFIX``; the protected tail, copied) as new rows in one write, all stamped
a microsecond apart, after the rows it put away (in place) or as the continuation session's first rows
(rotation). So the run of rows so stamped around the summary is the compacted list: a
``system`` ``compact_boundary`` marker goes before it, and a ``FoldRecord`` lists what the next call
carried, in order: each copied row as the earlier message it copies (the same role, text, tool calls
and tool call id: not written twice, so its tool calls are not counted twice), the summary where
Hermes put it. A row of the list that copies nothing is a message of its own after the marker, not
a model call. Hermes logs neither the trigger nor the tokens before and after: left
empty. The summarizer's totals (``task = 'compression'``, on the session that compacted: the
ended one in a rotation) are the fold's cost when that session folded once. Nothing here raises.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextviewer.core.records import AgentLink, BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.charm.store import main_of
from contextviewer.importers.common import compact_json, pos_int, str_or_none as _str, tool_call
from contextviewer.importers.driver import unexpected
from contextviewer.importers.formats import ParseInput, SessionFiles
from contextviewer.importers.hermes.entry import ENTRY, NAME, is_hermes_store, sniff  # noqa: F401 - the light part
from contextviewer.importers.sqlite_db import connect_read_only, tables

# agent/context_compressor.py: SUMMARY_PREFIX and LEGACY_SUMMARY_PREFIX head a compaction's summary.
SUMMARY_PREFIXES = ("[CONTEXT COMPACTION — REFERENCE ONLY]", "[CONTEXT SUMMARY]:")
ONE_WRITE = 5e-6  # seconds: at most this apart, two rows are of one write (1e-6 apart, float's rounding aside)
TOTALS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "api_call_count")


def when(value: Any) -> datetime | None:
    if value.__class__ not in (int, float) or not value > 0:
        return None
    try:
        return datetime.fromtimestamp(value, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _json(text: Any) -> Any:
    if text.__class__ is not str:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def is_summary(row: dict) -> bool:
    content = row.get("content")
    return content.__class__ is str and content.lstrip().startswith(SUMMARY_PREFIXES)


def _blocks(row: dict, bad: list[BadLine]) -> list[Block]:
    blocks: list[Block] = []
    reasoning = _str(row.get("reasoning")) or _str(row.get("reasoning_content"))
    if reasoning:
        blocks.append(Block("thinking", text=reasoning))
    content = row.get("content")
    role = row.get("role")
    if role == "tool":
        blocks.append(Block("tool_result", text=content if content.__class__ is str else "", tool_id=_str(row.get("tool_call_id"))))
        return blocks
    if content.__class__ is str and content:
        blocks.append(Block("text", text=content))
    raw_calls = row.get("tool_calls")
    calls = _json(raw_calls)
    if raw_calls and calls.__class__ is not list:
        bad.append(BadLine(0, 0, f"Hermes Agent message {row.get('id')}: its tool_calls is not a JSON list"))
    for call in calls if calls.__class__ is list else []:
        fn = call.get("function") if call.__class__ is dict and call.get("function").__class__ is dict else {}
        args = fn.get("arguments")
        parsed = _json(args) if args.__class__ is str else args
        blocks.append(tool_call(_str(call.get("id")) if call.__class__ is dict else None, _str(fn.get("name")),
                                parsed if parsed is not None else args or {}))
    return blocks


def _one_write(a: dict, b: dict) -> bool:
    """Whether row ``b`` follows ``a`` in one write of a list (``_insert_message_rows`` stamps each row
    a microsecond after the one before)."""
    ta, tb = a.get("timestamp"), b.get("timestamp")
    return ta.__class__ in (int, float) and tb.__class__ in (int, float) and 0 < tb - ta < ONE_WRITE


def _signature(row: dict) -> tuple:
    return (row.get("role"), row.get("content"), row.get("tool_calls"), row.get("tool_call_id"))


def compacted_lists(rows: list[dict]) -> dict[int, list[int]]:
    """Index of each compacted list's first row -> the indexes of its rows: the run of rows written
    in one write with a summary row, around it."""
    out: dict[int, list[int]] = {}
    for i, row in enumerate(rows):
        if row.get("role") == "assistant" or not is_summary(row):
            continue
        lo, hi = i, i
        while lo > 0 and _one_write(rows[lo - 1], rows[lo]):
            lo -= 1
        while hi + 1 < len(rows) and _one_write(rows[hi], rows[hi + 1]):
            hi += 1
        out[lo] = list(range(lo, hi + 1))
    return out


class _Writer:
    """The records of one conversation: its session lineage and its sub-agent sessions."""

    def __init__(self, top: str):
        self.top = top
        self.n = 0
        self.bad: list[BadLine] = []
        self.calls: list[UsageRecord] = []
        self.folds: list[FoldRecord] = []
        self.links: list[AgentLink] = []
        self.models: dict[str, None] = {}
        self.delegations: list[tuple[float, str, int]] = []  # (time, delegate_task call id, record no)
        self.emitted: dict[tuple, list[str]] = {}  # (agent, a row's signature) -> uuids of the messages written
        self.owned: dict[str, list[FoldRecord]] = {}  # session id -> the folds of its compactions

    def _fold(self, ses: dict, members: list[dict], indexes: list[int], copies: dict[int, str], agent, kind, ts,
              uid: str) -> MessageRecord:
        """The marker before a compacted list, and its fold: the list's messages in order, each copy
        of an earlier message named by that message (found by its role, text, tool calls and tool
        call id; the latest one not already named), the summary by itself."""
        self.n += 1
        marker = MessageRecord(line_no=self.n, offset=0, session_id=self.top, role="system", record_type="compaction",
                               subtype="compact_boundary", raw=compact_json({"session_id": ses["id"], "first_row": members[0].get("id")}),
                               blocks=[Block("text", text="Hermes Agent compacted the conversation")],
                               uuid=f"{uid}:boundary", timestamp=ts, agent_id=agent, agent_kind=kind)
        fold = FoldRecord(line_no=marker.line_no, boundary_uuid=marker.uuid, kind="compact", trigger=None,
                          tokens_before=None, timestamp=ts, agent_id=agent)
        for j, row in zip(indexes, members):
            own = f"{ses['id']}:{row.get('id')}"
            if is_summary(row) and row.get("role") != "assistant" and fold.summary_uuid is None:
                fold.summary_uuid, fold.summary_text = own, row.get("content") or ""
                fold.preserved_uuids.append(own)
                continue
            found = [u for u in self.emitted.get((agent, _signature(row)), []) if u not in fold.preserved_uuids]
            if found:
                copies[j] = found[-1]
            fold.preserved_uuids.append(found[-1] if found else own)
        self.folds.append(fold)
        return marker

    def session(self, ses: dict, rows: list[dict], agent: str | None, continues: str | None) -> Iterator[MessageRecord]:
        """The records of one session; ``continues``: the session it continues (a rotation), whose
        compaction the compacted list heading it is."""
        kind = "inline" if agent else None
        lists = compacted_lists(rows)
        copies: dict[int, str] = {}  # row index -> the uuid of the message it copies
        listed = {j for members in lists.values() for j in members}  # rows of a compacted list: no model call
        first = True
        for i, row in enumerate(rows):
            ts = when(row.get("timestamp"))
            uid = f"{ses['id']}:{row.get('id')}"
            if i in lists:
                yield self._fold(ses, [rows[j] for j in lists[i]], lists[i], copies, agent, kind, ts, uid)
                self.owned.setdefault(continues if continues and i == 0 else ses["id"], []).append(self.folds[-1])
            if i in copies:  # a kept message Hermes wrote again: the fold lists the message it copies
                continue
            role = _str(row.get("role")) or ""
            blocks = _blocks(row, self.bad)
            self.n += 1
            record = MessageRecord(
                line_no=self.n, offset=0, session_id=self.top,
                role=role if role in ("user", "assistant", "tool", "system") else "other",
                record_type=role or "(none)", raw=compact_json(row), blocks=blocks, uuid=uid, timestamp=ts,
                agent_id=agent, agent_kind=kind, is_compact_summary=is_summary(row) and role == "user",
            )
            if first:
                totals = {k: ses[k] for k in TOTALS if ses.get(k) is not None}
                if totals:
                    record.flags["session_totals"] = totals
                first = False
            record.model = _str(ses.get("model")) if role == "assistant" else None
            if role == "assistant" and i not in listed:
                record.api_message_id = uid
                record.flags["usage_unmeasured"] = True
                self.calls.append(UsageRecord(api_message_id=uid, request_id=None, message_uuid=uid, line_no=record.line_no,
                                              model=record.model, agent_id=agent, timestamp=ts))
                if record.model:
                    self.models[record.model] = None
                for b in blocks:
                    if b.kind == "tool_call" and b.tool_name == "delegate_task" and b.tool_id:
                        self.delegations.append((row.get("timestamp") or 0, b.tool_id, record.line_no))
            self.emitted.setdefault((agent, _signature(row)), []).append(uid)
            yield record


def _usage_rows(conn: sqlite3.Connection) -> dict[str, dict]:
    """Session id -> the summarizer's totals (``task = 'compression'``), as a fold's cost."""
    out: dict[str, dict] = {}
    if "session_model_usage" not in tables(conn):
        return out
    for row in conn.execute("SELECT * FROM session_model_usage WHERE task = 'compression'"):
        d = dict(row)
        cost = out.setdefault(str(d.get("session_id")), {"calls": 0, "input_uncached": 0, "cache_write": 0, "cache_read": 0,
                                                         "output": 0, "model": _str(d.get("model"))})
        read, write = pos_int(d.get("cache_read_tokens")), pos_int(d.get("cache_write_tokens"))
        cost["calls"] += pos_int(d.get("api_call_count"))
        cost["input_uncached"] += max(0, pos_int(d.get("input_tokens")) - read - write)
        cost["cache_read"] += read
        cost["cache_write"] += write
        cost["output"] += pos_int(d.get("output_tokens"))
    return out


def _read(conn: sqlite3.Connection) -> tuple[list[dict], dict[str, list[dict]]]:
    sessions = [dict(r) for r in conn.execute("SELECT * FROM sessions ORDER BY started_at, id")]
    rows: dict[str, list[dict]] = {}
    for r in conn.execute("SELECT * FROM messages ORDER BY id"):
        d = dict(r)
        sid = str(d.get("session_id"))
        rows.setdefault(sid, []).append(d)
    known = {str(s.get("id")) for s in sessions}
    for sid in rows:
        if sid not in known:  # rows of a session the store no longer lists: still the user's messages
            sessions.append({"id": sid})
    for s in sessions:
        s["id"] = str(s.get("id"))
    return sessions, rows


def _records(sessions: list[dict], rows: dict[str, list[dict]], costs: dict[str, dict]) -> Iterator[Record]:
    by_id = {s["id"]: s for s in sessions}
    children: dict[str, list[dict]] = {}
    tops: list[dict] = []
    for ses in sessions:
        parent = _str(ses.get("parent_session_id"))
        if parent is not None and parent in by_id and parent != ses["id"]:
            children.setdefault(parent, []).append(ses)
        else:
            tops.append(ses)
    for top in tops:
        writer = _Writer(top["id"])
        # (session, agent id, the session it continues): the lineage first (rotation continuations share
        # the top's agent), then sub-agents
        order: list[tuple[dict, str | None, str | None]] = []
        queue: list[tuple[dict, str | None, str | None]] = [(top, None, None)]
        seen = {top["id"]}
        stamps: list[datetime] = []
        while queue:
            ses, agent, continues = queue.pop(0)
            order.append((ses, agent, continues))
            for child in children.get(ses["id"], []):
                if child["id"] in seen:
                    continue
                seen.add(child["id"])
                if ses.get("end_reason") == "compression" and child.get("source") != "subagent":
                    queue.insert(0, (child, agent, ses["id"]))  # a continuation: the same conversation, next
                else:
                    queue.append((child, child["id"], None))
        for ses, agent, continues in order:
            if agent is not None and agent == ses["id"]:
                start = ses.get("started_at") if ses.get("started_at").__class__ in (int, float) else None
                found = [d for d in writer.delegations if start is None or d[0] <= start]
                link = found[-1] if found else None
                writer.links.append(AgentLink(agent_id=agent, tool_use_id=link[1] if link else None,
                                              line_no=link[2] if link else writer.n + 1,
                                              agent_type=_str(ses.get("source")), description=_str(ses.get("title"))))
            session_rows = rows.get(ses["id"], [])
            stamps += [t for t in (when(r.get("timestamp")) for r in session_rows) if t is not None]
            yield from writer.session(ses, session_rows, agent, continues)
        for sid, folds in writer.owned.items():  # a session's summarizer totals: the cost of its one fold
            if sid in costs and len(folds) == 1:
                folds[0].cost = costs[sid]
        yield from writer.bad
        yield from writer.calls
        yield from writer.folds
        yield from writer.links
        lineage = [s for s, a, _ in order if a is None]
        yield SessionInfo(
            external_id=top["id"],
            title=next((_str(s.get("title")) for s in lineage if _str(s.get("title"))), None),
            cwd=_str(top.get("cwd")),
            models=list(writer.models) or ([top["model"]] if _str(top.get("model")) else []),
            started_at=when(top.get("started_at")) or (min(stamps) if stamps else None),
            ended_at=max(stamps) if stamps else when(top.get("ended_at")),
        )


def group(paths: list[Path]) -> list[SessionFiles]:
    """A store with its ``-wal``/``-shm`` beside it is one source: the companions name it."""
    return [SessionFiles(format=NAME, main=p) for p in sorted({main_of(p) for p in paths})]


def parse(source: ParseInput) -> Iterator[Record]:
    """Records of a Hermes ``state.db``: one conversation per session lineage. Never raises."""
    path = Path(source.path)
    try:
        conn = connect_read_only(path, row_factory=sqlite3.Row)
        try:
            if not is_hermes_store(conn):
                yield BadLine(0, 0, "not a Hermes Agent state.db: it has no sessions and messages tables with Hermes's "
                                    "columns (source, parent_session_id; session_id, role, content, tool_calls, tool_call_id)")
                yield SessionInfo()
                return
            sessions, rows = _read(conn)
            costs = _usage_rows(conn)
        finally:
            conn.close()
        if not sessions:
            yield SessionInfo()
            return
        yield from _records(sessions, rows, costs)
    except (sqlite3.Error, OSError) as exc:
        yield BadLine(0, 0, f"the Hermes Agent state.db could not be read ({exc.__class__.__name__}: {exc})")
        yield SessionInfo()
    except Exception as exc:  # a last resort: never raise
        yield BadLine(0, 0, unexpected(exc))
        yield SessionInfo()


FORMAT = ENTRY.format(
    parse=parse,
    group=group,
    multi_session=True,
    rewrites=True,  # a compaction rewrites the rows it puts away (active, compacted)
)
