"""efferent's conversation store (SQLite) -> normalized records. See ../shared/docs/formats.md §10.1.

Pure (no Django). One database holds many conversations (``multi_session``): each conversation's
records end with its ``SessionInfo``. The database is opened read-only (``?mode=ro``) and read
whole on every import; uuids are the store's own identities, so a re-import stores nothing twice.

Two schema lines, told apart by the ``messages`` table's columns:

- the current line (``<cwd>/.efferent/smith.db``): ``messages(conversation_id, position,
  content, created_at)`` with the role inside ``content``; message uuid
  ``<conversation>:<position>`` (the table's primary key), usage in ``providerOptions.engine``;
- the older line (``~/.efferent/efferent.db``): ``messages(id, conversation_id, position, role,
  content, created_at)`` with ``content`` the message without its role; message uuid
  ``message-<id>``, usage in ``providerOptions.efferent``; sub-agents in ``context_nodes`` and
  ``context_messages``.

Decisions worth knowing:

- A checkpoint is a fold: a ``system`` marker (subtype ``compact_boundary``) is emitted right
  after the message at the checkpoint's ``message_position`` (the summary stands for every
  position up to it); the checkpoint's summary is the fold's ``summary_text``. efferent does not
  store the summary as a message, so none is invented. A mid-run checkpoint keeps a tail that
  overlaps the summary: the messages after its position written before it are the fold's
  ``preserved_uuids``. ``tokens_before`` is the measured context of the last model call before
  the checkpoint (input + output), where there is one.
- Usage: one ``UsageRecord`` per assistant message that carries ``providerOptions.engine`` (or
  ``.efferent``). ``inputTokens`` already includes cache reads, so it is split as OpenAI's is
  (formats.md §7): uncached = input - cacheRead, cache read = cacheRead, no cache write figure.
  A sub-agent node's ``usage`` is cumulative, not per call: it is kept on the node's message,
  never emitted as a model call.
- Sub-agents: every ``context_messages`` row of a node becomes a message with ``agent_id`` =
  the node id and ``agent_kind="inline"`` (a child conversation); the seed rows are flagged; the
  node row itself closes the child as a ``system`` message (subtype ``agent_node``) with its
  status and return summary. The parent's ``run_agent`` tool result (``{nodeId, name,
  status}``) links the node to the tool call (an ``AgentLink``).
- Tool results clipped by efferent at append time are kept as stored, marker text included,
  and flagged ``clipped`` (with the omitted token count the marker states); each clipped result's
  ``extra["clip"]`` holds its marker and that count (``clip_extra``) for the policy lab.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from contextviewer.core.harness import Harness
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
from contextviewer.importers.common import (
    add_extras,
    compact_json,
    content_blocks,
    int_or_none,
    json_kind,
    parse_timestamp,
    pos_int,
    stored_extras,
    TimeSpan,
    str_or_none,
    timestamp,
    tool_call,
)
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.sqlite_db import columns as _columns, tables as _tables
from contextviewer.importers.efferent.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    REQUIRED_TABLES,
    _connect,
    sniff,
)

USAGE_KEYS = ("engine", "efferent")
RUN_AGENT = "run_agent"
# "[…compaction: ~N tokens of this <tool> output omitted. … To retrieve it, …]"
CLIP_MARKER = re.compile(r"\[(?:…|\.\.\.)compaction: ~\s*([\d,]+) tokens of this (.{0,80}?) output omitted")


# -- reading values -----------------------------------------------------------------------------


def _timestamp(value: Any) -> datetime | None:
    """efferent writes epoch milliseconds; an ISO string or epoch seconds are read too."""
    if value.__class__ is str:
        text = value.strip()
        if text.lstrip("-").isascii() and text.lstrip("-").isdigit():
            value = int(text)
        else:
            return parse_timestamp(text.replace(" ", "T", 1) if len(text) > 10 and text[10] == " " else text)
    return timestamp(value)


def _row_json(row: sqlite3.Row, table: str) -> str:
    """The row as read, as JSON (blobs as their length: efferent stores none)."""
    out: dict[str, Any] = {"table": table}
    for key in row.keys():
        value = row[key]
        out[key] = f"<{len(value)} bytes>" if isinstance(value, bytes) else value
    return compact_json(out)


def _text_value(value: Any) -> str:
    if value is None:
        return ""
    if value.__class__ is str:
        return value
    return compact_json(value)


def _output_text(output: Any) -> tuple[str, bool]:
    """The text of a tool result's ``output`` (a string, an AI SDK ``{type, value}`` part, or any
    JSON value) and whether it says it is an error."""
    if output.__class__ is dict and "type" in output and "value" in output:
        kind = output.get("type")
        value = output.get("value")
        if kind == "content" and value.__class__ is list:
            texts = [p.get("text") for p in value if p.__class__ is dict and p.get("text").__class__ is str]
            return "\n".join(texts), False
        return _text_value(value), kind.__class__ is str and kind.startswith("error")
    return _text_value(output), False


def _output_object(output: Any) -> dict | None:
    """A run_agent result's object (``{nodeId, name, status}``), wherever the output keeps it."""
    if output.__class__ is dict and "type" in output and "value" in output and "nodeId" not in output:
        output = output.get("value")
    if output.__class__ is str:
        try:
            output = json.loads(output)
        except ValueError:
            return None
    return output if output.__class__ is dict else None


