"""The context curve in Chromium on a real Claude Code session with a compaction: the growth per
turn and the turns left to 90 %, turn labels under the axis, a legend that says what the estimated
line is, and a hover tooltip that stays inside the chart at its right edge (issue 22, item 2).
Saves var/screenshots/curve.png (bin/screenshots: docs/screenshots/curve.png)."""

from __future__ import annotations

import pytest

from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login, open_overview
from tests.factories import make_project, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REAL = "claude-code/marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


def test_the_curve_has_figures_axes_and_a_tooltip_inside(page, live_server, fixtures_dir):
    project = make_project("curve")
    user = make_user("curve-viewer", project=project)
    ingest.import_path(project, fixtures_dir / REAL)
    conv = Conversation.objects.get(project=project, parent__isnull=True, external_id__startswith="4d5611e5")
    login(page.context, live_server, user)
    watch = Watch(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/c/{conv.pk}/")
    open_overview(page)
    card = page.locator("#curve-card")
    figures = card.locator("#curve-figures").inner_text()
    assert "tokens per turn" in figures and "% of the window" in figures
    labels = card.locator("svg.curve text.x-label").evaluate_all("els => els.map(e => e.textContent)")
    assert 2 <= len(labels) <= 6 and all(label.startswith("turn ") for label in labels)
    assert "no system prompt or tool definitions" in card.locator(".legend-line").inner_text()

    svg = card.locator("svg.curve")
    box = svg.bounding_box()
    page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] / 2)  # the right edge
    tip = card.locator(".curve-tip")
    assert "measured" in tip.inner_text()
    tip_box, wrap_box = tip.bounding_box(), card.locator(".curve-wrap").bounding_box()
    assert tip_box["x"] >= wrap_box["x"] - 1 and tip_box["x"] + tip_box["width"] <= wrap_box["x"] + wrap_box["width"] + 1
    assert tip.inner_text().startswith("call 139 · ")  # the last call, at the right edge
    card.scroll_into_view_if_needed()
    card.screenshot(path=str(SCREENSHOTS / "curve.png"))

    # A click opens what that call carried (issue 33, item 4): the page of call 139's window.
    box = svg.bounding_box()
    page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] / 2)
    page.mouse.click(box["x"] + box["width"] - 3, box["y"] + box["height"] / 2)
    page.wait_for_url(f"**/c/{conv.pk}/calls/139/window/")
    assert page.locator("h1").inner_text() == "What call 139 of 139 carried"
    items = page.locator("ol.window-items > li.window-item")
    assert items.count() > 10 and items.first.locator(".kind").inner_text() == "summary"
    page.screenshot(path=str(SCREENSHOTS / "call-window.png"))
    watch.assert_clean()


LONG_TURN = "claude-code/marot__spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"


def test_one_long_turn_after_the_fold_grows_per_call(page, live_server, fixtures_dir):
    """Issue 36, item 5: after its compaction this session is one long turn (turn 4, 79 calls, 45k
    to 102k), where the page said "fewer than two turns" and "not growing". Per call, checked by hand
    on the stored calls (python manage.py shell: segments.call_points of the conversation, the run
    after core.curve.drops' last index): the last 11 calls hold 99,054 ... 102,168 tokens, so the
    last 10 calls grew by 3,114 tokens, 311.4 a call. The window is 200,000: claude-opus-4-6 has 1M
    by the API, but Claude Code ran it in 200k (the session folded at 167k by compactMetadata.preTokens,
    and never passed 200k), though its last model is a haiku sub-call's. 90 % is 180,000: 77,832 to go
    at 311.4 a call is 249.9, so 250 calls."""
    project = make_project("curve-calls")
    user = make_user("curve-calls-viewer", project=project)
    ingest.import_path(project, fixtures_dir / LONG_TURN)
    conv = Conversation.objects.get(project=project, parent__isnull=True, external_id__startswith="ae4a77f8")
    login(page.context, live_server, user)
    watch = Watch(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/c/{conv.pk}/")
    open_overview(page)
    card = page.locator("#curve-card")
    figures = " ".join(card.locator("#curve-figures").inner_text().split())
    assert "+311 tokens per call (last 10 calls; fewer than two turns since the last fold)" in figures
    assert "about 250 calls until 90 % of the window" in figures
    assert "not growing" not in figures and "per turn" not in figures
    assert "200k" in " ".join(card.inner_text().split()) and "1.0M" not in card.inner_text()
    bar = " ".join(page.locator("#overview-bar").inner_text().split())  # the bar says the same, per call
    assert "+311 per call" in bar and "~250 calls to 90 %" in bar and "per turn" not in bar
    card.scroll_into_view_if_needed()
    card.screenshot(path=str(SCREENSHOTS / "curve-per-call.png"))
    watch.assert_clean()
