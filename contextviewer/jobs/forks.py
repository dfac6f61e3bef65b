"""SQLite connections across ``os.fork()``: a forked child never closes its parent's.

A process forked while it has connections open (the import's parsing process, ingest/child.py and
prepare.py, forked by the worker's pool process; Celery's pool process, forked by the worker) starts
with a copy of every object of its parent, but with only the thread that forked. Python drops the
other threads' state in the child, and with it their thread-local Django connections (the job's
heartbeat, the import's writer when another thread forks): each sqlite3 connection left so is
closed in the child when it is deallocated, at once or at the child's next garbage collection.
SQLite's rule is never to carry a connection across fork(): the child's close releases and cleans
state that the parent still uses through the shared ``-shm`` mapping. Seen here: ``serve --samples``
corrupted its database within a minute about one run in three (pages of the message table read as
zeros), with the parsing process closing the database, its ``-wal`` and ``-shm`` mid-import (strace).

So every connection Django opens is tracked, and across each fork (``os.register_at_fork``):

- before it, the parent takes a strong reference to each raw connection: the child inherits the
  references, so it never deallocates those connections (it leaves with ``os._exit`` or ``exec``,
  which close nothing);
- in the child, the forking thread's own Django connections are detached (the wrapper forgets its
  raw connection), so the child opens its own if it needs one, and Celery's close of inherited
  connections in a new pool process has nothing to close;
- after it, the parent drops the references.

PostgreSQL needs none of this (psycopg never finishes a connection in a process that did not open
it), but a tracked PostgreSQL connection is held the same way: it costs nothing.
"""

from __future__ import annotations

import os
import weakref

from django.db.backends.signals import connection_created

_open: weakref.WeakSet = weakref.WeakSet()  # every Django connection wrapper that connected here
_held: list = []  # the raw connections, from just before a fork (the parent: until it returns)


def track(sender=None, connection=None, **kwargs) -> None:
    if connection is not None:
        _open.add(connection)


def _before_fork() -> None:
    _held[:] = [wrapper.connection for wrapper in list(_open) if wrapper.connection is not None]


def _after_fork_in_parent() -> None:
    _held.clear()


def _after_fork_in_child() -> None:
    # _held keeps the parent's raw connections alive in the child (never cleared here).
    from django.db import connections  # lazy: the Django loaded in the parent, no import on the fork path

    for wrapper in connections.all(initialized_only=True):
        if wrapper.connection is not None:
            _held.append(wrapper.connection)
            wrapper.connection = None  # the child connects anew if it needs a connection


_installed = False


def install() -> None:
    """Track connections and hold them across forks (once per process; JobsConfig.ready)."""
    global _installed
    if _installed:
        return
    _installed = True
    connection_created.connect(track, dispatch_uid="contextviewer.jobs.forks.track")
    os.register_at_fork(
        before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
    )
