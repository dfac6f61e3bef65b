"""The row writer: normalized importer records -> Message, ModelCall and Fold rows, and the figures
of their conversations.

What it does with the records of one file (ingest/files.py opens the file, holds the lock and the
transaction, and reports): positions and turns, dedupe (uuid, model call), token counts and secret
masking (prepare.py, ahead of it, maybe in another process), search entries, folds, sub-agent
conversations and links, and the denormalized figures of the index. A format that rewrites its
records in place (``Format.rewrites``) also updates, in place, a stored message whose record
changed (same row and position: blocks, raw, flags, tokens, search entry, model call, the
conversation's figures); messages that did not change are compared, never written.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.db import connection
from django.db.models import Max
from django.db.models.functions import Length

from contextviewer.core import curve as core_curve
from contextviewer.core.records import AgentLink, BadLine, FoldRecord, ImportProgress, SessionInfo, UsageRecord
from contextviewer.core import secrets
from contextviewer.core.secrets import mask_text  # summaries, titles, descriptions: stored masked too
from contextviewer.core.titles import from_request
from contextviewer.core.turns import is_queued
from contextviewer.importers.formats import Format

from contextviewer.conversations import search
from contextviewer.conversations.models import (
    EXTERNAL_ID_MAX,
    Conversation,
    ConversationKind,
    Fold,
    Message,
    ModelCall,
    external_key,
)
from contextviewer.ingest.rows import insert_rows, inserted_pks, update_rows
from contextviewer.ingest import conversation_figures, fold_figures
from contextviewer.ingest.prepare import PreparedMessage, prepare_ahead, storable
from contextviewer.ingest.keys import stored_keys

BATCH = 2000
UPDATE_BATCH = 500  # stored messages read again, compared (and updated where changed) per query

# Message fields that PreparedMessage carries as encoded JSON.
ENCODED_MESSAGE_FIELDS = frozenset({"blocks", "flags", "tokens"})

# What an update in place sets: the message's content and what is computed from it. Its place
# (position, turn), identity (uuid, role, agent) and conversation stay.
UPDATED_MESSAGE_FIELDS = [
    "blocks", "raw", "flags", "tokens", "token_total", "timestamp", "parent_uuid", "record_type", "subtype",
    "api_message_id", "source_id", "line_no",
]


def _tool_call_count(blocks) -> int:
    return sum(1 for b in blocks or () if isinstance(b, dict) and b.get("kind") == "tool_call")


def child_key(parent_key: str, agent_id: str) -> str:
    """A sub-agent's external id, ``<session>/<agent id>``, from its parent's stored key (both kept
    within the column: see ``external_key``)."""
    return external_key(f"{parent_key}/{external_key(agent_id)}")


def _commit_as_sqlite() -> None:
    """PostgreSQL: the file's transaction commits without waiting for its log to reach the disk, as
    the SQLite database is set up to (WAL, synchronous=NORMAL). A crash of the machine or of the
    server may lose the files imported in its last fraction of a second (whole: their source is
    not marked imported, so the next import reads them again), never leave half of one. The wait
    (an fsync, a millisecond or more of every file) was a cost of a small file's import on
    PostgreSQL that SQLite does not pay."""
    if connection.vendor == "postgresql" and connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


def _adopt_orphans(project, conversation: Conversation) -> None:
    """Sub-agents imported before their parent (a main conversation) are adopted now. The LIKE
    pattern is the stored key (bounded by the column), never the log's id; a sub-agent whose key
    had to be hashed is matched by recomputing it."""
    key = conversation.external_id
    orphans = Conversation.objects.filter(project=project, parent__isnull=True).exclude(pk=conversation.pk)
    orphans.filter(external_id__startswith=f"{key}/").update(parent=conversation)
    hashed = orphans.exclude(agent_id="").annotate(key_length=Length("external_id")).filter(key_length=EXTERNAL_ID_MAX)
    adopt = [pk for pk, external_id, agent_id in hashed.values_list("pk", "external_id", "agent_id")
             if child_key(key, agent_id) == external_id]
    if adopt:
        Conversation.objects.filter(pk__in=adopt).update(parent=conversation)


class _ConversationState:
    """Where the next message of one conversation goes."""

    def __init__(self, conversation: Conversation, created: bool = False):
        """`created`: the conversation was created by this import (it has no message to read)."""
        self.conversation = conversation
        # Created by this import: what its figures need (calls, counts) is known without reading it
        # back, unless the import brings it folds (see Writer._known_figures).
        self.fresh = created
        # fresh: (uncached, cache write, cache read, output, estimated context) of its calls
        self.calls: list[tuple] | None = None
        agg = {"p": None, "t": None} if created else conversation.messages.aggregate(p=Max("position"), t=Max("turn"))
        self.next_position = (agg["p"] + 1) if agg["p"] is not None else 0
        self.turn = agg["t"] if agg["t"] is not None else 0
        self.has_user_turn = agg["p"] is not None
        self.uuid_positions: dict[str, int] = {} if agg["p"] is None else dict(
            conversation.messages.exclude(uuid=None).values_list("uuid", "position")
        )
        self.pending: list[dict] = []  # rows not yet inserted
        self.search_texts: list[str] = []  # their searchable text, in the same order
        # Formats that rewrite records: messages stored before this import and read again, to
        # compare with what is stored (and update where changed), and their uuids and positions.
        self.first_new_position = self.next_position  # messages from here on are this import's
        self.read_again: list[PreparedMessage] = []
        self.read_again_uuids: set[str] = set()
        self.read_again_positions: set[int] = set()
        self.updated = 0
        self.message_pks: dict[int, int] = {}  # position -> pk of the messages this import inserted
        # (position, token_total) of every message when the conversation was empty before this
        # import (the figures are then computed from memory), else None (read back).
        self.token_totals: list[tuple[int, int]] | None = [] if agg["p"] is None else None
        self.added = 0
        self.tool_calls = 0
        self.first_prompt: str | None = None
        self.models: list[str] = list(conversation.model_names or [])
        self.min_ts = conversation.started_at
        self.max_ts = conversation.ended_at
        self.timed = 0  # messages of this import that carry a time


class Writer:
    def __init__(self, project, source, fmt: Format, *, parent, agent_id, agent_type, kind):
        self.project = project
        self.source = source
        self.fmt = fmt
        self.agent = fmt.name
        self.finished: list[Conversation] = []  # conversations of the sessions already written
        self.sessions_done = 0
        self.parent = parent
        self.agent_id = agent_id
        self.agent_type = agent_type
        self.kind = kind
        self.main: _ConversationState | None = None
        self.children: dict[str, _ConversationState] = {}  # inline sidechains by agent id
        self.usage: list[UsageRecord] = []
        self.folds: list[FoldRecord] = []
        self.links: list[AgentLink] = []
        self.errors: list[dict] = []
        self.added_messages = 0
        self.updated_messages = 0
        self.session_id: str | None = None
        self.info: SessionInfo | None = None
        self.secret_values: dict[str, str] = {}  # clear secrets found (in memory): masked by value (remask.py)
        # A compaction file that replays its parent's records (Claude Code 2.1): those records are
        # the parent's, not this conversation's (fold_figures.py).
        self.replayed = (
            fold_figures.parent_records(parent) if kind == ConversationKind.COMPACTION and parent is not None else None
        )
        self.replayed_records = 0
        _commit_as_sqlite()

    # -- conversations

    def _conversation_for(self, record: PreparedMessage) -> _ConversationState:
        if self.main is None:
            self.main = _ConversationState(*self._get_main(record))
        agent = record.agent_id
        if agent and agent != self.agent_id and external_key(agent) != (self.main.conversation.agent_id or None):
            state = self.children.get(agent)
            if state is None:
                parent = self.main.conversation
                child, created = Conversation.objects.get_or_create(
                    project=self.project,
                    agent=self.agent,
                    external_id=child_key(parent.external_id, agent),
                    defaults={
                        "kind": ConversationKind.SUBAGENT,
                        "parent": parent,
                        "agent_id": external_key(agent),
                        "source": self.source,
                        "cwd": parent.cwd,
                    },
                )
                state = self.children[agent] = _ConversationState(child, created)
            return state
        return self.main

    def _get_main(self, record: PreparedMessage) -> tuple[Conversation, bool]:
        """The conversation of the file's (or session's) messages, and whether it was created now."""
        session = record.session_id or self.session_id or Path(self.source.name).stem
        if self.sessions_done == 0 and not self.fmt.multi_session:
            # The first conversation a source created is its own; later ones are its inline sidechains.
            # (A file of several sessions names each one: they are found by their ids.)
            existing = self.source.conversations.order_by("pk").first()
            if existing is not None:
                return existing, False
        agent_id = self.agent_id
        # A file whose lines all belong to one sub-agent (2.0.x agent-*.jsonl) is that sub-agent.
        if agent_id is None and record.agent_id and record.agent_kind != "inline" and (
            record.is_sidechain or record.agent_kind == "compaction"
        ):
            agent_id = record.agent_id
        parent = self.parent
        kind = self.kind
        session = external_key(session)  # what the column holds, for an id of any length
        if agent_id:
            if parent is None:
                parent = Conversation.objects.filter(
                    project=self.project, agent=self.agent, external_id=session
                ).first()
            if kind == ConversationKind.MAIN:
                kind = ConversationKind.COMPACTION if record.agent_kind == "compaction" else ConversationKind.SUBAGENT
            external_id = child_key(parent.external_id if parent else session, agent_id)
        else:
            external_id = session
        conversation, created = Conversation.objects.get_or_create(
            project=self.project,
            agent=self.agent,
            external_id=external_id,
            defaults={
                "kind": kind,
                "parent": parent,
                "agent_id": external_key(agent_id or ""),
                "agent_type": self.agent_type or "",
                "source": self.source,
            },
        )
        if not agent_id:
            _adopt_orphans(self.project, conversation)
        if conversation.source_id is None:
            conversation.source = self.source
            conversation.save(update_fields=["source"])
        self.agent_id = agent_id
        return conversation, created

    def conversations(self) -> list[Conversation]:
        states = ([self.main] if self.main else []) + list(self.children.values())
        return self.finished + [s.conversation for s in states]

    # -- records

    def consume(self, records, progress=None, *, in_process: bool = False) -> SessionInfo | None:
        for record in prepare_ahead(records, in_process=in_process):
            record = stored_keys(record)  # ids of any length, as the columns hold them (keys.py)
            if self.replayed is not None and fold_figures.replayed_record(record, self.replayed):
                self.replayed_records += 1
                continue
            if isinstance(record, PreparedMessage):
                if self.session_id is None and record.session_id:
                    self.session_id = record.session_id
                self._add_message(record)
            elif isinstance(record, UsageRecord):
                self.usage.append(record)
            elif isinstance(record, FoldRecord):
                self.folds.append(record)
            elif isinstance(record, AgentLink):
                self.links.append(record)
            elif isinstance(record, BadLine):
                self.errors.append({"line": record.line_no, "reason": record.reason})
            elif isinstance(record, ImportProgress):
                if progress:
                    progress(record.bytes_read, self.source.name)
            elif isinstance(record, SessionInfo):
                self.info = record
                if self.fmt.multi_session:
                    self._flush_all()
                    self.finish_session(record)
        if not self.fmt.multi_session:
            self._flush_all()
        return self.info

    def _add_message(self, message: PreparedMessage) -> None:
        if message.secret_values:
            self.secret_values.update(message.secret_values)
        state = self._conversation_for(message)
        if message.uuid is not None and message.uuid in state.uuid_positions:
            # Already stored (re-read after a rewrite, or a duplicated row). A format that rewrites
            # records may have changed it since it was stored: compared (and updated) in batches.
            if (
                self.fmt.rewrites
                and state.uuid_positions[message.uuid] < state.first_new_position
                and message.uuid not in state.read_again_uuids
            ):
                state.read_again_uuids.add(message.uuid)
                state.read_again.append(message)
                if len(state.read_again) >= UPDATE_BATCH:
                    self._update_read_again(state)
            return
        # A queued message (typed while the agent worked) stays in the turn where it was typed.
        if message.starts_turn and not is_queued(message.flags):
            if state.has_user_turn:
                state.turn += 1
            state.has_user_turn = True
            if state.first_prompt is None and not message.is_compact_summary:
                state.first_prompt = message.first_text
        position = state.next_position
        state.next_position += 1
        if message.uuid is not None:
            state.uuid_positions[message.uuid] = position
        state.tool_calls += message.tool_calls
        self._note_message(state, message)
        state.pending.append(
            dict(
                conversation_id=state.conversation.pk,
                position=position,
                turn=state.turn,
                uuid=message.uuid,
                role=message.role,
                is_sidechain=message.is_sidechain,
                agent_id=external_key(message.agent_id or ""),
                is_meta=message.is_meta,
                is_compact_summary=message.is_compact_summary,
                **self._content(message),
            )
        )
        state.search_texts.append(message.search_text)
        state.added += 1
        self.added_messages += 1
        if len(state.pending) >= BATCH:
            self._flush(state)

    def _content(self, message: PreparedMessage) -> dict:
        """A message row's content (UPDATED_MESSAGE_FIELDS): what an insert writes and an update in
        place sets again."""
        return dict(
            blocks=message.blocks,
            raw=message.raw,
            flags=message.flags,
            tokens=message.tokens,
            token_total=message.token_total,
            timestamp=message.timestamp,
            parent_uuid=message.parent_uuid,
            record_type=message.record_type[:60],
            subtype=(message.subtype or "")[:60],
            api_message_id=(message.api_message_id or "")[:255],
            source_id=self.source.pk,
            line_no=message.line_no,
        )

    def _update_read_again(self, state: _ConversationState) -> None:
        """Compare the stored messages read again with what was read; update those that changed
        (content, tokens, search entry) and carry the difference into the conversation's figures.

        What is compared is what a record's change shows in: its raw record (masked, as stored),
        its flags (a rewind, a history rewrite) and its model call. Only the rows that changed are
        read whole (their blocks: the search entry to replace, the tool calls they had) and written."""
        batch, state.read_again = state.read_again, []
        if not batch:
            return
        by_uuid = {m.uuid: m for m in batch}
        changed: dict[int, PreparedMessage] = {}
        for pk, uuid, position, raw, flags, api_message_id in Message.objects.filter(
            conversation_id=state.conversation.pk, uuid__in=list(by_uuid)
        ).values_list("pk", "uuid", "position", "raw", "flags", "api_message_id"):
            message = by_uuid[uuid]
            state.read_again_positions.add(position)
            if (
                raw != message.raw
                or (flags or {}) != json.loads(message.flags)
                or api_message_id != (message.api_message_id or "")[:255]
            ):
                changed[pk] = message
        if not changed:
            return  # nothing written
        rows: list[dict] = []
        search_rows: list[tuple[int, str, str]] = []
        for pk, blocks in Message.objects.filter(pk__in=list(changed)).values_list("pk", "blocks"):
            message = changed[pk]
            rows.append(
                dict(id=pk, **self._content(message))  # masked, like the search text (prepare.py)
            )
            # The old entry goes by the text it was indexed with: the stored (masked) blocks'.
            search_rows.append((pk, search.text_of_blocks(blocks), message.search_text))
            state.tool_calls += message.tool_calls - _tool_call_count(blocks)
            self._note_message(state, message)
        update_rows(Message, rows, UPDATED_MESSAGE_FIELDS, encoded=ENCODED_MESSAGE_FIELDS)
        search.reindex_messages(state.conversation.pk, search_rows)
        state.updated += len(rows)
        self.updated_messages += len(rows)

    @staticmethod
    def _note_message(state: _ConversationState, message: PreparedMessage) -> None:
        """A stored message's model and time, in the conversation's figures."""
        if message.model and message.model != "<synthetic>" and message.model not in state.models:
            state.models.append(message.model)
        if message.timestamp is not None:
            state.timed += 1
            if state.min_ts is None or message.timestamp < state.min_ts:
                state.min_ts = message.timestamp
            if state.max_ts is None or message.timestamp > state.max_ts:
                state.max_ts = message.timestamp

    def _flush(self, state: _ConversationState) -> None:
        self._update_read_again(state)
        if not state.pending:
            return
        insert_rows(Message, state.pending, encoded=ENCODED_MESSAGE_FIELDS)
        positions = [m["position"] for m in state.pending]
        pks = inserted_pks(len(positions))
        if pks is None:  # positions of one batch are contiguous
            found = dict(
                Message.objects.filter(
                    conversation_id=state.conversation.pk, position__gte=positions[0], position__lte=positions[-1]
                ).values_list("position", "pk")
            )
            pks = [found[p] for p in positions]
        state.message_pks.update(zip(positions, pks))
        if state.token_totals is not None:
            state.token_totals.extend((m["position"], m["token_total"]) for m in state.pending)
        # Full-text search: index the new rows.
        search.index_masked(state.conversation.pk, zip(pks, state.search_texts))
        state.pending = []
        state.search_texts = []

    def _flush_all(self) -> None:
        for state in [self.main, *self.children.values()]:
            if state is not None:
                self._flush(state)

    # -- after the last line

    def finish_session(self, info: SessionInfo | None) -> None:
        """Write what comes after a session's last line (calls, folds, links, figures), then make
        room for the next session of the file (a file may hold several)."""
        if self.main is None:
            return
        main = self.main
        for text in [info.title if info else None, *(fold.summary_text for fold in self.folds)]:
            if text:  # their secrets are masked by value too (remask.mask_by_value, after the file)
                secrets.mask_found(storable(text), self.secret_values)
        self._write_model_calls(main)
        self._write_folds(main)
        self._write_links(main)
        for state in [main, *self.children.values()]:
            known = self._known_figures(state)
            _refresh_conversation(state, info if state is main else None, known=known)
            if not known:  # (a conversation without folds has no tokens_after to fill)
                fold_figures.fill_tokens_after(state.conversation)
        if self.children:
            conversation_figures.refresh_figures(main.conversation, main.token_totals)
        self.finished.extend(s.conversation for s in [main, *self.children.values()])
        self.main, self.children = None, {}
        self.usage, self.folds, self.links = [], [], []
        self.session_id = None
        self.sessions_done += 1

    def _known_figures(self, state: _ConversationState) -> bool:
        """Whether the conversation's figures are all known without reading it back: it was created
        by this import (so every message and call it has is this import's) and gets no fold."""
        if not state.fresh or state.token_totals is None:
            return False
        main = self.main
        return not any(
            (self.children.get(fold.agent_id) if fold.agent_id in self.children else main) is state for fold in self.folds
        )

    def _write_model_calls(self, main: _ConversationState) -> None:
        by_agent: dict[str | None, list[UsageRecord]] = {}
        for usage in self.usage:
            by_agent.setdefault(usage.agent_id, []).append(usage)
        rewrites = self.fmt.rewrites
        read_keys: dict[int, set[tuple[str, str]]] = {}  # rewrites: the calls read, by conversation
        for agent, calls in by_agent.items():
            state = self.children.get(agent) if agent and agent in self.children else main
            conversation = state.conversation
            # A conversation that was empty before this import has no calls yet.
            existing = {} if state.token_totals is not None else {
                (m.api_message_id, m.request_id): m for m in conversation.model_calls.all()
            }
            new_rows, changed = [], []
            for call in calls:
                key = (call.api_message_id, call.request_id or "")
                position = state.uuid_positions.get(call.message_uuid or "", None)
                if rewrites:
                    read_keys.setdefault(conversation.pk, set()).add(key)
                if key in existing:
                    row = existing[key]
                    if rewrites:
                        # The record was rewritten: the call is what it says now.
                        if _set_usage(row, call, position):
                            changed.append(row)
                    elif call.output > row.output:
                        row.output = call.output
                        row.output_is_lower_bound = call.output_is_lower_bound
                        changed.append(row)
                    continue
                if position is None:
                    continue  # the line was a duplicate of a call already stored elsewhere
                new_rows.append(
                    dict(
                        conversation_id=conversation.pk,
                        position=position,
                        api_message_id=call.api_message_id,
                        request_id=call.request_id or "",
                        **_usage_values(call),
                    )
                )
            if new_rows:
                pks = state.message_pks
                missing = [r["position"] for r in new_rows if r["position"] not in pks]
                if missing:  # messages stored by an earlier import
                    pks = {**pks, **dict(
                        conversation.messages.filter(position__gte=min(missing)).values_list("position", "pk")
                    )}
                for row in new_rows:
                    row["message_id"] = pks.get(row["position"])
                if self._known_figures(state):
                    # Estimated with the call's row (no UPDATE after): the estimate is the tokens of
                    # the messages before the call, and this conversation has no fold yet.
                    positions = sorted({row["position"] for row in new_rows})
                    estimates = dict(zip(positions, core_curve.estimated_contexts(state.token_totals, positions, ())))
                    for row in new_rows:
                        row["estimated_context"] = estimates[row["position"]]
                    state.calls = (state.calls or []) + [
                        (r["input_uncached"], r["cache_write"], r["cache_read"], r["output"], r["estimated_context"])
                        for r in new_rows
                    ]
                insert_rows(ModelCall, new_rows)
            if changed:
                fields = USAGE_FIELDS if rewrites else ["output", "output_is_lower_bound"]
                ModelCall.objects.bulk_update(changed, fields, batch_size=500)
        if rewrites:
            # A call stored for a message read again that the message no longer has (opencode's
            # usage moves from the message to its step) is gone: it would be counted twice.
            for state in [main, *self.children.values()]:
                if not state.read_again_positions:
                    continue
                keys = read_keys.get(state.conversation.pk, set())
                stale = [
                    pk for pk, api_id, request_id in state.conversation.model_calls.filter(
                        position__in=sorted(state.read_again_positions)
                    ).values_list("pk", "api_message_id", "request_id")
                    if (api_id, request_id) not in keys
                ]
                if stale:
                    ModelCall.objects.filter(pk__in=stale).delete()

    def _write_folds(self, main: _ConversationState) -> None:
        for fold in self.folds:
            state = self.children.get(fold.agent_id) if fold.agent_id in self.children else main
            conversation = state.conversation
            key = fold.boundary_uuid or f"line:{self.source.pk}:{fold.line_no}"
            boundary_position = state.uuid_positions.get(fold.boundary_uuid or "")
            if boundary_position is None:
                continue
            summary_position = state.uuid_positions.get(fold.summary_uuid or "")
            ids = dict(
                conversation.messages.filter(
                    position__in=[p for p in (boundary_position, summary_position) if p is not None]
                ).values_list("position", "pk")
            )
            values = {
                "position": boundary_position,  # the boundary marker closes the archived segment
                "boundary_id": ids.get(boundary_position),
                "summary_message_id": ids.get(summary_position) if summary_position is not None else None,
                "summary_text": mask_text(storable(fold.summary_text)),
                "kind": fold.kind,
                "trigger": (fold.trigger or "")[:40],
                "tokens_before": fold.tokens_before,
                "tokens_after": fold.tokens_after,
                "preserved": fold.preserved_uuids,
                "timestamp": fold.timestamp,
            }
            row, created = Fold.objects.get_or_create(conversation=conversation, key=key[:255], defaults=values)
            if not created and self.fmt.rewrites:
                # Read again from a rewritten record (a summary that was still being written).
                changed = [name for name, value in values.items() if getattr(row, name) != value]
                if changed:
                    for name in changed:
                        setattr(row, name, values[name])
                    row.save(update_fields=changed)

    def _write_links(self, main: _ConversationState) -> None:
        if not self.links:
            return
        conversation = main.conversation
        links = dict(conversation.agent_links or {})
        for link in self.links:
            entry = links.setdefault(external_key(link.agent_id), {})  # as the child's agent_id
            for name in ("tool_use_id", "agent_type", "description"):
                value = getattr(link, name)
                if value and not entry.get(name):
                    entry[name] = mask_text(value) if name == "description" else value
        conversation.agent_links = links
        conversation.save(update_fields=["agent_links"])
        for child in conversation.children.all():
            entry = links.get(child.agent_id)
            if entry and (not child.parent_tool_use_id or not child.agent_type):
                child.parent_tool_use_id = child.parent_tool_use_id or (entry.get("tool_use_id") or "")[:255]
                child.agent_type = child.agent_type or (entry.get("agent_type") or "")[:100]
                child.save(update_fields=["parent_tool_use_id", "agent_type"])


# A model call's figures, set again when a format that rewrites records says them again.
USAGE_FIELDS = [
    "model", "input_uncached", "cache_write", "cache_write_5m", "cache_write_1h", "cache_read", "output",
    "output_is_lower_bound", "timestamp", "position", "message",
]


def _usage_values(call: UsageRecord) -> dict:
    """A model call's figures as its row stores them."""
    return dict(
        model=(call.model or "")[:100],
        input_uncached=call.input_uncached,
        cache_write=call.cache_write,
        cache_write_5m=call.cache_write_5m,
        cache_write_1h=call.cache_write_1h,
        cache_read=call.cache_read,
        output=call.output,
        output_is_lower_bound=call.output_is_lower_bound,
        timestamp=call.timestamp,
    )


def _set_usage(row: ModelCall, call: UsageRecord, position: int | None) -> bool:
    """Set `row` to what `call` says (and to the position of its message); whether it changed."""
    changed = False
    for name, value in _usage_values(call).items():
        if getattr(row, name) != value:
            setattr(row, name, value)
            changed = True
    if position is not None and position != row.position:
        row.position = position
        row.message_id = (
            Message.objects.filter(conversation_id=row.conversation_id, position=position).values_list("pk", flat=True).first()
        )
        changed = True
    return changed


def _timed_twice(state: _ConversationState) -> bool:
    """Whether at least two of the conversation's messages carry a time."""
    if state.timed >= 2 or state.fresh:
        return state.timed >= 2
    return state.conversation.messages.filter(timestamp__isnull=False)[:2].count() >= 2


def _refresh_conversation(state: _ConversationState, info: SessionInfo | None, *, known: bool = False) -> None:
    """Set the conversation's details and figures from what the import read, and save it.
    `known`: its figures are all in `state` (Writer._known_figures), none is read back."""
    conversation = state.conversation
    if info is not None:
        if info.title:
            conversation.title = mask_text(storable(info.title))[:500]
        conversation.cwd = conversation.cwd or storable(info.cwd or "")[:1024]
        conversation.git_branch = storable(info.git_branch or conversation.git_branch or "")[:255]
        conversation.cli_version = storable(info.cli_version or conversation.cli_version or "")[:40]
        if info.window and info.window > 0 and not conversation.window:
            conversation.window = info.window
        if info.agent_type and not conversation.agent_type:
            conversation.agent_type = storable(info.agent_type)[:100]
    if not conversation.title and state.first_prompt:
        conversation.title = from_request(state.first_prompt, 120)
    if conversation.parent_id and not conversation.parent_tool_use_id:
        entry = (conversation.parent.agent_links or {}).get(conversation.agent_id)
        if entry:
            conversation.parent_tool_use_id = (entry.get("tool_use_id") or "")[:255]
            conversation.agent_type = conversation.agent_type or (entry.get("agent_type") or "")[:100]
    # Models the session names beside those its messages name (a log that gives the model once).
    for model in (info.models if info is not None else []) or []:
        if model and model not in state.models:
            state.models.append(model)
    conversation.model_names = state.models
    conversation.started_at = state.min_ts
    conversation.ended_at = state.max_ts
    if conversation.ended_at is not None and conversation.ended_at == conversation.started_at and not _timed_twice(state):
        # One time for the whole log (aider writes only when a session started): its last time and
        # its duration are not known, not 0 s.
        conversation.ended_at = None
    conversation.tool_call_count += state.tool_calls
    if state.updated:
        conversation.revision += 1  # messages changed in place: the page's figures are computed again
    if known:
        conversation_figures.set_figures(conversation, state.calls or [], message_count=state.added, fold_count=0)
        conversation.save()
        return
    conversation.save()
    conversation_figures.refresh_figures(conversation, state.token_totals)
