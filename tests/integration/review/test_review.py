"""Human review through the pages: queues by filter, locking, blind scoring, N reviewers per fold,
score settings, comments anchored to a turn or a fact, pairwise votes, dashboard and exports, and
who may do what."""

import csv
import io
import json
from types import SimpleNamespace

import pytest
from django.test import Client
from django.urls import reverse

from contextviewer.accounts.models import Role
from contextviewer.accounts.services import get_or_create_project
from contextviewer.conversations.models import Fold
from contextviewer.providers.base import Completion
from contextviewer.review import dashboard, judge, probes, queues
from contextviewer.review.models import Comment, JudgeRun, PairwiseComparison, Review, ReviewItem, ReviewQueue
from tests.factories import TextSource, build_conversation
from tests.module_worlds import alice, fresh, make_user, rolled_back

pytestmark = pytest.mark.django_db


def login(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture(scope="module")
def _module_world(django_db_setup, django_db_blocker):
    """The project, its folds and its team, built once for the module in a transaction rolled back
    at its end; each test runs in a savepoint inside it, so what a test writes is undone."""
    with rolled_back(django_db_blocker):
        project = get_or_create_project("Test project")  # tests/integration/conftest.py's project and user
        user = alice(project)
        # Two conversations, four folds; the second conversation's summaries name nothing it folded.
        a = build_conversation(project, turns=10, fold_at=25_000, external_id="conv-a")
        b = build_conversation(
            project, turns=10, fold_at=25_000, external_id="conv-b",
            texts=TextSource(summary=lambda k: f"Summary {k}: work continued."),
        )
        folds = list(a.conversation.folds.order_by("position")) + list(b.conversation.folds.order_by("position"))
        team = {
            "owner": user,
            "ann1": make_user("ann1", project=project, role=Role.ANNOTATOR),
            "ann2": make_user("ann2", project=project, role=Role.ANNOTATOR),
            "viewer": make_user("vera", project=project, role=Role.VIEWER),
            "outsider": make_user("olga"),
        }
        yield SimpleNamespace(project=project, folds=folds, team=team)


# The module's world, each object read again (no test sees another's changes to them).


@pytest.fixture
def project(_module_world, db):
    return fresh(_module_world.project)


@pytest.fixture
def user(_module_world, db):
    return fresh(_module_world.team["owner"])


@pytest.fixture
def folds(_module_world, db):
    """Two conversations, four folds; the second conversation's summaries name nothing it folded."""
    return [fresh(f) for f in _module_world.folds]


@pytest.fixture
def team(_module_world, user):
    return {"owner": user, **{who: fresh(u) for who, u in _module_world.team.items() if who != "owner"}}


def test_a_queue_takes_the_folds_its_filters_match(project, folds, team):
    owner = login(team["owner"])
    assert len(folds) >= 4
    r = owner.post(reverse("review_queue_create", args=[project.slug]), {"name": "all", "agent": "claude-code"})
    queue = ReviewQueue.objects.get(name="all")
    assert r.status_code == 302 and queue.items.count() == len(folds)
    # Retention below 50 %: the folds whose summaries kept little (conv-b says nothing concrete).
    owner.post(reverse("review_queue_create", args=[project.slug]), {"name": "weak", "retention_below": "50"})
    weak = ReviewQueue.objects.get(name="weak")
    kept = {i.fold.conversation.external_id for i in weak.items.select_related("fold__conversation")}
    assert "conv-b" in kept
    assert all(probes.probe_for(i.fold).retention < 0.5 for i in weak.items.all())
    # Bad filters get a clear message and create nothing.
    for data, message in [
        ({"name": "x", "retention_below": "abc"}, "Retention below: give a percentage from 0 to 100."),
        ({"name": "x", "date_from": "05/01/2026"}, "date from: use the form YYYY-MM-DD."),
        ({"name": "", "agent": "claude-code"}, "Give the queue a name."),
        ({"name": "x", "agent": "codex"}, "No fold matches these filters."),
    ]:
        r = owner.post(reverse("review_queue_create", args=[project.slug]), data, follow=True)
        assert message in r.content.decode()
    assert ReviewQueue.objects.count() == 2


def _queue(project, folds, *, per_item=1, reviewers=()):
    return queues.create_queue(project, "q", {}, reviewers_per_item=per_item, reviewers=reviewers)


def test_locking_blind_scores_and_two_reviewers_per_fold(project, folds, team):
    queue = _queue(project, folds, per_item=2, reviewers=[team["ann1"], team["ann2"]])
    ann1, ann2 = login(team["ann1"]), login(team["ann2"])
    first = queue.items.first()
    r = ann1.get(reverse("review_queue_next", args=[queue.pk]))
    assert r.url == reverse("review_item", args=[first.pk])
    assert 'id="score-form"' in ann1.get(r.url).content.decode()
    # ann2 cannot take the fold ann1 holds: they see who holds it, and "next" skips it.
    page = ann2.get(reverse("review_item", args=[first.pk])).content.decode()
    assert "Someone else is reviewing this fold right now" in page and 'id="score-form"' not in page
    assert ann2.get(reverse("review_queue_next", args=[queue.pk])).url != reverse("review_item", args=[first.pk])
    # ann1 scores; the lock is released and ann1 moves on to the next fold.
    r = ann1.post(reverse("review_item", args=[first.pk]), {"fidelity": "4", "lost_detail": "no", "comment": "fine"})
    assert r.status_code == 302
    assert Review.objects.get(item=first, reviewer=team["ann1"]).scores == {"fidelity": 4, "lost_detail": False, "comment": "fine"}
    # Blind: ann2 does not see ann1's scores before scoring, then does.
    page = ann2.get(reverse("review_item", args=[first.pk])).content.decode()
    assert "Fidelity: 4/5" not in page and 'id="score-form"' in page
    ann2.post(reverse("review_item", args=[first.pk]), {"fidelity": "2", "lost_detail": "yes"})
    page = ann2.get(reverse("review_item", args=[first.pk])).content.decode()
    assert "<strong>ann1</strong>: " in page and "Fidelity: 4/5" in page and "Fidelity: 2/5" in page
    first.refresh_from_db()
    assert first.review_count == 2
    # Both reviews in: nobody gets this fold again.
    ann3 = make_user("ann3", project=project, role=Role.ANNOTATOR)
    queue.reviewers.add(ann3)
    assert login(ann3).get(reverse("review_queue_next", args=[queue.pk])).url != reverse("review_item", args=[first.pk])
    # A second submission by the same reviewer is refused.
    r = ann1.post(reverse("review_item", args=[first.pk]), {"fidelity": "5", "lost_detail": "no"})
    assert r.status_code == 400 and "already reviewed" in r.content.decode()


def test_an_expired_lock_can_be_taken(project, folds, team):
    from datetime import timedelta

    from django.utils import timezone

    queue = _queue(project, folds)
    item = queue.items.first()
    assert queues.lock_item(item, team["ann1"])
    assert not queues.lock_item(item, team["ann2"])
    ReviewItem.objects.filter(pk=item.pk).update(locked_until=timezone.now() - timedelta(seconds=1))
    assert queues.lock_item(item, team["ann2"])


def test_bad_scores_get_clear_messages(project, folds, team):
    queue = _queue(project, folds)
    item = queue.items.first()
    ann1 = login(team["ann1"])
    for data, message in [
        ({"lost_detail": "no"}, "Missing: Fidelity."),
        ({"fidelity": "9", "lost_detail": "no"}, "Fidelity: give a whole number from 1 to 5."),
        ({"fidelity": "x", "lost_detail": "no"}, "Fidelity: give a whole number from 1 to 5."),
        ({"fidelity": "3", "lost_detail": "maybe"}, "Lost a load-bearing detail: answer yes or no."),
    ]:
        r = ann1.post(reverse("review_item", args=[item.pk]), data)
        assert r.status_code == 400 and message in r.content.decode()
    assert not Review.objects.exists()


def test_score_settings_are_editable_by_owners_only(project, folds, team):
    url = reverse("review_settings", args=[project.slug])
    fields = [{"key": "fidelity", "label": "Fidelity", "type": "scale", "min": 1, "max": 3},
              {"key": "hallucinated", "label": "Invented something", "type": "bool"}]
    assert login(team["ann1"]).post(url, {"fields": json.dumps(fields)}).status_code == 403
    assert login(team["viewer"]).post(url, {"fields": json.dumps(fields)}).status_code == 403
    assert login(team["outsider"]).get(url).status_code == 404
    owner = login(team["owner"])
    r = owner.post(url, {"fields": "[{"})
    assert r.status_code == 400 and "not valid JSON" in r.content.decode()
    r = owner.post(url, {"fields": json.dumps([{"key": "Bad Key", "type": "scale"}])})
    assert r.status_code == 400 and "key must be lowercase" in r.content.decode()
    assert owner.post(url, {"fields": json.dumps(fields)}).status_code == 302
    # The review screen asks the new questions.
    queue = _queue(project, folds)
    item = queue.items.first()
    page = login(team["ann1"]).get(reverse("review_item", args=[item.pk])).content.decode()
    assert "Invented something" in page and 'value="3"' in page and 'value="4"' not in page


def test_comments_anchor_to_a_turn_or_a_fact(project, folds, team):
    fold = folds[0]
    probe = probes.probe_for(fold)
    fact = probe.facts[0]
    turn = fact["turn"]
    ann1 = login(team["ann1"])
    url = reverse("review_comment", args=[fold.pk])
    ann1.post(url, {"text": "this turn matters", "turn": str(turn)})
    ann1.post(url, {"text": "lost <b>this</b>", "fact": f"{fact['kind']}:{fact['key']}"})
    assert Comment.objects.filter(fold=fold, turn=turn).exists()
    assert Comment.objects.filter(fold=fold, fact=f"{fact['kind']}:{fact['key']}").exists()
    page = ann1.get(reverse("review_fold", args=[fold.pk])).content.decode()
    assert "this turn matters" in page and "lost &lt;b&gt;this&lt;/b&gt;" in page
    r = ann1.post(url, {"text": "x", "turn": "9999"}, follow=True)
    assert "Turn 9999 is not in this fold&#x27;s archived segment." in r.content.decode()
    r = ann1.post(url, {"text": "x", "fact": "path:nope"}, follow=True)
    assert "That fact is not one of this fold&#x27;s facts." in r.content.decode()
    assert login(team["viewer"]).post(url, {"text": "hi"}).status_code == 403
    assert Comment.objects.count() == 2


def test_pairwise_votes_on_two_summaries_of_one_segment(project, folds, team):
    a = folds[0]
    b = Fold.objects.create(
        conversation=a.conversation, key="handoff:x", position=a.position, origin="generated", kind="handoff",
        summary_text="Goal: fix src/module_1.py. Ran pytest tests/test_module_1.py -q.",
    )
    page = login(team["ann1"]).get(reverse("review_fold", args=[a.pk])).content.decode()
    assert reverse("review_pairwise", args=[a.pk, b.pk]) in page
    url = reverse("review_pairwise", args=[a.pk, b.pk])
    ann1 = login(team["ann1"])
    r = ann1.post(url, {"choice": "maybe"})
    assert r.status_code == 400 and "Choose A better, B better or equal." in r.content.decode()
    assert ann1.post(url, {"choice": "b", "comment": "names the file"}).status_code == 302
    assert ann1.post(url, {"choice": "equal"}).status_code == 302  # changing one's vote keeps one vote
    vote = PairwiseComparison.objects.get()
    assert vote.choice == "equal" and vote.reviewer == team["ann1"]
    assert login(team["viewer"]).post(url, {"choice": "a"}).status_code == 403
    assert login(team["ann1"]).get(reverse("review_pairwise", args=[a.pk, folds[1].pk])).status_code == 404


class FakeProvider:
    """Stands in at the network edge: answers like a judge model would."""

    name = "fake"

    def __init__(self, answer: str):
        self.answer = answer
        self.calls = []

    def complete(self, *, system, prompt, role, max_tokens=4096):
        self.calls.append({"system": system, "prompt": prompt, "role": role})
        return Completion(text=self.answer, model="judge-1", input_tokens=1234, output_tokens=56, cost_usd=0.01)


def test_the_judge_stores_recall_precision_rubric_and_spend(project, folds):
    fold = folds[0]
    probe = probes.probe_for(fold)
    n = len(probe.facts)
    answer = "```json\n" + json.dumps({
        "facts": [{"id": i, "kept": i % 2 == 0} for i in range(n)],
        "statements": [{"text": "a", "supported": True}, {"text": "b", "supported": False}],
        "rubric": {"goal": 4, "constraints": 3, "decisions": 4, "state": 5, "next_steps": 4, "important_details": 2},
    }) + "\n```"
    provider = FakeProvider(answer)
    run = judge.judge_fold(fold, provider)
    (call,) = provider.calls
    assert call["role"] == "judge" and "<segment>" in call["prompt"] and fold.summary_text in call["prompt"]
    assert run.recall == pytest.approx(len(range(0, n, 2)) / n)
    assert run.precision == 0.5
    assert run.rubric["state"] == 5 and run.fidelity == 4
    assert run.spend["input_tokens"] == 1234 and run.spend["cost_usd"] == 0.01
    assert run.prompt == call["prompt"] and run.answer == answer
    with pytest.raises(queues.ReviewError, match="holds no JSON object"):
        judge.judge_fold(fold, FakeProvider("I think it is fine."))
    assert JudgeRun.objects.filter(fold=fold).count() == 2  # the failed answer is kept for reading


def test_dashboard_figures_exports_and_agreement(project, folds, team):
    queue = _queue(project, folds)
    ann1 = login(team["ann1"])
    scores = [5, 4, 2, 1]
    for item, score in zip(queue.items.all(), scores, strict=False):
        ann1.post(reverse("review_item", args=[item.pk]), {"fidelity": str(score), "lost_detail": "no"})
        JudgeRun.objects.create(project=project, fold=item.fold, prompt="p", rubric={"goal": score})
    url = reverse("review_dashboard", args=[project.slug])
    viewer = login(team["viewer"])
    page = viewer.get(url).content.decode()
    assert "Public baseline" in page and "77.0 %" in page and "9.8 %" in page
    data = viewer.get(url + "?format=json").json()
    total = data["total"]
    assert total["folds"] == len(folds) and total["reviews"] == len(scores)
    assert total["fidelity_mean"] == pytest.approx(sum(scores) / len(scores))
    assert total["kappa"] == 1.0 and total["kappa_pairs"] == len(scores)
    sizes = sorted(probes.probe_for(f).summary_tokens for f in folds)
    assert total["summary_p50"] == sizes[(len(sizes) + 1) // 2 - 1] and total["summary_p99"] == sizes[-1]
    rows = list(csv.reader(io.StringIO(viewer.get(url + "?format=csv&by=month").content.decode())))
    assert rows[0][:3] == ["month", "folds", "retention"] and rows[-1][0] == "all"
    assert login(team["outsider"]).get(url).status_code == 404


def test_kappa_and_percentiles():
    assert dashboard.cohen_kappa([(1, 1), (2, 2), (3, 3)]) == 1.0
    assert dashboard.cohen_kappa([(1, 2), (2, 1)]) == pytest.approx(-1.0)
    assert dashboard.cohen_kappa([(1, 1)]) is None
    assert dashboard.percentile(list(range(1, 101)), 99) == 99
    assert dashboard.percentile([], 50) is None


def test_roles_and_strangers(project, folds, team):
    queue = _queue(project, folds)
    item = queue.items.first()
    fold = item.fold
    get_urls = [
        reverse("review_index", args=[project.slug]), reverse("review_queue", args=[queue.pk]),
        reverse("review_item", args=[item.pk]), reverse("review_fold", args=[fold.pk]),
        reverse("review_dashboard", args=[project.slug]), reverse("review_settings", args=[project.slug]),
    ]
    for url in get_urls:
        assert login(team["viewer"]).get(url).status_code == 200, url
        assert login(team["outsider"]).get(url).status_code == 404, url
        assert Client().get(url).status_code == 302, url  # to the login page
    viewer = login(team["viewer"])
    assert viewer.post(reverse("review_item", args=[item.pk]), {"fidelity": "3", "lost_detail": "no"}).status_code == 403
    assert 'id="score-form"' not in viewer.get(reverse("review_item", args=[item.pk])).content.decode()
    for who in ("viewer", "ann1"):
        c = login(team[who])
        assert c.post(reverse("review_queue_create", args=[project.slug]), {"name": "n"}).status_code == 403
        assert c.post(reverse("review_judge", args=[fold.pk])).status_code == 403
        assert c.post(reverse("review_queue", args=[queue.pk]), {"reviewers": [team[who].pk]}).status_code == 403
    outsider = login(team["outsider"])
    assert outsider.post(reverse("review_comment", args=[fold.pk]), {"text": "x"}).status_code == 404
    assert outsider.post(reverse("review_item", args=[item.pk]), {"fidelity": "3"}).status_code == 404
    # A queue assigned to ann2 is not ann1's to score.
    assigned = queues.create_queue(project, "ann2 only", {}, reviewers=[team["ann2"]])
    assert login(team["ann1"]).get(reverse("review_queue_next", args=[assigned.pk])).status_code == 403
    assert not Review.objects.exists()


def test_the_judge_spend_goes_to_the_ledger_and_needs_a_real_provider(project, folds):
    from contextviewer.jobs import queue as jobs
    from contextviewer.providers.models import SpendEntry

    fold = folds[0]
    run = judge.judge_fold(fold, FakeProvider(json.dumps({"facts": [], "statements": [], "rubric": {"goal": 3}})))
    entry = SpendEntry.objects.get(role="judge")
    assert entry.provider == "fake" and run.spend["input_tokens"] == 1234
    # With no provider configured (builtin only), the judge job fails with a message saying why.
    job = judge.start_judge(fold)
    done = jobs.run(job.pk)
    assert done.status == "failed" and "The judge needs an LLM provider" in done.error


def test_dashboard_groups_by_provider_and_cli_version(project, folds, team):
    a = folds[0]
    Fold.objects.create(
        conversation=a.conversation, key="handoff:o", position=a.position, origin="generated", kind="handoff",
        summary_text="Goal: keep the tests green in src/module_1.py.", cost={"provider": "openai", "model": "m"},
    )
    data = login(team["viewer"]).get(reverse("review_dashboard", args=[project.slug]) + "?by=provider&format=json").json()
    names = {row["name"]: row["folds"] for row in data["rows"]}
    assert names == {"openai": 1, "claude-code (own)": len(folds)}
    page = login(team["viewer"]).get(reverse("review_dashboard", args=[project.slug]) + "?by=cli_version").content.decode()
    assert "By cli_version" in page


def test_the_review_index_lists_folds_with_their_probes(project, folds, team):
    page = login(team["viewer"]).get(reverse("review_index", args=[project.slug])).content.decode()
    for fold in folds:
        assert reverse("review_fold", args=[fold.pk]) in page
    retention = probes.probe_for(folds[0]).retention
    assert f"{retention * 100:.1f} %" in page
    assert "New queue" not in page  # a viewer cannot create queues
    assert "New queue" in login(team["owner"]).get(reverse("review_index", args=[project.slug])).content.decode()
    assert login(team["owner"]).get("/review/").url == reverse("review_index", args=[project.slug])
