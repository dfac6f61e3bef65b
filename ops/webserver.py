"""The web server's command line: one place for `manage.py serve` and `manage.py bench load`.

Why threads (gunicorn's gthread worker class) and not an async worker class: every view is
synchronous Django and the embedded database is SQLite, whose driver blocks; an async worker
would hand each view to a thread pool anyway (sync_to_async), with one more hop and no gain.
SQLite in WAL mode lets many connections read at once while one writes, so readers on threads
never wait for each other; writes still take the lock up front (settings: transaction_mode
IMMEDIATE), one at a time, with a 30 s busy timeout. Django gives each thread its own
connection (connections are thread-local) and, with CONN_MAX_AGE 0, closes it at the end of
each request. The web server's processes get CONTEXTVIEWER_SQLITE_CONN_MAX_AGE=60 (gunicorn
--env): each thread keeps its SQLite connection for a minute instead of opening it (and running
its PRAGMAs) again for every request, 1-2 ms of CPU each time. Between requests no transaction
is open, so an idle connection holds no WAL snapshot and never stops a checkpoint. The worker and
the commands keep closing theirs (CONN_MAX_AGE 0). On PostgreSQL the same
(CONTEXTVIEWER_PG_CONN_MAX_AGE=60): connecting and starting a backend cost about 8 ms of every
request (/login/ took 14.3 ms instead of 6.1; CONN_HEALTH_CHECKS replaces a connection a restart
broke). At most workers x threads connections: 48 by default, of PostgreSQL's default 100.

Two processes (one per core, CONTEXTVIEWER_WEB_WORKERS) run the Python: the GIL lets one
thread run at a time in each. Threads (CONTEXTVIEWER_WEB_THREADS) take every waiting request
at once, so a slow page does not hold twenty fast ones in the listen queue behind it, and
keep-alive connections are served (a sync worker closes each connection after one response).
A live page's request is held until something is new (viewer/live.py): each open live page
holds a thread that sleeps between stats of a file, so there are threads for twenty such
pages and the other readers besides (24 a process).
"""

from __future__ import annotations

import os
import sys

DEFAULT_WORKERS = 2
DEFAULT_THREADS = 24
SQLITE_CONN_MAX_AGE = 60  # seconds a web thread keeps its SQLite connection (settings.py)
PG_CONN_MAX_AGE = 60  # the same for PostgreSQL


def gunicorn_args(
    host: str, port: int, workers: int | None = None, threads: int | None = None, worker_class: str = "gthread"
) -> list[str]:
    """The arguments after `python -m gunicorn` (bind, worker class, processes and threads).
    `worker_class="sync"` is the server as it was (one request at a time per process), kept for
    `bench load --worker-class sync` to compare against."""
    workers = workers or int(os.environ.get("CONTEXTVIEWER_WEB_WORKERS", DEFAULT_WORKERS))
    threads = threads or int(os.environ.get("CONTEXTVIEWER_WEB_THREADS", DEFAULT_THREADS))
    args = ["contextviewer.wsgi", "--bind", f"{host}:{port}", "--workers", str(max(1, workers))]
    if worker_class == "sync":
        args += ["--worker-class", "sync"]  # no --threads: gunicorn turns sync + threads into gthread
    else:
        args += ["--worker-class", "gthread", "--threads", str(max(1, threads)), "--keep-alive", "5"]
    args += ["--env", f"CONTEXTVIEWER_SQLITE_CONN_MAX_AGE={SQLITE_CONN_MAX_AGE}",
             "--env", f"CONTEXTVIEWER_PG_CONN_MAX_AGE={PG_CONN_MAX_AGE}"]
    # A live page's held request (up to 20 s) does not hold a stop up: the hooks end it at once.
    return [*args, "--timeout", "600", "-c", "python:ops.gunicorn_hooks", "--access-logfile", "-"]


def gunicorn_command(
    host: str, port: int, workers: int | None = None, threads: int | None = None, worker_class: str = "gthread"
) -> list[str]:
    return [sys.executable, "-m", "gunicorn", *gunicorn_args(host, port, workers, threads, worker_class)]
