"""Projects, members, invitations, API tokens and the audit log, through pages and the API."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from contextviewer.accounts import audit, services
from contextviewer.accounts.models import ApiToken, AuditEvent, Invitation, Membership, Role
from contextviewer.jobs import queue as jobs
from tests.factories import make_project

pytestmark = pytest.mark.django_db


def _user(username: str, project=None, role=Role.MEMBER, email: str = ""):
    user = get_user_model().objects.create_user(username, email=email)
    if project is not None:
        Membership.objects.create(project=project, user=user, role=role)
    return user


@pytest.fixture
def project():
    return make_project("acme", name="Acme")


@pytest.fixture
def owner(project):
    return _user("olga", project, Role.OWNER)


@pytest.fixture
def as_owner(client, owner):
    client.force_login(owner)
    return client


def _flash(response) -> str:
    return " ".join(str(m) for m in response.context["messages"]) if response.context else ""


# --- tokens ------------------------------------------------------------------------------------------


def _all_db_text() -> str:
    """Every value of every row of every model, as text."""
    parts = []
    for model in apps.get_models():
        for row in model.objects.all().values():
            parts.append(repr(row))
    return "\n".join(parts)


def test_token_secret_is_hashed_at_rest_and_shown_once(as_owner, project):
    r = as_owner.post(reverse("project_tokens", args=[project.slug]), {"name": "ci upload", "lifetime": "30"})
    assert r.status_code == 201
    secret = r.context["created"]["secret"]
    assert secret.startswith("cv_") and secret in r.content.decode()
    assert r["Cache-Control"] == "no-store"
    row = ApiToken.objects.get(name="ci upload")
    assert secret.startswith(row.prefix + "_")
    # Nowhere in the database: not the whole secret, not its random part.
    random_part = secret[len(row.prefix) + 1:]
    db = _all_db_text()
    assert secret not in db and random_part not in db
    assert row.token_hash != secret and len(row.token_hash) == 64
    # The list shows the prefix, never the secret again.
    page = as_owner.get(reverse("project_tokens", args=[project.slug])).content.decode()
    assert row.prefix in page and random_part not in page
    assert timedelta(days=29) < row.expires_at - timezone.now() <= timedelta(days=30)


def _bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def test_token_authenticates_and_records_last_use(client, owner, project):
    row, secret = services.create_token(owner, project, "cli")
    assert row.last_used_at is None
    r = client.get("/api/projects", headers=_bearer(secret))
    assert r.status_code == 200 and r.json() == [{"slug": "acme", "name": "Acme", "role": "owner"}]
    row.refresh_from_db()
    first = row.last_used_at
    assert first is not None
    # Used again after a while: the time moves.
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=first - timedelta(hours=2))
    assert client.get("/api/projects", headers=_bearer(secret)).status_code == 200
    row.refresh_from_db()
    assert row.last_used_at >= first


@pytest.mark.parametrize("spoil", ["expired", "revoked", "removed", "wrong secret", "malformed", "other prefix"])
def test_unusable_tokens_are_refused(client, owner, project, spoil):
    member = _user("mia", project, Role.MEMBER)
    row, secret = services.create_token(member, project, "cli")
    assert client.get("/api/projects", headers=_bearer(secret)).status_code == 200
    if spoil == "expired":
        ApiToken.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    elif spoil == "revoked":
        services.revoke_token(row, by=owner)
    elif spoil == "removed":
        services.remove_member(Membership.objects.get(user=member), by=owner)
    elif spoil == "wrong secret":
        secret = secret[:-4] + ("AAAA" if not secret.endswith("AAAA") else "BBBB")
    elif spoil == "malformed":
        secret = "not-a-token"
    elif spoil == "other prefix":
        secret = "cv_00000000" + secret[len(row.prefix):]
    r = client.get("/api/projects", headers=_bearer(secret))
    assert r.status_code == 401
    assert client.get(f"/api/projects/{project.slug}/members", headers=_bearer(secret)).status_code == 401


def test_revoking_on_the_page_stops_the_token(as_owner, client, owner, project):
    row, secret = services.create_token(owner, project, "cli")
    r = as_owner.post(reverse("token_revoke", args=[project.slug, row.pk]), follow=True)
    assert "Revoked cli" in _flash(r)
    assert "revoked" in r.content.decode()
    assert Client().get("/api/projects", headers=_bearer(secret)).status_code == 401


def test_token_form_explains_bad_input(as_owner, project):
    r = as_owner.post(reverse("project_tokens", args=[project.slug]), {"name": " ", "lifetime": "30"}, follow=True)
    assert "Give the token a name" in _flash(r)
    r = as_owner.post(reverse("project_tokens", args=[project.slug]), {"name": "x", "lifetime": "forever"}, follow=True)
    assert "Unknown lifetime 'forever'" in _flash(r)
    assert not ApiToken.objects.exists()


def test_members_see_only_their_own_tokens_managers_see_all(client, owner, project):
    viewer = _user("vic", project, Role.VIEWER)
    services.create_token(owner, project, "owner-token")
    services.create_token(viewer, project, "viewer-token")
    client.force_login(viewer)
    page = client.get(reverse("project_tokens", args=[project.slug])).content.decode()
    assert "viewer-token" in page and "owner-token" not in page
    client.force_login(owner)
    page = client.get(reverse("project_tokens", args=[project.slug])).content.decode()
    assert "viewer-token" in page and "owner-token" in page


def test_token_posts_need_no_csrf_but_session_posts_do(owner, project):
    job, _ = jobs.create_job(project, "import", {"uploads": []}, user=owner)
    _, secret = services.create_token(owner, project, "cli")
    strict = Client(enforce_csrf_checks=True)
    assert strict.post(f"/api/jobs/{job.pk}/cancel", headers=_bearer(secret)).status_code == 200
    job2, _ = jobs.create_job(project, "import", {"uploads": []}, user=owner)
    strict.force_login(owner)
    r = strict.post(f"/api/jobs/{job2.pk}/cancel")
    assert r.status_code == 403 and "CSRF" in r.json()["detail"]
    strict.get(reverse("project_members", args=[project.slug]))  # sets the CSRF cookie
    token = strict.cookies["csrftoken"].value
    assert strict.post(f"/api/jobs/{job2.pk}/cancel", headers={"X-CSRFToken": token}).status_code == 200


# --- members and invitations ------------------------------------------------------------------------


def test_invite_by_username_accept_and_change_role(as_owner, client, owner, project):
    bob = _user("bob")
    r = as_owner.post(reverse("member_invite", args=[project.slug]), {"who": "bob", "role": "viewer"}, follow=True)
    assert "Invited bob as viewer" in _flash(r)
    assert "bob" in r.content.decode()
    assert not Membership.objects.filter(user=bob).exists()  # not a member until bob accepts

    bob_client = Client()
    bob_client.force_login(bob)
    page = bob_client.get(reverse("projects"))
    assert "Acme" in page.content.decode()
    inv = Invitation.objects.get(user=bob)
    r = bob_client.post(reverse("invitation_answer", args=[inv.pk, "accept"]), follow=True)
    assert "You joined Acme as viewer" in _flash(r)
    member = Membership.objects.get(user=bob, project=project)
    assert member.role == Role.VIEWER

    r = as_owner.post(reverse("member_role", args=[project.slug, member.pk]), {"role": "annotator"}, follow=True)
    assert "bob is now annotator" in _flash(r)
    member.refresh_from_db()
    assert member.role == Role.ANNOTATOR
    actions = list(AuditEvent.objects.filter(project=project).order_by("id").values_list("action", "actor_name", "target"))
    assert actions == [
        ("member.invited", "olga", "bob"),
        ("member.joined", "bob", "bob"),
        ("member.role_changed", "olga", "bob"),
    ]
    assert AuditEvent.objects.get(action="member.role_changed").details == {"old": "viewer", "new": "annotator"}


def test_invite_by_email_reaches_the_account_with_that_address(as_owner, project):
    as_owner.post(reverse("member_invite", args=[project.slug]), {"who": "Dana@Example.org", "role": "member"})
    inv = Invitation.objects.get()
    assert inv.email == "dana@example.org" and inv.user is None
    stranger = _user("eve", email="eve@example.org")
    dana = _user("dana", email="dana@example.org")
    c = Client()
    c.force_login(stranger)
    assert "Acme" not in c.get(reverse("projects")).content.decode()
    assert c.post(reverse("invitation_answer", args=[inv.pk, "accept"])).status_code == 404
    c.force_login(dana)
    assert "Acme" in c.get(reverse("projects")).content.decode()
    c.post(reverse("invitation_answer", args=[inv.pk, "decline"]))
    inv.refresh_from_db()
    assert inv.status == Invitation.Status.DECLINED
    assert not Membership.objects.filter(user=dana).exists()


@pytest.mark.parametrize("who, message", [
    ("nobody-here", "There is no user named 'nobody-here'"),
    ("olga", "olga is already a member of Acme"),
    ("not@an@address", "is not a valid email address"),
    ("", "Enter a username or an email address"),
])
def test_invite_refusals_say_why(as_owner, project, who, message):
    r = as_owner.post(reverse("member_invite", args=[project.slug]), {"who": who, "role": "member"}, follow=True)
    assert message in _flash(r)
    assert not Invitation.objects.exists()


def test_pending_invitation_is_not_sent_twice_and_can_be_cancelled(as_owner, project):
    _user("bob")
    as_owner.post(reverse("member_invite", args=[project.slug]), {"who": "bob", "role": "member"})
    r = as_owner.post(reverse("member_invite", args=[project.slug]), {"who": "bob", "role": "member"}, follow=True)
    assert "already has a pending invitation" in _flash(r)
    inv = Invitation.objects.get()
    as_owner.post(reverse("invitation_cancel", args=[project.slug, inv.pk]))
    inv.refresh_from_db()
    assert inv.status == Invitation.Status.CANCELLED


def test_the_last_owner_stays(as_owner, owner, project):
    mine = Membership.objects.get(user=owner)
    r = as_owner.post(reverse("member_role", args=[project.slug, mine.pk]), {"role": "admin"}, follow=True)
    assert "at least one owner" in _flash(r)
    r = as_owner.post(reverse("member_remove", args=[project.slug, mine.pk]), follow=True)
    assert "cannot remove the last owner" in _flash(r)
    mine.refresh_from_db()
    assert mine.role == Role.OWNER
    # With a second owner, the first may step down.
    second = _user("otto", project, Role.OWNER)
    as_owner.post(reverse("member_role", args=[project.slug, mine.pk]), {"role": "admin"})
    mine.refresh_from_db()
    assert mine.role == Role.ADMIN
    assert Membership.objects.get(user=second).role == Role.OWNER


def test_admins_cannot_touch_owners(client, owner, project):
    admin = _user("ada", project, Role.ADMIN)
    client.force_login(admin)
    mine = Membership.objects.get(user=owner)
    r = client.post(reverse("member_role", args=[project.slug, mine.pk]), {"role": "viewer"}, follow=True)
    assert "Only an owner" in _flash(r)
    r = client.post(reverse("member_remove", args=[project.slug, mine.pk]), follow=True)
    assert "Only an owner can remove an owner" in _flash(r)
    _user("bob")
    r = client.post(reverse("member_invite", args=[project.slug]), {"who": "bob", "role": "owner"}, follow=True)
    assert "Only an owner can invite an owner" in _flash(r)
    assert Membership.objects.get(user=owner).role == Role.OWNER
    assert not Invitation.objects.exists()


def test_unknown_role_is_refused(as_owner, project):
    member = _user("mia", project, Role.MEMBER)
    r = as_owner.post(reverse("member_role", args=[project.slug, member.memberships.get().pk]), {"role": "god"}, follow=True)
    assert "Unknown role 'god'" in _flash(r)


def test_removing_a_member_revokes_their_tokens_and_is_audited(as_owner, project):
    mia = _user("mia", project, Role.MEMBER)
    row, _ = services.create_token(mia, project, "mia's")
    as_owner.post(reverse("member_remove", args=[project.slug, mia.memberships.get().pk]))
    assert not Membership.objects.filter(user=mia).exists()
    row.refresh_from_db()
    assert row.revoked_at is not None
    assert AuditEvent.objects.filter(action="member.removed", target="mia").exists()


def test_members_page_shows_manage_controls_to_managers_only(client, owner, project):
    viewer = _user("vic", project, Role.VIEWER)
    client.force_login(viewer)
    page = client.get(reverse("project_members", args=[project.slug])).content.decode()
    assert "olga" in page and "invite-form" not in page and "Change role" not in page
    client.force_login(owner)
    page = client.get(reverse("project_members", args=[project.slug])).content.decode()
    assert "invite-form" in page and "Change role" in page


# --- audit log -------------------------------------------------------------------------------------


def test_audit_log_for_owners_and_admins_only(client, owner, project):
    services.create_token(owner, project, "cli")
    audit.record(owner, project, "provider.settings_changed", "openai", base_url="http://127.0.0.1:9/v1")
    for role, status in [(Role.ADMIN, 200), (Role.MEMBER, 403), (Role.ANNOTATOR, 403), (Role.VIEWER, 403)]:
        client.force_login(_user(f"u-{role}", project, role))
        assert client.get(reverse("project_audit", args=[project.slug])).status_code == status, role
    client.force_login(owner)
    page = client.get(reverse("project_audit", args=[project.slug])).content.decode()
    assert "token.created" in page and "provider.settings_changed" in page and "base_url: http://127.0.0.1:9/v1" in page
    page = client.get(reverse("project_audit", args=[project.slug]), {"action": "token."}).content.decode()
    assert "token.created" in page and "provider.settings_changed" not in page
    r = client.get(f"/api/projects/{project.slug}/audit")
    assert [e["action"] for e in r.json()] == ["provider.settings_changed", "token.created"]


def test_audit_record_takes_a_request_and_survives_deletions(rf, owner, project):
    request = rf.post("/x", REMOTE_ADDR="203.0.113.9")
    request.user = owner
    event = audit.record(request, project, "export.created", "conversation 7", format="jsonl")
    assert (event.actor, event.ip, event.details) == (owner, "203.0.113.9", {"format": "jsonl"})
    project.delete()
    owner.delete()
    event.refresh_from_db()
    assert (event.project, event.project_name, event.actor, event.actor_name) == (None, "Acme", None, "olga")


# --- projects ----------------------------------------------------------------------------------------


def test_project_list_and_create(as_owner, owner):
    other = make_project("other", name="Other")
    r = as_owner.post(reverse("projects"), {"name": "Research Team"}, follow=True)
    assert "Created Research Team; you are its owner." in _flash(r)
    page = as_owner.get(reverse("projects")).content.decode()
    assert "Acme" in page and "Research Team" in page and other.name not in page
    assert Membership.objects.get(user=owner, project__slug="research-team").role == Role.OWNER
    r = as_owner.post(reverse("projects"), {"name": "  "}, follow=True)
    assert "Give the project a name" in _flash(r)


def test_api_members_invite_and_role_change(client, owner, project):
    _, secret = services.create_token(owner, project, "cli")
    _user("bob")
    r = client.post(f"/api/projects/{project.slug}/invitations", data={"who": "bob", "role": "member"},
                    content_type="application/json", headers=_bearer(secret))
    assert r.status_code == 201 and r.json()["invitee"] == "bob"
    r = client.post(f"/api/projects/{project.slug}/invitations", data={"who": "bob", "role": "member"},
                    content_type="application/json", headers=_bearer(secret))
    assert r.status_code == 400 and "pending invitation" in r.json()["detail"]
    mia = _user("mia", project, Role.MEMBER)
    mid = mia.memberships.get().pk
    r = client.patch(f"/api/projects/{project.slug}/members/{mid}", data={"role": "viewer"},
                     content_type="application/json", headers=_bearer(secret))
    assert r.status_code == 200 and r.json()["role"] == "viewer"
    r = client.get(f"/api/projects/{project.slug}/members", headers=_bearer(secret))
    assert {m["username"]: m["role"] for m in r.json()} == {"mia": "viewer", "olga": "owner"}
    assert client.delete(f"/api/projects/{project.slug}/members/{mid}", headers=_bearer(secret)).status_code == 204
    assert not Membership.objects.filter(user=mia).exists()


# --- invitation links: an invited email address sets a password and is signed in -----------------


def _email_invitation(role="annotator"):
    from contextviewer.accounts import services as account_services
    from contextviewer.accounts.models import Project, Role
    from django.contrib.auth import get_user_model

    project = Project.objects.create(slug="joinme", name="Join Me")
    owner = get_user_model().objects.create_user("olga", password="pw-olga-123")
    project.memberships.create(user=owner, role=Role.OWNER)
    invitation = account_services.invite(project, "New.Person@Example.com", role, by=owner)
    return project, owner, invitation


def test_an_invitation_link_lets_the_invited_person_set_a_password_and_be_signed_in(client):
    from contextviewer.accounts.models import Invitation, Membership
    from django.contrib.auth import get_user_model

    project, owner, invitation = _email_invitation()
    client.force_login(owner)
    members = client.get(reverse("project_members", args=[project.slug])).content.decode()
    link = re.search(r'class="join-link" value="(http://testserver(/join/[^"]+/))"', members)
    assert link, "the members page shows the link to send"
    client.logout()

    path = link.group(2)
    page = client.get(path)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Join Me" in html and "new.person@example.com" in html and 'id="join-form"' in html
    # mismatched passwords: said so, nothing created
    bad = client.post(path, {"username": "newbie", "password1": "long-enough-pw-1", "password2": "other-pw-22"})
    assert bad.status_code == 400 and "The two passwords differ." in bad.content.decode()
    assert not get_user_model().objects.filter(username="newbie").exists()
    taken = client.post(path, {"username": "OLGA", "password1": "long-enough-pw-1", "password2": "long-enough-pw-1"})
    assert taken.status_code == 400 and "is taken" in taken.content.decode()

    done = client.post(path, {"username": "newbie", "password1": "long-enough-pw-1", "password2": "long-enough-pw-1"})
    assert done.status_code == 302
    user = get_user_model().objects.get(username="newbie")
    assert user.email == "new.person@example.com" and user.check_password("long-enough-pw-1")
    assert Membership.objects.get(project=project, user=user).role == "annotator"
    assert Invitation.objects.get(pk=invitation.pk).status == Invitation.Status.ACCEPTED
    # signed in: the index opens, showing the project
    assert client.get(reverse("index")).status_code == 200
    assert client.get(reverse("index")).wsgi_request.user == user
    client.logout()
    # the link works once
    again = client.get(path)
    assert again.status_code == 410 and "the link works once" in again.content.decode()
    # and the password signs in
    assert client.login(username="newbie", password="long-enough-pw-1")


def test_a_forged_or_altered_invitation_link_is_refused_with_the_reason(client):
    from contextviewer.accounts.join import token_for

    _project, _owner, invitation = _email_invitation()
    token = token_for(invitation)
    for bad in (token[:-2] + ("AA" if not token.endswith("AA") else "BB"), "not-a-token"):
        r = client.get(reverse("invitation_join", args=[bad]))
        assert r.status_code == 410 and "not valid" in r.content.decode()
    invitation.status = "cancelled"
    invitation.save()
    r = client.get(reverse("invitation_join", args=[token]))
    assert r.status_code == 410 and "has been cancelled" in r.content.decode()
