"""python manage.py serve [--samples] [--host H] [--port P] [--web-only]

The embedded default in one command: migrate, create the admin account on first start (its
password is printed once), start one Celery worker beside the web server, optionally import the
sample sessions as a job. With CONTEXTVIEWER_WATCH set (folders, or `auto`), `manage.py watch` runs
beside them and imports what agents write there as they write it.

`--web-only`: no worker beside the web server; workers run on other machines (`manage.py worker`,
docs/deploy.md)."""

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from contextviewer.accounts.services import default_project, ensure_admin
from contextviewer.ingest import imports as services, watch
from ops import webserver


def samples_dir() -> Path | None:
    if settings.SAMPLES_DIR:
        path = Path(settings.SAMPLES_DIR).expanduser()
        return path if path.exists() else None
    path = Path(settings.FIXTURES_DIR)  # every format's sample sessions
    return path if path.is_dir() else None


class Command(BaseCommand):
    help = "Run contextviewer: web server + one Celery worker (embedded default: SQLite + filesystem broker)."

    def add_arguments(self, parser):
        parser.add_argument("--samples", action="store_true", help="import the sample sessions")
        parser.add_argument("--host", default=os.environ.get("CONTEXTVIEWER_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("CONTEXTVIEWER_PORT", "8000")))
        parser.add_argument("--workers", type=int, default=int(os.environ.get("CONTEXTVIEWER_WEB_WORKERS", "2")))
        parser.add_argument("--web-only", action="store_true",
                            help="no Celery worker here: workers run elsewhere (`manage.py worker`, docs/deploy.md)")

    def handle(self, *args, **opts):
        call_command("migrate", interactive=False, verbosity=0)
        user, password = ensure_admin()
        project = default_project(owner=user)
        url = f"http://{opts['host']}:{opts['port']}/"
        if password:
            self.stdout.write(self.style.SUCCESS(
                f"Created the admin account. Log in at {url} as 'admin' with password: {password}\n"
                "(shown once; change it in the admin, or run `python manage.py changepassword admin`)"
            ))
        note = root_note() if running_as_root() and not opts.get("web_only", False) else None
        if note:  # the worker leaves out Celery's superuser warning: why it may, said once
            self.stdout.write(note)
        env = {**os.environ}
        limits = {"give_up_after": int(os.environ.get("CONTEXTVIEWER_SERVE_GIVE_UP_AFTER", GIVE_UP_AFTER)),
                  "max_delay": float(os.environ.get("CONTEXTVIEWER_SERVE_MAX_DELAY", MAX_DELAY))}
        grace = float(os.environ.get("CONTEXTVIEWER_SERVE_STOP_GRACE", STOP_GRACE))
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        # Ctrl+C, SIGTERM, and SIGHUP (the terminal serve runs in was closed) all stop everything.
        previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
        children: list[_Child] = []
        gave_up = None
        try:
            if not opts.get("web_only", False):
                children.append(_Child(spawn(worker_command(), env), **limits))
            watched = os.environ.get(watch.ENV, "")
            if watched.strip():
                folders = watch.folders_from(watched)
                if folders:  # the watcher imports what agents write there, as they write it
                    manage = [sys.executable, "-m", "contextviewer"]  # manage.py, also in an installed copy (no clone)
                    children.append(_Child(spawn([*manage, "watch", "--project", project.name], env), **limits))
                else:
                    self.stdout.write(self.style.WARNING(
                        f"{watch.ENV}={watched!r}: no such folder (auto looks in {', '.join(watch.auto_locations())}). "
                        "Nothing watched."
                    ))
            if opts["samples"]:
                path = samples_dir()
                if path is None:
                    self.stdout.write(self.style.WARNING(
                        "No sample sessions: neither CONTEXTVIEWER_SAMPLES nor "
                        f"{Path(settings.FIXTURES_DIR)} exists. Nothing imported."
                    ))
                else:
                    job, _ = services.start_import(project, paths=[str(path)], user=user)
                    self.stdout.write(f"Importing sample sessions from {path}: {url}jobs/{job.pk}/")
            # gunicorn's gthread workers: threads in each process (webserver.py says why; bench load measures it).
            web = webserver.gunicorn_command(opts["host"], opts["port"], opts["workers"])
            children.append(_Child(spawn(web, env), **limits))
            self.stdout.write(f"contextviewer is running at {url} (Ctrl+C stops it)")
            # Supervision: a child that dies (the worker, the web server, the watcher) is started
            # again, sooner or later (_Child.died); only Ctrl+C / SIGTERM / SIGHUP stop them all.
            while not stopping and gave_up is None:
                for child in children:
                    note = child.check(env)
                    if note:
                        self.stderr.write(self.style.WARNING(f"contextviewer: {note}"))
                    if child.gave_up:
                        gave_up = child
                time.sleep(0.5)
        finally:
            # However serve ends (it gave up, a signal, an exception): every child, and whatever each
            # started, is stopped and its exit collected before serve exits.
            stop_all([c.proc for c in children if c.proc is not None], grace)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if gave_up is not None and not stopping:
            sys.exit(1)


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def root_note() -> str | None:
    """Why the worker may run as root, where it may (contextviewer/celery.py leaves Celery's
    warning out then)."""
    from contextviewer import celery  # lazy: Celery loads with the worker; serve loads it only when it runs as root

    return celery.root_note()


def worker_command(concurrency: int | None = None, nice_default: str = "10", loglevel: str = "WARNING") -> list[str]:
    """The Celery worker, at a lower CPU priority than the web server (CONTEXTVIEWER_WORKER_NICE,
    default 10): an import running beside readers takes what the pages leave (issue 23: a reader's
    p95 went from 1.3 s to 2.1 s while an import ran at the web server's priority). `manage.py
    worker` runs the same command on a machine of its own (there at the default priority)."""
    concurrency = concurrency or int(os.environ.get("CONTEXTVIEWER_WORKER_CONCURRENCY", "1") or 1)
    celery = [sys.executable, "-m", "celery", "-A", "contextviewer", "worker", "--loglevel", loglevel,
              "--concurrency", str(concurrency)]
    niceness = int(os.environ.get("CONTEXTVIEWER_WORKER_NICE", nice_default) or 0)
    nice = shutil.which("nice")
    return [nice, "-n", str(niceness), *celery] if niceness and nice else celery


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# On stopping, each child gets SIGTERM and this long (CONTEXTVIEWER_SERVE_STOP_GRACE) to end with
# everything it started (gunicorn's workers, Celery's pool process); what is left then is SIGKILLed.
STOP_GRACE = 10.0

_PR_SET_PDEATHSIG = 1
try:  # loaded here, in serve: the child only makes the call, between fork and exec
    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):
    _prctl = None


def _die_with_serve() -> None:
    """In the child, before exec: SIGTERM when serve dies, even by SIGKILL (Linux)."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


def spawn(args: list[str], env: dict) -> subprocess.Popen:
    """A child in a process group of its own (its id is the child's pid): whatever it starts
    (gunicorn's workers, Celery's pool process) is in that group too, and is stopped with it.
    Serve, not the terminal, stops it: Ctrl+C reaches serve alone, which stops its children in
    order (a signal sent to the terminal's group would reach Celery's pool process as well)."""
    return subprocess.Popen(args, env=env, start_new_session=True, preexec_fn=_die_with_serve)


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _in_groups(groups: set[int]) -> list[psutil.Process]:
    """The processes (not zombies) whose process group is one of these."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) in groups and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (OSError, psutil.Error):  # gone meanwhile
            pass
    return found


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop_all(procs: list[subprocess.Popen], grace: float = STOP_GRACE) -> None:
    """SIGTERM to each child (gunicorn and Celery then stop their own workers, letting a running
    request or task end), `grace` seconds for each child and everything it started to end, then
    SIGKILL to what is left: each child's process group, and any process it started that left it.
    Returns when every child has ended and been waited for."""
    groups = {p.pid for p in procs}  # spawn(): each child leads its own group (also one that just ended)
    procs = [p for p in procs if p.poll() is None]
    family: list[psutil.Process] = []  # also found once their parent is gone
    for p in procs:
        try:
            family.extend(psutil.Process(p.pid).children(recursive=True))
        except psutil.Error:
            pass
    for p in procs:
        try:
            p.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while True:
        ended = all(p.poll() is not None for p in procs)
        left = [q for q in family if _running(q)] + _in_groups(groups)
        if ended and not left:
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    for pgid in groups:
        _kill_group(pgid)
    for q in left:
        try:
            q.kill()
        except psutil.Error:
            pass
    # SIGKILL is not instant: wait (briefly) until they are gone, and collect the children's exits.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        ended = all(p.poll() is not None for p in procs)
        if ended and not [q for q in left if _running(q)] and not _in_groups(groups):
            break
        time.sleep(0.05)


# A child that ran this long before it died is started again after 1 s; one that dies sooner waits
# twice as long each time in a row (2, 4, 8 ... up to 60 s, CONTEXTVIEWER_SERVE_MAX_DELAY). A child
# that has never stayed up since serve started (a port in use, a broken setting) and died
# GIVE_UP_AFTER times in a row (CONTEXTVIEWER_SERVE_GIVE_UP_AFTER) stops serve.
HEALTHY_AFTER = 30.0
MAX_DELAY = 60.0
GIVE_UP_AFTER = 5


class _Child:
    def __init__(self, proc: subprocess.Popen, give_up_after: int = GIVE_UP_AFTER, max_delay: float = MAX_DELAY):
        self.proc: subprocess.Popen | None = proc
        self.give_up_after, self.max_delay = give_up_after, max_delay
        self.args = proc.args
        self.started = time.monotonic()
        self.restart_at = 0.0
        self.quick_deaths = 0
        self.ever_up = False
        self.gave_up = False
        text = " ".join(map(str, self.args))
        self.name = ("the worker" if "celery" in text else "the web server" if "gunicorn" in text or "uvicorn" in text
                     else "the watcher" if "watch" in text else "a child process")

    def check(self, env: dict) -> str:
        """Start it again when its time has come; note a death. Returns what to tell the user."""
        now = time.monotonic()
        if self.proc is None:
            if now < self.restart_at:
                return ""
            self.started = now
            try:
                self.proc = spawn(self.args, env)
            except OSError as exc:  # counted as a death at once: the next try backs off
                self.quick_deaths += 1
                self.restart_at = now + min(self.max_delay, 2.0 ** self.quick_deaths)
                return f"{self.name} could not be started ({exc}); trying again later"
            return f"{self.name} started again (pid {self.proc.pid})"
        code = self.proc.poll()
        if code is None:
            return ""
        # What it started and left behind (a gunicorn worker still holding the port) goes with it.
        _kill_group(self.proc.pid)
        return self.died(code, now)

    def died(self, code: int, now: float) -> str:
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals() \
            else f"exited with code {code}"
        if now - self.started >= HEALTHY_AFTER:
            self.ever_up, self.quick_deaths = True, 0
        else:
            self.quick_deaths += 1
        self.proc = None
        if not self.ever_up and self.quick_deaths >= self.give_up_after:
            self.gave_up = True
            return f"{self.name} {how}; it never stayed up ({self.quick_deaths} tries): stopping everything"
        delay = min(self.max_delay, 2.0 ** self.quick_deaths if self.quick_deaths else 1.0)
        self.restart_at = now + delay
        return f"{self.name} {how}; starting it again in {delay:g} s"
