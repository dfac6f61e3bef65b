"""Where each message of a conversation goes, in memory: its position, its turn, and whether it is
stored already (dedupe by uuid). Part of turning records into rows (row_maker.py): no database here;
the row maker hands in what is stored (row_writer.stored_end) when it opens a conversation.

A ``ConversationState`` also gathers what the conversation's figures need from this import (its
models, first and last times, tool calls, counts) and what is waiting to be written (the rows of
the next batch, the stored messages read again).
"""

from __future__ import annotations

from contextviewer.core.turns import is_queued
from contextviewer.conversations.models import Conversation
from contextviewer.ingest.prepare import PreparedMessage


class ConversationState:
    """Where the next message of one conversation goes."""

    def __init__(self, conversation: Conversation, created: bool, last_position: int | None, last_turn: int | None,
                 uuid_positions: dict[str, int], stored_places: dict[str, tuple] | None = None):
        """`created`: the conversation was created by this import (it has no message to read);
        `last_position`, `last_turn`, `uuid_positions`, `stored_places`: what is stored of it
        (row_writer.stored_end)."""
        self.conversation = conversation
        # Created by this import: what its figures need (calls, counts) is known without reading it
        # back, unless the import brings it folds (see RowMaker._known_figures).
        self.fresh = created
        # fresh: (uncached, cache write, cache read, output, estimated context) of its calls
        self.calls: list[tuple] | None = None
        self.next_position = (last_position + 1) if last_position is not None else 0
        self.turn = last_turn if last_turn is not None else 0
        self.has_user_turn = last_position is not None
        self.uuid_positions: dict[str, int] = uuid_positions
        # (source pk, line) of each message stored before this import, by uuid: a record read
        # again from where it was stored is a file imported again, not a record to say.
        self.stored_places: dict[str, tuple] = stored_places or {}
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
        self.token_totals: list[tuple[int, int]] | None = [] if last_position is None else None
        self.added = 0
        self.tool_calls = 0
        self.first_prompt: str | None = None
        self.models: list[str] = list(conversation.model_names or [])
        self.min_ts = conversation.started_at
        self.max_ts = conversation.ended_at
        self.timed = 0  # messages of this import that carry a time

    def stored(self, message: PreparedMessage) -> bool:
        """Whether the message is stored already (re-read after a rewrite, or a duplicated row)."""
        return message.uuid is not None and message.uuid in self.uuid_positions

    def read_again_here(self, message: PreparedMessage, source_id: int) -> bool:
        """Whether a stored message's record is read again from the same file and line it was stored
        from (a file imported again: nothing to say of it)."""
        return self.stored_places.get(message.uuid) == (source_id, message.line_no)

    def pending_holds(self, message: PreparedMessage) -> bool:
        """Whether the stored copy of the message's uuid is in the batch not inserted yet."""
        return bool(self.pending) and self.uuid_positions[message.uuid] >= self.pending[0]["position"]

    def read_again_later(self, message: PreparedMessage) -> bool:
        """Keep a stored message that a format which rewrites records read again, to compare (once)
        with what is stored; whether it was kept (only one stored before this import is)."""
        if self.uuid_positions[message.uuid] >= self.first_new_position or message.uuid in self.read_again_uuids:
            return False
        self.read_again_uuids.add(message.uuid)
        self.read_again.append(message)
        return True

    def place(self, message: PreparedMessage) -> int:
        """The position of a new message, its turn (``turn`` after this) and what the figures take of it."""
        # A queued message (typed while the agent worked) stays in the turn where it was typed.
        if message.starts_turn and not is_queued(message.flags):
            if self.has_user_turn:
                self.turn += 1
            self.has_user_turn = True
            if self.first_prompt is None and not message.is_compact_summary:
                self.first_prompt = message.first_text
        position = self.next_position
        self.next_position += 1
        if message.uuid is not None:
            self.uuid_positions[message.uuid] = position
        self.tool_calls += message.tool_calls
        self.note(message)
        return position

    def note(self, message: PreparedMessage) -> None:
        """A stored message's model and time, in the conversation's figures."""
        if message.model and message.model != "<synthetic>" and message.model not in self.models:
            self.models.append(message.model)
        if message.timestamp is not None:
            self.timed += 1
            if self.min_ts is None or message.timestamp < self.min_ts:
                self.min_ts = message.timestamp
            if self.max_ts is None or message.timestamp > self.max_ts:
                self.max_ts = message.timestamp

    def inserted(self, pks: list[int]) -> None:
        """The pending rows went in with these pks: the next batch starts empty."""
        positions = [m["position"] for m in self.pending]
        self.message_pks.update(zip(positions, pks))
        if self.token_totals is not None:
            self.token_totals.extend((m["position"], m["token_total"]) for m in self.pending)
        self.pending = []
        self.search_texts = []
