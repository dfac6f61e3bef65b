"""Full-text search over message text: SQLite FTS5 on the embedded default, PostgreSQL full-text
search (a tsvector table with a GIN index) on PostgreSQL. Both tables are made by migration 0002.

The ingest service calls `index_masked(conversation_id, rows)` after inserting messages (builds and
re-masks call `index_messages`, which masks first), and `reindex_messages` after updating messages
in place (a format that rewrites its records).
Hits are checked against project membership inside the query, so a limit never hides the
user's own hits behind someone else's.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import islice

from django.db import connection

from contextviewer.core.export import well_formed
from contextviewer.core.records import text_of_blocks
from contextviewer.core.secrets import mask_text

from contextviewer.conversations import page_cache
from contextviewer.conversations.models import Conversation, ConversationKind, Message

FTS_TABLE = "conversations_message_fts"  # SQLite: contentless FTS5, rowid = message id
PG_TABLE = "conversations_message_search"  # PostgreSQL: (message_id, conversation_id, document)
PG_CONFIG = "simple"  # code and identifiers: no stemming, no stop words
MAX_INDEXED_CHARS = 100_000  # per message: enough to find it, cheap to index
BATCH = 500
COVER_INDEX = "message_search_cover"  # Message: (id, conversation, timestamp, position, turn)

_WORD = re.compile(r"\w[\w.\-/]*", re.UNICODE)
# PostgreSQL's parser keeps paths and file names whole ("tests/test_x.py"); split them into words
# on both sides, as FTS5's unicode61 tokenizer does, so "test_x" finds "tests/test_x.py".
_SEPARATORS = re.compile(r"[/._\-:\\]+")


def _is_sqlite() -> bool:
    return connection.vendor == "sqlite"


def _indexed_text(text: str | None) -> str:
    return _clipped(mask_text(text))


def _clipped(text: str | None) -> str:
    # well_formed: a lone surrogate (stored by imports before they replaced it) fails the insert.
    return well_formed((text or "")[:MAX_INDEXED_CHARS].replace("\x00", ""))


def index_messages(conversation_id: int, rows: Iterable[tuple[int, str]]) -> int:
    """Index (message_id, text) rows; call after inserting messages (once per message: a message
    whose text changed is indexed again by `reindex_messages`). The texts are masked here first (a
    build's or a re-mask's text may not be): the index holds no secret.

    Runs inside the caller's transaction. Returns the number of rows indexed."""
    return _index(conversation_id, rows, _indexed_text)


def index_masked(conversation_id: int, rows: Iterable[tuple[int, str]]) -> int:
    """`index_messages` for texts masked already (an import's, made from the masked blocks:
    ingest/prepare.py): they are not scanned again."""
    return _index(conversation_id, rows, _clipped)


def _index(conversation_id: int, rows: Iterable[tuple[int, str]], indexed) -> int:
    count = 0
    it: Iterator[tuple[int, str]] = iter(rows)
    with connection.cursor() as cursor:
        while batch := [(mid, indexed(text)) for mid, text in islice(it, BATCH)]:
            batch = [(mid, text) for mid, text in batch if text.strip()]
            if not batch:
                continue
            if _is_sqlite():
                # Contentless: nothing but the index is stored. Each id is indexed once (a changed
                # message's entry is deleted first); a repeated id would only repeat a hit, which
                # search() drops.
                cursor.executemany(f"INSERT INTO {FTS_TABLE}(rowid, text) VALUES (%s, %s)", batch)
            else:
                cursor.executemany(
                    f"INSERT INTO {PG_TABLE} (message_id, conversation_id, document) "
                    f"VALUES (%s, %s, to_tsvector('{PG_CONFIG}', %s)) "
                    "ON CONFLICT (message_id) DO UPDATE SET document = EXCLUDED.document",
                    [(mid, conversation_id, _SEPARATORS.sub(" ", text)) for mid, text in batch],
                )
            count += len(batch)
    return count


