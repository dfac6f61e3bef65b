"""python manage.py build CONVERSATION --turns 3,7-9 --folds 1 [--after-fold N] [--json]

Builds a new conversation from selected turns and folds' summaries of CONVERSATION (its id or its
session's external id): the same job the page and the API start, run in this process."""

import json
import sys

from django.core.management.base import BaseCommand

from contextviewer.conversations import builds, jobs
from contextviewer.conversations.models import JobStatus


class Command(BaseCommand):
    help = "Build a new conversation from selected turns and folds' summaries (the source is not changed)."

    def add_arguments(self, parser):
        parser.add_argument("conversation", help="conversation id or session (external) id")
        parser.add_argument("--turns", default="", help="turn numbers, e.g. 3,7-9")
        parser.add_argument("--folds", default="", help="fold numbers (from 1) whose summaries to include, e.g. 1")
        parser.add_argument(
            "--after-fold", default=None, metavar="N",
            help="fold N's summary plus what followed it, up to the next fold (for the latest fold: the loaded view)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def _fail(self, message: str, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps({"status": "failed", "error": message}))
        self.stderr.write(f"build failed: {message}")
        sys.exit(2)

    def handle(self, *args, **opts):
        conv = builds.find_conversation(opts["conversation"])
        if conv is None:
            self._fail(f"no conversation with id or session id {opts['conversation']!r}", opts["json"])
        try:
            job = builds.start_build(conv, opts["turns"], opts["folds"], after_fold=opts["after_fold"], enqueue=False)
        except builds.BuildError as exc:
            self._fail(str(exc), opts["json"])
        done = jobs.run(job.pk, on_progress=None if opts["json"] else lambda f, t: self.stderr.write(f"{int(f * 100):3d}% {t}"))
        if done is None or done.status != JobStatus.SUCCEEDED:
            self._fail(done.error if done else "the job was taken by another process", opts["json"])
        r = done.result
        if opts["json"]:
            self.stdout.write(json.dumps({"status": done.status, "job_id": done.pk, "result": r}, default=str))
            return
        messages, turns = r["messages"], r["turns"]
        self.stdout.write(
            f"conversation {r['conversation_id']} ({r['external_id']}): {messages} message{'s' if messages != 1 else ''}, "
            f"{turns} turn{'s' if turns != 1 else ''}"
        )
        for note in r["notes"]:
            self.stdout.write(f"  note: {note}")
