"""Issue 22, item 1: a finished job's page shows what it made and how long it took, with links on:
a handoff shows its fold (summary rendered, tokens, the fact probe) and links to the conversation at
the fold and to the fold's review; a build links to the built conversation and its source."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from contextviewer.builds import handoffs as handoff, services as builds
from contextviewer.conversations.models import Conversation, Fold
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import JobStatus
from tests.factories import build_conversation
from tests.sessions import session_lines, write_lines

pytestmark = pytest.mark.django_db


def _page(client, job) -> str:
    page = client.get(reverse("job_detail", args=[job.pk]))
    assert page.status_code == 200
    return page.content.decode()


def test_a_handoff_job_page_shows_the_fold_it_made(client, user, project):
    conv = build_conversation(project, turns=10, fold_at=10**9, subagent_turn=None).conversation
    job, _ = handoff.start_handoff(conv, enqueue=False)
    client.force_login(user)
    assert "The fold it made" not in _page(client, job)  # nothing made yet
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    fold = Fold.objects.get(conversation=conv, key=job.idempotency_key)

    html = _page(client, done)
    assert re.search(r'class="job-duration">took \d+(\.\d)? s<', html)
    assert "The fold it made" in html
    summary = html.split('class="job-summary md"', 1)[1].split("</div>", 1)[0]
    assert "<h" in summary and "## " not in summary  # the summary's Markdown rendered, not shown raw
    assert f"{fold.tokens_before:,}" in html
    assert f'href="/c/{conv.pk}/?folded={fold.pk}"' in html
    assert f'href="{reverse("review_fold", args=[fold.pk])}"' in html
    assert "Fact probe" in html


def test_a_build_job_page_links_to_the_built_conversation_and_its_source(client, user, project, tmp_path):
    write_lines(tmp_path / "s.jsonl", session_lines(4))
    ingest.import_path(project, tmp_path / "s.jsonl")
    source = Conversation.objects.get(project=project, parent=None)
    job = builds.start_build(source, "1-2", "", user=user, idempotency_key="outcome")
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    client.force_login(user)
    html = _page(client, done)
    built = done.result["conversation_id"]
    assert "The built conversation" in html and "took " in html
    assert f'href="/c/{built}/"' in html and f'href="/c/{source.pk}/"' in html
    assert "Back to the source conversation" in html
    # And the table of what it stored, as an import's page lists it (the browser flow opens it).
    table = html.split('<table class="import-result">', 1)[1].split("</table>", 1)[0]
    assert f'href="/c/{built}/"' in table


def test_a_made_thing_that_is_gone_is_said_plainly(client, user, project):
    conv = build_conversation(project, turns=6, fold_at=10**9, subagent_turn=None).conversation
    job, _ = handoff.start_handoff(conv, enqueue=False)
    done = jobs.run(job.pk)
    conv.delete()
    client.force_login(user)
    assert "no longer exists" in _page(client, done)
