"""Hostile corpora rendered in Chromium: every line of ../shared/payloads (XSS lists and the big
list of naughty strings) as user text, tool input, tool output, file name, title and summary.
0 dialogs, 0 console errors, 0 CSP violations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings

from contextviewer.conversations.models import Conversation
from tests.browser.test_viewer_flows import Watch, login, open_overview, wait_for_htmx
from tests.factories import TextSource, build_conversation, make_project, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAYLOADS = Path(settings.FIXTURES_DIR).parent / "payloads"
CHUNK = 60


def payload_lines() -> list[str]:
    if not PAYLOADS.is_dir():
        pytest.skip(f"payload corpora not found at {PAYLOADS}")
    lines: list[str] = []
    for path in sorted(PAYLOADS.glob("*.txt")):
        lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    lines += json.loads((PAYLOADS / "blns.json").read_text(encoding="utf-8"))
    lines = [line.replace("\x00", "") for line in dict.fromkeys(lines) if line.strip()]
    assert len(lines) > 1500
    return lines


def test_payload_session_renders_without_dialogs_errors_or_csp_violations(page, live_server):
    lines = payload_lines()
    chunks = [lines[i : i + CHUNK] for i in range(0, len(lines), CHUNK)]

    def chunk(t: int) -> list[str]:
        return chunks[(t - 1) % len(chunks)]

    texts = TextSource(
        user=lambda t: "\n".join(chunk(t)),
        thinking=lambda t: "\n".join(chunk(t)),
        tool_input=lambda t: {"command": "\n".join(chunk(t)), "file_path": chunk(t)[0]},
        tool_output=lambda t: "\n".join(chunk(t)),
        answer=lambda t: "\n\n".join(chunk(t)),
        file_name=lambda t: " ".join(chunk(t)),
        summary=lambda k: "\n".join(chunk(k)),
        title=lines[0][:500],
    )
    project = make_project("payloads", "<img src=x onerror=alert('project')>")
    user = make_user("<svg onload=alert(1)>", project=project)
    built = build_conversation(project, turns=len(chunks), fold_at=40_000, per_turn_tokens=9_000, texts=texts)
    conv = built.conversation
    # every line as a title, too: one small conversation per line, listed on the index pages
    Conversation.objects.bulk_create(
        [Conversation(project=project, external_id=f"title-{i}", title=line[:500]) for i, line in enumerate(lines)]
    )

    watch = Watch(page)
    login(page.context, live_server, user)

    page.goto(f"{live_server.url}/c/{conv.id}/")
    open_overview(page)
    page.wait_for_selector("svg.curve")
    # unfold every archived segment, then every turn, then every clipped block
    # (opened as a click on the disclosure would, without landing on the row's "use summary" box)
    assert page.locator("details.segment.archived").count() >= 2
    page.evaluate("() => document.querySelectorAll('details.segment.archived').forEach(d => { d.open = true; })")
    # every turn of the payload session loads at once: slow on a loaded machine; a part that fails to
    # load says so (.load-error) and ends the wait
    page.wait_for_function("() => !document.querySelector('details.segment.archived .segment-turns > a.load-link, details.segment.archived .segment-body > a.load-link') || document.querySelector('.load-error')", timeout=300_000)
    assert not page.locator(".load-error").count(), page.locator(".load-error").first.inner_text()
    wait_for_htmx(page)
    # the loaded segment: scroll until every turn is in
    while page.locator(".more-turns.later").count():
        page.locator(".more-turns.later").first.scroll_into_view_if_needed()
        wait_for_htmx(page)
    total = page.locator("details.turn").count()
    assert total >= len(chunks)
    page.evaluate("() => document.querySelectorAll('details.turn').forEach(d => { d.open = true; })")
    page.wait_for_function("() => !document.querySelector('details.turn .turn-body > a.load-link') || document.querySelector('.load-error')", timeout=300_000)
    assert not page.locator(".load-error").count(), page.locator(".load-error").first.inner_text()
    wait_for_htmx(page)
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    rest = page.locator("a.load-rest")
    while rest.count():
        rest.first.click()
        wait_for_htmx(page)
    for image in page.locator("a[data-image]").all():
        image.click()
    # hover over the curve and open the keys help
    box = page.locator("svg.curve").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 3, box["y"] + box["height"] / 2)
    page.keyboard.press("?")
    page.wait_for_selector("#keys-help[open]")
    watch.assert_clean()

    # full pages of a few turns (no htmx), the sub-agent, the index pages and a search
    for t in (1, 2, len(chunks)):
        page.goto(f"{live_server.url}/c/{conv.id}/turns/{t}/")
        page.wait_for_selector(".turn-page")
    page.goto(f"{live_server.url}/c/{built.child.id}/")
    page.wait_for_selector(".segment.loaded")
    pages = (len(lines) + 1) // 50 + 1
    for n in range(1, pages + 1):
        page.goto(f"{live_server.url}/?page={n}")
        page.wait_for_selector("table.conversations")
    for q in ("alert", "script onerror", "javascript", "<svg"):
        page.goto(f"{live_server.url}/?q={q}")
        page.wait_for_selector("#results")
    watch.assert_clean()
