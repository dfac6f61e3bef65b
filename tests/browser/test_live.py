"""A session an agent is writing, in Chromium: the watcher imports what is appended to its file and
the open conversation page shows the new turn, with the gauge and curve moved, without a reload.
No sleeps: the waits are for the database state or the element htmx is expected to bring."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login, open_overview
from tests.sessions import SESSION, SessionBuilder
from tests.watcher import WatchProcess
from tests.worker import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def append(path, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")
            fh.flush()


@pytest.fixture
def watched(live_server, tmp_path):
    from contextviewer.accounts.services import get_or_create_project
    from tests.factories import make_user

    project = get_or_create_project("Live sessions")
    user = make_user("lena", project=project)
    folder = tmp_path / "projects" / "-home-dev-project"
    folder.mkdir(parents=True)
    w = WatchProcess(folder.parent, project=project.name)
    yield {"user": user, "folder": folder, "project": project}
    w.stop()


def test_a_turn_appended_to_a_watched_session_appears_on_the_open_page(page, live_server, watched):
    from contextviewer.conversations.models import Conversation

    path = watched["folder"] / f"{SESSION}.jsonl"
    b = SessionBuilder()
    append(path, b.turn(1) + b.turn(2))  # 2 turns: 10 lines, 4 model calls
    conv = wait_for(lambda: Conversation.objects.filter(external_id=SESSION, message_count=10, live_until__isnull=False).first(),
                    timeout=60, message="the watcher to import the session")

    watch = Watch(page)
    login(page.context, live_server, watched["user"])
    page.goto(f"{live_server.url}/")
    expect(page.locator("tr", has_text="Step 1").locator(".badge.live")).to_be_visible()
    page.goto(f"{live_server.url}/c/{conv.pk}/")
    open_overview(page)
    expect(page.locator("#live-badge")).to_be_visible()
    expect(page.locator("#curve-card")).to_contain_text("4 calls")
    turns = page.locator("section.segment.loaded details.turn")
    expect(turns).to_have_count(2)
    gauge_before = page.locator("#gauge-card .gauge-figures").inner_text()
    page.evaluate("window.__same_page = true")  # gone if the page reloads

    append(path, b.turn(3))  # the agent goes on: a third turn, two more model calls
    new_turn = turns.filter(has_text="Step 3: please fix the failing test in src/app_3.py")
    expect(new_turn).to_be_visible(timeout=30_000)
    expect(turns).to_have_count(3)
    expect(page.locator("#curve-card")).to_contain_text("6 calls")
    expect(page.locator("#header-counts")).to_contain_text("6 model calls")  # the header follows (issue 22, item 7)
    expect(page.locator("#gauge-card .gauge-figures")).not_to_have_text(gauge_before)
    expect(page.locator("#overview-bar")).to_contain_text("6 calls")  # and the bar (issue 36, item 1)
    assert_bar_agrees_with_the_cards(page)
    assert page.evaluate("window.__same_page === true")

    # The new turn works like the others: it opens onto its messages.
    new_turn.locator("summary").click()
    # 5 lines: the user's request, the reply and its Bash call (2 records of one response, one
    # box), the result (shown under its call), the last reply: 3 message boxes.
    expect(new_turn.locator(".turn-body .message")).to_have_count(3)
    expect(new_turn.locator(".turn-body .tool-result")).to_contain_text("1 failed, 3 passed")

    # The open last turn grows: its new message is added to it, and its figures follow.
    append(path, b.assistant("Done: the whole suite passes now."))
    expect(new_turn.locator(".turn-body .message")).to_have_count(4, timeout=30_000)
    expect(new_turn.locator(".turn-body .message").last).to_contain_text("Done: the whole suite passes now.")
    expect(new_turn.locator(".turn-stats")).to_contain_text("6 msg")
    expect(turns).to_have_count(3)
    expect(page.locator("#curve-card")).to_contain_text("7 calls")
    expect(page.locator("#overview-bar")).to_contain_text("7 calls")
    assert page.evaluate("window.__same_page === true")
    watch.assert_clean()


def assert_bar_agrees_with_the_cards(page) -> None:
    """The bar's figures are the gauge's and the curve's (what a closed bar shows of them)."""
    bar = page.locator("#overview-bar")
    # (text_content: a closed bar's cards are not rendered, their text is still there)
    assert bar.locator(".sev-text").text_content().strip() == page.locator("#gauge-card .gauge-figures strong").text_content().strip()
    calls = page.locator("#header-counts").inner_text().split(" model calls")[0].split()[-1]
    expect(bar).to_contain_text(f"{calls} calls")


def test_a_page_opened_while_the_session_is_idle_follows_it_when_the_agent_goes_on(page, live_server, watched):
    """Issue 36, item 1: a page opened between two turns of the agent stayed as it was. It looks
    every 20 s (docs/viewing.md); once the watcher has imported the new lines, the next look brings
    them, with the header, the bar (closed), the gauge and the curve."""
    from datetime import timedelta

    from django.utils import timezone

    from contextviewer.conversations.models import Conversation

    path = watched["folder"] / f"{SESSION}.jsonl"
    b = SessionBuilder()
    append(path, b.turn(1) + b.turn(2))
    conv = wait_for(lambda: Conversation.objects.filter(external_id=SESSION, message_count=10, live_until__isnull=False).first(),
                    timeout=60, message="the watcher to import the session")
    # The agent has been quiet for longer than the live window: the conversation is idle.
    Conversation.objects.filter(pk=conv.pk).update(live_until=timezone.now() - timedelta(minutes=1))

    watch = Watch(page)
    login(page.context, live_server, watched["user"])
    page.goto(f"{live_server.url}/c/{conv.pk}/")
    expect(page.locator("#live-badge")).to_have_count(0)
    expect(page.locator("#live-poll")).to_contain_text("looks every 20 s")
    assert not page.locator("#overview").evaluate("el => el.open")  # the bar stays closed throughout
    expect(page.locator("#overview-bar")).to_contain_text("4 calls")
    turns = page.locator("section.segment.loaded details.turn")
    expect(turns).to_have_count(2)
    bar_before = page.locator("#overview-bar .sev-text").inner_text()
    page.evaluate("window.__same_page = true")

    append(path, b.turn(3) + b.turn(4))  # the agent goes on: two more turns, four more model calls
    wait_for(lambda: Conversation.objects.filter(pk=conv.pk, message_count=20).exists(), timeout=60,
             message="the watcher to import the new lines")
    # Within the documented 20 s (and a second for the request) of the import.
    expect(turns.filter(has_text="Step 4: please fix the failing test in src/app_4.py")).to_be_visible(timeout=21_000)
    expect(turns).to_have_count(4)
    expect(page.locator("#live-badge")).to_be_visible()  # the watcher marked it live again
    expect(page.locator("#live-poll")).to_contain_text("Following the session")
    expect(page.locator("#header-counts")).to_contain_text("8 model calls")
    expect(page.locator("#overview-bar")).to_contain_text("8 calls")
    expect(page.locator("#overview-bar .sev-text")).not_to_have_text(bar_before)
    assert_bar_agrees_with_the_cards(page)
    expect(page.locator("#loaded-range")).to_have_text("turns 0–3 (4)")  # the loaded segment's head
    expect(page.locator("#last-turn-link")).to_have_attribute("href", "?turn=3#turn-3")
    assert not page.locator("#overview").evaluate("el => el.open")
    page.screenshot(path=str(SCREENSHOTS / "live-idle-page-follows.png"), full_page=False)
    assert page.evaluate("window.__same_page === true")
    watch.assert_clean()
