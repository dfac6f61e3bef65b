"""Every security-relevant action leaves one audit event: membership and role changes, tokens,
provider settings, exports (and deletions, once there are any), whether done on a page or through
the API."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from contextviewer.accounts import services
from contextviewer.accounts.models import AuditEvent, Invitation, Membership, Role
from tests.factories import build_conversation, make_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    project = make_project("acme", name="Acme")
    User = get_user_model()
    owner = User.objects.create_user("olga")
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    member = User.objects.create_user("mia")
    Membership.objects.create(project=project, user=member, role=Role.MEMBER)
    invitee = User.objects.create_user("ivan")
    User.objects.create_user("newbie")
    invitation = Invitation.objects.create(project=project, user=invitee, role=Role.VIEWER, invited_by=owner)
    token, secret = services.create_token(owner, project, "cli")
    conv = build_conversation(project, turns=2).conversation
    return {"project": project, "owner": owner, "member": member.memberships.get(), "invitee": invitee,
            "invitation": invitation, "token": token, "secret": secret, "conversation": conv}


def _page_post(name, data=None, **kwargs):
    def send(w):
        c = Client()
        c.force_login(w["owner"])
        args = [a(w) if callable(a) else a for a in kwargs.get("args", [])]
        return c.post(reverse(name, args=args), data(w) if data else {})
    return send


def _api(method, path, body=None):
    def send(w):
        c = Client()
        url = path.format(slug=w["project"].slug, member=w["member"].pk, conv=w["conversation"].pk)
        headers = {"Authorization": f"Bearer {w['secret']}"}
        if body is None:
            return c.generic(method, url, headers=headers)
        return c.generic(method, url, json.dumps(body), content_type="application/json", headers=headers)
    return send


def _get(name, query="", args=()):
    def send(w):
        c = Client()
        c.force_login(w["owner"])
        return c.get(reverse(name, args=[a(w) if callable(a) else a for a in args]) + query)
    return send


def _accept(w):
    c = Client()
    c.force_login(w["invitee"])
    return c.post(reverse("invitation_answer", args=[w["invitation"].pk, "accept"]))


slug = lambda w: w["project"].slug  # noqa: E731
member_pk = lambda w: w["member"].pk  # noqa: E731
conv_pk = lambda w: w["conversation"].pk  # noqa: E731

CASES = [
    ("invite", _page_post("member_invite", lambda w: {"who": "newbie", "role": "member"}, args=[slug]), "member.invited"),
    ("accept", _accept, "member.joined"),
    ("role", _page_post("member_role", lambda w: {"role": "viewer"}, args=[slug, member_pk]), "member.role_changed"),
    ("remove", _page_post("member_remove", args=[slug, member_pk]), "member.removed"),
    ("token", _page_post("project_tokens", lambda w: {"name": "ci", "lifetime": "30"}, args=[slug]), "token.created"),
    ("revoke", lambda w: _page_post("token_revoke", args=[slug, w["token"].pk])(w), "token.revoked"),
    ("api invite", _api("POST", "/api/projects/{slug}/invitations", {"who": "newbie"}), "member.invited"),
    ("api role", _api("PATCH", "/api/projects/{slug}/members/{member}", {"role": "viewer"}), "member.role_changed"),
    ("api remove", _api("DELETE", "/api/projects/{slug}/members/{member}"), "member.removed"),
    ("provider page", _page_post("provider_settings", lambda w: {"provider": "openai", "model": "gpt-4o-mini"}, args=[slug]),
     "provider.settings_changed"),
    ("provider api", _api("PUT", "/api/projects/{slug}/providers/openai", {"model": "gpt-4o-mini"}), "provider.settings_changed"),
    ("dashboard export", _get("review_dashboard", "?format=csv", args=[slug]), "export."),
    ("conversation export page", _get("export_download", args=[conv_pk, "markdown"]), "export."),
    ("conversation export api", _api("GET", "/api/conversations/{conv}/export?format=markdown"), "export."),
]


@pytest.mark.parametrize("label, send, action", [c if hasattr(c, "marks") else pytest.param(*c, id=c[0]) for c in CASES])
def test_security_relevant_action_is_audited(world, label, send, action):
    before = set(AuditEvent.objects.values_list("pk", flat=True))
    response = send(world)
    assert response.status_code in (200, 201, 202, 204, 302), (label, response.status_code, response.content[:300])
    new = AuditEvent.objects.exclude(pk__in=before)
    assert [e.action for e in new if e.action.startswith(action)], f"{label}: no {action!r} audit event (got {[e.action for e in new]})"
    event = next(e for e in new if e.action.startswith(action))
    actor = world["invitee"] if label == "accept" else world["owner"]
    assert event.actor == actor and event.project == world["project"]
    assert world["secret"] not in json.dumps(event.details) + event.target