def reindex_messages(conversation_id: int, rows: Iterable[tuple[int, str, str]]) -> int:
    """Replace the entries of messages whose text changed: (message_id, the text it was indexed
    with, its new text) rows. Runs inside the caller's transaction; returns the rows indexed.

    PostgreSQL: the new document replaces the row (a message left with no text loses its row).
    SQLite's contentless FTS5 table drops an entry when given back the text it was indexed with
    (the old text, as `index_messages` made it from the stored, masked blocks)."""
    rows = list(rows)
    if not rows:
        return 0
    with connection.cursor() as cursor:
        if _is_sqlite():
            old = [(mid, text) for mid, before, _after in rows if (text := _indexed_text(before)).strip()]
            for start in range(0, len(old), BATCH):
                cursor.executemany(
                    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, text) VALUES ('delete', %s, %s)", old[start : start + BATCH]
                )
        else:
            emptied = [mid for mid, _before, after in rows if not _indexed_text(after).strip()]
            if emptied:
                cursor.execute(f"DELETE FROM {PG_TABLE} WHERE message_id = ANY(%s)", [emptied])
    return index_messages(conversation_id, ((mid, after) for mid, _before, after in rows))


def unindex_conversation(conversation_id: int) -> None:
    """Drop a conversation's entries (PostgreSQL). On SQLite, stale ids simply never match a message."""
    if not _is_sqlite():
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {PG_TABLE} WHERE conversation_id = %s", [conversation_id])


def forget_conversations(conversation_ids: list[int]) -> int:
    """Remove every search entry of these conversations' messages; call before deleting them.

    PostgreSQL: the rows go. SQLite's contentless FTS5 table drops an entry when given back the
    text it was indexed with, which is recomputed here as index_messages made it (from the stored,
    masked blocks). Returns the number of entries removed (SQLite: of messages with text)."""
    ids = [int(i) for i in conversation_ids]
    if not ids:
        return 0
    with connection.cursor() as cursor:
        if not _is_sqlite():
            cursor.execute(f"DELETE FROM {PG_TABLE} WHERE conversation_id = ANY(%s)", [ids])
            return cursor.rowcount
        count = 0
        pks = list(Message.objects.filter(conversation_id__in=ids).order_by("pk").values_list("pk", flat=True))
        for start in range(0, len(pks), BATCH):
            rows = Message.objects.filter(pk__in=pks[start : start + BATCH]).values_list("pk", "blocks")
            batch = [(pk, text) for pk, blocks in rows if (text := _indexed_text(text_of_blocks(blocks))).strip()]
            if batch:
                cursor.executemany(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, text) VALUES ('delete', %s, %s)", batch)
                count += len(batch)
        return count


def terms(query: str) -> list[str]:
    return _WORD.findall(query)[:12]


def _fts5_query(words: list[str]) -> str:
    # Every word quoted (FTS5 syntax in user input is taken literally); the last one as a prefix.
    quoted = ['"' + w.replace('"', '""') + '"' for w in words]
    quoted[-1] += "*"
    return " AND ".join(quoted)


@dataclass(frozen=True, slots=True)
class Hit:
    conversation_id: int
    conversation_title: str
    message_id: int
    position: int
    turn: int
    role: str
    timestamp: datetime | None
    before: str
    match: str
    after: str
    parent_title: str = ""  # a sub-agent's hit: the title of the conversation that started it ...
    task: str = ""  # ... and the sub-agent's own task (conversation_title is both: "parent › task")


ORDERS = {"date": "newest first", "rank": "best match first"}  # the index's orders; the first is the default
PER_PAGE = 20  # hits per page of the index
MAX_IN_CONVERSATION = 1000  # hits a conversation page steps through with n / N
SHOWN_IN_CONVERSATION = 20  # of them listed with a snippet


def search(
    user, query: str, limit: int = 50, conversation_id: int | None = None, *, offset: int = 0, order: str = "rank",
    projects: list[int] | None = None,
) -> list[Hit]:
    """Messages matching every word of `query` (the last one as a prefix) in the user's projects
    (`projects`: only these of them; an API token's request passes its own project).

    order: "rank" (best match first), "date" (newest first), "position" (in the order of the
    conversation; with conversation_id). `offset` and `limit` page through them."""
    words = terms(query)
    rows = matching(user, words, limit, conversation_id, offset=offset, order=order, projects=projects)
    return hits_of([mid for mid, _turn in rows], words)