def _part_block(part: Any) -> Block:
    if part.__class__ is str:
        return Block("text", text=part)
    if part.__class__ is not dict:
        return Block("other", text=compact_json(part), raw_type=json_kind(part))
    kind = part.get("type")
    if kind == "text":
        return Block("text", text=_text_value(part.get("text")))
    if kind == "reasoning":
        return Block("thinking", text=_text_value(part.get("text")))
    if kind == "tool-call":
        return tool_call(
            str_or_none(part.get("toolCallId")), str_or_none(part.get("toolName")), part.get("input", part.get("args"))
        )
    if kind == "tool-result":
        text, error = _output_text(part.get("output", part.get("result")))
        return Block(
            "tool_result",
            text=text,
            tool_id=str_or_none(part.get("toolCallId")),
            tool_name=str_or_none(part.get("toolName")),
            is_error=part.get("isError") is True or error,
        )
    if kind in ("image", "file"):
        data = part.get("image", part.get("data"))
        media_type = str_or_none(part.get("mediaType")) or str_or_none(part.get("mimeType"))
        if kind == "image" or (media_type or "").startswith("image/"):
            return Block("image", media_type=media_type, data_size=len(data) if data.__class__ is str else 0)
        return Block("other", text=str_or_none(part.get("filename")) or "", raw_type=kind, media_type=media_type)
    return Block("other", text=_text_value(part.get("text")), raw_type=kind if kind.__class__ is str and kind else "(none)")


def _blocks(content: Any) -> list[Block]:
    return content_blocks(content, _part_block)


def _model_name(value: Any) -> tuple[str | None, str | None]:
    """(model id, provider) of a ``provider:modelId`` string."""
    name = str_or_none(value)
    if name is None:
        return None, None
    provider, sep, model = name.partition(":")
    return (model, provider) if sep and model else (name, None)


def _message_object(row: sqlite3.Row, column_role: str | None, number: int, where: str) -> dict | BadLine:
    """A message row's ``content``, read as JSON: the message object (the older line may store a
    bare content value, its role in a column), or the ``BadLine`` saying why it cannot be read."""
    content = row["content"]
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8")
        except UnicodeDecodeError:
            return BadLine(number, 0, f"the {where} is not UTF-8 text; it was not imported")
    if content.__class__ is not str:
        return BadLine(number, 0, f"the {where} has no content; it was not imported")
    try:
        obj = json.loads(content)
    except (ValueError, RecursionError) as exc:
        detail = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        return BadLine(number, 0, f"the {where} is not valid JSON ({detail}); it was not imported")
    if obj.__class__ is not dict:
        if column_role is None:
            return BadLine(number, 0, f"the {where} is {json_kind(obj)}, not a message object; it was not imported")
        obj = {"content": obj}
    return obj


def _flag_clipped(blocks: list[Block], flags: dict) -> None:
    """Tool results efferent clipped at append time: flagged (with the tokens the markers say were
    omitted), each one's marker in its extra."""
    clipped = [m for b in blocks if b.kind == "tool_result" for m in CLIP_MARKER.finditer(b.text)]
    if clipped:
        flags["clipped"] = True
        flags["clipped_tokens_omitted"] = sum(int(m.group(1).replace(",", "")) for m in clipped)
        add_extras(blocks, clip_extra)


def _usage_of(obj: dict) -> dict | None:
    """The usage a message keeps in ``providerOptions`` (``engine``, or ``efferent`` on the older line)."""
    options = obj.get("providerOptions")
    if options.__class__ is dict:
        for key in USAGE_KEYS:
            if options.get(key).__class__ is dict:
                return options[key]
    return None


