"""Figures of the conversation page that cost a scan of the whole conversation, kept per
conversation version: the gauge's tokens per category (a sum over every loaded message), the
curve (every model call) and the spend (every model call, grouped); and the index's spend of
each conversation, kept per version of the conversation's row (`row_version`).

A version is what those figures are computed from, read in two index look-ups plus the row and
the folds the page loads anyway: the conversation's row (its counts, peak, spend, window and
models, all recomputed by every import, and its revision, bumped by an import that changed stored
messages in place), the newest message id and the newest model call id (ids are never reused),
and every fold that makes a segment with the positions it covers and its summary. An import, a
grown file, a rewritten record, a handoff or a re-estimate changes one of them, so the next request
computes again; nothing is ever served for a version it was not computed for.

The figures are numbers (token counts, positions, turns, model names, fold triggers). Windows of
turn headers (conversation_page.turn_page, per `row_version`) and the conversation page's data
(per `content_version`) hold text too: each turn's first line, the headers' HTML. So do the
rendered fragments (below, in the `fragments` cache). Every one of those versions includes the
conversation's revision, which a re-mask (`manage.py mask`, a masking by value) bumps: nothing is
served from before a re-mask; what was kept drops out of memory as newer entries come.

The store is each web process's own memory (a small LRU), not the shared cache: no pickling, no
file per request, nothing outlives the code that computed it. Two processes compute a version once
each. Threads of one process asking for the same figures at once wait for the first to compute
them rather than all scanning the conversation.
"""

from __future__ import annotations

import hashlib
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache import caches
from django.db import connection
from django.utils import timezone, translation

from contextviewer.conversations import calibration, segments
from contextviewer.conversations.models import Conversation, Fold, Message, ModelCall

MAX_ENTRIES = 1024  # figures kept per process (three or four per conversation), least recently used dropped
T = TypeVar("T")

_lock = threading.Lock()
_entries: OrderedDict[str, Any] = OrderedDict()
_computing: dict[str, threading.Lock] = {}


def version(conv: Conversation, layout: segments.SegmentLayout) -> str:
    """The version of a conversation's page figures (see the module's docstring)."""
    with connection.cursor() as cursor:  # SQL as written: compiling two ORM aggregates cost more than running them
        cursor.execute(
            f"SELECT (SELECT MAX(id) FROM {Message._meta.db_table} WHERE conversation_id = %s), "
            f"(SELECT MAX(id) FROM {ModelCall._meta.db_table} WHERE conversation_id = %s)",
            [conv.pk, conv.pk],
        )
        newest_message, newest_call = cursor.fetchone()
    folds = [
        (
            f.pk, f.position, f.kind, f.origin, f.trigger, f.tokens_before, f.tokens_after,
            getattr(f, "summary_at", None), zlib.crc32((f.summary_text or "").encode("utf-8", "surrogatepass")),
        )
        for f in layout.folds
    ]
    spans = [(s.summary_position, s.preserved_positions) for s in layout.spans]
    parts = (
        conv.pk, conv.created_at.isoformat() if conv.created_at else None, conv.agent, conv.window,
        list(conv.model_names or []), conv.message_count, conv.model_call_count, conv.fold_count,
        conv.peak_context, conv.measured_calls, conv.spend_tokens, conv.revision, newest_message,
        newest_call, layout.first, layout.last, folds,
        spans,
    )
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def cached(key: str, compute: Callable[[], T]) -> T:
    """The value kept under `key`, computed once (per process) when there is none."""
    with _lock:
        if key in _entries:
            _entries.move_to_end(key)
            return _entries[key]
        gate = _computing.setdefault(key, threading.Lock())
    with gate:  # one thread computes; the others wait for its value
        with _lock:
            if key in _entries:
                _entries.move_to_end(key)
                return _entries[key]
        value = compute()
        with _lock:
            _entries[key] = value
            _entries.move_to_end(key)
            while len(_entries) > MAX_ENTRIES:
                _entries.popitem(last=False)
            _computing.pop(key, None)
    return value


def figures(conv: Conversation, layout: segments.SegmentLayout, name: str, compute: Callable[[], T], version_key: str | None = None) -> T:
    """`compute()` for this conversation's current version, kept under `name`."""
    return cached(f"{conv.pk}:{name}:{version_key or version(conv, layout)}", compute)


