"""The field values of the rows an import writes, from its records: a prepared message -> a Message
row (and what an update in place sets again), a usage record -> a ModelCall row, a fold record -> a
Fold row, agent links -> a conversation's ``agent_links``. Part of turning records into rows
(row_maker.py); pure: no query, text stored masked (summaries, descriptions) as prepare.py masks a
message's.
"""

from __future__ import annotations

import json

from contextviewer.core.records import AgentLink, FoldRecord, UsageRecord
from contextviewer.core.secrets import mask_text  # summaries, titles, descriptions: stored masked too
from contextviewer.conversations.models import external_key
from contextviewer.ingest.prepare import PreparedMessage, storable

# What an update in place sets: the message's content and what is computed from it. Its place
# (position, turn), identity (uuid, role, agent) and conversation stay.
UPDATED_MESSAGE_FIELDS = [
    "blocks", "raw", "flags", "tokens", "token_total", "timestamp", "parent_uuid", "record_type", "subtype",
    "api_message_id", "source_id", "line_no",
]

# A model call's figures, set again when a format that rewrites records says them again.
USAGE_FIELDS = [
    "model", "input_uncached", "cache_write", "cache_write_5m", "cache_write_1h", "cache_read", "output",
    "output_is_lower_bound", "reasoning", "timestamp", "position", "message",
]


def message_row(conversation_id: int, position: int, turn: int, message: PreparedMessage, source_id: int) -> dict:
    """A new message's row."""
    return dict(
        conversation_id=conversation_id,
        position=position,
        turn=turn,
        uuid=message.uuid,
        role=message.role,
        is_sidechain=message.is_sidechain,
        agent_id=external_key(message.agent_id or ""),
        is_meta=message.is_meta,
        is_compact_summary=message.is_compact_summary,
        **message_content(message, source_id),
    )


def message_content(message: PreparedMessage, source_id: int) -> dict:
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
        source_id=source_id,
        line_no=message.line_no,
    )


def record_changed(raw: str, flags, api_message_id: str, message: PreparedMessage) -> bool:
    """Whether a stored message (its raw record, masked as stored, its flags and its model call's
    id) differs from what was read again: what a record's change shows in."""
    return (
        raw != message.raw
        or (flags or {}) != json.loads(message.flags)
        or api_message_id != (message.api_message_id or "")[:255]
    )


def tool_call_count(blocks) -> int:
    return sum(1 for b in blocks or () if isinstance(b, dict) and b.get("kind") == "tool_call")


def usage_values(call: UsageRecord) -> dict:
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
        reasoning=call.reasoning,
        timestamp=call.timestamp,
    )


def call_row(conversation_id: int, position: int, call: UsageRecord) -> dict:
    """A new model call's row (its message's pk is set once known)."""
    return dict(
        conversation_id=conversation_id,
        position=position,
        api_message_id=call.api_message_id,
        request_id=call.request_id or "",
        **usage_values(call),
    )


def set_usage(row, call: UsageRecord, position: int | None) -> tuple[bool, bool]:
    """Set a stored call (``row``) to what ``call`` says and to the position of its message;
    whether it changed, and whether it moved (its message's pk is then to be looked up again)."""
    changed = False
    for name, value in usage_values(call).items():
        if getattr(row, name) != value:
            setattr(row, name, value)
            changed = True
    if position is not None and position != row.position:
        row.position = position
        return True, True
    return changed, False


def fold_values(fold: FoldRecord, boundary_position: int, summary_position: int | None, ids: dict[int, int]) -> dict:
    """A fold's row, placed at its boundary marker (``ids``: the pks of the messages by position)."""
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
        "summary_last": bool(fold.metadata.get("summary_after_preserved")),
        "timestamp": fold.timestamp,
    }
    if fold.cost:  # the compaction call's usage the log keeps beside the fold; else a sub-agent file may give it later
        values["cost"] = fold.cost
    return values


def merged_links(stored: dict | None, links: list[AgentLink]) -> dict:
    """A conversation's ``agent_links`` (by the child's agent id, as stored) with what ``links``
    add: what an entry lacks, never what it has."""
    merged = dict(stored or {})
    for link in links:
        entry = merged.setdefault(external_key(link.agent_id), {})  # as the child's agent_id
        for name in ("tool_use_id", "agent_type", "description"):
            value = getattr(link, name)
            if value and not entry.get(name):
                entry[name] = mask_text(value) if name != "tool_use_id" else value  # the id: masked in keys.py
    return merged
