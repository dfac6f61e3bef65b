"""python manage.py serve [--samples] [--host H] [--port P]

The embedded default in one command: migrate, create the admin account on first start (its
password is printed once), start one Celery worker beside the web server, optionally import the
sample sessions as a job. With CONTEXTVIEWER_WATCH set (folders, or `auto`), `manage.py watch` runs
beside them and imports what agents write there as they write it."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from contextviewer.accounts.services import default_project, ensure_admin
from contextviewer.conversations import services, watch, webserver


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
        procs = []
        env = {**os.environ}
        worker = [sys.executable, "-m", "celery", "-A", "contextviewer", "worker", "--loglevel", "WARNING",
                  "--concurrency", os.environ.get("CONTEXTVIEWER_WORKER_CONCURRENCY", "1")]
        procs.append(subprocess.Popen(worker, env=env))
        watched = os.environ.get(watch.ENV, "")
        if watched.strip():
            folders = watch.folders_from(watched)
            if folders:  # the watcher imports what agents write there, as they write it
                procs.append(subprocess.Popen(
                    [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "watch", "--project", project.name],
                    env=env,
                ))
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
        procs.append(subprocess.Popen(web, env=env))
        self.stdout.write(f"contextviewer is running at {url} (Ctrl+C stops it)")

        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        # Supervision: a child that dies (the worker, the web server, the watcher) is started
        # again, sooner or later (_Child.died); only Ctrl+C / SIGTERM stop them all.
        children = [_Child(p) for p in procs]
        gave_up = None
        try:
            while not stopping and gave_up is None:
                for child in children:
                    note = child.check(env)
                    if note:
                        self.stderr.write(self.style.WARNING(f"contextviewer: {note}"))
                    if child.gave_up:
                        gave_up = child
                time.sleep(0.5)
        finally:
            live = [c.proc for c in children if c.proc is not None and c.proc.poll() is None]
            for p in live:
                p.terminate()
            for p in live:
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
        if gave_up is not None and not stopping:
            sys.exit(1)


# A child that ran this long before it died is started again after 1 s; one that dies sooner waits
# twice as long each time in a row (2, 4, 8 ... up to 60 s). A child that has never stayed up since
# serve started (a port in use, a broken setting) and died GIVE_UP_AFTER times in a row stops serve.
HEALTHY_AFTER = 30.0
MAX_DELAY = 60.0
GIVE_UP_AFTER = 5


class _Child:
    def __init__(self, proc: subprocess.Popen):
        self.proc: subprocess.Popen | None = proc
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
                self.proc = subprocess.Popen(self.args, env=env)
            except OSError as exc:  # counted as a death at once: the next try backs off
                self.quick_deaths += 1
                self.restart_at = now + min(MAX_DELAY, 2.0 ** self.quick_deaths)
                return f"{self.name} could not be started ({exc}); trying again later"
            return f"{self.name} started again (pid {self.proc.pid})"
        code = self.proc.poll()
        if code is None:
            return ""
        return self.died(code, now)

    def died(self, code: int, now: float) -> str:
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals() \
            else f"exited with code {code}"
        if now - self.started >= HEALTHY_AFTER:
            self.ever_up, self.quick_deaths = True, 0
        else:
            self.quick_deaths += 1
        self.proc = None
        if not self.ever_up and self.quick_deaths >= GIVE_UP_AFTER:
            self.gave_up = True
            return f"{self.name} {how}; it never stayed up ({self.quick_deaths} tries): stopping everything"
        delay = min(MAX_DELAY, 2.0 ** self.quick_deaths) if self.quick_deaths else 1.0
        self.restart_at = now + delay
        return f"{self.name} {how}; starting it again in {delay:g} s"
