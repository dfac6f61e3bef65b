"""Issue 21: an import queues one title job (not one per conversation), which titles every new
conversation reporting "n of N"; the provider is asked at most CONTEXTVIEWER_TITLE_CALL_BUDGET
times, and the conversations past that keep the builtin (offline) title, as the result says."""

from __future__ import annotations

import pytest
from django.test import override_settings

from contextviewer.conversations.models import Conversation
from contextviewer.ingest import imports as services
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import Job, JobStatus
from contextviewer.providers import services as providers
from contextviewer.providers.models import ProviderCall
from tests.fake_providers import FakeProvider
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db

SESSIONS = 30


def _folder(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    for n in range(SESSIONS):
        session_id = f"11111111-2222-4333-8444-{n:012d}"
        builder = SessionBuilder(session_id=session_id)
        request = f"Please move billing module number {n} to Stripe version three and keep the old webhooks working"
        write_lines(folder / f"{session_id}.jsonl", [builder.user(request)] + session_lines(1, builder))
    return folder


def _import(project, folder):
    job, _ = services.start_import(project, paths=[str(folder)], enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    return done


def _offline(n: int) -> str:
    return f"Please move billing module number {n} to Stripe version three and keep the old…"


def test_an_import_of_a_folder_queues_one_title_job_that_titles_every_conversation(project, user, client, tmp_path):
    folder = _folder(tmp_path)
    _import(project, folder)
    assert Conversation.objects.filter(parent__isnull=True).count() == SESSIONS
    (job,) = Job.objects.filter(kind="title")
    assert len(job.params["conversation_ids"]) == SESSIONS
    seen = []
    done = jobs.run(job.pk, on_progress=lambda fraction, text: seen.append(text))
    assert "conversations" not in done.result  # the job page lists an import's conversations by that key
    assert done.status == JobStatus.SUCCEEDED, done.error
    assert "1 of 30" in seen and "30 of 30" in seen
    assert done.result["total"] == SESSIONS and done.result["titled"] == SESSIONS
    for conv in Conversation.objects.filter(parent__isnull=True):
        n = int(conv.external_id.rsplit("-", 1)[1])
        assert conv.title == _offline(n), conv.title
    # Its page says what it did, and links the conversations it titled.
    client.force_login(user)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"Title job {job.pk}</h1>" in page and "The titles</h2>" in page
    assert f"<dt>Titled</dt><dd>{SESSIONS}</dd>" in page and "<dt>Provider</dt><dd>builtin (offline, no call)</dd>" in page
    first = Conversation.objects.filter(parent__isnull=True).order_by("pk").first()
    assert f'href="/c/{first.pk}/"' in page

    # The same folder again: no second title job.
    _import(project, folder)
    assert Job.objects.filter(kind="title").count() == 1


@override_settings(TITLE_CALL_BUDGET=5)
def test_the_provider_is_asked_at_most_the_budget_and_the_rest_keep_the_offline_title(
    project, user, client, tmp_path, monkeypatch
):
    monkeypatch.setenv("CONTEXTVIEWER_PROVIDER_BACKOFF", "0.01")
    folder = _folder(tmp_path)
    _import(project, folder)
    (job,) = Job.objects.filter(kind="title")
    with FakeProvider() as server:
        providers.save_config(
            project, "openai", base_url=server.url("openai"), model="test-model", api_key="sk-test-0123456789abcdef",
            make_default=True, allow_private_network=True, may_allow_private=True,
        )
        done = jobs.run(job.pk)
        asked = server.count()
    assert done.status == JobStatus.SUCCEEDED, done.error
    assert asked == 5
    assert ProviderCall.objects.filter(job=job).count() == 5
    titles = dict(Conversation.objects.filter(parent__isnull=True).values_list("pk", "title"))
    from_provider = [pk for pk, title in titles.items() if title == "Stripe billing migration"]
    assert len(from_provider) == 5
    assert len(done.result["past_budget"]) == SESSIONS - 5
    for pk in done.result["past_budget"]:
        conv = Conversation.objects.get(pk=pk)
        assert conv.title == _offline(int(conv.external_id.rsplit("-", 1)[1]))
    assert "25 conversations keep the builtin title" in done.result["note"]
    assert "CONTEXTVIEWER_TITLE_CALL_BUDGET is 5" in done.result["note"]

    # The job's page says so.
    client.force_login(user)
    page = client.get(f"/jobs/{job.pk}/")
    assert page.status_code == 200
    assert "25 conversations keep the builtin title" in page.content.decode()


def test_a_provider_that_fails_is_not_asked_again_and_every_conversation_keeps_the_offline_title(
    project, tmp_path, monkeypatch
):
    monkeypatch.setenv("CONTEXTVIEWER_PROVIDER_BACKOFF", "0.01")
    folder = _folder(tmp_path)
    _import(project, folder)
    (job,) = Job.objects.filter(kind="title")
    with FakeProvider(then="500") as server:
        providers.save_config(
            project, "openai", base_url=server.url("openai"), model="test-model", api_key="sk-test-0123456789abcdef",
            make_default=True, allow_private_network=True, may_allow_private=True,
        )
        done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    # One conversation's retries, then no more asking.
    assert ProviderCall.objects.filter(job=job).count() == providers.MAX_ATTEMPTS_PER_JOB
    for conv in Conversation.objects.filter(parent__isnull=True):
        assert conv.title == _offline(int(conv.external_id.rsplit("-", 1)[1]))
    assert done.result["note"].startswith("openai failed (")
    assert done.result["note"].endswith("so it was not asked again; 30 conversations keep the builtin title")
