"""Every import ends with one title job for its new conversations; titles carry no harness tags."""

import pytest

from contextviewer.jobs import queue as jobs
from contextviewer.ingest import imports as services
from contextviewer.conversations.models import Conversation
from contextviewer.jobs.models import Job
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db


def _import(project, path):
    job, _ = services.start_import(project, paths=[str(path)], enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == "succeeded", done.error
    return done


def test_an_import_starts_title_jobs_that_name_the_conversation_without_tags(project, tmp_path):
    builder = SessionBuilder()
    path = tmp_path / "s.jsonl"
    command = (
        "<command-message>model is running…</command-message>\n<command-name>/model</command-name>\n"
        "<command-args>opus</command-args>"
    )
    request = (
        "<system-reminder>Use the TodoWrite tool</system-reminder>"
        "Please migrate the billing module to Stripe version three and keep every old webhook working for a month"
    )
    write_lines(path, [builder.user(command), builder.user(request)] + session_lines(1, builder))
    _import(project, path)
    conv = Conversation.objects.get(parent__isnull=True)
    assert "<" not in conv.title  # ingest's own first-prompt title is clean already
    title_jobs = list(Job.objects.filter(kind="title"))
    assert [j.params["conversation_ids"] for j in title_jobs] == [[conv.pk]]
    done = jobs.run(title_jobs[0].pk)  # the builtin provider: no provider is configured
    assert done.status == "succeeded", done.error
    conv.refresh_from_db()
    assert conv.title.startswith("Please migrate the billing module to Stripe")
    assert conv.title.endswith("…") and len(conv.title) <= 80
    assert "system-reminder" not in conv.title and "/model" not in conv.title
    assert request.split("Please")[1].startswith(conv.title[len("Please"):-1])  # cut after a whole word

    # importing the same file again finds the same title job: once per set of conversations
    _import(project, path)
    assert Job.objects.filter(kind="title").count() == 1


def test_a_logs_own_title_is_kept(project, tmp_path):
    builder = SessionBuilder()
    path = tmp_path / "s.jsonl"
    lines = session_lines(1, builder)
    lines.append('{"type": "summary", "summary": "Billing migration plan", "leafUuid": "x"}')
    write_lines(path, lines)
    _import(project, path)
    conv = Conversation.objects.get(parent__isnull=True)
    (job,) = Job.objects.filter(kind="title")
    jobs.run(job.pk)
    conv.refresh_from_db()
    assert conv.title == "Billing migration plan"
