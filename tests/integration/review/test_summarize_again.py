"""Summarize a fold again: another summary of the same segment beside the original, through the
command, the API (a real worker and a provider over HTTP), the conversation page and the review page."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from contextviewer.builds import handoffs as handoff
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations import segments
from contextviewer.conversations.models import Conversation, Fold
from contextviewer.jobs.models import Job, JobStatus
from contextviewer.providers import services as provider_services
from contextviewer.review import alternatives, probes
from tests.fake_providers import FakeProvider
from tests.integration.builds.test_builds_after_fold import SUMMARY, compaction
from tests.sessions import SessionBuilder, session_lines, write_lines
from tests.worker import wait_for


def _import(project, tmp_path) -> Conversation:
    b = SessionBuilder()
    lines = session_lines(3, b) + compaction(b)
    lines += [*b.assistant("Continuing: running the full suite", tool=("Bash", {"command": "pytest -q"})),
              b.tool_result("12 passed"), *b.assistant("All green after the compaction.")]
    write_lines(tmp_path / "s.jsonl", lines)
    report = ingest.import_path(project, tmp_path / "s.jsonl")
    return Conversation.objects.get(pk=report.conversation_ids[0])


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


@pytest.mark.django_db
def test_the_command_stores_a_second_summary_and_the_original_stays_in_play(project, user, tmp_path):
    conv = _import(project, tmp_path)
    original = segments.segment_folds(conv)[0]
    loaded_before = handoff.loaded_input(conv).positions

    out = StringIO()
    call_command("summarize_again", conv.external_id, fold="1", provider="builtin", json=True, stdout=out)
    answer = json.loads(out.getvalue())
    assert answer["status"] == "succeeded", answer
    alt = Fold.objects.get(pk=answer["result"]["fold_id"])
    assert answer["result"]["original_fold_id"] == original.pk
    assert alt.position == original.position and alt.kind == "alternative"
    assert alt.summary_text and alt.summary_text != SUMMARY
    # The builtin summarizer read the segment the fold put away, nothing after it.
    assert "src/app_2.py" in alt.summary_text and "All green" not in alt.summary_text
    assert alternatives.origin_label(alt) == "summarized again · builtin summarizer"
    assert alternatives.origin_label(original) == "recorded compaction (claude-code)"
    # The original is untouched and still the one in play: page, loaded view, builds.
    assert Fold.objects.get(pk=original.pk).summary_text == SUMMARY
    assert [f.pk for f in segments.segment_folds(conv)] == [original.pk]
    assert handoff.loaded_input(conv).positions == loaded_before
    # Review probes it on the original's segment, and the two can be compared.
    assert probes.compute_probe(alt).segment_start == probes.compute_probe(original).segment_start
    assert [f.pk for f in alternatives.summaries(alt)] == [original.pk, alt.pk]
    page = _client(user).get(f"/review/folds/{original.pk}/pairwise/{alt.pk}/")
    assert page.status_code == 200 and "src/app_2.py" in page.content.decode()

    err = StringIO()
    with pytest.raises(SystemExit):
        call_command("summarize_again", str(conv.pk), fold="4", stderr=err, stdout=StringIO())
    assert "no fold '4' in this conversation (it has folds 1–1)" in err.getvalue()
    with pytest.raises(SystemExit):
        call_command("summarize_again", str(conv.pk), fold="1", provider="nosuch", stderr=err, stdout=StringIO())
    assert "nosuch" in err.getvalue()


@pytest.mark.django_db
def test_a_job_run_twice_stores_one_summary(project, tmp_path):
    conv = _import(project, tmp_path)
    job = alternatives.start(segments.segment_folds(conv)[0], provider="builtin", enqueue=False)
    first = jobs.run(job.pk)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.QUEUED)  # died before saying it was done
    second = jobs.run(job.pk)
    assert first.result["fold_id"] == second.result["fold_id"]
    assert Fold.objects.filter(conversation=conv, kind="alternative").count() == 1


@pytest.mark.django_db
def test_the_conversation_page_offers_it_and_lists_the_summaries_with_their_origin(project, user, tmp_path):
    conv = _import(project, tmp_path)
    original = segments.segment_folds(conv)[0]
    client = _client(user)
    page = client.get(f"/c/{conv.pk}/").content.decode()
    assert f'action="/review/folds/{original.pk}/again/"' in page and "Summarize this fold again" in page
    r = client.post(f"/review/folds/{original.pk}/again/", {"provider": "builtin"})
    assert r.status_code == 302 and "/jobs/" in r["Location"]
    job = Job.objects.get(kind="summarize_again")
    assert jobs.run(job.pk).status == JobStatus.SUCCEEDED
    alt = Fold.objects.get(kind="alternative")
    page = client.get(f"/c/{conv.pk}/").content.decode()
    assert "2 summaries of this segment" in page and "summarized again · builtin summarizer" in page
    assert f"/review/folds/{original.pk}/pairwise/{alt.pk}/" in page
    # An unknown provider is explained, and nothing runs.
    r = client.post(f"/review/folds/{original.pk}/again/", {"provider": "nosuch", "next": f"/c/{conv.pk}/"}, follow=True)
    assert "Cannot summarize this fold again" in r.content.decode()
    assert Job.objects.filter(kind="summarize_again").count() == 1


@pytest.mark.worker
def test_the_api_with_a_configured_provider_runs_on_a_real_worker(project, user, tmp_path, worker):
    conv = _import(project, tmp_path)
    original = segments.segment_folds(conv)[0]
    with FakeProvider() as server:
        provider_services.save_config(project, "openai", base_url=server.url("openai"), model="m", api_key="sk-x",
                                      make_default=False, allow_private_network=True, may_allow_private=True)
        client = _client(user)
        r = client.post(f"/api/review/folds/{original.pk}/summarize-again", {"provider": "openai"}, content_type="application/json")
        assert r.status_code == 202, r.content
        done = wait_for(lambda: Job.objects.filter(pk=r.json()["id"], status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
                        timeout=120, message="the summarize-again job")
        assert done.status == JobStatus.SUCCEEDED, done.error
        prompt = json.dumps(server.requests[-1])
    assert "Step 2" in prompt and "All green after the compaction" not in prompt  # what the fold put away
    alt = Fold.objects.get(pk=done.result["fold_id"])
    assert "answered by the fake openai server" in alt.summary_text
    listed = client.get(f"/api/review/folds/{original.pk}/summaries").json()
    assert [s["origin"] for s in listed] == ["recorded compaction (claude-code)", "summarized again · openai m"]
    bad = client.post(f"/api/review/folds/{original.pk}/summarize-again", {"provider": "anthropic"}, content_type="application/json")
    assert bad.status_code == 400 and "anthropic" in bad.json()["detail"]
