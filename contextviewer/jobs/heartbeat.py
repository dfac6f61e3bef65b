"""Who runs a job, and whether that process is still alive: the heartbeat behind job takeover.

A process that claims a job writes its worker id into the Job row ("<host>/<pid namespace>:<pid>:
<process start time>") and, while the job runs, a daemon thread beats every HEARTBEAT_EVERY
seconds: one conditional UPDATE of ``heartbeat_at`` (``WHERE worker_id = me AND status = running``).
A running job's holder is dead when

- it has not beaten for DEAD_AFTER (30 s; CONTEXTVIEWER_JOB_DEAD_AFTER), or
- it names a process of this machine (same host name and PID namespace) that no longer exists,
  is a zombie, or whose pid now belongs to a process started at another time: a worker on the same
  machine (the killed pool child's parent, a restarted worker) needs no wait at all.

On SQLite an import holds the write lock for a whole file, so the UPDATE cannot get through; the
beat then goes to the cache (file-based beside the database) and counts the same. When the UPDATE
finds the row held by another worker (taken over) or no longer running ("Run again", given up),
the beat says so (``lost``) and the job stops at its next progress report without a result.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from datetime import UTC, datetime, timedelta

from django.core.cache import cache
from django.db.models import Q

from contextviewer.jobs.models import Job, JobStatus

log = logging.getLogger(__name__)


def _seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if value > 0 else default


# No beat for this long: the job's process is taken for dead and the job is run again elsewhere.
DEAD_AFTER = timedelta(seconds=_seconds("CONTEXTVIEWER_JOB_DEAD_AFTER", 30))
# Three beats at least within DEAD_AFTER, so one slow write does not make a live job look dead.
HEARTBEAT_EVERY = min(_seconds("CONTEXTVIEWER_HEARTBEAT_INTERVAL", 5), DEAD_AFTER.total_seconds() / 3)
# How long a beat may wait for the database (SQLite's write lock) before it goes to the cache.
BEAT_WAIT_MS = int(min(1000, HEARTBEAT_EVERY * 500))

# The columns liveness is judged on (Job.objects.values(*ROW)).
ROW = ("pk", "worker_id", "heartbeat_at", "started_at", "attempts")


def _proc_stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat from the state field on (field 3 is [0], the start time field 22 is [19])."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            data = fh.read()
    except OSError:
        return None
    return data.rsplit(")", 1)[-1].split()


def _place() -> str:
    """This machine as its processes see it: host name and PID namespace (pids mean something only
    within one namespace: two containers may share a host name, not a namespace)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return f"{socket.gethostname()[:180]}/{namespace}"


def worker_id(pid: int | None = None) -> str:
    """This process, named so that another process can tell whether it still runs."""
    pid = pid or os.getpid()
    stat = _proc_stat(pid)
    start = stat[19] if stat and len(stat) > 19 else "0"
    return f"{_place()}:{pid}:{start}"


def process_gone(holder: str) -> bool:
    """True when ``holder`` (a worker id) names a process of this machine that is no longer
    running. False when it runs, or cannot be told from here (another machine, an id of old)."""
    try:
        place, pid_text, start = holder.rsplit(":", 2)
        pid = int(pid_text)
    except ValueError:
        return False
    if pid <= 0 or place != _place():
        return False
    stat = _proc_stat(pid)
    if stat is None:  # no such process, or no procfs here: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:  # PermissionError: it exists, as another user
            return False
        return False
    if stat[0] in ("Z", "X"):  # killed, not yet reaped
        return True
    return start != "0" and len(stat) > 19 and stat[19] != start  # the pid was reused


def _beat_key(job_id: int) -> str:
    return f"job-beat:{job_id}"


def last_sign_of_life(row: dict) -> datetime | None:
    """The later of the row's beat (or, before any, its start) and a beat left in the cache by
    the same worker (SQLite, while an import holds the write lock)."""
    last = row["heartbeat_at"] or row["started_at"]
    beat = cache.get(_beat_key(row["pk"]))
    if beat and beat.get("worker") == row["worker_id"] and row["worker_id"]:
        cached = datetime.fromtimestamp(beat["at"], tz=UTC)
        last = max(last, cached) if last else cached
    return last


def holder_dead(row: dict, now: datetime) -> bool:
    """Is the process that holds this running job gone (see the module docstring)?"""
    if row["worker_id"] and process_gone(row["worker_id"]):
        return True
    last = last_sign_of_life(row)
    return last is None or last < now - DEAD_AFTER


def same_holder(row: dict) -> Q:
    """The row exactly as it was read: still running, same worker, same beat (a compare-and-swap:
    of two processes taking a job over at once, one wins; a beat in between makes both lose)."""
    q = Q(pk=row["pk"], status=JobStatus.RUNNING, worker_id=row["worker_id"])
    return q & (Q(heartbeat_at=row["heartbeat_at"]) if row["heartbeat_at"] else Q(heartbeat_at__isnull=True))


class Heartbeat:
    """Beats for one running job from a daemon thread, while the ``with`` block runs."""

    def __init__(self, job: Job):
        self.job_id = job.pk
        self.worker = job.worker_id
        self.lost = False
        self._configured = None  # the DB-API connection _wait_briefly set up
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"job-{job.pk}-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=HEARTBEAT_EVERY + 5)

    def _run(self) -> None:
        from django.db import connection

        try:
            while not self.lost and not self._stop.wait(HEARTBEAT_EVERY):
                try:
                    self.beat()
                except Exception:  # the next beat tries again
                    log.exception("job %s: heartbeat failed", self.job_id)
        finally:
            connection.close()  # this thread's own connection

    def _wait_briefly(self, connection) -> None:
        """This thread's own connection waits at most BEAT_WAIT_MS for a lock (SQLite's write lock,
        a PostgreSQL row lock), not 30 s or forever: set once per connection."""
        connection.ensure_connection()
        if connection.connection is self._configured:
            return
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute(f"PRAGMA busy_timeout = {BEAT_WAIT_MS}")
            elif connection.vendor == "postgresql":
                cursor.execute(f"SET lock_timeout = {BEAT_WAIT_MS}")
        self._configured = connection.connection

    def beat(self) -> None:
        from django.db import DatabaseError, connection
        from django.utils import timezone

        try:
            self._wait_briefly(connection)
            updated = Job.objects.filter(pk=self.job_id, worker_id=self.worker, status=JobStatus.RUNNING).update(
                heartbeat_at=timezone.now()
            )
        except DatabaseError:  # a lock held too long (on SQLite: this job's import transaction)
            cache.set(_beat_key(self.job_id), {"worker": self.worker, "at": time.time()},
                      int(DEAD_AFTER.total_seconds() * 4))
            return
        if updated:
            return
        # Taken over, or no longer running? (A row this connection cannot see is neither.)
        row = Job.objects.filter(pk=self.job_id).values("worker_id", "status").first()
        if row is not None and (row["worker_id"] != self.worker or row["status"] != JobStatus.RUNNING):
            self.lost = True
            log.warning("job %s: no longer this worker's (now %s, %s); it stops at its next step",
                        self.job_id, row["worker_id"] or "-", row["status"])
