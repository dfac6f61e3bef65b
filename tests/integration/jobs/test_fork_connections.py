"""A forked child never closes its parent's database connections (contextviewer/jobs/forks.py).

Why it matters: the import's parsing process is forked by the worker's pool process while the job's
heartbeat thread (and, when another thread forks, the import's writer) holds an SQLite connection.
Python drops the other threads' thread-local connections in the child, which closed them there; and
`./bin/run --samples` corrupted its database within a minute in about one run in three (checked by
hand: 1 of 3 runs here before the fix, `pragma quick_check` reporting zeroed pages of the message
table; strace showed the parsing process closing the database, its -wal and -shm mid-import).
"""

from __future__ import annotations

import gc
import json
import os
import threading

import pytest
from django.db import connection
from django.db.backends.sqlite3.base import DatabaseWrapper

pytestmark = pytest.mark.django_db


def _in_child(probe) -> dict:
    """Fork, run ``probe`` in the child, and return what it answered (JSON over a pipe)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        code = 0
        try:
            answer = probe()
        except BaseException as exc:  # noqa: BLE001 - said to the parent, the child never raises
            answer, code = {"error": repr(exc)}, 1
        os.write(write_fd, json.dumps(answer).encode())
        os._exit(code)
    os.close(write_fd)
    with open(read_fd, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def _open_files(path: str) -> list[str]:
    """The database's files (itself, its -wal and -shm) this process holds open."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(path):
            held.append(target[len(path):] or "db")
    return sorted(held)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="an SQLite file's descriptors are what is watched")
def test_a_child_forked_while_another_thread_holds_a_connection_keeps_it_open(tmp_path):
    path = str(tmp_path / "held.sqlite3")
    local = threading.local()  # as Django keeps each thread's connections
    opened, stop = threading.Event(), threading.Event()

    def beat() -> None:  # what the frame of a finished call held is gone, as after a real beat
        local.wrapper = DatabaseWrapper({**connection.settings_dict, "NAME": path}, alias="held")
        with local.wrapper.cursor() as cursor:
            cursor.execute("CREATE TABLE beat (at INTEGER)")
            cursor.execute("INSERT INTO beat VALUES (1)")

    def holder():  # the heartbeat's way: a connection of its own, idle between beats
        beat()
        opened.set()
        stop.wait()
        local.wrapper.close()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        opened.wait(10)
        assert _open_files(path) == ["-shm", "-wal", "db"]  # WAL mode, as settings open it

        def child():
            gc.collect()  # a wrapper left in a reference cycle goes at the child's next collection
            return {"open": _open_files(path)}

        answer = _in_child(child)
        assert answer == {"open": ["-shm", "-wal", "db"]}, (
            "the child closed the connection another thread of its parent holds"
        )
    finally:
        stop.set()
        thread.join(10)


def test_the_forking_threads_own_connections_are_not_the_childs():
    connection.ensure_connection()
    raw = connection.connection

    def child():
        return {"detached": connection.connection is None}

    assert _in_child(child) == {"detached": True}  # the child connects anew if it needs to
    assert connection.connection is raw  # the parent's is untouched, and works
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
