"""Watched folders: session files that agents are writing are imported as they grow.

A watchdog observer reports file events; a runner thread imports each changed file once its
events have been quiet for ``debounce`` seconds (and at least every ``max_wait`` seconds for a file
written without pause), so a burst of writes gives one import job. Each job is the ordinary import
job (services.start_import) with an idempotency key per (file, size, mtime): the same state of a
file is never imported twice, and a file whose job is still running is looked at again after it.
A partial last line is left for the next pass (a LINES format resumes at the last complete line).

Only what a format claims is imported: the changed file, the session it is a companion of (a
SQLite database's -wal), or the nearest folder a format reads as a unit. A sub-agent file is imported as it is:
the format groups it with its session (ingest links it to the session's conversation, which the
watcher imported first, since an agent writes its main file before it starts a sub-agent).

The conversations of a file that grew are marked live (Conversation.live_until, the file's
modification time + LIVE_FOR); their page follows them while they are live (live.py).
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import stat
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.db import close_old_connections
from django.db.models import Q
from django.utils import timezone
from watchdog.events import (
    EVENT_TYPE_CLOSED,
    EVENT_TYPE_CREATED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_MOVED,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from contextviewer.core import secrets, tokens as token_core
from contextviewer.importers import formats

from contextviewer.jobs import queue as jobs
from contextviewer.ingest import imports as services
from contextviewer.conversations.models import Conversation
from contextviewer.jobs.models import Job, JobStatus

log = logging.getLogger(__name__)

ENV = "CONTEXTVIEWER_WATCH"  # folders (os.pathsep-separated) or "auto"
# Seconds of quiet before a changed file is imported: an agent writes a message's lines together,
# and an open page shows them as soon as they are imported (viewer/live.py holds its request).
DEBOUNCE = 0.1
MAX_WAIT = 3.0  # a file written without pause is still imported this often
# A conversation stays live this long after its file last grew (agents pause between turns).
LIVE_FOR = timedelta(minutes=float(os.environ.get("CONTEXTVIEWER_LIVE_MINUTES") or 5))
# Events that mean "the file has new content" (opening or reading a file is no change: the
# importer's own reads must not start another import).
CHANGES = {EVENT_TYPE_CREATED, EVENT_TYPE_MODIFIED, EVENT_TYPE_CLOSED, EVENT_TYPE_MOVED}
MAX_COMPANION_CANDIDATES = 8  # files beside a changed one looked at to find the session it belongs to


def auto_folders() -> list[Path]:
    """Every registered format's default locations that exist on this machine."""
    out: list[Path] = []
    for fmt in formats.registry():
        for location in fmt.locations:
            path = Path(location).expanduser()
            if path.is_dir() and path.resolve() not in out:
                out.append(path.resolve())
    return out


def auto_locations() -> list[str]:
    return [loc for fmt in formats.registry() for loc in fmt.locations]


def folders_from(values: list[str] | str | None) -> list[Path]:
    """Folders named on the command line or in CONTEXTVIEWER_WATCH (os.pathsep-separated);
    ``auto`` stands for the formats' default locations. Folders that do not exist are left out."""
    if isinstance(values, str):
        values = values.split(os.pathsep)
    out: list[Path] = []
    for value in values or []:
        value = value.strip()
        if not value:
            continue
        found = auto_folders() if value == "auto" else [Path(value).expanduser().resolve()]
        out.extend(p for p in found if p.is_dir() and p not in out)
    return out


def missing(values: list[str] | str | None) -> list[str]:
    """The named folders (not ``auto``) that do not exist, to say so."""
    if isinstance(values, str):
        values = values.split(os.pathsep)
    return [v for v in (x.strip() for x in values or []) if v and v != "auto" and not Path(v).expanduser().is_dir()]