def matching(
    user, words: list[str], limit: int, conversation_id: int | None = None, *, offset: int = 0, order: str = "rank",
    projects: list[int] | None = None,
) -> list[tuple[int, int]]:
    """(message id, turn) of the matching messages, from the full-text index alone (`projects`:
    only in these projects, still among the user's).

    Kept per version of what the user can search (`_scope_version`: the user's projects and, in
    each, its conversations' count, newest id, messages and revisions): ranking every match of a
    common word is most of a search's cost (30 ms of 45 on 41,000 messages), and readers ask the
    same searches again. Only ids are kept; the snippets are read afresh (hits_of)."""
    if not words or not user.is_authenticated or (projects is not None and not projects):
        return []
    limit = max(1, min(int(limit), MAX_IN_CONVERSATION + 1))
    offset = max(0, int(offset))
    args = (tuple(words), limit, conversation_id, offset, order, tuple(projects) if projects is not None else None)
    key = f"search:{user.pk}:{_scope_version(user)}:{args!r}"
    return page_cache.cached(key, lambda: _matching(user, words, limit, conversation_id, offset=offset, order=order, projects=projects))


def _scope_version(user) -> str:
    """The user's projects and, for each, a summary of its conversations that any import, update
    in place, re-mask (page_cache: the revision) or deletion changes: one grouped query."""
    membership = "accounts_membership"
    conv = Conversation._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.project_id, COUNT(c.id), MAX(c.id), SUM(c.message_count), SUM(c.revision) FROM {membership} m "
            f"LEFT JOIN {conv} c ON c.project_id = m.project_id WHERE m.user_id = %s GROUP BY m.project_id ORDER BY m.project_id",
            [user.pk],
        )
        rows = cursor.fetchall()
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:32]


def _readable(user, projects: list[int] | None) -> tuple[str, list]:
    """The conversations `user` may read (in `projects` only, when given), as a subquery of ids: the
    access rule of every search, applied to the index's own conversation column before any
    message is read (no join with each match's conversation)."""
    conv = Conversation._meta.db_table
    sql = f"SELECT c.id FROM {conv} c WHERE c.project_id IN (SELECT project_id FROM accounts_membership WHERE user_id = %s)"
    params: list = [user.pk]
    if projects is not None:
        sql += f" AND c.project_id IN ({', '.join(['%s'] * len(projects))})"
        params += [int(p) for p in projects]
    return sql, params


def _matching(
    user, words: list[str], limit: int, conversation_id: int | None = None, *, offset: int = 0, order: str = "rank",
    projects: list[int] | None = None,
) -> list[tuple[int, int]]:
    msg = Message._meta.db_table
    readable, readable_params = _readable(user, projects)
    params_order: list = []
    if _is_sqlite():
        sql = (
            # The message's columns from the covering index (migration 0019), never from its row: a
            # common word matches half the messages, and their rows' raw lines and blocks come first.
            f"SELECT m.id, m.turn FROM {FTS_TABLE} f JOIN {msg} m INDEXED BY {COVER_INDEX} ON m.id = f.rowid "
            # "+": a filter on each match, not 1,250 probes of the index per match
            f"WHERE {FTS_TABLE} MATCH %s AND +m.conversation_id IN ({readable}) "
        )
        params = [_fts5_query(words), *readable_params]
        by_rank = "f.rank, m.id"
    else:
        parts = [p for w in words for p in _SEPARATORS.sub(" ", w).split()]
        if not parts:
            return []
        tsquery = " & ".join(
            "'" + p.replace("'", "''").replace("\\", "\\\\") + "'" + (":*" if i == len(parts) - 1 else "")
            for i, p in enumerate(parts)
        )
        sql = (
            f"SELECT m.id, m.turn FROM {PG_TABLE} s JOIN {msg} m ON m.id = s.message_id "
            # The message's own conversation (not the index row's) is the one checked: the index row
            # of a message deleted with its conversation never meets another message, ids never
            # being reused; joined on the id alone, the planner estimates the matches right.
            f"WHERE s.document @@ to_tsquery('{PG_CONFIG}', %s) AND m.conversation_id IN ({readable}) "
        )
        params = [tsquery, *readable_params]
        by_rank = f"ts_rank(s.document, to_tsquery('{PG_CONFIG}', %s)) DESC, m.id"
    if conversation_id is not None:
        sql += "AND m.conversation_id = %s " + ("" if _is_sqlite() else "AND s.conversation_id = %s ")
        params += [conversation_id] * (1 if _is_sqlite() else 2)
    if order == "position" and conversation_id is not None:
        order_sql = "ORDER BY m.position"
    elif order == "date":
        # Undated messages (some formats) last; within a conversation, the later position first.
        order_sql = "ORDER BY CASE WHEN m.timestamp IS NULL THEN 1 ELSE 0 END, m.timestamp DESC, m.conversation_id DESC, m.position DESC"
    else:
        order_sql = f"ORDER BY {by_rank}"
        if not _is_sqlite():
            params_order = [tsquery]
    params += params_order + [limit, offset]
    with connection.cursor() as cursor:
        cursor.execute(sql + order_sql + " LIMIT %s OFFSET %s", params)
        return list({row[0]: (row[0], row[1]) for row in cursor.fetchall()}.values())


