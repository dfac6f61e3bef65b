"""Playwright: a user who is not staff opens "Change password" from the header, changes their
password, and the login page offers "Forgot your password?"."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.browser.screenshots import shot_path
from tests.browser.test_viewer_flows import Watch, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_user_changes_their_password_from_the_header(page, live_server, tmp_path):
    user = get_user_model().objects.create_user("erin", password="pw-erin-old-1")
    watch = Watch(page)
    login(page.context, live_server, user)
    page.goto(live_server.url + "/projects/")
    page.get_by_role("link", name="Change password").click()
    page.wait_for_selector("h1:has-text('Change your password')")
    page.get_by_label("Current password").fill("pw-erin-old-1")
    page.get_by_label("New password", exact=True).fill("pw-erin-new-2")
    page.get_by_label("New password again").fill("pw-erin-new-2")
    page.screenshot(path=str(shot_path("password-change.png", tmp_path)))
    page.get_by_role("button", name="Change password").click()
    page.wait_for_selector("h1:has-text('Password changed')")
    user.refresh_from_db()
    assert user.check_password("pw-erin-new-2")

    page.get_by_role("button", name="Log out").click()
    page.wait_for_selector("h1:has-text('Log in')")
    page.get_by_role("link", name="Forgot your password?").click()
    page.wait_for_selector("h1:has-text('Reset your password')")
    watch.assert_clean()
