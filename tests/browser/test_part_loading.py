"""Parts of the conversation page that load when opened: a turn opened before htmx has processed it
still loads, and a part that fails to load says so in place and loads on "Try again"."""

from __future__ import annotations

import pytest

from tests.browser.screenshots import shot_path
from tests.browser.test_viewer_flows import Watch, login, wait_for_htmx
from tests.factories import build_conversation, make_project, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def long_conversation(live_server):
    project = make_project("loads", "Loads")
    user = make_user("lee", project=project)
    # 40 turns, no fold: the first window shows 25 turn headers and a "More turns" row.
    built = build_conversation(project, turns=40, fold_at=10**9, subagent_turn=None, image_turn=None)
    return user, built.conversation


def test_a_turn_opened_before_htmx_processed_it_still_loads(page, live_server, long_conversation):
    user, conv = long_conversation
    watch = Watch(page)
    login(page.context, live_server, user)
    page.goto(f"{live_server.url}/c/{conv.id}/")
    page.wait_for_selector("details.turn")
    before = page.locator("details.turn").count()
    # htmx processes swapped-in elements only after its settle delay (20 ms by default): made long
    # here, the turns "More turns" brings in are on the page, not listened to, for 10 s.
    page.evaluate("htmx.config.defaultSettleDelay = 10000")
    page.locator(".more-turns.later").first.scroll_into_view_if_needed()
    page.wait_for_function(f"() => document.querySelectorAll('details.turn').length > {before}")
    last = page.locator("details.turn").last
    turn_no = last.get_attribute("data-turn")
    last.evaluate("d => { d.open = true; }")  # opened as a quick key or a script would, at once
    # Loaded well before htmx would have listened (10 s): the page asked for it itself.
    page.wait_for_function(
        f"() => !document.querySelector('#turn-{turn_no} .turn-body > a.load-link')"
        f" && document.querySelector('#turn-{turn_no} .turn-body .message')",
        timeout=8000,
    )
    page.evaluate("htmx.config.defaultSettleDelay = 20")
    watch.assert_clean()


def test_a_turn_that_fails_to_load_says_so_and_loads_on_try_again(page, live_server, long_conversation, tmp_path):
    user, conv = long_conversation
    login(page.context, live_server, user)
    page.goto(f"{live_server.url}/c/{conv.id}/")
    page.wait_for_selector("#turn-3")
    url = f"**/c/{conv.id}/turns/3/**"
    page.route(url, lambda route: route.fulfill(status=500, body="planted failure"))
    page.locator("#turn-3 > summary .turn-no").click()
    error = page.locator("#turn-3 .turn-body .load-error")
    error.wait_for()
    assert "did not load (the server answered 500" in error.inner_text()
    assert error.get_attribute("role") == "alert"
    page.locator("#turn-3").screenshot(path=str(shot_path("turn-load-error.png", tmp_path)))
    page.unroute(url)
    error.locator("button", has_text="Try again").click()
    page.wait_for_function("() => !document.querySelector('#turn-3 .turn-body > a.load-link')")
    wait_for_htmx(page)
    assert page.locator("#turn-3 .turn-body .load-error").count() == 0
    assert page.locator("#turn-3 .turn-body").inner_text().strip()
