"""Playwright: blind review tells nothing of origin (issue 36, item 2). A reviewer with a blind pairwise
queue sees one row for the segment on the review index, with no size or compression, and the
recorded Claude Code summary and the builtin's written again read in one layout: the same section
names in the same order, no harness wording, none of the builtin's fixed phrases ("Last state:",
"Ran `...`", "None stated in the transcript."), no fold ids. The dashboard says an encrypted Codex
summary has no size we know and leaves it out of the medians (item 5). No sleeps."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from contextviewer.accounts.models import Role
from contextviewer.conversations import segments
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import JobStatus
from contextviewer.review import alternatives, blind, probes, queues
from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import make_project, make_user
from tests.integration.review.test_blind_figures import _remote_compaction
from tests.integration.review.test_review_pages_render import _fixture_summaries, _import
from tests.unit.test_blind_phrases import PHRASES as BUILTIN_PHRASES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def blind_pair(live_server, tmp_path):
    project = make_project("acme", "Acme backend")
    owner = make_user("olivia", project=project)
    anna = make_user("anna", "pw-anna-123", project=project, role=Role.ANNOTATOR)
    # A real Claude Code summary (marot__spotter__8463…: analysis, then the nine numbered sections).
    recorded = next(t for t in _fixture_summaries() if "spotter-fum" in t)
    conv = _import(project, tmp_path, summary=recorded)
    original = segments.segment_folds(conv)[0]
    done = jobs.run(alternatives.start(original, provider="builtin", enqueue=False).pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    alt = conv.folds.get(pk=done.result["fold_id"])
    queue = queues.create_queue(project, "Blind pairs", {}, mode="pairwise", blind=True, user=owner, reviewers=[anna])
    return {"project": project, "anna": anna, "original": original, "alt": alt, "queue": queue}


def test_a_blind_pair_tells_nothing_of_its_origin(page, live_server, blind_pair):
    project, original, alt = blind_pair["project"], blind_pair["original"], blind_pair["alt"]
    sizes = [f"{probes.probe_for(f).summary_tokens:,}" for f in (original, alt)]
    # The builtin's fixed phrases are in its stored summary, and nowhere on the blind page.
    written = [p for p in BUILTIN_PHRASES if p in alt.summary_text]
    assert {"Paths mentioned:", "Ran `", "Last state:", "None stated in the transcript."} <= set(written), alt.summary_text
    watch = Watch(page)
    login(page.context, live_server, blind_pair["anna"])

    # The index: the segment is one row, with nothing that differs by summary.
    page.goto(f"{live_server.url}/projects/{project.slug}/review/")
    rows = page.locator("table.folds tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("after your score")
    for size in sizes:
        expect(rows.first).not_to_contain_text(size)
    page.screenshot(path=str(SCREENSHOTS / "review-index-blind.png"), full_page=True)

    # Its link is the item to score: both summaries in one layout.
    rows.first.locator("a").click()
    page.wait_for_url(f"**/review/items/{blind_pair['queue'].items.get().pk}/")
    expect(page.locator("#blind-note")).to_be_visible()
    layouts = []
    for key, side in (("a", "A"), ("b", "B")):
        column = page.locator(f".summary-{key}")
        expect(column.locator("h2")).to_have_text(side)  # no fold id: the later id is the summary written again
        names = column.locator(".summary-text h4").all_inner_texts()
        assert names[:1] == ["Goal"] and "Next steps" in names, names
        assert names == sorted(names, key=blind.NEUTRAL.index), names
        layouts.append(names)
        for tell in ["This session is being continued", "Primary Request and Intent", "State and what is done",
                     "Let me chronologically analyze", "read the full transcript", *BUILTIN_PHRASES]:
            expect(column).not_to_contain_text(tell)
    assert set(layouts[0]) & set(layouts[1]) >= {"Goal", "State", "Next steps"}, layouts
    page.screenshot(path=str(SCREENSHOTS / "review-pairwise-blind-layout.png"), full_page=False)

    # Voted: the index lists both summaries with their sizes.
    page.locator('#pair-form input[name="choice"][value="b"]').check()
    page.locator("#submit-review").click()
    expect(page.locator("body")).to_contain_text("Nothing left for you in Blind pairs")
    page.goto(f"{live_server.url}/projects/{project.slug}/review/")
    expect(rows).to_have_count(2)
    for size in sizes:
        expect(page.locator("table.folds tbody")).to_contain_text(size)
    watch.assert_clean()


def test_the_dashboard_says_an_encrypted_summary_has_no_size(page, live_server, fixtures_dir, tmp_path):
    project = make_project("acme", "Acme backend")
    owner = make_user("olivia", project=project)
    codex = _remote_compaction(project, fixtures_dir, tmp_path)
    (tmp_path / "claude").mkdir()
    claude = segments.segment_folds(_import(project, tmp_path / "claude"))[0]
    readable = f"{probes.probe_for(claude).summary_tokens:,}"
    watch = Watch(page)
    login(page.context, live_server, owner)

    page.goto(f"{live_server.url}/projects/{project.slug}/review/dashboard/")
    row = page.locator("#by-group tbody tr", has=page.locator("td", has_text=re.compile(r"^codex$")))
    expect(row).to_contain_text("1 encrypted: size unknown")
    cells = row.locator("td")
    expect(cells.nth(8)).to_contain_text("—")  # Summary p50: no size known
    expect(cells.nth(7)).to_have_text("—")  # Compression p50
    total = page.locator("#total-row td")
    expect(total.nth(8)).to_contain_text(readable)  # the median of the readable summary alone
    expect(total.nth(8)).to_contain_text("1 encrypted: size unknown")
    page.screenshot(path=str(SCREENSHOTS / "review-dashboard-encrypted.png"), full_page=True)

    page.goto(f"{live_server.url}/projects/{project.slug}/review/")
    expect(page.locator("table.folds tbody tr", has_text="encrypted: size unknown")).to_have_count(1)
    expect(page.locator("table.folds tbody tr", has_text="encrypted: size unknown")).to_contain_text(str(codex)[:40])
    watch.assert_clean()
