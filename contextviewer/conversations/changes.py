"""A conversation's change signal: what lets an open page learn of new messages at once.

An import that commits new or updated messages of a conversation touches one small file per
conversation under ``<data dir>/changes/`` (``signal``, after the commit). A page's held request
(viewer/live.py) waits on that file's stamp (``wait``): a stat every 50 ms costs microseconds and
no query, so twenty open pages hold twenty threads and nothing else. Where the web server cannot
see the worker's data folder (another machine), ``wait`` also asks the database every second.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from django.conf import settings

STEP = 0.05  # seconds between two looks at the stamp
DB_EVERY = 1.0  # seconds between two asks of the database while waiting
# Set when the process is asked to stop (ops/gunicorn_hooks.py): every wait ends at once, so a
# held request does not hold the web server's stop up.
STOPPING = threading.Event()


def _folder() -> Path:
    return Path(settings.DATA_DIR) / "changes"


def _path(conversation_id: int) -> Path:
    return _folder() / str(int(conversation_id))


def stamp(conversation_id: int) -> int:
    """The conversation's change stamp (0: never signalled)."""
    try:
        return os.stat(_path(conversation_id)).st_mtime_ns
    except OSError:
        return 0


def signal(conversation_ids: Iterable[int]) -> None:
    """Say that these conversations changed (call it once their rows are committed). Never raises:
    a page that misses the signal learns of the change from the database a second later."""
    ids = list(conversation_ids)
    if not ids:
        return
    try:
        _folder().mkdir(parents=True, exist_ok=True)
        now = time.time_ns()
        for pk in ids:
            path = _path(pk)
            path.touch(exist_ok=True)
            os.utime(path, ns=(now, now))
    except OSError:
        pass


def wait(conversation_id: int, timeout: float, changed: Callable[[], bool], since: int | None = None) -> bool:
    """Wait up to ``timeout`` seconds for the conversation to change: True as soon as its stamp
    moves past ``since`` (default: now) and ``changed()`` agrees, or ``changed()`` says so on its
    own (asked every DB_EVERY seconds); False at the timeout."""
    start = stamp(conversation_id) if since is None else since
    deadline = time.monotonic() + timeout
    ask_at = time.monotonic() + DB_EVERY
    while True:
        now = time.monotonic()
        if now >= deadline or STOPPING.is_set():
            return False
        moved = stamp(conversation_id) != start
        if moved or now >= ask_at:
            if changed():
                return True
            ask_at = now + DB_EVERY
            if moved:
                start = stamp(conversation_id)
        time.sleep(min(STEP, max(0.0, deadline - now)))
