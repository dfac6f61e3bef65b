"""python manage.py serve [--samples] [--host H] [--port P]

The embedded default in one command: migrate, create the admin account on first start (its
password is printed once), start one Celery worker beside the web server, optionally import the
sample sessions as a job."""

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
from contextviewer.conversations import services


def samples_dir() -> Path | None:
    if settings.SAMPLES_DIR:
        path = Path(settings.SAMPLES_DIR).expanduser()
        return path if path.exists() else None
    path = Path(settings.FIXTURES_DIR) / "claude-code"
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
        if opts["samples"]:
            path = samples_dir()
            if path is None:
                self.stdout.write(self.style.WARNING(
                    "No sample sessions: neither CONTEXTVIEWER_SAMPLES nor "
                    f"{Path(settings.FIXTURES_DIR) / 'claude-code'} exists. Nothing imported."
                ))
            else:
                job, _ = services.start_import(project, paths=[str(path)], user=user)
                self.stdout.write(f"Importing sample sessions from {path}: {url}jobs/{job.pk}/")
        web = [sys.executable, "-m", "gunicorn", "contextviewer.wsgi", "--bind", f"{opts['host']}:{opts['port']}",
               "--workers", str(opts["workers"]), "--timeout", "600", "--access-logfile", "-"]
        procs.append(subprocess.Popen(web, env=env))
        self.stdout.write(f"contextviewer is running at {url} (Ctrl+C stops it)")

        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping and all(p.poll() is None for p in procs):
                time.sleep(0.5)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
        failed = [p for p in procs if p.returncode not in (0, -signal.SIGTERM, None)]
        if failed and not stopping:
            sys.exit(1)
