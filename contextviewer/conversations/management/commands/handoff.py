"""python manage.py handoff CONVERSATION [--provider NAME] [--json]

Folds the loaded view of a conversation (its id or its session's external id) into a handoff
summary: the same job the page and the API start, run in this process."""

import json
import sys

from django.core.management.base import BaseCommand

from contextviewer.conversations import handoff, jobs
from contextviewer.conversations.models import Conversation, JobStatus
from contextviewer.providers.base import ProviderError


def find_conversation(ref: str) -> Conversation | None:
    """By id, else by external id (the newest, when several projects hold the same session)."""
    ref = (ref or "").strip()
    if ref.isdigit():
        conv = Conversation.objects.filter(pk=int(ref)).first()
        if conv is not None:
            return conv
    return Conversation.objects.filter(external_id=ref).order_by("-pk").first()


class Command(BaseCommand):
    help = "Fold a conversation's loaded view into a handoff summary (a new fold at its end)."

    def add_arguments(self, parser):
        parser.add_argument("conversation", help="conversation id or session (external) id")
        parser.add_argument("--provider", default="", help="builtin, openai or anthropic (default: the project's)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def _fail(self, message: str, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps({"status": "failed", "error": message}))
        self.stderr.write(f"handoff failed: {message}")
        sys.exit(2)

    def handle(self, *args, **opts):
        conv = find_conversation(opts["conversation"])
        if conv is None:
            self._fail(f"no conversation with id or session id {opts['conversation']!r}", opts["json"])
        try:
            job, _ = handoff.start_handoff(conv, provider=opts["provider"] or None, enqueue=False)
        except ProviderError as exc:
            self._fail(str(exc), opts["json"])
        done = jobs.run(job.pk, on_progress=None if opts["json"] else lambda f, t: self.stderr.write(f"{int(f * 100):3d}% {t}"))
        if done is None or done.status != JobStatus.SUCCEEDED:
            self._fail(done.error if done else "the job was taken by another process", opts["json"])
        if opts["json"]:
            self.stdout.write(json.dumps({"status": done.status, "job_id": done.pk, "result": done.result}, default=str))
        else:
            r = done.result
            self.stdout.write(r["summary"])
            self.stderr.write(
                f"fold {r['fold_id']} at position {r['position']}: {r['tokens_before']} -> {r['tokens_after']} tokens ({r['provider']})"
            )
