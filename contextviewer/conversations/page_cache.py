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

Only numbers are kept (token counts, positions, turns, model names, fold triggers), never
transcript text: a re-mask (`manage.py mask`) has nothing here to forget.

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

from django.db.models import Max

from contextviewer.conversations import segments
from contextviewer.conversations.models import Conversation, Message, ModelCall

MAX_ENTRIES = 1024  # figures kept per process (three or four per conversation), least recently used dropped
T = TypeVar("T")

_lock = threading.Lock()
_entries: OrderedDict[str, Any] = OrderedDict()
_computing: dict[str, threading.Lock] = {}


def version(conv: Conversation, layout: segments.SegmentLayout) -> str:
    """The version of a conversation's page figures (see the module's docstring)."""
    newest_message = Message.objects.filter(conversation=conv).aggregate(m=Max("id"))["m"]
    newest_call = ModelCall.objects.filter(conversation=conv).aggregate(m=Max("id"))["m"]
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
        conv.peak_context, conv.spend_tokens, conv.revision, newest_message, newest_call, layout.first, layout.last, folds,
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
        conv.model_call_count, conv.peak_context, conv.spend_tokens, conv.window, list(conv.model_names or []),
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
    """Forget every kept figure (tests)."""
    with _lock:
        _entries.clear()
        _computing.clear()
