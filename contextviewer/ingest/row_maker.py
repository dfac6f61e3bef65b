"""Turning records into rows: the second piece of an import (sources.py reads a file and hands its
records here; row_writer.py writes what this makes, in the file's transaction).

What it does with the records of one file: the conversation each message belongs to (the file's
own, an inline sidechain's, a sub-agent's found by its parent's key), positions and turns
(positions.py), dedupe (uuid, model call), token counts and secret masking (prepare.py, ahead of
it, maybe in another process), Message, ModelCall and Fold field values (row_values.py), sub-agent
links, and what the conversation's figures need. A format that rewrites its records in place
(``Format.rewrites``) also updates, in place, a stored message whose record changed (same row and
position: blocks, raw, flags, tokens, search entry, model call, the conversation's figures);
messages that did not change are compared, never written. It sends no query itself: what is
stored already comes from the row writer (and fold_figures.py: the records a compaction replays).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from contextviewer.core import curve as core_curve
from contextviewer.core import secrets
from contextviewer.core.records import AgentLink, BadLine, FoldRecord, ImportProgress, SessionInfo, UsageRecord
from contextviewer.core.secrets import mask_text
from contextviewer.core.titles import from_request
from contextviewer.importers.formats import Format
from contextviewer.conversations.models import Conversation, ConversationKind, external_key
from contextviewer.ingest import fold_figures, remask, row_values, row_writer
from contextviewer.ingest.keys import child_key, stored_keys
from contextviewer.ingest.positions import ConversationState
from contextviewer.ingest.prepare import PreparedMessage, prepare_ahead, storable

BATCH = 2000
UPDATE_BATCH = 500  # stored messages read again, compared (and updated where changed) per query


@dataclass(frozen=True)
class Subagent:
    """A sub-agent's (or a compaction's) file, imported with its session (files.import_groups): the
    conversation it belongs under (None: not imported, found or adopted later), its agent's id and
    type, and which kind of child it is."""

    parent: Conversation | None
    agent_id: str | None
    agent_type: str | None = None
    kind: str = ConversationKind.SUBAGENT


def told_agent(subagent: Subagent | None) -> tuple[str | None, str | None]:
    """A sub-agent file's agent id and type as its parse is told them (the type masked)."""
    if subagent is None:
        return None, None
    return subagent.agent_id, mask_text(storable(subagent.agent_type)) if subagent.agent_type else None


