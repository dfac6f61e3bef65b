"""The permission helpers (accounts/permissions.py): 404 for what the caller may not see, 403 with
the reason for what its role may not do; the same answers for a page's session and an API token."""

from types import SimpleNamespace

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.test import RequestFactory

from contextviewer.accounts import permissions, services
from contextviewer.accounts.models import Role
from contextviewer.jobs import queue as jobs
from tests.factories import build_conversation, make_project
from tests.module_worlds import fresh, make_user, rolled_back

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def _module_world(django_db_setup, django_db_blocker):
    """Built once for the module, in a transaction rolled back at its end; each test runs in a
    savepoint inside it, so what a test writes (a membership, a token) is undone."""
    with rolled_back(django_db_blocker):
        a, b = make_project("perm-a", name="Alpha"), make_project("perm-b", name="Beta")
        built = build_conversation(a, turns=8, fold_at=30_000, per_turn_tokens=9_000, subagent_turn=None)
        assert built.folds
        owner = make_user("perm-owner", project=a, role=Role.OWNER)
        job, _ = jobs.create_job(a, "import", {"uploads": []}, user=owner)
        yield SimpleNamespace(
            a=a, b=b, conv=built.conversation, fold=built.folds[0], job=job, owner=owner,
            viewer=make_user("perm-viewer", project=a, role=Role.VIEWER),
            outsider=make_user("perm-outsider", project=b, role=Role.OWNER),
        )


@pytest.fixture
def world(_module_world, db):
    """The module's world, each object read again (no test sees another's changes to them)."""
    return SimpleNamespace(**{name: fresh(obj) for name, obj in vars(_module_world).items()})


def _request(user, token=None):
    request = RequestFactory().get("/")
    request.user = user
    if token is not None:
        request.api_token = token
    return request


def _getters(w):
    """(name, call(caller, permission)) for each helper, addressing project A's objects."""
    return [
        ("project by slug", lambda c, p: permissions.get_project_for_user(c, w.a.slug, p)),
        ("project by pk", lambda c, p: permissions.get_project_for_user(c, w.a.pk, p)),
        ("conversation", lambda c, p: permissions.get_conversation_for_user(c, w.conv.pk, p)),
        ("fold", lambda c, p: permissions.get_fold_for_user(c, w.conv, w.fold.pk, p)),
        ("fold of any conversation", lambda c, p: permissions.get_fold_for_user(c, None, w.fold.pk, p)),
        ("job", lambda c, p: permissions.get_job_for_user(c, w.job.pk, p)),
    ]


def test_each_helper_answers_404_to_another_projects_member(world):
    for name, get in _getters(world):
        for caller in (_request(world.outsider), world.outsider):
            with pytest.raises(Http404):
                get(caller, "view")
            with pytest.raises(Http404):  # not "your role may not": A's existence is not disclosed
                get(caller, "delete")


def test_each_helper_answers_403_with_the_reason_to_a_role_that_may_not(world):
    for name, get in _getters(world):
        assert get(_request(world.viewer), "view") is not None, name
        with pytest.raises(PermissionDenied) as refused:
            get(_request(world.viewer), "edit")
        assert str(refused.value).startswith("Your role (viewer) in Alpha may not"), name
        assert get(_request(world.owner), "delete") is not None, name


def test_a_token_of_another_project_sees_nothing_here_even_when_its_owner_could(world):
    world.owner.memberships.create(project=world.b, role=Role.OWNER)
    b_token, _ = services.create_token(world.owner, world.b, "b")
    a_token, _ = services.create_token(world.owner, world.a, "a")
    for name, get in _getters(world):
        with pytest.raises(Http404):
            get(_request(world.owner, b_token), "view")
        assert get(_request(world.owner, a_token), "delete") is not None, name
    assert list(permissions.projects_for(_request(world.owner, b_token))) == [world.b]
    assert list(permissions.projects_for(_request(world.owner))) == [world.a, world.b]


def test_a_fold_is_found_only_in_its_own_conversation(world):
    other = build_conversation(world.a, turns=2, subagent_turn=None).conversation
    with pytest.raises(Http404):
        permissions.get_fold_for_user(_request(world.owner), other, world.fold.pk)


def test_projects_for_lists_the_projects_whose_role_allows_the_permission(world):
    world.viewer.memberships.create(project=world.b, role=Role.MEMBER)
    assert list(permissions.projects_for(_request(world.viewer), "view")) == [world.a, world.b]
    assert list(permissions.projects_for(_request(world.viewer), "import")) == [world.b]
    assert list(permissions.projects_for(world.viewer, "delete")) == []
    assert permissions.can(_request(world.viewer), world.b, "import")
    assert not permissions.can(_request(world.viewer), world.a, "import")


def test_the_api_answers_a_refusal_with_its_reason(world, client):
    _, secret = services.create_token(world.viewer, world.a, "viewer")
    headers = {"Authorization": f"Bearer {secret}"}
    r = client.post(f"/api/jobs/{world.job.pk}/cancel", headers=headers)
    assert r.status_code == 403 and r.json()["detail"] == "Your role (viewer) in Alpha may not cancel jobs."
    _, outsider = services.create_token(world.outsider, world.b, "outsider")
    r = client.get(f"/api/jobs/{world.job.pk}", headers={"Authorization": f"Bearer {outsider}"})
    assert r.status_code == 404 and r.json()["detail"] == "No such job."


def test_a_page_refusal_is_the_refusal_page_and_the_reason_alone_for_htmx(world, client):
    client.force_login(world.viewer)
    page = client.post(f"/jobs/{world.job.pk}/cancel/")
    assert page.status_code == 403
    assert "<h1>Not allowed</h1>" in page.content.decode() and "may not cancel jobs" in page.content.decode()
    fragment = client.post(f"/jobs/{world.job.pk}/cancel/", headers={"HX-Request": "true"})
    assert fragment.status_code == 403 and fragment.content.decode() == "Your role (viewer) in Alpha may not cancel jobs."