def import_target(file: Path, folders: list[Path]) -> Path | None:
    """What to import for a changed file under ``folders``: the file when a format claims it; the
    session whose companion it is (a SQLite database's -wal, a session's .meta.json: the format
    says which files are its sessions' companions); else the nearest folder a format reads as a
    unit (a session kept as a folder of files). None: no format reads it. (The watcher's, and a
    pushed file's: push.py.)"""
    if formats.claim(file) is not None:
        return file
    session = _companion_of(file)
    if session is not None:
        return session
    root = next((f for f in folders if file.is_relative_to(f)), None)
    folder = file.parent
    while root is not None and folder != root and folder.is_relative_to(root):
        if formats.claim(folder, b"") is not None:
            return folder
        folder = folder.parent
    return None


def _companion_of(file: Path) -> Path | None:
    """The session beside ``file`` that names it as a companion: looked for among the names it
    can come from (``store.db`` for ``store.db-wal``; ``key.*`` for ``key.meta.json``)."""
    candidates = []
    if "-" in file.name:
        candidates.append(file.with_name(file.name.rsplit("-", 1)[0]))
    stem = file.name.split(".", 1)[0]
    if stem:
        candidates.extend(sorted(file.parent.glob(glob.escape(stem) + ".*"))[:MAX_COMPANION_CANDIDATES])
    for candidate in candidates:
        if candidate == file or not candidate.is_file():
            continue
        fmt = formats.claim(candidate)
        if fmt is not None and file in fmt.companion_files(candidate):
            return candidate
    return None


@dataclass
class _Pending:
    first: float  # first event of this burst (monotonic)
    last: float  # latest event


class _Events(FileSystemEventHandler):
    def __init__(self, watcher: Watcher):
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type not in CHANGES:
            return
        path = event.dest_path if event.event_type == EVENT_TYPE_MOVED else event.src_path
        if path:
            self.watcher.touch(os.fsdecode(path))


def warm_up() -> None:
    """What the first import would load, loaded before the first file comes: the formats' modules
    and the tokenizer (0.3 s that a new session's page would otherwise wait for)."""
    formats.entries()
    token_core.count_text("warm up")
    secrets.mask_text("warm up")