class RowMaker:
    """The rows of one file's records (see the module docstring): ``consume`` the records, then
    ``finish`` after the file's Source is saved."""

    def __init__(self, project, source, fmt: Format, subagent: Subagent | None = None):
        self.project = project
        self.source = source
        self.fmt = fmt
        self.agent = fmt.name
        self.finished: list[Conversation] = []  # conversations of the sessions already written
        self.sessions_done = 0
        self.parent = subagent.parent if subagent else None
        self.agent_id, self.agent_type = told_agent(subagent)
        self.kind = subagent.kind if subagent else ConversationKind.MAIN
        self.main: ConversationState | None = None
        self.children: dict[str, ConversationState] = {}  # inline sidechains by agent id
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
            fold_figures.parent_records(self.parent)
            if self.kind == ConversationKind.COMPACTION and self.parent is not None else None
        )
        self.replayed_records = 0
        row_writer.commit_as_sqlite()
        self.last_message = row_writer.last_message_pk()  # masking by value looks at the messages after it

    # -- conversations

    def _open(self, conversation: Conversation, created: bool) -> ConversationState:
        return ConversationState(conversation, created, *((None, None, {}, {}) if created else row_writer.stored_end(conversation)))

    def _conversation_for(self, record: PreparedMessage) -> ConversationState:
        if self.main is None:
            self.main = self._open(*self._main_conversation(record))
        agent = record.agent_id
        if agent and agent != self.agent_id and external_key(agent) != (self.main.conversation.agent_id or None):
            state = self.children.get(agent)
            if state is None:
                parent = self.main.conversation
                child, created = row_writer.conversation(
                    self.project, self.agent, child_key(parent.external_id, agent),
                    defaults={
                        "kind": ConversationKind.SUBAGENT,
                        "parent": parent,
                        "agent_id": external_key(agent),
                        "source": self.source,
                        "cwd": parent.cwd,
                    },
                )
                state = self.children[agent] = self._open(child, created)
            return state
        return self.main

    def _main_conversation(self, record: PreparedMessage) -> tuple[Conversation, bool]:
        """The conversation of the file's (or session's) messages, and whether it was created now."""
        session = record.session_id or self.session_id or Path(self.source.name).stem
        if self.sessions_done == 0 and not self.fmt.multi_session:
            # The first conversation a source created is its own; later ones are its inline sidechains.
            # (A file of several sessions names each one: they are found by their ids.)
            existing = row_writer.first_conversation(self.source)
            if existing is not None:
                return existing, False
        agent_id = self.agent_id
        # A file whose lines all belong to one sub-agent (2.0.x agent-*.jsonl) is that sub-agent.
        if agent_id is None and record.agent_id and record.agent_kind != "inline" and (
            record.is_sidechain or record.agent_kind == "compaction"
        ):
            agent_id = record.agent_id
        parent, kind = self.parent, self.kind
        session = external_key(session)  # what the column holds, for an id of any length
        if agent_id:
            if parent is None:
                parent = row_writer.find_conversation(self.project, self.agent, session)
            if kind == ConversationKind.MAIN:
                kind = ConversationKind.COMPACTION if record.agent_kind == "compaction" else ConversationKind.SUBAGENT
            external_id = child_key(parent.external_id if parent else session, agent_id)
        else:
            external_id = self._store_session(session) if self.fmt.ids_per_store else session
        conversation, created = row_writer.conversation(self.project, self.agent, external_id, defaults={
            "kind": kind,
            "parent": parent,
            "agent_id": external_key(agent_id or ""),
            "agent_type": self.agent_type or "",
            "source": self.source,
        })
        if not agent_id:
            row_writer.adopt_orphans(self.project, conversation)
        row_writer.own_source(conversation, self.source)
        self.agent_id = agent_id
        return conversation, created

    def _store_session(self, session: str) -> str:
        """The key of a session whose id names a session of its store only (``Format.ids_per_store``:
        LangGraph's thread ids, "1" in many apps). The session id itself while no other store's
        conversation has it (a single store keeps its thread ids); else the id qualified by the
        store, ``<id>@<the store's path>``. A store read again (re-imported, grown) finds the
        conversation it made either way: the one of the id that this source made, else its own
        qualified one."""
        found = row_writer.find_conversation(self.project, self.agent, session)
        if found is not None and found.source_id == self.source.pk:
            return session
        qualified = external_key(f"{session}@{self.source.path}")
        if found is None or found.source_id is None:
            # (a conversation whose store was deleted is adopted, unless this store has its own)
            mine = row_writer.find_conversation(self.project, self.agent, qualified)
            return qualified if mine is not None else session
        return qualified

    def _state_of(self, agent_id: str | None, main: ConversationState) -> ConversationState:
        """The conversation a call or a fold of that agent belongs to: an inline sidechain's, else the main one."""
        return self.children[agent_id] if agent_id and agent_id in self.children else main

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
            self._take(record, progress)
        if not self.fmt.multi_session:
            self._flush_all()
        return self.info

    def _take(self, record, progress) -> None:
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
            self.errors.append({"line": record.line_no, "reason": mask_text(record.reason)})
        elif isinstance(record, ImportProgress):
            if progress:
                progress(record.bytes_read, self.source.name)
        elif isinstance(record, SessionInfo):
            self.info = record
            if self.fmt.multi_session:
                self._flush_all()
                self.finish_session(record)

    def _add_message(self, message: PreparedMessage) -> None:
        if message.secret_values:
            self.secret_values.update(message.secret_values)
        state = self._conversation_for(message)
        if state.stored(message):
            if self.fmt.rewrites:
                # A format that rewrites records may have changed it since it was stored: compared
                # (and updated) in batches.
                if state.read_again_later(message) and len(state.read_again) >= UPDATE_BATCH:
                    self._update_read_again(state)
            elif not state.read_again_here(message, self.source.pk):
                self._not_stored_again(state, message)
            return
        position = state.place(message)
        state.pending.append(row_values.message_row(state.conversation.pk, position, state.turn, message, self.source.pk))
        state.search_texts.append(message.search_text)
        state.added += 1
        self.added_messages += 1
        if len(state.pending) >= BATCH:
            self._flush(state)

    def _not_stored_again(self, state: ConversationState, message: PreparedMessage) -> None:
        """A record whose uuid a message of its conversation has already (another file's, or another
        line's): the copy stored first stays, and this one is said in the file's errors with both
        places, unless it is that record again (the same line, or the same message: its role and
        blocks), which is no loss."""
        if state.pending_holds(message):
            self._flush(state)  # the copy stored first is in the batch not written yet
        copy = row_writer.stored_copy(state.conversation.pk, message.uuid)
        if copy is None or _same_record(copy, message):
            return
        where = copy["source__path"] or ""
        if not where or where.startswith("upload:"):
            where = copy["source__name"] or "a file imported before"
        if copy["line_no"] is not None:
            where = f"{where}:{copy['line_no']}"
        reason = f"its uuid {message.uuid!r} is already the uuid of {where}: not stored again"
        self.errors.append({"line": message.line_no, "reason": mask_text(reason)})

    def _update_read_again(self, state: ConversationState) -> None:
        """Compare the stored messages read again with what was read; update those that changed
        (content, tokens, search entry) and carry the difference into the conversation's figures.

        Only the rows that changed are read whole (their blocks: the search entry to replace, the
        tool calls they had) and written."""
        batch, state.read_again = state.read_again, []
        if not batch:
            return
        by_uuid = {m.uuid: m for m in batch}
        changed: dict[int, PreparedMessage] = {}
        for pk, uuid, position, raw, flags, api_message_id in row_writer.stored_records(state.conversation.pk, list(by_uuid)):
            message = by_uuid[uuid]
            state.read_again_positions.add(position)
            if row_values.record_changed(raw, flags, api_message_id, message):
                changed[pk] = message
        if not changed:
            return  # nothing written
        rows: list[dict] = []
        replaced: list[tuple[int, list, str]] = []
        for pk, blocks in row_writer.stored_blocks(list(changed)):
            message = changed[pk]
            rows.append(dict(id=pk, **row_values.message_content(message, self.source.pk)))  # masked, like the search text
            replaced.append((pk, blocks, message.search_text))
            state.tool_calls += message.tool_calls - row_values.tool_call_count(blocks)
            state.note(message)
        row_writer.update_messages(state.conversation.pk, rows, row_values.UPDATED_MESSAGE_FIELDS, replaced)
        state.updated += len(rows)
        self.updated_messages += len(rows)

    def _flush(self, state: ConversationState) -> None:
        self._update_read_again(state)
        if state.pending:
            state.inserted(row_writer.insert_messages(state.conversation.pk, state.pending, state.search_texts))

    def _flush_all(self) -> None:
        for state in [self.main, *self.children.values()]:
            if state is not None:
                self._flush(state)

    # -- after the last line

    def finish(self, info: SessionInfo | None) -> None:
        """After the file's last line: its last session's rows, then its secrets masked wherever
        they stand in the conversations' trees (remask.py)."""
        self.finish_session(info)
        remask.mask_by_value([c.pk for c in self.conversations()], self.secret_values, since=self.last_message)

    def finish_session(self, info: SessionInfo | None) -> None:
        """Write what comes after a session's last line (calls, folds, links, figures), then make
        room for the next session of the file (a file may hold several)."""
        if self.main is None:
            return
        main = self.main
        for text in [info.title if info else None, *(fold.summary_text for fold in self.folds)]:
            if text:  # their secrets are masked by value too (remask.mask_by_value, after the file)
                secrets.mask_found(storable(text), self.secret_values)
        self._model_calls(main)
        self._folds(main)
        self._links(main)
        for state in [main, *self.children.values()]:
            known = self._known_figures(state)
            _set_details(state, info if state is main else None)
            row_writer.save_conversation(state.conversation, known=known, calls=state.calls or [],
                                         message_count=state.added, token_totals=state.token_totals)
        if self.children:
            row_writer.refresh_figures(main.conversation, main.token_totals)
        self.finished.extend(s.conversation for s in [main, *self.children.values()])
        self.main, self.children = None, {}
        self.usage, self.folds, self.links = [], [], []
        self.session_id = None
        self.sessions_done += 1

    def _known_figures(self, state: ConversationState) -> bool:
        """Whether the conversation's figures are all known without reading it back: it was created
        by this import (so every message and call it has is this import's) and gets no fold."""
        if not state.fresh or state.token_totals is None:
            return False
        return not any(self._state_of(fold.agent_id, self.main) is state for fold in self.folds)

    def _model_calls(self, main: ConversationState) -> None:
        by_agent: dict[str | None, list[UsageRecord]] = {}
        for usage in self.usage:
            by_agent.setdefault(usage.agent_id, []).append(usage)
        read_keys: dict[int, set[tuple[str, str]]] = {}  # rewrites: the calls read, by conversation
        for agent, calls in by_agent.items():
            self._calls_of(self._state_of(agent, main), calls, read_keys)
        if self.fmt.rewrites:
            self._drop_stale_calls([main, *self.children.values()], read_keys)

    def _calls_of(self, state: ConversationState, calls: list[UsageRecord], read_keys: dict) -> None:
        """One conversation's calls: new ones inserted, stored ones said again updated."""
        rewrites = self.fmt.rewrites
        conversation = state.conversation
        # A conversation that was empty before this import has no calls yet.
        existing = {} if state.token_totals is not None else row_writer.stored_calls(conversation)
        new_rows, changed = [], []
        for call in calls:
            key = (call.api_message_id, call.request_id or "")
            position = state.uuid_positions.get(call.message_uuid or "", None)
            if rewrites:
                read_keys.setdefault(conversation.pk, set()).add(key)
            if key in existing:
                if self._call_changed(existing[key], call, position):
                    changed.append(existing[key])
                continue
            if position is None:
                continue  # the line was a duplicate of a call already stored elsewhere
            new_rows.append(row_values.call_row(conversation.pk, position, call))
        if new_rows:
            self._new_calls(state, new_rows)
        if changed:
            row_writer.update_calls(changed, row_values.USAGE_FIELDS if rewrites else ["output", "output_is_lower_bound"])

    def _call_changed(self, row, call: UsageRecord, position: int | None) -> bool:
        """Set a stored call to what a record says of it again; whether it changed."""
        if self.fmt.rewrites:
            # The record was rewritten: the call is what it says now.
            changed, moved = row_values.set_usage(row, call, position)
            if moved:
                row.message_id = row_writer.message_pk(row.conversation_id, position)
            return changed
        if call.output > row.output:
            row.output = call.output
            row.output_is_lower_bound = call.output_is_lower_bound
            return True
        return False

    def _new_calls(self, state: ConversationState, new_rows: list[dict]) -> None:
        pks = state.message_pks
        missing = [r["position"] for r in new_rows if r["position"] not in pks]
        if missing:  # messages stored by an earlier import
            pks = {**pks, **row_writer.message_pks_from(state.conversation, min(missing))}
        for row in new_rows:
            row["message_id"] = pks.get(row["position"])
        if self._known_figures(state):
            # Estimated with the call's row (no UPDATE after): the estimate is the tokens of the
            # messages before the call, and this conversation has no fold yet.
            positions = sorted({row["position"] for row in new_rows})
            estimates = dict(zip(positions, core_curve.estimated_contexts(state.token_totals, positions, ())))
            for row in new_rows:
                row["estimated_context"] = estimates[row["position"]]
            state.calls = (state.calls or []) + [
                (r["input_uncached"], r["cache_write"], r["cache_read"], r["output"], r["estimated_context"])
                for r in new_rows
            ]
        row_writer.insert_calls(new_rows)

    @staticmethod
    def _drop_stale_calls(states: list[ConversationState], read_keys: dict) -> None:
        """A call stored for a message read again that the message no longer has (opencode's usage
        moves from the message to its step) is gone: it would be counted twice."""
        for state in states:
            if not state.read_again_positions:
                continue
            keys = read_keys.get(state.conversation.pk, set())
            stale = [
                pk for pk, api_id, request_id in row_writer.call_keys_at(state.conversation, sorted(state.read_again_positions))
                if (api_id, request_id) not in keys
            ]
            if stale:
                row_writer.delete_calls(stale)

    def _folds(self, main: ConversationState) -> None:
        for fold in self.folds:
            state = self._state_of(fold.agent_id, main)
            key = fold.boundary_uuid or f"line:{self.source.pk}:{fold.line_no}"
            boundary_position = state.uuid_positions.get(fold.boundary_uuid or "")
            if boundary_position is None:
                continue
            summary_position = state.uuid_positions.get(fold.summary_uuid or "")
            ids = row_writer.message_pks(
                state.conversation, [p for p in (boundary_position, summary_position) if p is not None]
            )
            values = row_values.fold_values(fold, boundary_position, summary_position, ids)
            # A fold read again from a rewritten record (a summary that was still being written) is set again.
            row_writer.save_fold(state.conversation, key[:255], values, rewrites=self.fmt.rewrites)

    def _links(self, main: ConversationState) -> None:
        if self.links:
            conversation = main.conversation
            row_writer.save_links(conversation, row_values.merged_links(conversation.agent_links, self.links))


