"""Playwright: an owner invites a user, the user accepts, the owner changes their role; API token
created and shown once; the audit log lists it all."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from contextviewer.accounts.models import ApiToken, Membership, Role
from tests.browser.test_viewer_flows import SCREENSHOTS, Watch, login
from tests.factories import make_project

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_owner_invites_user_who_accepts_then_owner_changes_role(page, browser, live_server):
    project = make_project("acme", name="Acme")
    User = get_user_model()
    owner = User.objects.create_user("olga")
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    bob = User.objects.create_user("bob", email="bob@example.org")
    watch = Watch(page)
    login(page.context, live_server, owner)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    # The project list leads to the members page.
    page.goto(live_server.url + "/")
    page.get_by_role("link", name="Projects").click()
    page.wait_for_selector("table.projects")
    page.locator("table.projects").get_by_role("link", name="Members").click()
    page.wait_for_selector("#invite-form")

    # Invite bob as a viewer.
    page.fill("#invite-form input[name=who]", "bob")
    page.select_option("#invite-form select[name=role]", "viewer")
    page.locator("#invite-form button[type=submit]").click()
    page.wait_for_selector("ul.flash li")
    assert "Invited bob as viewer" in page.locator("ul.flash").inner_text()
    assert "bob" in page.locator("#pending").inner_text()

    # Bob, in his own browser context, accepts on his Projects page.
    bob_context = browser.new_context(viewport={"width": 1200, "height": 700})
    login(bob_context, live_server, bob)
    bob_page = bob_context.new_page()
    bob_watch = Watch(bob_page)
    bob_page.goto(live_server.url + "/projects/")
    bob_page.wait_for_selector("#invitations")
    assert "Acme" in bob_page.locator("#invitations").inner_text()
    bob_page.screenshot(path=str(SCREENSHOTS / "accounts-invitation.png"))
    bob_page.locator("#invitations").get_by_role("button", name="Accept").click()
    bob_page.wait_for_selector("ul.flash li")
    assert "You joined Acme as viewer" in bob_page.locator("ul.flash").inner_text()
    assert "viewer" in bob_page.locator("table.projects").inner_text()
    bob_watch.assert_clean()
    bob_context.close()

    # The owner sees bob as a member and makes him an annotator.
    page.reload()
    row = page.locator("#member-bob")
    assert row.locator("select[name=role]").input_value() == "viewer"
    row.locator("select[name=role]").select_option("annotator")
    row.get_by_role("button", name="Change role").click()
    page.wait_for_selector("ul.flash li")
    assert "bob is now annotator" in page.locator("ul.flash").inner_text()
    assert page.locator("#member-bob select[name=role]").input_value() == "annotator"
    assert Membership.objects.get(user=bob, project=project).role == Role.ANNOTATOR
    page.screenshot(path=str(SCREENSHOTS / "accounts-members.png"), full_page=True)

    # An API token: the secret is shown once.
    page.get_by_role("link", name="API tokens").click()
    page.fill("#token-form input[name=name]", "CI upload")
    page.locator("#token-form button[type=submit]").click()
    page.wait_for_selector("#new-token")
    secret = page.locator("#new-token-secret").input_value()
    token = ApiToken.objects.get(name="CI upload")
    assert secret.startswith(token.prefix + "_")
    assert token.prefix in page.locator("#tokens").inner_text()
    page.screenshot(path=str(SCREENSHOTS / "accounts-tokens.png"), full_page=True)
    page.goto(live_server.url + f"/projects/{project.slug}/tokens/")
    assert page.locator("#new-token").count() == 0
    assert secret not in page.content()

    # The audit log lists the invitation, the join, the role change and the token.
    page.get_by_role("link", name="Audit log").click()
    page.wait_for_selector("#audit")
    log = page.locator("#audit").inner_text()
    for action in ("member.invited", "member.joined", "member.role_changed", "token.created"):
        assert action in log
    page.screenshot(path=str(SCREENSHOTS / "accounts-audit.png"), full_page=True)
    watch.assert_clean()
