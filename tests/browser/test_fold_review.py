"""Playwright: the fold page leads with what the conversation needed again after the fold, keeps
the background closed, and a fact's link opens the conversation at its turn. No sleeps."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.screenshots import shot_path
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import make_project, make_user
from tests.integration.review.test_probe_continuation import CWD, LOST, _lost_and_read_again

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_fold_page_shows_what_was_needed_again_and_links_to_the_message(page, live_server, tmp_path):
    project = make_project("acme", "Acme backend")
    owner = make_user("olivia", project=project)
    conv, fold, at = _lost_and_read_again(project)
    watch = Watch(page)
    login(page.context, live_server, owner)
    page.goto(f"{live_server.url}/review/folds/{fold.pk}/")

    needed = page.locator("ul.needed-again li.fact")
    expect(needed).to_have_count(1)
    expect(needed).to_contain_text(f"{CWD}/{LOST}")
    expect(page.locator("ul.reread-after")).to_contain_text(LOST)
    expect(page.locator("#calls-before-edit")).to_have_text("1 tool call before the first edit")
    expect(page.locator("#anticipated")).to_contain_text(re.compile(r"anticipated: \d+ of \d+ first actions"))
    background = page.locator("details#background")
    expect(background).to_be_visible()
    assert background.evaluate("el => el.open") is False  # closed until asked for
    expect(background.locator("li.fact")).to_be_hidden()
    page.screenshot(path=str(shot_path("fold-review.png", tmp_path)), full_page=True)

    needed.get_by_role("link").click()
    page.wait_for_url(re.compile(rf"/c/{conv.pk}/\?turn=0#m-{at['first_read'].pk}$"))
    expect(page.locator("#turn-0")).to_be_visible()
    # The link lands on the message itself: its turn opened, the message loaded, marked and in view.
    message = page.locator(f"#m-{at['first_read'].pk}")
    expect(message).to_have_class(re.compile(r"\blinked\b"))
    expect(message).to_be_in_viewport()
    watch.assert_clean()
