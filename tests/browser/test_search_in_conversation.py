"""Search inside a conversation in Chromium: matches marked, n / N step through them, the matching
message opened (its turn loaded, the rest of a long block loaded) and scrolled to."""

import re

import pytest

from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import TextSource, build_conversation, make_project, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _long_output(t: int) -> str:
    lines = [f"line {i}: " + "x" * 60 for i in range(400)]
    if t == 4:
        lines[200] = "line 200: the quetzal hides in the middle"
    return "\n".join(lines)


def test_search_in_a_conversation_marks_and_steps_through_matches(page, live_server):
    project = make_project("search")
    user = make_user("sam", project=project)
    texts = TextSource(
        user=lambda t: f"Turn {t}: where is the quetzal today?" if t in (3, 35) else f"Turn {t}: fix module_{t}",
        tool_output=lambda t: _long_output(t) if t == 4 else f"{t} passed",
    )
    conv = build_conversation(
        project, turns=40, fold_at=10**9, texts=texts, subagent_turn=None, long_block_turn=None, image_turn=None
    ).conversation
    watch = Watch(page)
    login(page.context, live_server, user)
    page.goto(f"{live_server.url}/c/{conv.id}/")
    page.fill("#q", "quetzal")
    page.press("#q", "Enter")
    page.wait_for_selector("#conv-hits")
    assert "3 messages in this conversation match" in page.locator("#conv-hits h2").inner_text()

    # the first match: its turn opened, the word marked, scrolled to
    page.wait_for_selector("#turn-3 .hit-current mark.search-hit")
    assert page.locator("#turn-3").evaluate("el => el.open")
    assert page.locator("#turn-3 mark.search-hit").first.inner_text().lower() == "quetzal"
    assert "match 1 of 3" in page.locator(".hit-position").inner_text()
    assert page.locator("#turn-3 .hit-current").first.is_visible()

    # n: the match in the hidden middle of turn 4's long tool output: the rest is loaded and marked
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("n")
    page.wait_for_selector("#turn-4 .hit-current mark.search-hit")
    marked = page.locator("#turn-4 mark.search-hit").first
    assert marked.is_visible()
    assert "match 2 of 3" in page.locator(".hit-position").inner_text()
    assert page.locator("#turn-4 .hit-current a.load-rest").count() == 0
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "search-in-conversation.png"))

    # n: turn 35 is beyond the page's first window of turns: the page that opens it
    page.keyboard.press("n")
    page.wait_for_url(re.compile(r"\?q=quetzal&turn=35#m-\d+$"))
    page.wait_for_selector("#turn-35 .hit-current mark.search-hit")
    assert "match 3 of 3" in page.locator(".hit-position").inner_text()

    # N: back to the second match
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("Shift+N")
    page.wait_for_selector("#turn-4 .hit-current mark.search-hit")
    assert "match 2 of 3" in page.locator(".hit-position").inner_text()
    watch.assert_clean()
