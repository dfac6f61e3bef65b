"""The upload report in Chromium (issue 36, item 4): a folder holding opencode.db with its -wal and
-shm and two files no format reads; the job page lists the -wal and -shm as read with opencode.db
and says what each unread file looked like. A Cline history file uploaded alone is listed as a
Cline conversation with its model calls."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_upload import member  # noqa: F401 - the fixture
from tests.browser.test_viewer_flows import Watch, login
from tests.integration.ingest.test_upload_report import broken_files, lone_history, wal_database

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

UNREAD = "not a format contextviewer reads"


def _submitted(page) -> None:
    page.click("#upload-form button[type=submit]")
    page.wait_for_url("**/jobs/*/")
    expect(page.locator("#job-progress")).to_have_attribute("data-status", "succeeded", timeout=90_000)


def test_the_report_says_the_wal_was_read_and_what_unread_files_looked_like(page, live_server, worker_process, member, tmp_path):  # noqa: F811
    watch = Watch(page)
    login(page.context, live_server, member)
    root = tmp_path / "agent-logs"
    wal_database(root / "opencode")
    looks = broken_files(root / "exports")

    page.goto(f"{live_server.url}/import/")
    page.set_input_files("#folder", str(root))
    expect(page.locator("#chosen li")).to_have_count(5)
    _submitted(page)

    read_with = page.locator(".import-read-with li")
    expect(read_with).to_have_count(2)
    expect(read_with.filter(has_text="opencode.db-wal")).to_contain_text("read with opencode.db (its SQLite write-ahead log)")
    expect(read_with.filter(has_text="opencode.db-shm")).to_contain_text("read with opencode.db (its SQLite shared-memory index)")
    skipped = page.locator(".import-skipped li")
    expect(skipped).to_have_count(len(looks))
    for name, looked_like in looks.items():
        expect(skipped.filter(has_text=name)).to_contain_text(f"{looked_like}: {UNREAD}")
    expect(page.locator(".import-skipped")).not_to_contain_text("wal")
    expect(page.locator(".import-result tbody tr").first).to_contain_text("Fix the parser")
    page.screenshot(path=str(SCREENSHOTS / "import-report-wal.png"), full_page=True)
    watch.assert_clean()


def test_a_lone_cline_history_is_listed_as_cline_with_its_model_calls(page, live_server, worker_process, member, tmp_path):  # noqa: F811
    watch = Watch(page)
    login(page.context, live_server, member)
    path, requests = lone_history(tmp_path)

    page.goto(f"{live_server.url}/import/")
    page.set_input_files("#files", str(path))
    _submitted(page)

    row = page.locator(".import-result tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Fix the failing test in src/utils.py")
    expect(row.locator("td").nth(2)).to_have_text(str(len(requests)))  # Model calls
    page.screenshot(path=str(SCREENSHOTS / "import-report-cline-history.png"), full_page=True)
    watch.assert_clean()
