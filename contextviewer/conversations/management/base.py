"""What the conversation commands share: CONVERSATION (an id or a session's external id) found or
a clear failure, failures on stderr headed by the command's name (and as one JSON object with
--json), and a job run in this process."""

import json
import sys
from typing import NoReturn

from django.core.management.base import BaseCommand

from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation
from contextviewer.jobs.models import Job, JobStatus


class ConversationCommand(BaseCommand):
    # Data commands skip Django's system checks: they load the URL configuration and the API's
    # schemas (0.3 s of every run). The server and `manage.py check` run them.
    requires_system_checks = []
    command_name = ""  # heads its failures: "<command_name> failed: ..."

    def fail(self, message: str, *, as_json: bool = False, code: int = 2) -> NoReturn:
        if as_json:
            self.stdout.write(json.dumps({"status": "failed", "error": message}))
        self.stderr.write(f"{self.command_name} failed: {message}")
        sys.exit(code)

    def conversation(self, ref: str, *, as_json: bool = False) -> Conversation:
        """The conversation `ref` names (the newest, when a session was imported into several projects)."""
        conv = Conversation.objects.by_reference(ref).order_by("-pk").first()
        if conv is None:
            self.fail(f"no conversation with id or session id {ref!r}", as_json=as_json)
        return conv

    def only_conversation(self, ref: str, *, verb: str) -> Conversation:
        """The one conversation `ref` names; a session in several projects fails, listing them (to `verb` one by id)."""
        matches = list(Conversation.objects.by_reference(ref).select_related("project").order_by("pk"))
        if not matches:
            self.fail(f"no conversation with id or session id {ref!r}")
        if len(matches) > 1:
            listed = "; ".join(f"{c.pk} in {c.project.name} ({c.agent})" for c in matches)
            self.fail(f"{ref!r} names {len(matches)} conversations ({listed}): give the id of the one to {verb}")
        return matches[0]

    def run_job(self, job: Job, *, as_json: bool) -> Job:
        """Run `job` here, progress on stderr (not with --json); it succeeded, or the command fails with its error."""
        done = jobs.run(job.pk, on_progress=None if as_json else lambda f, t: self.stderr.write(f"{int(f * 100):3d}% {t}"))
        if done is None or done.status != JobStatus.SUCCEEDED:
            self.fail(done.error if done else "the job was taken by another process", as_json=as_json)
        return done

    def write_job_json(self, done: Job) -> None:
        """With --json: the finished job as one JSON object (status, job id, result)."""
        self.stdout.write(json.dumps({"status": done.status, "job_id": done.pk, "result": done.result}, default=str))
