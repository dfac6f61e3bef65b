"""Blind review holds on every page and API answer for the fold, not only on the queue's item:
while a reviewer has an unscored item of a blind queue for a fold, the fold's review page, the
pairwise page, the conversation page's list of summaries, the review index and the API keep back
where each summary came from and its retention. Once the score is in, they show."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from contextviewer.accounts.models import Membership, Role
from contextviewer.review import alternatives, probes, queues
from tests.integration.review.test_pairwise_blind import _two_summaries

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _pages(client, original, alt) -> dict[str, str]:
    conv = original.conversation
    urls = {
        "fold page (original)": f"/review/folds/{original.pk}/",
        "fold page (alternative)": f"/review/folds/{alt.pk}/",
        "pairwise page": f"/review/folds/{original.pk}/pairwise/{alt.pk}/",
        "conversation page": f"/c/{conv.pk}/",
        "review index": f"/projects/{conv.project.slug}/review/",
        "probe API (alternative)": f"/api/review/folds/{alt.pk}/probe",
        "probe API (original)": f"/api/review/folds/{original.pk}/probe",
        "summaries API": f"/api/review/folds/{original.pk}/summaries",
        "conversation probes API": f"/api/review/conversations/{conv.pk}/probes",
    }
    out = {}
    for name, url in urls.items():
        r = client.get(url)
        assert r.status_code == 200, (name, r.status_code)
        out[name] = json.dumps(r.json(), ensure_ascii=False) if "API" in name else r.content.decode()
    return out


def _retention_text(fold) -> list[str]:
    r = probes.probe_for(fold).retention
    return [f"{r * 100:.1f} %", f'"retention": {r}']


def test_an_unscored_blind_item_hides_origin_and_retention_on_every_page_and_answer(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)
    assert probes.probe_for(alt).retention is not None and probes.probe_for(original).retention is not None
    queue = queues.create_queue(project, "blind", {}, blind=True, user=user)
    queue.reviewers.set([user])
    item = queue.items.get(fold=alt)
    origins = [alternatives.origin_label(original), alternatives.origin_label(alt)]
    secrets = [*origins, '"kind": "alternative"', '"kind": "compact"', 'id="retention"', 'id="retention-a"',
               'id="origin"', *_retention_text(alt), *_retention_text(original)]

    client = _client(user)
    before = _pages(client, original, alt)
    for name, body in before.items():
        for text in secrets:
            assert text not in body, (name, text)
    assert alt.summary_text.splitlines()[1] in before["fold page (alternative)"]  # still readable (under "## Goal")
    assert 'id="blind-note"' in before["pairwise page"] and 'id="blind-note"' in before["fold page (original)"]
    assert '"hidden": true' in before["probe API (alternative)"] and '"hidden": true' in before["summaries API"]

    # A teammate with no blind item sees everything meanwhile.
    bob = get_user_model().objects.create_user("bob", password="pw-bob-12345")
    Membership.objects.create(project=project, user=bob, role=Role.MEMBER)
    seen = _pages(_client(bob), original, alt)
    assert origins[1] in seen["fold page (alternative)"] and origins[0] in seen["pairwise page"]
    assert origins[1] in seen["conversation page"] and origins[1] in seen["summaries API"]
    assert _retention_text(alt)[1] in seen["probe API (alternative)"]

    r = client.post(f"/review/items/{item.pk}/", {"fidelity": "4", "lost_detail": "no"})
    assert r.status_code == 302
    # The queue also holds the original: an unscored item of the same segment keeps it blind.
    other = queue.items.get(fold=original)
    still = _pages(client, original, alt)
    assert origins[1] not in still["pairwise page"] and origins[1] not in still["summaries API"]
    client.post(f"/review/items/{other.pk}/", {"fidelity": "3", "lost_detail": "yes"})

    after = _pages(client, original, alt)
    assert origins[1] in after["fold page (alternative)"] and _retention_text(alt)[0] in after["fold page (alternative)"]
    assert origins[0] in after["pairwise page"] and origins[1] in after["pairwise page"]
    assert _retention_text(alt)[0] in after["pairwise page"]
    assert origins[1] in after["conversation page"] and origins[1] in after["summaries API"]
    assert _retention_text(alt)[1] in after["probe API (alternative)"] and '"hidden": true' not in after["probe API (alternative)"]
    assert _retention_text(original)[0] in after["review index"]
    assert 'id="blind-note"' not in after["pairwise page"]


def test_a_blind_queue_assigned_to_someone_else_hides_nothing_from_me(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)
    carol = get_user_model().objects.create_user("carol", password="pw-carol-1234")
    Membership.objects.create(project=project, user=carol, role=Role.ANNOTATOR)
    queue = queues.create_queue(project, "blind for carol", {}, mode="pairwise", blind=True, user=user)
    queue.reviewers.set([carol])
    mine = _pages(_client(user), original, alt)
    assert alternatives.origin_label(alt) in mine["pairwise page"] and _retention_text(alt)[0] in mine["pairwise page"]
    theirs = _pages(_client(carol), original, alt)
    assert alternatives.origin_label(alt) not in theirs["pairwise page"]
    assert alternatives.origin_label(alt) not in theirs["conversation page"]
