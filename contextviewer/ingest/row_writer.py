"""Writing the rows: the third piece of an import (files.py and sources.py read a file, row_maker.py
turns its records into rows, this writes them, inside the file's transaction).

- messages: a batch inserted in one statement (rows.py) with their search entries; a stored message
  read again whose record changed, updated in place with its search entry replaced;
- model calls inserted, updated (a call said again) or deleted (one its message no longer has);
  folds; conversations created, adopted by their parent, and saved with their figures
  (conversation_figures.py, fold_figures.py); sub-agent links;
- commit: on PostgreSQL the file's transaction commits as SQLite's does (``commit_as_sqlite``);
- what the row maker needs to know of what is stored already (the end of a conversation, its
  calls, the pks of its messages), read here so that the row maker reads no table itself.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import Max
from django.db.models.functions import Length

from contextviewer.conversations import search
from contextviewer.conversations.models import EXTERNAL_ID_MAX, Conversation, Fold, Message, ModelCall
from contextviewer.ingest import conversation_figures, fold_figures
from contextviewer.ingest.keys import child_key
from contextviewer.ingest.rows import insert_rows, inserted_pks, update_rows

# Message fields that a prepared message (prepare.PreparedMessage) carries as encoded JSON.
ENCODED_MESSAGE_FIELDS = frozenset({"blocks", "flags", "tokens"})


def commit_as_sqlite() -> None:
    """PostgreSQL: the file's transaction commits without waiting for its log to reach the disk, as
    the SQLite database is set up to (WAL, synchronous=NORMAL). A crash of the machine or of the
    server may lose the files imported in its last fraction of a second (whole: their source is
    not marked imported, so the next import reads them again), never leave half of one. The wait
    (an fsync, a millisecond or more of every file) was a cost of a small file's import on
    PostgreSQL that SQLite does not pay."""
    if connection.vendor == "postgresql" and connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


# -- conversations


def first_conversation(source) -> Conversation | None:
    """The first conversation the source created (a file's own)."""
    return source.conversations.order_by("pk").first()


def find_conversation(project, agent: str, external_id: str) -> Conversation | None:
    return Conversation.objects.filter(project=project, agent=agent, external_id=external_id).first()


def conversation(project, agent: str, external_id: str, defaults: dict) -> tuple[Conversation, bool]:
    """The conversation of that key, created with ``defaults`` when there is none; whether it was."""
    return Conversation.objects.get_or_create(project=project, agent=agent, external_id=external_id, defaults=defaults)


def own_source(conversation: Conversation, source) -> None:
    """A conversation that no source created yet is this source's."""
    if conversation.source_id is None:
        conversation.source = source
        conversation.save(update_fields=["source"])


def adopt_orphans(project, conversation: Conversation) -> None:
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


def stored_end(conversation: Conversation) -> tuple[int | None, int | None, dict[str, int], dict[str, tuple]]:
    """The last position and turn of the conversation's stored messages (None: it has none), the
    position of each stored message by uuid, and where each was read: (source pk, line) by uuid."""
    agg = conversation.messages.aggregate(p=Max("position"), t=Max("turn"))
    uuid_positions: dict[str, int] = {}
    places: dict[str, tuple] = {}
    if agg["p"] is not None:
        for uuid, position, source_id, line_no in conversation.messages.exclude(uuid=None).values_list(
            "uuid", "position", "source_id", "line_no"
        ):
            uuid_positions[uuid] = position
            places[uuid] = (source_id, line_no)
    return agg["p"], agg["t"], uuid_positions, places


def stored_copy(conversation_id: int, uuid: str) -> dict | None:
    """The stored message of that uuid: what it holds (raw, role, blocks) and where it was read
    (its source's path and name, its line); None when there is none."""
    return (
        Message.objects.filter(conversation_id=conversation_id, uuid=uuid)
        .values("raw", "role", "blocks", "line_no", "source_id", "source__path", "source__name")
        .first()
    )


def parent_links(conversation: Conversation) -> dict:
    """The sub-agent links of the conversation's parent (by the child's agent id)."""
    return conversation.parent.agent_links or {}


def timed_twice(conversation: Conversation) -> bool:
    """Whether at least two of the conversation's stored messages carry a time."""
    return conversation.messages.filter(timestamp__isnull=False)[:2].count() >= 2


def save_conversation(conversation: Conversation, *, known: bool, calls: list[tuple], message_count: int,
                      token_totals: list[tuple[int, int]] | None) -> None:
    """Save the conversation with its figures: from ``calls`` and ``message_count`` when they are
    all ``known`` (created by this import, no fold), else computed from its rows, the figures of
    its folds (``tokens_after``) included."""
    if known:
        conversation_figures.set_figures(conversation, calls, message_count=message_count, fold_count=0)
        conversation.save()
        return
    conversation.save()
    conversation_figures.refresh_figures(conversation, token_totals)
    fold_figures.fill_tokens_before(conversation)
    fold_figures.fill_tokens_after(conversation)  # (a conversation without folds has no tokens_after to fill)


def refresh_figures(conversation: Conversation, token_totals: list[tuple[int, int]] | None) -> None:
    conversation_figures.refresh_figures(conversation, token_totals)


def save_links(conversation: Conversation, links: dict) -> None:
    """The conversation's sub-agent links, and what its children learn from them (the tool call
    that started each, its type)."""
    conversation.agent_links = links
    conversation.save(update_fields=["agent_links"])
    for child in conversation.children.all():
        entry = links.get(child.agent_id)
        if entry and (not child.parent_tool_use_id or not child.agent_type):
            child.parent_tool_use_id = child.parent_tool_use_id or (entry.get("tool_use_id") or "")[:255]
            child.agent_type = child.agent_type or (entry.get("agent_type") or "")[:100]
            child.save(update_fields=["parent_tool_use_id", "agent_type"])


# -- messages


def last_message_pk() -> int | None:
    """The pk of the last message stored (before an import: the ones after it are the import's)."""
    return Message.objects.order_by("-pk").values_list("pk", flat=True).first()


def insert_messages(conversation_id: int, rows: list[dict], search_texts: list[str]) -> list[int]:
    """Insert a batch of new messages (contiguous positions) and their search entries; their pks."""
    insert_rows(Message, rows, encoded=ENCODED_MESSAGE_FIELDS)
    positions = [m["position"] for m in rows]
    pks = inserted_pks(len(positions))
    if pks is None:  # positions of one batch are contiguous
        found = dict(
            Message.objects.filter(
                conversation_id=conversation_id, position__gte=positions[0], position__lte=positions[-1]
            ).values_list("position", "pk")
        )
        pks = [found[p] for p in positions]
    search.index_masked(conversation_id, zip(pks, search_texts))  # full-text search: the new rows
    return pks


def stored_records(conversation_id: int, uuids: list[str]) -> list[tuple]:
    """(pk, uuid, position, raw, flags, api_message_id) of the stored messages of these uuids: what
    a record's change shows in."""
    return list(
        Message.objects.filter(conversation_id=conversation_id, uuid__in=uuids).values_list(
            "pk", "uuid", "position", "raw", "flags", "api_message_id"
        )
    )


def stored_blocks(pks: list[int]) -> list[tuple[int, list]]:
    return list(Message.objects.filter(pk__in=pks).values_list("pk", "blocks"))


def update_messages(conversation_id: int, rows: list[dict], fields: list[str], replaced: list[tuple[int, list, str]]) -> None:
    """Set ``fields`` of stored messages (rows with their "id") and replace their search entries,
    each (pk, the stored blocks, the new text): the old entry goes by the text it was indexed
    with, the stored (masked) blocks'."""
    update_rows(Message, rows, fields, encoded=ENCODED_MESSAGE_FIELDS)
    search.reindex_messages(conversation_id, [(pk, search.text_of_blocks(blocks), text) for pk, blocks, text in replaced])


def message_pk(conversation_id: int, position: int) -> int | None:
    return Message.objects.filter(conversation_id=conversation_id, position=position).values_list("pk", flat=True).first()


def message_pks(conversation: Conversation, positions: list[int]) -> dict[int, int]:
    """position -> pk of the conversation's messages at these positions."""
    return dict(conversation.messages.filter(position__in=positions).values_list("position", "pk"))


def message_pks_from(conversation: Conversation, position: int) -> dict[int, int]:
    """position -> pk of the conversation's messages from ``position`` on."""
    return dict(conversation.messages.filter(position__gte=position).values_list("position", "pk"))


# -- model calls and folds


def stored_calls(conversation: Conversation) -> dict[tuple[str, str], ModelCall]:
    """The conversation's model calls by (message id, request id)."""
    return {(m.api_message_id, m.request_id): m for m in conversation.model_calls.all()}


def insert_calls(rows: list[dict]) -> None:
    insert_rows(ModelCall, rows)


def update_calls(calls: list[ModelCall], fields: list[str]) -> None:
    ModelCall.objects.bulk_update(calls, fields, batch_size=500)


def call_keys_at(conversation: Conversation, positions: list[int]) -> list[tuple[int, str, str]]:
    """(pk, message id, request id) of the conversation's calls at these positions."""
    return list(
        conversation.model_calls.filter(position__in=positions).values_list("pk", "api_message_id", "request_id")
    )


def delete_calls(pks: list[int]) -> None:
    ModelCall.objects.filter(pk__in=pks).delete()


def save_fold(conversation: Conversation, key: str, values: dict, *, rewrites: bool) -> None:
    """The fold of that key, created with ``values``; a format that rewrites its records sets a
    stored fold to them again (a summary that was still being written)."""
    row, created = Fold.objects.get_or_create(conversation=conversation, key=key, defaults=values)
    if not created and rewrites:
        changed = [name for name, value in values.items() if getattr(row, name) != value]
        if changed:
            for name in changed:
                setattr(row, name, values[name])
            row.save(update_fields=changed)