def _set_details(state: ConversationState, info: SessionInfo | None) -> None:
    """Set the conversation's details from what the import read (not saved)."""
    conversation = state.conversation
    if info is not None:
        if info.title:
            conversation.title = mask_text(storable(info.title))[:500]
        # Names and paths the log gives are masked as its text is (keys.py masked them already).
        conversation.cwd = conversation.cwd or mask_text(storable(info.cwd or ""))[:1024]
        conversation.git_branch = mask_text(storable(info.git_branch or conversation.git_branch or ""))[:255]
        conversation.cli_version = mask_text(storable(info.cli_version or conversation.cli_version or ""))[:40]
        if info.window and info.window > 0 and not conversation.window:
            conversation.window = info.window
        if info.agent_type and not conversation.agent_type:
            conversation.agent_type = mask_text(storable(info.agent_type))[:100]
    if not conversation.title and state.first_prompt:
        conversation.title = from_request(state.first_prompt, 120)
    if conversation.parent_id and not conversation.parent_tool_use_id:
        entry = row_writer.parent_links(conversation).get(conversation.agent_id)
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


def _same_record(copy: dict, message: PreparedMessage) -> bool:
    """Whether a stored message (row_writer.stored_copy) is the message read again: the same record,
    or the same role and blocks (a line written again with a new time or session id)."""
    if copy["raw"] == message.raw:
        return True
    return copy["role"] == message.role and copy["blocks"] == json.loads(message.blocks)


def _timed_twice(state: ConversationState) -> bool:
    """Whether at least two of the conversation's messages carry a time."""
    if state.timed >= 2 or state.fresh:
        return state.timed >= 2
    return row_writer.timed_twice(state.conversation)
