"""A GitHub Copilot CLI session in a real browser: the upload page names the agent and where its
logs live, and the conversation page of an events.jsonl (the unit test's generator: a background
compaction, a manual one, a task sub-agent) shows the agent, its gauge, its curve and the fold's
summary heading the archived segment, CSP-clean."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_format_pages import _open
from tests.browser.test_viewer_flows import login, wait_for_htmx
from tests.factories import make_project, make_user
from tests.unit import test_copilot_importer as copilot_t

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_copilot_session_page_and_its_line_on_the_upload_page(page, live_server, tmp_path):
    project = make_project("copilot", "Copilot sessions")
    user = make_user("coral", project=project)
    path = copilot_t.session().write(tmp_path / "session-state" / copilot_t.SID / "events.jsonl")
    report = ingest.import_path(project, path.parent.parent)
    conv = Conversation.objects.get(pk__in=report.conversation_ids, parent__isnull=True)
    assert conv.agent == "copilot" and conv.fold_count == 2 and conv.model_call_count == 10
    login(page.context, live_server, user)
    page.goto(f"{live_server.url}/import/")
    expect(page.get_by_text("~/.copilot/session-state/<session>/events.jsonl", exact=False).first).to_be_visible()
    page.screenshot(path=str(SCREENSHOTS / "copilot-upload.png"), full_page=True)
    _open(page, live_server, conv, "GitHub Copilot CLI", "copilot-conversation.png")
    # The agent's tools read as people read them: its bash call as a command and its exit code, its edit as a diff.
    page.locator("#turn-0 > summary .turn-first").click()
    page.wait_for_selector("#turn-0 .tool-view")
    wait_for_htmx(page)
    assert page.locator("#turn-0 pre.bash-command").first.inner_text() == "$ false"
    page.locator("#turn-1 > summary .turn-first").click()
    page.wait_for_selector("#turn-1 .tool-view")
    wait_for_htmx(page)
    shell = page.locator("#turn-1 .block-tool").nth(1)
    assert shell.locator("pre.bash-command").inner_text() == "$ cat notes.txt"
    assert shell.locator(".exit-code").inner_text() == "exit code 0"
    edit = page.locator("#turn-1 .block-tool").first
    assert edit.locator(".diff-line.diff-del").inner_text().strip().endswith("draft")
    assert edit.locator(".diff-line.diff-add").inner_text().strip().endswith("final")
    page.locator("#turn-1").screenshot(path=str(SCREENSHOTS / "copilot-tools.png"))