# -- the parser ---------------------------------------------------------------------------------


class _Session(TimeSpan):
    """What one conversation's records gather before its last record."""

    def __init__(self, conversation_id: str):
        self.id = conversation_id
        self.models: dict[str, None] = {}
        self.usage: list[UsageRecord] = []
        self.folds: list[FoldRecord] = []
        self.links: dict[str, AgentLink] = {}
        self.calls: list[tuple[int, int]] = []  # (position, context of the call) of the main conversation


class _Reader:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.number = 0  # records read so far: the "line" of each (the database has no lines)
        tables = _tables(conn)
        self.tables = tables
        self.message_columns = _columns(conn, "messages")
        self.older = {"id", "role"} <= self.message_columns
        self.checkpoint_columns = _columns(conn, "checkpoints")
        self.conversation_columns = _columns(conn, "conversations")
        self.has_nodes = {"context_nodes", "context_messages"} <= tables

    def next_number(self) -> int:
        self.number += 1
        return self.number

    # -- the sessions

    def sessions(self) -> Iterator[Record]:
        order = "created_at, id" if "created_at" in self.conversation_columns else "id"
        known: set[str] = set()
        for row in self.conn.execute(f"SELECT * FROM conversations ORDER BY {order}"):
            conversation_id = str(row["id"]) if row["id"] is not None else ""
            if not conversation_id or conversation_id in known:
                yield BadLine(self.next_number(), 0, f"a conversations row has {'no' if not conversation_id else 'a duplicate'} id ({_row_json(row, 'conversations')[:200]})")
                continue
            known.add(conversation_id)
            yield from self.session(row, conversation_id)
        # Messages whose conversation row is missing still import, as their own sessions.
        for conversation_id in self._orphan_conversations(known):
            yield from self.session(None, conversation_id)

    def _orphan_conversations(self, known: set[str]) -> list[str]:
        ids = [str(r[0]) for r in self.conn.execute("SELECT DISTINCT conversation_id FROM messages") if r[0] is not None]
        return sorted(i for i in ids if i not in known)

    def session(self, row: sqlite3.Row | None, conversation_id: str) -> Iterator[Record]:
        session = _Session(conversation_id)
        conversation_model = None
        title = cwd = None
        if row is not None:
            keys = row.keys()
            title = str_or_none(row["title"]) if "title" in keys else None
            cwd = str_or_none(row["workspace_dir"]) if "workspace_dir" in keys else None
            if "model" in keys:
                conversation_model = _model_name(row["model"])[0]
            session.saw(_timestamp(row["created_at"]) if "created_at" in keys else None)

        checkpoints = self._checkpoints(conversation_id)
        pending = list(checkpoints)  # (position, row), by position
        positions: list[tuple[int, str, datetime | None]] = []  # (position, uuid, created_at)
        last_position = -1
        for message in self._messages(conversation_id, session):
            if isinstance(message, BadLine):
                yield message
                continue
            record, position = message
            while pending and pending[0][0] < position:
                yield self._marker(session, pending.pop(0), positions)
            positions.append((position, record.uuid or "", record.timestamp))
            last_position = max(last_position, position)
            yield record
        while pending:
            yield self._marker(session, pending.pop(0), positions)
        if self.has_nodes:
            yield from self._subagents(session)
        self._attach_tails(session, positions)
        yield from session.usage
        yield from session.folds
        yield from sorted(session.links.values(), key=lambda link: link.line_no)
        models = list(session.models) or ([conversation_model] if conversation_model else [])
        yield SessionInfo(
            external_id=conversation_id,
            title=title,
            cwd=cwd,
            models=models,
            started_at=session.started_at,
            ended_at=session.ended_at,
        )

    # -- messages

    def _messages(self, conversation_id: str, session: _Session) -> Iterator[BadLine | tuple[MessageRecord, int]]:
        order = "position, id" if self.older else "position"
        query = f"SELECT * FROM messages WHERE conversation_id = ? ORDER BY {order}"
        for row in self.conn.execute(query, (conversation_id,)):
            number = self.next_number()
            position = int_or_none(row["position"])
            where = f"message at position {row['position']!r} of conversation {conversation_id}"
            if position is None:
                yield BadLine(number, 0, f"the {where} has no usable position; it was not imported")
                continue
            if self.older:
                uuid = f"message-{row['id']}"
            else:
                uuid = f"{conversation_id}:{position}"
            result = self._message(row, number, uuid, where, session, agent_id=None)
            if isinstance(result, BadLine):
                yield result
                continue
            yield result, position

    def _message(
        self,
        row: sqlite3.Row,
        number: int,
        uuid: str,
        where: str,
        session: _Session,
        *,
        agent_id: str | None,
        flags: dict | None = None,
    ) -> MessageRecord | BadLine:
        """One message row (of ``messages``, or of a sub-agent's ``context_messages``): its
        message, or the ``BadLine`` saying why it was not imported."""
        raw = _row_json(row, "context_messages" if agent_id else "messages")
        keys = row.keys()
        column_role = str_or_none(row["role"]) if "role" in keys else None
        obj = _message_object(row, column_role, number, where)
        if obj.__class__ is BadLine:
            return obj
        role_value = obj.get("role", column_role)
        role = role_value if role_value in ("user", "assistant", "system", "tool") else "other"
        ts = _timestamp(row["created_at"]) if "created_at" in keys else None
        session.saw(ts)
        blocks = _blocks(obj.get("content"))
        flags = dict(flags or {})
        if role == "tool" or any(b.kind == "tool_result" for b in blocks):
            _flag_clipped(blocks, flags)
        if role == "user" and blocks and all(b.kind == "tool_result" for b in blocks):
            role = "tool"
        if any(b.kind == "tool_result" and b.tool_name == RUN_AGENT for b in blocks):
            self._link_from(obj.get("content"), session, number)
        model = api_id = None
        if role == "assistant":
            api_id = uuid
            model = self._call(obj, row, uuid, number, session, agent_id, ts, flags)
        record_type = role_value if role_value.__class__ is str and role_value else "(none)"
        return MessageRecord(
            line_no=number,
            offset=0,
            role=role,
            record_type=record_type[:60],
            raw=raw,
            blocks=blocks,
            uuid=uuid,
            timestamp=ts,
            session_id=session.id,
            agent_id=agent_id,
            agent_kind="inline" if agent_id else None,
            is_sidechain=agent_id is not None,
            model=model,
            api_message_id=api_id,
            flags=flags,
        )

    def _call(self, obj: dict, row: sqlite3.Row, uuid: str, number: int, session: _Session, agent_id: str | None,
              ts: datetime | None, flags: dict) -> str | None:
        """An assistant message's model (its provider in ``flags``) and, where it carries usage, its
        model call (in ``session.usage``; the main conversation's also in ``session.calls``, by
        position). Returns the model."""
        usage = _usage_of(obj)
        model = provider = None
        if usage is not None:
            model, provider = _model_name(usage.get("model"))
        if model:
            session.models[model] = None
        if provider:
            flags["provider"] = provider
        if usage is not None:
            record = self._usage(usage, uuid, number, model, agent_id, ts)
            session.usage.append(record)
            if agent_id is None:
                position = int_or_none(row["position"]) or 0
                session.calls.append((position, record.context_size + record.output))
        return model

    @staticmethod
    def _usage(usage: dict, uuid: str, number: int, model: str | None, agent_id: str | None, ts) -> UsageRecord:
        total_input = pos_int(usage.get("inputTokens"))
        cache_read = min(pos_int(usage.get("cacheReadTokens")), total_input)
        return UsageRecord(
            api_message_id=uuid,
            request_id=None,
            message_uuid=uuid,
            line_no=number,
            model=model,
            input_uncached=total_input - cache_read,
            cache_read=cache_read,
            output=pos_int(usage.get("outputTokens")),
            agent_id=agent_id,
            timestamp=ts,
        )

    # -- checkpoints

    def _checkpoints(self, conversation_id: str) -> list[tuple[int, sqlite3.Row, int]]:
        order = "message_position, created_at, rowid"
        rows = self.conn.execute(
            f"SELECT rowid AS _rowid, * FROM checkpoints WHERE conversation_id = ? ORDER BY {order}",
            (conversation_id,),
        ).fetchall()
        out = []
        for row in rows:
            number = self.next_number()
            position = int_or_none(row["message_position"])
            out.append((position if position is not None else -1, row, number))
        return out

    def _marker(self, session: _Session, item: tuple[int, sqlite3.Row, int], positions: list) -> MessageRecord:
        position, row, number = item
        keys = row.keys()
        ident = row["id"] if "id" in keys and row["id"] is not None else row["_rowid"]
        uuid = f"{session.id}:checkpoint:{ident}"
        summary = row["summary"]
        summary = summary if summary.__class__ is str else _text_value(summary)
        ts = _timestamp(row["created_at"]) if "created_at" in keys else None
        session.saw(ts)
        # The last call the checkpoint stands for, after the checkpoint before it: with none between
        # the two, the window before this one was never measured (not the earlier one's).
        since = session.folds[-1].metadata["message_position"] if session.folds else None
        before = [context for call_position, context in session.calls
                  if call_position <= position and (since is None or call_position > since)]
        covered = len([p for p, _u, _t in positions if p <= position])
        metadata: dict[str, Any] = {
            "message_position": position,
            "messages_covered": covered,
            "checkpoint": ident,
        }
        if before:
            metadata["tokens_before_from"] = "the last model call before the checkpoint (measured input + output)"
        fold = FoldRecord(
            line_no=number,
            boundary_uuid=uuid,
            kind="compact",
            trigger=None,
            tokens_before=before[-1] if before else None,
            summary_text=summary,
            timestamp=ts,
            metadata=metadata,
        )
        session.folds.append(fold)
        data = {k: row[k] for k in keys if k != "_rowid"}
        raw = compact_json({"table": "checkpoints", "rowid": row["_rowid"], **data})
        text = f"efferent checkpoint: the summary stands for the messages up to position {position}"
        return MessageRecord(
            line_no=number,
            offset=0,
            role="system",
            record_type="checkpoint",
            raw=raw,
            blocks=[Block("text", text=text)],
            uuid=uuid,
            subtype="compact_boundary",
            timestamp=ts,
            session_id=session.id,
            flags={"checkpoint_position": position},
        )

    @staticmethod
    def _attach_tails(session: _Session, positions: list[tuple[int, str, datetime | None]]) -> None:
        """A mid-run checkpoint keeps the messages after its position that were written before it."""
        for fold in session.folds:
            position = fold.metadata.get("message_position", -1)
            if fold.timestamp is None:
                continue
            tail = [u for p, u, t in positions if p > position and t is not None and t <= fold.timestamp]
            if tail:
                fold.preserved_uuids = tail
                fold.metadata["kept_tail"] = len(tail)

    # -- sub-agents (older line)

    def _subagents(self, session: _Session) -> Iterator[Record]:
        node_columns = _columns(self.conn, "context_nodes")
        if "root_conversation_id" not in node_columns:
            return
        order = "created_at, id" if "created_at" in node_columns else "id"
        nodes = self.conn.execute(
            f"SELECT * FROM context_nodes WHERE root_conversation_id = ? ORDER BY {order}", (session.id,)
        ).fetchall()
        message_columns = _columns(self.conn, "context_messages")
        message_order = "position, id" if {"position", "id"} <= message_columns else "rowid"
        for node in nodes:
            number = self.next_number()
            node_id = str(node["id"])
            keys = node.keys()
            seed_count = pos_int(node["seed_message_count"]) if "seed_message_count" in keys else 0
            link = session.links.get(node_id)
            kind = str_or_none(node["kind"]) if "kind" in keys else None
            title = str_or_none(node["title"]) if "title" in keys else None
            if link is None:
                session.links[node_id] = AgentLink(node_id, None, number, agent_type=kind, description=title)
            else:
                link.agent_type = link.agent_type or kind
                link.description = title or link.description
            rows = self.conn.execute(
                f"SELECT * FROM context_messages WHERE node_id = ? ORDER BY {message_order}", (node["id"],)
            )
            last_ts = None
            for row in rows:
                row_number = self.next_number()
                position = int_or_none(row["position"]) if "position" in row.keys() else None
                ident = row["id"] if "id" in row.keys() else row_number
                where = f"sub-agent message {ident!r} of node {node_id}"
                flags = {"seed": True} if position is not None and position < seed_count else None
                record = self._message(
                    row, row_number, f"context-message-{ident}", where, session, agent_id=node_id, flags=flags
                )
                if isinstance(record, MessageRecord):
                    last_ts = record.timestamp or last_ts
                yield record
            yield self._node_message(node, number, node_id, session, last_ts)

    def _node_message(self, node: sqlite3.Row, number: int, node_id: str, session: _Session, last_ts) -> MessageRecord:
        keys = node.keys()

        def value(name: str) -> Any:
            if name not in keys:
                return None
            v = node[name]
            if v.__class__ is str and name in ("seed", "usage", "files_changed", "stop_reason"):
                try:
                    return json.loads(v)
                except ValueError:
                    return v
            return v

        status = str_or_none(value("status"))
        summary = value("return_summary")
        text = f"sub-agent {value('title') or node_id} ended" + (f" ({status})" if status else "")
        if summary:
            text += f": {_text_value(summary)}"
        flags: dict[str, Any] = {"node": node_id}
        for name in ("edge_kind", "status", "kind", "usage", "files_changed", "stop_reason"):
            v = value(name)
            if v not in (None, "", [], {}):
                flags["cumulative_usage" if name == "usage" else name] = v
        seed = value("seed")
        if seed.__class__ is dict and str_or_none(seed.get("kind")):
            flags["seed_kind"] = seed["kind"]
        ts = _timestamp(value("ended_at")) or last_ts
        session.saw(ts)
        return MessageRecord(
            line_no=number,
            offset=0,
            role="system",
            record_type="context_node",
            raw=_row_json(node, "context_nodes"),
            blocks=[Block("text", text=text)],
            uuid=f"context-node-{node_id}",
            subtype="agent_node",
            timestamp=ts,
            session_id=session.id,
            agent_id=node_id,
            agent_kind="inline",
            is_sidechain=True,
            flags=flags,
        )

    @staticmethod
    def _link_from(content: Any, session: _Session, number: int) -> None:
        """A run_agent tool result names the node it started: link the node to the call."""
        if content.__class__ is not list:
            return
        for part in content:
            if part.__class__ is not dict or part.get("type") != "tool-result" or part.get("toolName") != RUN_AGENT:
                continue
            obj = _output_object(part.get("output", part.get("result")))
            node_id = obj.get("nodeId") if obj else None
            if node_id is None or node_id == "" or node_id.__class__ not in (str, int):
                continue
            node_id = str(node_id)
            tool_id = str_or_none(part.get("toolCallId"))
            link = session.links.get(node_id)
            if link is None:
                session.links[node_id] = AgentLink(node_id, tool_id, number, description=str_or_none(obj.get("name")))
            elif link.tool_use_id is None:
                link.tool_use_id = tool_id


