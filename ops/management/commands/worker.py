"""python manage.py worker [--concurrency N]

A worker alone, for a machine that runs no web server (docs/deploy.md): the Celery worker that
`serve` starts beside the web server, in the foreground, with this machine's own data folder
(CONTEXTVIEWER_DATA_DIR) and the team's database, broker and upload store. It replaces itself with
Celery (exec), so a service manager's SIGTERM reaches Celery, which lets the running job end."""

import os
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ops.management.commands.serve import root_note, running_as_root, worker_command


class Command(BaseCommand):
    help = "Run one Celery worker in the foreground (workers on other machines: docs/deploy.md)."

    def add_arguments(self, parser):
        parser.add_argument("--concurrency", type=int, default=int(os.environ.get("CONTEXTVIEWER_WORKER_CONCURRENCY", "1") or 1),
                            help="pool processes (CONTEXTVIEWER_WORKER_CONCURRENCY, default 1)")
        parser.add_argument("--loglevel", default="INFO", help="Celery's log level (default INFO: each job taken and done)")

    def handle(self, *args, **opts):
        if opts["concurrency"] < 1:
            raise CommandError("--concurrency: at least 1")
        if settings.IS_SQLITE and settings.UPLOAD_STORE != "files":
            self.stderr.write(self.style.WARNING(
                "This worker uses SQLite: only processes on this machine share that database "
                "(workers on other machines need DATABASE_URL, docs/deploy.md)."))
        note = root_note() if running_as_root() else None
        if note:
            self.stdout.write(note)
        # A node name of its own: several workers on one machine (or one broker) are told apart.
        cmd = [*worker_command(opts["concurrency"], nice_default="0", loglevel=opts["loglevel"]), "--hostname", f"worker{os.getpid()}@%h"]
        sys.stdout.flush()
        sys.stderr.flush()
        os.chdir(settings.BASE_DIR)  # where `-A contextviewer` is found in a clone
        os.execv(cmd[0], cmd)
