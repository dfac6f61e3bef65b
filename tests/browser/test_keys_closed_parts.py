"""Keys on parts of the conversation page that are closed when the key is pressed (issue 36, item 7):
`h` with the bar closed asks for the handoff as it does with the bar open, and the first `j` on a
page whose first segment is archived (and closed) enters that segment's first turn."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import build_conversation, make_project, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CURRENT = "() => { const c = document.querySelector('details.turn.current, details.segment.current'); return c && c.id; }"


@pytest.fixture
def folded(page, live_server):
    project = make_project("keys-closed")
    user = make_user("kai", project=project)
    conv = build_conversation(project, turns=14, fold_at=60_000, subagent_turn=None).conversation
    login(page.context, live_server, user)
    page.goto(f"{live_server.url}/c/{conv.pk}/")
    page.locator("body").click(position={"x": 5, "y": 5})
    return conv


def test_h_with_the_bar_closed_opens_it_and_asks_for_the_handoff(page, live_server, folded):
    watch = Watch(page)
    overview = page.locator("#overview")
    assert not overview.evaluate("el => el.open")  # the bar is closed on a first visit

    page.keyboard.press("h")
    expect(page.locator("#handoff-confirm")).to_be_visible()
    assert overview.evaluate("el => el.open")
    page.screenshot(path=str(SCREENSHOTS / "key-h-bar-closed.png"), full_page=False)
    page.keyboard.press("Escape")  # nothing starts
    expect(page.locator("#handoff-confirm")).to_be_hidden()
    assert page.locator("#handoff-status .error, #handoff-status .job-status").count() == 0
    watch.assert_clean()


def test_the_first_j_enters_the_first_turn_of_a_closed_archived_first_segment(page, live_server, folded):
    watch = Watch(page)
    first_segment = page.locator("#segments > details.segment.archived").first
    assert not first_segment.evaluate("el => el.open")
    first_turn_id = None

    page.keyboard.press("j")
    page.wait_for_function("() => { const c = document.querySelector('details.turn.current'); return c && c.closest('details.segment.archived'); }")
    assert first_segment.evaluate("el => el.open")
    first_turn_id = first_segment.locator("details.turn").first.get_attribute("id")
    assert page.evaluate(CURRENT) == first_turn_id  # its first turn, not its closed head
    expect(page.locator(f"#{first_turn_id}")).to_be_in_viewport()
    page.keyboard.press("k")  # back to the segment's head
    assert page.evaluate(CURRENT) == first_segment.get_attribute("id")
    watch.assert_clean()