def parse(source: ParseInput) -> Iterator[Record]:
    """Records of every conversation in the database, each session ending with its SessionInfo.
    Never raises: an unreadable database is one BadLine (line 0)."""
    path = source.path
    try:
        conn = _connect(path)
    except sqlite3.Error as exc:
        yield BadLine(0, 0, f"the database could not be opened ({exc})")
        yield SessionInfo()
        return
    reader = None
    try:
        try:
            reader = _Reader(conn)
            missing = sorted(REQUIRED_TABLES - reader.tables)
        except sqlite3.Error as exc:
            yield BadLine(0, 0, f"the database could not be read ({exc})")
            yield SessionInfo()
            return
        if missing:
            yield BadLine(0, 0, f"the database has no {', '.join(missing)} table: not an efferent store")
            yield SessionInfo()
            return
        yield from reader.sessions()
    except sqlite3.Error as exc:
        yield BadLine(reader.number if reader else 0, 0, f"the database could not be read to the end ({exc})")
        yield SessionInfo()
    finally:
        conn.close()


# -- a clipped tool result's extra ------------------------------------------------------------


def clip_extra(text: str) -> dict | None:
    """A tool result efferent clipped at append time: ``{"clip": {"marker", "omitted_tokens"}}``
    with its first marker (up to its closing bracket) and the tokens that marker says were left
    out; the store keeps no original. None: not clipped."""
    m = CLIP_MARKER.search(text)
    if m is None:
        return None
    end = text.find("]", m.end())
    marker = text[m.start() : end + 1 if end >= 0 else m.end()]
    return {"clip": {"marker": marker, "omitted_tokens": int(m.group(1).replace(",", ""))}}


def fill_extras(raw: str, blocks: list) -> list | None:
    """The stored blocks of a message imported before its clipped tool results carried their
    extra, with it read from their stored text (a data migration); None when nothing changes."""
    return stored_extras(blocks, clip_extra)


# The harness's rules (core/harness.py; policy-lab 1.2, 1.4, the classic CLI): cumulative handoff at
# 85 % of the window; round(chars/4).
HARNESS = Harness(fold_label="efferent handoff 85 %", fold_fraction=0.85, own_policy="efferent")

FORMAT = ENTRY.format(
    parse=parse,
    multi_session=True,
    fill_extras=fill_extras,
    harness=HARNESS,
)
