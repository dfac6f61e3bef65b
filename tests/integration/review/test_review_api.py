"""The review API: probes, dashboard, reviews, comments, score config, by session or project token;
nothing crosses a project."""

import pytest
from django.test import Client

from contextviewer.accounts.models import Role
from contextviewer.accounts.services import create_token
from contextviewer.review import probes, queues
from contextviewer.review.models import Review
from tests.factories import TextSource, build_conversation, make_project, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(project, user):
    built = build_conversation(project, turns=8, fold_at=25_000, texts=TextSource(), external_id="api-conv")
    other = make_project("other")
    stranger = make_user("sam", project=other)
    build_conversation(other, turns=8, fold_at=25_000, external_id="other-conv")
    queue = queues.create_queue(project, "q", {})
    return {
        "conv": built.conversation, "fold": built.conversation.folds.first(), "queue": queue, "other": other,
        "owner": user, "annotator": make_user("ann", project=project, role=Role.ANNOTATOR),
        "viewer": make_user("vic", project=project, role=Role.VIEWER), "stranger": stranger,
    }


def session(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def bearer(user, project) -> Client:
    _, secret = create_token(user, project, "t")
    return Client(headers={"Authorization": f"Bearer {secret}"})


def test_probe_and_report_read_by_members_only(setup, project):
    fold, conv = setup["fold"], setup["conv"]
    r = session(setup["viewer"]).get(f"/api/review/folds/{fold.pk}/probe")
    assert r.status_code == 200
    body = r.json()
    assert body["fold_id"] == fold.pk and body["facts"] and set(body["per_kind"]) >= {"path", "command", "decision"}
    report = session(setup["viewer"]).get(f"/api/review/conversations/{conv.pk}/probes").json()
    assert [row["fold_id"] for row in report] == list(conv.folds.order_by("position", "pk").values_list("pk", flat=True))
    assert all("lost" in row and "summary_tokens" in row for row in report)
    assert session(setup["stranger"]).get(f"/api/review/folds/{fold.pk}/probe").status_code == 404
    # The stranger's token is scoped to their own project: this project's data stays invisible.
    token_client = bearer(setup["stranger"], setup["other"])
    assert token_client.get(f"/api/review/folds/{fold.pk}/probe").status_code == 404
    assert token_client.get(f"/api/review/projects/{project.slug}/dashboard").status_code == 404
    assert token_client.get("/api/review/projects/other/dashboard").json()["total"]["folds"] >= 1
    assert Client().get(f"/api/review/folds/{fold.pk}/probe").status_code == 401


def test_reviews_and_comments_by_role(setup):
    item = setup["queue"].items.first()
    url = f"/api/review/items/{item.pk}/reviews"
    viewer = session(setup["viewer"])
    assert viewer.post(url, {"scores": {"fidelity": 3, "lost_detail": "no"}}, content_type="application/json").status_code == 403
    ann = bearer(setup["annotator"], item.queue.project)
    r = ann.post(url, {"scores": {"fidelity": 9, "lost_detail": "no"}}, content_type="application/json")
    assert r.status_code == 400 and r.json()["detail"] == "Fidelity: give a whole number from 1 to 5."
    r = ann.post(url, {"scores": {"fidelity": 3, "lost_detail": "yes"}}, content_type="application/json")
    assert r.status_code == 201 and r.json()["scores"] == {"fidelity": 3, "lost_detail": True, "comment": ""}
    assert Review.objects.count() == 1
    fold = item.fold
    r = ann.post(f"/api/review/folds/{fold.pk}/comments", {"text": "x", "turn": 99999}, content_type="application/json")
    assert r.status_code == 400 and "not in this fold" in r.json()["detail"]
    turn = probes.probe_for(fold).facts[0]["turn"]
    r = ann.post(f"/api/review/folds/{fold.pk}/comments", {"text": "important", "turn": turn}, content_type="application/json")
    assert r.status_code == 201 and r.json()["turn"] == turn
    assert session(setup["stranger"]).post(
        f"/api/review/folds/{fold.pk}/comments", {"text": "x"}, content_type="application/json"
    ).status_code == 404


def test_score_config_and_judge_need_their_permissions(setup, project):
    url = f"/api/review/projects/{project.slug}/score-config"
    fields = [{"key": "fidelity", "label": "Fidelity", "type": "scale", "min": 1, "max": 4}]
    assert session(setup["annotator"]).put(url, {"fields": fields}, content_type="application/json").status_code == 403
    owner = session(setup["owner"])
    r = owner.put(url, {"fields": [{"key": "x", "type": "stars"}]}, content_type="application/json")
    assert r.status_code == 400 and "type must be scale, bool or text" in r.json()["detail"]
    assert owner.put(url, {"fields": fields}, content_type="application/json").json()[0]["max"] == 4
    assert session(setup["viewer"]).get(url).json()[0]["max"] == 4
    judge = f"/api/review/folds/{setup['fold'].pk}/judge"
    assert session(setup["annotator"]).post(judge).status_code == 403
    r = owner.post(judge)
    assert r.status_code == 202 and r.json()["kind"] == "judge"
