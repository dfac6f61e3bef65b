"""Playwright: a review item page reads like the conversation page (issue 22, item 5): the summary
rendered from Markdown, the archived turns with the conversation's tool views, the scores under
their labels once in, and a blind item that names the pending item hiding the probes. No sleeps."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from contextviewer.accounts.models import Role
from contextviewer.conversations import segments
from contextviewer.jobs import queue as jobs
from contextviewer.review import alternatives, queues
from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import make_project, make_user
from tests.integration.review.test_review_pages_render import _import

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def compacted(live_server, tmp_path):
    project = make_project("acme", "Acme backend")
    owner = make_user("olivia", project=project)
    annotator = make_user("anna", "pw-anna-123", project=project, role=Role.ANNOTATOR)
    conv = _import(project, tmp_path)
    original = segments.segment_folds(conv)[0]
    jobs.run(alternatives.start(original, provider="builtin", enqueue=False).pk)
    return {"project": project, "owner": owner, "annotator": annotator, "conv": conv, "original": original}


def test_a_review_item_renders_summary_turns_and_labelled_scores(page, live_server, compacted):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    original = compacted["original"]
    queue = queues.create_queue(compacted["project"], "Rendered", {"origin": "imported"}, reviewers=[compacted["annotator"]])
    item = queue.items.get(fold=original)
    watch = Watch(page)
    login(page.context, live_server, compacted["annotator"])
    page.goto(f"{live_server.url}/review/items/{item.pk}/")
    summary = page.locator(".summary-col .summary-text")
    expect(summary.locator("strong", has_text="fix the failing tests")).to_be_visible()
    expect(summary).not_to_contain_text("**")
    segment = page.locator(".segment-col")
    expect(segment.locator(".tool-view.tool-bash")).to_have_count(3)
    expect(segment.locator(".bash-command").first).to_contain_text("pytest tests/test_0.py")
    expect(segment.locator(".md strong", has_text="all three")).to_be_visible()
    expect(segment).not_to_contain_text('{"command"')
    page.screenshot(path=str(SCREENSHOTS / "review-item-rendered.png"), full_page=False)

    page.keyboard.press("4")
    page.keyboard.press("y")
    page.keyboard.press("s")
    expect(page.get_by_text("Nothing left for you in Rendered")).to_be_visible()
    page.goto(f"{live_server.url}/review/items/{item.pk}/")
    expect(page.locator("#score")).to_contain_text("Fidelity: 4/5")
    expect(page.locator("#score")).to_contain_text("Lost a load-bearing detail: yes")
    expect(page.locator("#score")).not_to_contain_text("lost_detail")
    watch.assert_clean()


def test_a_blind_item_names_the_pending_item_and_hides_the_harness(page, live_server, compacted):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    original = compacted["original"]
    queue = queues.create_queue(compacted["project"], "Blind", {}, blind=True, reviewers=[compacted["annotator"]])
    first = queue.items.order_by("order", "pk").first()
    other = queue.items.exclude(pk=first.pk).get()
    watch = Watch(page)
    login(page.context, live_server, compacted["annotator"])
    page.goto(f"{live_server.url}/review/items/{first.pk}/")
    expect(page.locator("#blind-note")).to_be_visible()
    expect(page.locator(".summary-col")).not_to_contain_text("This session is being continued")
    expect(page.locator(".summary-col")).not_to_contain_text("Please continue the conversation")
    page.keyboard.press("3")
    page.keyboard.press("n")
    page.keyboard.press("s")
    page.wait_for_url(f"**/review/items/{other.pk}/")
    page.goto(f"{live_server.url}/review/items/{first.pk}/")
    notice = page.locator(".facts-col .hidden-notice")
    expect(notice).to_contain_text("Hidden until you score the other summary of this segment")
    page.screenshot(path=str(SCREENSHOTS / "review-item-blind-pending.png"), full_page=False)
    notice.get_by_role("link", name=f"Blind, item {other.order + 1}").click()
    page.wait_for_url(f"**/review/items/{other.pk}/")
    expect(page.locator("#score-form")).to_be_visible()
    watch.assert_clean()
    assert original.pk in {first.fold_id, other.fold_id}
