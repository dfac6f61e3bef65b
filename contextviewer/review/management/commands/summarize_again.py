"""python manage.py summarize_again CONVERSATION --fold N [--provider NAME] [--json]

Writes another summary of fold N (numbered from 1 as on the conversation page and in builds) of
CONVERSATION (its id or its session's external id) with the chosen provider (builtin, or one
configured for the project; default: the project's), and stores it beside the original: the
same job the page and the API start, run in this process. Pairwise review then compares them."""

import json
import sys

from django.core.management.base import BaseCommand

from contextviewer.conversations import builds, jobs, window as windows
from contextviewer.conversations.models import JobStatus
from contextviewer.providers.base import ProviderError
from contextviewer.review import alternatives


class Command(BaseCommand):
    help = "Summarize a fold again with another provider: a second summary of the same segment, for pairwise review."

    def add_arguments(self, parser):
        parser.add_argument("conversation", help="conversation id or session (external) id")
        parser.add_argument("--fold", required=True, help="fold number, from 1, as on the conversation page")
        parser.add_argument("--provider", default="", help="builtin, openai, anthropic (default: the project's)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def _fail(self, message: str, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps({"status": "failed", "error": message}))
        self.stderr.write(f"summarize_again failed: {message}")
        sys.exit(2)

    def handle(self, *args, **opts):
        conv = builds.find_conversation(opts["conversation"])
        if conv is None:
            self._fail(f"no conversation with id or session id {opts['conversation']!r}", opts["json"])
        folds = windows.segment_folds(conv)
        raw = str(opts["fold"]).strip()
        if not raw.isdigit() or not 1 <= int(raw) <= len(folds):
            known = f"folds 1–{len(folds)}" if folds else "no folds"
            self._fail(f"no fold {raw!r} in this conversation (it has {known})", opts["json"])
        fold = folds[int(raw) - 1]
        try:
            job = alternatives.start(fold, provider=opts["provider"] or None, enqueue=False)
        except ProviderError as exc:
            self._fail(str(exc), opts["json"])
        done = jobs.run(job.pk, on_progress=None if opts["json"] else lambda f, t: self.stderr.write(f"{int(f * 100):3d}% {t}"))
        if done is None or done.status != JobStatus.SUCCEEDED:
            self._fail(done.error if done else "the job was taken by another process", opts["json"])
        r = done.result
        if opts["json"]:
            self.stdout.write(json.dumps({"status": done.status, "job_id": done.pk, "result": r}, default=str))
            return
        self.stdout.write(f"fold {raw} summarized again as fold {r['fold_id']} ({r['origin']}), beside fold {r['original_fold_id']}")
