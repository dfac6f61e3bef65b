"""Playwright: summarize a fold again from the conversation page (a real worker runs the job), make
a blind pairwise queue of the two summaries, vote without seeing where they came from, then see
origin and retention revealed. No sleeps."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from contextviewer.ingest import files as ingest
from contextviewer.conversations import segments
from contextviewer.conversations.models import Conversation
from contextviewer.jobs.models import Job, JobStatus
from contextviewer.review.models import PairwiseComparison, ReviewQueue
from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import make_project, make_user
from tests.integration.builds.test_builds_after_fold import compaction
from tests.sessions import SessionBuilder, session_lines, write_lines
from tests.worker import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def compacted(live_server, tmp_path):
    project = make_project("acme", "Acme backend")
    owner = make_user("olivia", project=project)
    b = SessionBuilder()
    lines = session_lines(3, b) + compaction(b) + [*b.assistant("Continuing after the compaction.")]
    write_lines(tmp_path / "s.jsonl", lines)
    report = ingest.import_path(project, tmp_path / "s.jsonl")
    return {"project": project, "owner": owner, "conv": Conversation.objects.get(pk=report.conversation_ids[0])}


def test_summarize_again_then_a_blind_pairwise_vote_then_the_reveal(page, live_server, compacted, worker_process):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    conv, project = compacted["conv"], compacted["project"]
    original = segments.segment_folds(conv)[0]
    watch = Watch(page)
    login(page.context, live_server, compacted["owner"])

    # 1. Summarize the fold again with the builtin summarizer, from the conversation page.
    page.goto(f"{live_server.url}/c/{conv.pk}/")
    form = page.locator(f'form.again-form[action="/review/folds/{original.pk}/again/"]').first
    form.scroll_into_view_if_needed()
    if not form.is_visible():  # the fold's summary sits in a closed archived segment
        page.locator("details.segment.archived > summary").first.click()
    form.locator('select[name="provider"]').select_option("builtin")
    form.locator("button.again-button").click()  # a provider call: it asks first
    page.locator("#confirm-dialog .confirm-yes").click()
    page.wait_for_url("**/jobs/**")
    job = wait_for(lambda: Job.objects.filter(kind="summarize_again", status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
                   timeout=120, message="the summarize-again job")
    assert job.status == JobStatus.SUCCEEDED, job.error
    page.goto(f"{live_server.url}/c/{conv.pk}/")
    expect(page.locator(".summaries-line").first).to_contain_text("summarized again · builtin summarizer")

    # 2. A blind pairwise queue of the two summaries.
    page.goto(f"{live_server.url}/projects/{project.slug}/review/")
    page.locator('input[name="name"]').fill("Blind pairs")
    page.locator("#queue-mode").select_option("pairwise")
    page.locator("#queue-blind").check()
    page.get_by_role("button", name="Create queue").click()
    expect(page.locator("body")).to_contain_text("holds 1 pairs of summaries")
    queue = ReviewQueue.objects.get(name="Blind pairs")
    assert queue.blind and queue.mode == "pairwise"

    # 3. Vote without seeing origin or retention.
    page.locator("#start-review").click()
    expect(page.locator("#blind-note")).to_be_visible()
    expect(page.locator(".pair-grid")).not_to_contain_text("summarized again")
    expect(page.locator(".pair-grid")).not_to_contain_text("recorded compaction")
    expect(page.locator(".pair-grid")).not_to_contain_text("retention")
    page.screenshot(path=str(SCREENSHOTS / "pairwise-blind.png"), full_page=False)
    item_url = page.url
    page.locator('#pair-form input[name="choice"][value="a"]').check()
    page.locator("#submit-review").click()
    expect(page.locator("body")).to_contain_text("Nothing left for you in Blind pairs")
    assert PairwiseComparison.objects.get().choice == "a"

    # 4. The reveal: origin and retention of both summaries.
    page.goto(item_url)
    expect(page.locator("#blind-note")).to_have_count(0)
    expect(page.locator(".pair-grid")).to_contain_text("summarized again · builtin summarizer")
    expect(page.locator(".pair-grid")).to_contain_text("recorded compaction (claude-code)")
    expect(page.locator("#retention-a")).to_be_visible()
    expect(page.locator("#retention-b")).to_be_visible()
    page.screenshot(path=str(SCREENSHOTS / "pairwise-revealed.png"), full_page=False)
    watch.assert_clean()
