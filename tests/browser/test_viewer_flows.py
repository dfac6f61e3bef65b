"""Playwright flows through the viewer in Debian's Chromium: index, search, conversation, unfold an
archived segment, expand a turn, load the rest of a long block, keys. No sleeps: waits are for
the element htmx is expected to bring."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.factories import TextSource, build_conversation, make_project, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

from tests.browser.screenshots import SCREENSHOTS  # noqa: E402


def login(context, live_server, user) -> None:
    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"]
    context.add_cookies([{"name": "sessionid", "value": cookie.value, "url": live_server.url}])


class Watch:
    """Dialogs, console errors and CSP violations seen by a page."""

    def __init__(self, page):
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.add_init_script(
            "window.__csp = [];"
            "document.addEventListener('securitypolicyviolation',"
            " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
        )
        page.on("dialog", self._dialog)
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page = page

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def csp(self) -> list[str]:
        return self.page.evaluate("window.__csp || []")

    def assert_clean(self):
        assert self.dialogs == []
        assert self.errors == []
        assert self.csp() == []


def open_overview(page) -> None:
    """Open the bar the conversation page folds its cards into (gauge, curve, handoff, fold preview)."""
    page.locator("#overview > summary").wait_for()
    if not page.locator("#overview").evaluate("el => el.open"):
        page.locator("#overview > summary").click()
    page.wait_for_function("() => document.getElementById('overview').open")


def wait_for_htmx(page) -> None:
    """Wait until htmx has no request in flight (htmx marks requesting elements)."""
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


@pytest.fixture
def seeded(live_server):
    project = make_project("acme", "Acme backend")
    user = make_user("dana", project=project)
    texts = TextSource(
        title="Fix the flaky parser tests and keep the public API stable",
        user=lambda t: f"Turn {t}: the parser test test_module_{t} fails on empty input; never change the public API.",
    )
    main = build_conversation(project, turns=36, fold_at=100_000, texts=texts, external_id="s-main")
    for i, title in enumerate(["Add retries to the HTTP client", "Profile the import command", "Write the release notes"]):
        build_conversation(project, turns=4 + 3 * i, fold_at=10**9, title=title, subagent_turn=None, external_id=f"s-{i}")
    return {"user": user, "main": main}


def test_viewer_flow(page, live_server, seeded):
    watch = Watch(page)
    login(page.context, live_server, seeded["user"])
    conv = seeded["main"].conversation

    # index
    page.goto(live_server.url + "/")
    page.wait_for_selector("table.conversations")
    assert page.locator("tr.conv-row").count() == 5  # 4 conversations + 1 sub-agent row under its parent
    assert page.locator("tr.conv-row.child").count() == 1
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "index.png"))

    # search (htmx swaps the results in as the user types)
    page.fill("#q", "test_module_7")
    page.wait_for_selector(".hits .hit")
    wait_for_htmx(page)
    hit = page.locator(".hits .hit a").first
    assert "turn 7" in hit.inner_text()
    hit.click()
    page.wait_for_selector("#turn-7")
    assert re.search(r"/c/\d+/\?q=test_module_7&turn=7#m-\d+$", page.url)
    page.wait_for_selector(".hit-current mark.search-hit")  # the match is opened and marked
    watch.assert_clean()

    # conversation page
    page.goto(f"{live_server.url}/c/{conv.id}/")
    page.wait_for_selector("svg.curve", state="attached")
    assert page.locator("details.segment.archived").count() == len(seeded["main"].folds)
    # The transcript first: the cards, Build and export too, are one bar above the turns until
    # opened (issue 22, item 3). In a 1280x800 window the first turn is on the first screen.
    page.set_viewport_size({"width": 1280, "height": 800})
    assert not page.locator("#overview").evaluate("el => el.open")
    assert page.locator("#build").is_hidden()
    assert page.locator("#build-toggle").is_visible()
    segment_head = page.locator("details.segment > summary, section.segment .loaded-head").first
    assert segment_head.bounding_box()["y"] < 400
    first_turn = page.locator("details.turn:visible").first.locator("summary")
    box = first_turn.bounding_box()
    assert box["y"] + box["height"] <= 800, f"the first turn starts {box['y']:.0f} px down"
    page.screenshot(path=str(SCREENSHOTS / "conversation.png"))
    page.set_viewport_size({"width": 1440, "height": 900})
    open_overview(page)
    page.screenshot(path=str(SCREENSHOTS / "conversation-overview.png"))

    # curve hover shows figures
    box = page.locator("svg.curve").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
    page.wait_for_selector(".curve-tip.shown")
    assert "measured" in page.locator(".curve-tip").inner_text()

    # unfold an archived segment: its turns arrive
    first = page.locator("details.segment.archived").first
    first.locator("summary").click()
    first.locator("details.turn").first.wait_for()
    wait_for_htmx(page)
    assert first.locator("details.turn").count() >= 1

    # expand a turn with a long block, then load the rest of it
    turn = page.locator("#turn-2")
    turn.locator("summary").click()
    turn.locator(".message").first.wait_for()
    wait_for_htmx(page)
    assert turn.locator(".tool-name").count() >= 1
    assert "line 200:" not in turn.inner_text()
    turn.locator("a.load-rest").click()
    page.wait_for_function("() => document.querySelector('#turn-2').innerText.includes('line 200:')")
    assert turn.locator("a.load-rest").count() == 0

    # image: click to load, from our own endpoint
    turn3 = page.locator("#turn-3")
    turn3.locator("summary").click()
    turn3.locator("a[data-image]").wait_for()
    turn3.locator("a[data-image]").click()
    page.wait_for_function("() => { const i = document.querySelector('#turn-3 img.loaded-image'); return i && i.complete && i.naturalWidth > 0; }")

    # keys: j/k move, o folds/unfolds, g/G first/last, ? help, / search
    page.locator("body").click(position={"x": 5, "y": 5})
    current = "() => document.querySelector('details.turn.current, details.segment.current').id"
    page.keyboard.press("g")  # the first item: the (open) first archived segment's head
    assert page.evaluate(current) == page.locator("details.segment.archived").first.get_attribute("id")
    page.keyboard.press("j")
    first_turn = page.locator("details.turn").first
    assert "current" in first_turn.get_attribute("class")
    page.keyboard.press("j")
    second_id = page.evaluate(current)
    assert second_id != first_turn.get_attribute("id")
    page.keyboard.press("k")
    assert "current" in first_turn.get_attribute("class")
    page.keyboard.press("j")
    assert page.evaluate(current) == second_id
    second = page.locator(f"#{second_id}")
    was_open = second.evaluate("el => el.open")
    page.keyboard.press("o")
    assert second.evaluate("el => el.open") != was_open
    page.keyboard.press("o")
    assert second.evaluate("el => el.open") == was_open
    third = page.locator("#turn-2")  # a turn of the loaded segment, reached with j (through any archived ones)
    for _ in range(60):
        if page.evaluate(current) == "turn-2":
            break
        page.keyboard.press("j")
        page.wait_for_timeout(60)
    assert page.evaluate(current) == "turn-2"
    if third.evaluate("el => el.open"):
        page.keyboard.press("o")
    page.keyboard.press("Enter")
    third.locator(".message").first.wait_for()
    assert third.evaluate("el => el.open")
    page.keyboard.press("Shift+G")
    page.wait_for_function("() => { const c = document.querySelector('details.turn.current'); const all = document.querySelectorAll('details.turn'); return c && c === all[all.length - 1]; }")
    page.keyboard.press("?")
    page.wait_for_selector("#keys-help[open]")
    page.keyboard.press("Escape")
    page.wait_for_selector("#keys-help:not([open])", state="attached")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement && document.activeElement.id") == "q"

    # scrolling on: the next window of turns arrives when the sentinel is revealed
    watch.assert_clean()


def test_long_loaded_segment_scrolls_in_more_turns(page, live_server):
    project = make_project("big")
    user = make_user("erin", project=project)
    conv = build_conversation(project, turns=120, fold_at=10**9, subagent_turn=None).conversation
    watch = Watch(page)
    login(page.context, live_server, user)
    page.goto(f"{live_server.url}/c/{conv.id}/")
    page.wait_for_selector("details.turn")
    before = page.locator("details.turn").count()
    page.locator(".more-turns.later").scroll_into_view_if_needed()
    page.wait_for_function(f"() => document.querySelectorAll('details.turn').length > {before}")
    page.keyboard.press("Shift+G")  # more turns remain: G follows the last-turn link
    page.wait_for_url(re.compile(r"turn=120#turn-120$"))
    page.wait_for_selector("#turn-120.current")
    watch.assert_clean()