def hits_of(ids: list[int], words: list[str]) -> list[Hit]:
    """Hits with their snippets, in the order of `ids`."""
    if not ids:
        return []
    rows = {
        m.id: m
        for m in Message.objects.filter(id__in=ids)
        .select_related("conversation", "conversation__parent")
        .only("id", "position", "turn", "role", "timestamp", "blocks", "conversation__id", "conversation__title",
              "conversation__external_id", "conversation__kind", "conversation__agent_id", "conversation__agent_type",
              "conversation__parent__id", "conversation__parent__title", "conversation__parent__external_id",
              "conversation__parent__agent_links")  # fmt: skip
    }
    hits = []
    for mid in ids:
        m = rows.get(mid)
        if m is None:
            continue
        before, match, after = message_snippet(m.blocks, words)
        parent_title, task = _subagent_title(m.conversation)
        hits.append(
            Hit(
                conversation_id=m.conversation_id,
                conversation_title=f"{parent_title} › {task}" if parent_title else str(m.conversation),
                message_id=m.id,
                position=m.position,
                turn=m.turn,
                role=m.role,
                timestamp=m.timestamp,
                before=before,
                match=match,
                after=after,
                parent_title=parent_title,
                task=task,
            )
        )
    return hits


def _subagent_title(conv: Conversation) -> tuple[str, str]:
    """A sub-agent's (or compaction run's) hit: (its parent's title, its own task: the description
    the call that started it gives, else its own title, else its type). ("", "") for any other."""
    parent = conv.parent
    if parent is None:
        return "", ""
    if conv.kind == ConversationKind.COMPACTION:
        task = "compaction run (a fold's summary)"
    else:
        link = (parent.agent_links or {}).get(conv.agent_id) if isinstance(parent.agent_links, dict) else None
        described = link.get("description") if isinstance(link, dict) else None
        own = conv.title if conv.title and conv.title != conv.external_id else ""
        task = described or own or conv.agent_type or "sub-agent"
        if conv.agent_type and conv.agent_type.lower() not in task.lower():
            task = f"{conv.agent_type}: {task}"
    return str(parent), task


_ESCAPE = re.compile(r"\\(?:r\\n|[nrt])")


def readable_text(blocks) -> str:
    """A message's text as a snippet shows it: like text_of_blocks, but a tool's input and a result
    the log wrote as JSON read as their values (`command: ls -la`), not as JSON with `\\n` escapes."""
    parts: list[str] = []
    for block in blocks or ():
        if not isinstance(block, dict):
            continue
        if block.get("tool_name"):
            parts.append(str(block["tool_name"]))
        text = block.get("text")
        if block.get("kind") == "tool_call" and isinstance(block.get("tool_input"), (dict, list)):
            parts.append(_values(block["tool_input"]))
        elif isinstance(text, str) and text:
            parts.append(_tool_text(text) if block.get("kind") in ("tool_call", "tool_result") else text)
    return "\n".join(parts)


def _tool_text(text: str) -> str:
    """A tool's input or result as it reads: JSON as its values; a text escaped once more than it
    should be (no line break, `\\n` between its lines) with its line breaks."""
    head = text.lstrip()[:1]
    if head not in ("{", "[", '"'):
        return _ESCAPE.sub("\n", text) if "\n" not in text and text.count("\\n") >= 2 else text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return _values(value)


