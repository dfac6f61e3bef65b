"""Pairwise review reachable: a queue of pairs of summaries of the same fold (the original and one
written again), and blind queues that hide origin and retention until the reviewer's score is in."""

import pytest
from django.test import Client

from contextviewer.jobs import queue as jobs
from contextviewer.conversations import segments
from contextviewer.jobs.models import JobStatus
from contextviewer.review import alternatives, probes, queues
from contextviewer.review.models import PairwiseComparison, ReviewItem, ReviewQueue
from tests.integration.review.test_summarize_again import _import

pytestmark = pytest.mark.django_db


def _two_summaries(project, tmp_path):
    conv = _import(project, tmp_path)
    original = segments.segment_folds(conv)[0]
    job = alternatives.start(original, provider="builtin", enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    return original, original.conversation.folds.get(pk=done.result["fold_id"])


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def test_a_pairwise_queue_needs_two_summaries_and_says_how_to_get_them(project, user, tmp_path):
    conv = _import(project, tmp_path)
    client = _client(user)
    r = client.post(f"/projects/{project.slug}/review/queues/new/", {"name": "pairs", "mode": "pairwise"}, follow=True)
    assert "No fold matching these filters has two summaries yet: summarize one again" in r.content.decode()
    assert not ReviewQueue.objects.exists()
    alternatives.start(segments.segment_folds(conv)[0], provider="builtin", enqueue=False)
    jobs.run(jobs.Job.objects.get(kind="summarize_again").pk)
    r = client.post(f"/projects/{project.slug}/review/queues/new/", {"name": "pairs", "mode": "pairwise"}, follow=True)
    assert "holds 1 pairs of summaries" in r.content.decode()
    item = ReviewItem.objects.get()
    assert {item.fold.kind, item.fold_b.kind} == {"compact", "alternative"}
    assert item.fold.position == item.fold_b.position


def test_a_blind_pairwise_item_hides_origin_and_retention_until_the_vote_is_in(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)
    queue = queues.create_queue(project, "blind pairs", {}, mode="pairwise", blind=True, user=user)
    item = queue.items.get()
    client = _client(user)
    origins = [alternatives.origin_label(original), alternatives.origin_label(alt)]
    retention = probes.probe_for(alt).retention
    shown_retention = f"{retention * 100:.1f} %"

    before = client.get(f"/review/items/{item.pk}/").content.decode()
    # Both to read (the builtin's first line is its "## Goal" heading; the second, the goal).
    assert alt.summary_text.splitlines()[1] in before and original.summary_text[:40] in before
    assert 'id="blind-note"' in before
    for text in [*origins, "recorded compaction", "summarized again", "builtin", shown_retention, "retention"]:
        assert text not in before, text
    # The queue's list keeps the figures back too.
    assert shown_retention not in client.get(f"/review/queues/{queue.pk}/").content.decode()

    r = client.post(f"/review/items/{item.pk}/", {"choice": "z"})
    assert r.status_code == 400 and "Choose A better, B better or equal" in r.content.decode()
    r = client.post(f"/review/items/{item.pk}/", {"choice": "b", "comment": "keeps the paths"})
    assert r.status_code == 302

    after = client.get(f"/review/items/{item.pk}/").content.decode()
    assert "You voted: B better." in after and 'id="blind-note"' not in after
    for text in origins:
        assert text in after, text
    assert "retention" in after and f"{probes.probe_for(item.fold_b).retention * 100:.1f} %" in after
    vote = PairwiseComparison.objects.get()
    assert (vote.fold_a_id, vote.fold_b_id, vote.choice) == (item.fold_id, item.fold_b_id, "b")


def test_a_blind_single_item_hides_origin_and_retention_until_the_score_is_in(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)
    queue = queues.create_queue(project, "blind single", {}, blind=True, user=user)
    item = queue.items.get(fold=alt)
    client = _client(user)
    before = client.get(f"/review/items/{item.pk}/").content.decode()
    assert alt.summary_text.splitlines()[1] in before  # under its "## Goal" heading
    for text in ["summarized again", "builtin summarizer", 'id="retention"', "retention", "Fact probes</h2>\n    <table"]:
        assert text not in before, text
    r = client.post(f"/review/items/{item.pk}/", {"fidelity": "4", "lost_detail": "no"})
    assert r.status_code == 302
    # The queue's item of the original is still to score: naming this summary would name that one.
    assert "summarized again" not in client.get(f"/review/items/{item.pk}/").content.decode()
    client.post(f"/review/items/{queue.items.get(fold=original).pk}/", {"fidelity": "3", "lost_detail": "no"})
    after = client.get(f"/review/items/{item.pk}/").content.decode()
    assert "summarized again · builtin summarizer" in after and 'id="retention"' in after
    assert f"{probes.probe_for(alt).retention * 100:.1f} %" in after


def test_an_open_queue_shows_origin_and_retention_from_the_start(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)
    queue = queues.create_queue(project, "open", {}, mode="pairwise", user=user)
    page = _client(user).get(f"/review/items/{queue.items.get().pk}/").content.decode()
    assert alternatives.origin_label(original) in page and alternatives.origin_label(alt) in page
    assert 'id="retention-a"' in page and 'id="blind-note"' not in page
