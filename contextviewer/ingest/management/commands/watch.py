"""python manage.py watch [FOLDER ...] [--project NAME] [--queue] [--catch-up]

Import session files as agents write them: new files and grown files in the folders (searched
recursively) are imported within seconds of the write, one import job per file at a time. With no
FOLDER, CONTEXTVIEWER_WATCH names them (os.pathsep-separated); ``auto`` stands for every format's
default locations that exist (~/.claude/projects, ~/.codex/sessions, ...). `./bin/run` starts this
beside the web server when CONTEXTVIEWER_WATCH is set."""

import os
import signal
import sys
import threading

from django.core.management.base import BaseCommand

from contextviewer.accounts.services import get_or_create_project
from contextviewer.ingest import watch


class Command(BaseCommand):
    # Data commands skip Django's system checks: they load the URL configuration and the API's
    # schemas (0.3 s of every run). The server and `manage.py check` run them.
    requires_system_checks = []
    help = "Watch folders of agent session logs and import new and grown files as they are written."

    def add_arguments(self, parser):
        parser.add_argument("folders", nargs="*", help=f"folders to watch, or 'auto' (default: ${watch.ENV})")
        parser.add_argument("--project", default="Default", help="project name (created if missing)")
        parser.add_argument("--queue", action="store_true", help="hand the import jobs to the running worker")
        parser.add_argument("--catch-up", action="store_true", help="first import what the folders hold now")

    def handle(self, *args, **opts):
        named = opts["folders"] or os.environ.get(watch.ENV, "").split(os.pathsep)
        if not any(v.strip() for v in named):
            self.stderr.write(f"Name the folders to watch, or set {watch.ENV} (folders separated by "
                              f"{os.pathsep!r}, or 'auto' for {', '.join(watch.auto_locations())}).")
            sys.exit(2)
        for folder in watch.missing(named):
            self.stderr.write(f"not watched: {folder} is not a folder")
        folders = watch.folders_from(named)
        if not folders:
            self.stderr.write(f"No folder to watch (auto looks in {', '.join(watch.auto_locations())}).")
            sys.exit(2)
        project = get_or_create_project(opts["project"])
        watcher = watch.Watcher(folders, project, queue=opts["queue"])
        stop = threading.Event()
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        watcher.start()  # events from now on are kept while a catch-up runs
        if opts["catch_up"]:
            watcher.catch_up()
        self.stdout.write(f"watching {len(folders)} folder{'s' if len(folders) != 1 else ''} for project "
                          f"{project.name!r}: {', '.join(map(str, folders))}")
        self.stdout.flush()
        try:
            while not stop.wait(1.0):
                pass
        finally:
            watcher.stop()