def _values(value, depth: int = 0) -> str:
    """A JSON value as words: strings as they are, an object's items as `key: value`."""
    if isinstance(value, str):
        return value
    if depth > 8:
        return ""
    if isinstance(value, dict):
        return "\n".join(f"{k}: {_values(v, depth + 1)}" for k, v in value.items())
    if isinstance(value, list):
        return "\n".join(_values(v, depth + 1) for v in value)
    return "" if value is None else str(value)


def message_snippet(blocks, words: list[str]) -> tuple[str, str, str]:
    """(before, match, after) of a message's hit, from its readable text (masked: rows stored before
    masking too); where the words are only in its text as stored (a JSON key, a word after an
    escape), from that, its `\\n` escapes read as spaces."""
    found = snippet(mask_text(readable_text(blocks)), words)
    if found[1] or not words:
        return found
    return snippet(_ESCAPE.sub(" ", mask_text(text_of_blocks(blocks))), words)


def snippet(text: str, words: list[str], width: int = 90) -> tuple[str, str, str]:
    """(before, match, after) around the first word found, each run of white space (line breaks and
    all) one space, the spaces beside the match kept; the template escapes all three."""
    lower = text.lower()
    for w in words:
        at = lower.find(w.lower())
        if at >= 0:
            start = max(0, at - width)
            end = min(len(text), at + len(w) + width)
            before = ("…" if start else "") + text[start:at]
            after = text[at + len(w) : end] + ("…" if end < len(text) else "")
            return _SPACES.sub(" ", before).lstrip(), text[at : at + len(w)], _SPACES.sub(" ", after).rstrip()
    return " ".join(text[: 2 * width].split()), "", ""


_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class HitPage:
    """One page of the index's hits, in a named order."""

    query: str
    order: str
    number: int
    hits: list[Hit]
    has_next: bool

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def order_label(self) -> str:
        return ORDERS[self.order]

    @property
    def first(self) -> int:
        return (self.number - 1) * PER_PAGE + 1

    @property
    def last(self) -> int:
        return self.first + len(self.hits) - 1

    @property
    def heading(self) -> str:
        """What the results are: "3 messages", "Messages 21–40 of more than 40", "No message"."""
        n = len(self.hits)
        if not n:
            return "No message"
        if self.number == 1 and not self.has_next:
            return "1 message" if n == 1 else f"{n} messages"
        span = f"Messages {self.first}–{self.last}" if n > 1 else f"Message {self.first}"
        return f"{span} of more than {self.last}" if self.has_next else f"{span} of {self.last}"


def hit_page(user, query: str, page: str | int | None = 1, order: str | None = None) -> HitPage:
    order = order if order in ORDERS else next(iter(ORDERS))
    try:
        number = max(1, min(int(page or 1), 10_000))
    except (TypeError, ValueError):
        number = 1
    words = terms(query)
    rows = matching(user, words, PER_PAGE + 1, offset=(number - 1) * PER_PAGE, order=order)
    hits = hits_of([mid for mid, _turn in rows[:PER_PAGE]], words)
    return HitPage(query=query, order=order, number=number, hits=hits, has_next=len(rows) > PER_PAGE)


@dataclass(frozen=True, slots=True)
class ConversationHits:
    """The matches of a search inside one conversation, in its order: all of them (up to
    MAX_IN_CONVERSATION) as (message id, turn) for n / N, the first few with a snippet."""

    query: str
    words: list[str]
    steps: list[tuple[int, int]]
    shown: list[Hit]
    more: bool  # over MAX_IN_CONVERSATION matches

    @property
    def count(self) -> int:
        return len(self.steps)

    @property
    def data(self) -> str:
        """For the page's script: "message_id:turn" joined by ";"."""
        return ";".join(f"{mid}:{turn}" for mid, turn in self.steps)


def in_conversation(user, conversation_id: int, query: str | None) -> ConversationHits | None:
    query = (query or "").strip()[:200]
    if not query:
        return None
    words = terms(query)
    rows = matching(user, words, MAX_IN_CONVERSATION + 1, conversation_id, order="position")
    steps = rows[:MAX_IN_CONVERSATION]
    shown = hits_of([mid for mid, _turn in steps[:SHOWN_IN_CONVERSATION]], words)
    return ConversationHits(query=query, words=words, steps=steps, shown=shown, more=len(rows) > MAX_IN_CONVERSATION)
