"""A Mistral Vibe session in a real browser: the upload page names the agent and where its logs live,
and the conversation page of a session folder (tests/vibe_folders.py: three turns, an automatic
compaction before the third) shows the agent, its gauge, its curve and the fold's summary heading
the archived segment, CSP-clean; its tools read as people read them (bash as a command, edit as a
diff)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_format_pages import _open
from tests.browser.test_viewer_flows import login, wait_for_htmx
from tests.factories import make_project, make_user
from tests.vibe_folders import make_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_vibe_session_page_and_its_line_on_the_upload_page(page, live_server, tmp_path):
    project = make_project("vibe", "Vibe sessions")
    user = make_user("vera", project=project)
    w = make_session(tmp_path / "unified")
    report = ingest.import_path(project, w.folder.parent)
    conv = Conversation.objects.get(pk__in=report.conversation_ids)
    assert conv.agent == "vibe" and conv.fold_count == 1 and conv.model_call_count == w.responses
    login(page.context, live_server, user)
    page.goto(f"{live_server.url}/import/")
    expect(page.get_by_text("~/.vibe/logs/session/unified/<session>/", exact=False).first).to_be_visible()
    _open(page, live_server, conv, "Mistral Vibe", "vibe-conversation.png")
    page.locator("#turn-0 > summary .turn-first").click()
    page.wait_for_selector("#turn-0 .tool-view")
    wait_for_htmx(page)
    shell = page.locator("#turn-0 .block-tool").first
    assert shell.locator("pre.bash-command").inner_text() == "$ ls"
    assert shell.locator(".exit-code").inner_text() == "exit code 0"  # from bash's own result object
    read = page.locator("#turn-0 .block-tool").nth(1)  # its read_file result's text, not the JSON object it came in
    assert "alpha" in read.inner_text() and '"content"' not in read.inner_text()
    page.locator("#turn-0").screenshot(path=str(SCREENSHOTS / "vibe-turn-1.png"))
    page.locator("#turn-1 > summary .turn-first").click()
    page.wait_for_selector("#turn-1 .tool-view")
    wait_for_htmx(page)
    edit = page.locator("#turn-1 .block-tool").first
    assert edit.locator(".diff-line.diff-del").inner_text().strip().endswith("alpha")
    assert edit.locator(".diff-line.diff-add").inner_text().strip().endswith("gamma")
    page.locator("#turn-1").screenshot(path=str(SCREENSHOTS / "vibe-tools.png"))
