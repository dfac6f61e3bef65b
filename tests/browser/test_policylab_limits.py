"""The policy lab in Chromium when a replay cannot keep the window under its limit (issue 34, item 3):
a Claude Code session that starts full (its calibrated overhead is above the 167,000 threshold) folds
once, and the page says the fold could not bring the window under the limit and which version's rule
it followed; the project table flags the policy. Saves var/screenshots/policy-lab-limits.png and
policy-table-limits.png."""

from __future__ import annotations

import pytest

from contextviewer.conversations import page_cache
from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.lab import table as policy_table
from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import make_project, make_user
from tests.integration.lab.test_policylab_own_rule import _starts_full

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_replay_over_its_limit_is_said_on_the_lab_page_and_flagged_in_the_table(page, live_server, tmp_path):
    page_cache.clear()
    project = make_project("lab-limits")
    user = make_user("lab-limits-viewer", project=project)
    ingest.import_path(project, _starts_full(tmp_path))
    conv = Conversation.objects.get(project=project, parent__isnull=True)
    login(page.context, live_server, user)
    watch = Watch(page)
    page.goto(f"{live_server.url}/c/{conv.pk}/lab/")
    notes = page.locator("#limit-notes-claude_code")
    assert notes.is_visible()
    assert "cannot bring the window under its limit: after its action at call 1" in notes.inner_text()
    row = page.locator("#policy-claude_code")
    assert row.locator(".limit-flag").is_visible()
    assert "Claude Code 2.1.39: the rule measured on 2.1.39 and 2.1.152" in row.locator(".rule-note").text_content()
    # One fold: one Claude Code dot on the curve, not one at every call after it.
    claude = [t.text_content() for t in page.locator("svg.curve circle.fire.line-policy title").all() if t.text_content().startswith("Claude Code")]
    assert len(claude) == 1, claude
    page.screenshot(path=str(SCREENSHOTS / "policy-lab-limits.png"), full_page=True)

    job, _ = policy_table.start(project)
    jobs.run(job.pk)
    page.goto(f"{live_server.url}/policies/?project={project.slug}")
    flag = page.locator("#policy-claude_code .limit-flag")
    assert flag.is_visible() and "could not get under its limit in 1 conversation" in flag.inner_text()
    page.screenshot(path=str(SCREENSHOTS / "policy-table-limits.png"), full_page=True)
    watch.assert_clean()