class Watcher:
    """Watch ``folders`` (recursively) and import what grows into ``project``.

    ``queue``: hand the jobs to the Celery workers; else this watcher runs them itself, one at a
    time, in its runner thread (no worker needed)."""

    def __init__(self, folders, project, *, user=None, queue: bool = False, debounce: float = DEBOUNCE,
                 max_wait: float = MAX_WAIT):
        self.folders = [Path(f).expanduser().resolve() for f in folders]
        self.project = project
        self.user = user
        self.queue = queue
        self.debounce = debounce
        self.max_wait = max(max_wait, debounce)
        self.jobs_started = 0
        self.ignored = 0  # changed files no format claims
        self._pending: dict[str, _Pending] = {}
        self._active: dict[str, tuple[int, os.stat_result, Path]] = {}  # queue mode: path -> (job, stat, target)
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._observer = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        warm_up()
        observer = Observer()
        handler = _Events(self)
        for folder in self.folders:
            observer.schedule(handler, str(folder), recursive=True)
        observer.daemon = True
        observer.start()
        self._observer = observer
        self._thread = threading.Thread(target=self._run, name="watch-runner", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout)
        if self._thread is not None:
            self._thread.join(timeout)

    def catch_up(self) -> list[Job]:
        """Import what the folders hold now (one job per folder): files written while nobody watched."""
        started = []
        for folder in self.folders:
            job, created = services.start_import(self.project, paths=[str(folder)], user=self.user, enqueue=self.queue)
            if created and not self.queue:
                job = jobs.run(job.pk) or job
            started.append(job)
        return started

    # -- events -------------------------------------------------------------------------------

    def touch(self, path: str) -> None:
        now = time.monotonic()
        with self._cond:
            entry = self._pending.get(path)
            if entry is None:
                self._pending[path] = _Pending(now, now)
            else:
                entry.last = now
            self._cond.notify()

    def _ready_at(self, entry: _Pending) -> float:
        return min(entry.last + self.debounce, entry.first + self.max_wait)

    def _take_due(self) -> tuple[list[str], float]:
        """Paths whose burst is over (oldest first), and how long to wait for the next one."""
        now = time.monotonic()
        due, wait = [], 1.0
        for path, entry in sorted(self._pending.items(), key=lambda kv: kv[1].first):
            ready = self._ready_at(entry)
            if ready <= now:
                due.append(path)
            else:
                wait = min(wait, ready - now)
        for path in due:
            del self._pending[path]
        return due, wait

    def _requeue(self, path: str) -> None:
        """Look at ``path`` again shortly (its job is still running)."""
        now = time.monotonic()
        with self._cond:
            entry = self._pending.setdefault(path, _Pending(now, now))
            entry.first = min(entry.first, now - self.max_wait + self.debounce / 2)

    # -- the runner thread --------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._cond:
                due, wait = self._take_due()
                if not due:
                    self._cond.wait(min(wait, 0.5) if self._active else wait)
            try:
                if self._active:
                    self._reap()
                for path in due:
                    if self._stop.is_set():
                        break
                    self._import(path)
            except Exception:  # the next event tries again; the watcher stays up
                log.exception("watch: import failed")
            finally:
                close_old_connections()

    def _import(self, path: str) -> None:
        if path in self._active:  # its job is still queued or running: after it
            self._requeue(path)
            return
        file = Path(path)
        try:
            st = file.stat()
        except OSError:  # deleted since
            return
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return
        if not any(file.resolve().is_relative_to(f) for f in self.folders):
            # A link out of the watched folders (to ~/.ssh, /etc): not followed, as in a folder import.
            log.warning("watch: %s: %s", file, formats.not_followed_reason(file))
            self.ignored += 1
            return
        target = self._target(file)
        if target is None:
            self.ignored += 1
            return
        key = "watch:" + hashlib.sha256(
            f"{self.project.pk}\0{target}\0{file}\0{st.st_size}\0{st.st_mtime_ns}".encode("utf-8", "surrogateescape")
        ).hexdigest()[:48]
        job, created = services.start_import(
            self.project, paths=[str(target)], user=self.user, idempotency_key=key, enqueue=self.queue
        )
        if not created:  # this state of the file was imported (or is being imported) already
            return
        self.jobs_started += 1
        if self.queue:
            self._active[path] = (job.pk, st, target)
            return
        done = jobs.run(job.pk)
        if done is not None and done.status == JobStatus.SUCCEEDED:
            self._mark_live(target, st)
        elif done is not None:
            log.warning("watch: import of %s %s: %s", target, done.status, done.error)

    def _target(self, file: Path) -> Path | None:
        return import_target(file, self.folders)

    def _reap(self) -> None:
        """Queue mode: forget finished jobs (and mark their conversations live)."""
        ids = {job_id: path for path, (job_id, _, _) in self._active.items()}
        for job_id, status in Job.objects.filter(pk__in=list(ids)).values_list("pk", "status"):
            if status in (JobStatus.QUEUED, JobStatus.RUNNING):
                continue
            _, st, target = self._active.pop(ids[job_id])
            if status == JobStatus.SUCCEEDED:
                self._mark_live(target, st)

    def _mark_live(self, file: Path, st: os.stat_result) -> None:
        until = datetime.fromtimestamp(st.st_mtime, tz=UTC) + LIVE_FOR
        if until <= timezone.now():
            return
        rows = list(
            Conversation.objects.filter(project=self.project, source__path=str(file.resolve())).values_list("pk", "parent_id")
        )
        ids = {pk for pk, _ in rows} | {parent for _, parent in rows if parent}
        if ids:
            Conversation.objects.filter(pk__in=ids).filter(Q(live_until__isnull=True) | Q(live_until__lt=until)).update(
                live_until=until
            )