def row_version(conv: Conversation) -> str:
    """A version from the conversation's row alone, for figures of many conversations at once (the
    index's spend): every import recomputes the row's counts, peak and spend from the model calls."""
    parts = (
        conv.pk, conv.created_at.isoformat() if conv.created_at else None, conv.message_count,
        conv.model_call_count, conv.peak_context, conv.measured_calls, conv.spend_tokens,
        conv.window, list(conv.model_names or []),
        conv.revision,
    )
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def per_conversation(convs: list[Conversation], name: str, compute: Callable[[list[int]], dict[int, T]], default: T) -> dict[int, T]:
    """`compute(ids)` for the conversations whose figures are not kept for their row version (one
    call for all of them), the kept figures for the others."""
    out: dict[int, T] = {}
    missing: dict[int, str] = {}
    with _lock:
        for c in convs:
            key = f"{c.pk}:{name}:{row_version(c)}"
            if key in _entries:
                _entries.move_to_end(key)
                out[c.pk] = _entries[key]
            else:
                missing[c.pk] = key
    if missing:
        fresh = compute(list(missing))
        with _lock:
            for pk, key in missing.items():
                out[pk] = _entries[key] = fresh.get(pk, default)
            while len(_entries) > MAX_ENTRIES:
                _entries.popitem(last=False)
    return out


def clear() -> None:
    """Forget every kept figure and fragment (tests)."""
    with _lock:
        _entries.clear()
        _computing.clear()
    caches[FRAGMENTS].clear()


# --- rendered fragments ---------------------------------------------------------------------------
#
# A fragment (a turn, a window of turn headers, an archived segment, a fold list, a block, a fold's
# summary, a sub-agent's turns) is the same HTML for every reader allowed to see the conversation,
# so it is rendered once per version of what it shows and kept in the `fragments` cache
# (settings.CACHES: each web process's own memory, bounded; never a file or Redis: a fragment
# holds transcript text, and a deletion or a re-mask must leave no copy of it anywhere but in the
# database it scrubs). The caller checks access first, always: a key is only ever read for a
# reader the permission check let through.
#
# The version (`content_version`) is read in one query beside the conversation's row, which the
# access check has just loaded: the row's figures and its revision (an import recomputes the
# figures; an update in place, a re-mask and a masking by value bump the revision), the newest
# message and model call ids (ids are never reused), its folds (a handoff, a summary made again, fold figures
# recomputed) and its sub-agents (a turn shows each sub-agent's title and length: one imported,
# grown, masked or deleted later changes them); besides, the captured requests the gauge sizes an
# unlogged system prompt from, as they are on disk (calibration.unlogged_prompt_stamp: one listing).

FRAGMENTS = "fragments"
MAX_FRAGMENT_CHARS = 512 * 1024  # a bigger fragment is rendered each time, never kept (the size bound)


def content_version(conv: Conversation) -> str:
    """The version of everything a fragment of `conv` shows (see above)."""
    msg, call, fold, conv_table = Message._meta.db_table, ModelCall._meta.db_table, Fold._meta.db_table, Conversation._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT MAX(id) FROM {msg} WHERE conversation_id = %s), "
            f"(SELECT MAX(id) FROM {call} WHERE conversation_id = %s), "
            f"(SELECT COUNT(*) FROM {fold} WHERE conversation_id = %s), "
            f"(SELECT MAX(id) FROM {fold} WHERE conversation_id = %s), "
            f"(SELECT SUM(position + COALESCE(tokens_before, 0) + COALESCE(tokens_after, 0) + LENGTH(summary_text)) "
            f"FROM {fold} WHERE conversation_id = %s), "
            f"(SELECT COUNT(*) FROM {conv_table} WHERE parent_id = %s), "
            f"(SELECT MAX(id) FROM {conv_table} WHERE parent_id = %s), "
            f"(SELECT SUM(message_count + revision) FROM {conv_table} WHERE parent_id = %s)",
            [conv.pk] * 8,
        )
        stamp = cursor.fetchone()
    parts = (
        row_version(conv), conv.agent, conv.external_id, conv.kind, conv.title, conv.agent_type, conv.parent_id,
        conv.tool_call_count, conv.fold_count, conv.parent_tool_use_id, tuple(stamp),
        calibration.unlogged_prompt_stamp(conv),  # the gauge's captured system prompt and tools, as on disk now
    )
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def fragment_key(conv: Conversation, version_key: str, name: str, *parts: Any) -> str:
    """The cache key of one fragment of `conv` at `version_key`: its name, whatever else it depends
    on (the request's query, htmx or not), the language and the time zone its dates are shown in."""
    extra = (name, parts, translation.get_language(), timezone.get_current_timezone_name())
    digest = hashlib.sha256(repr(extra).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"frag:{conv.pk}:{version_key}:{digest}"


def get_fragment(key: str) -> str | None:
    return caches[FRAGMENTS].get(key)


def keep_fragment(key: str, html: str) -> None:
    if len(html) <= MAX_FRAGMENT_CHARS:
        caches[FRAGMENTS].set(key, html)
