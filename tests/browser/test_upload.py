"""Upload a real session in Chromium, watch the import job, see the conversation listed."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.test_viewer_flows import Watch, login
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

from tests.browser.screenshots import SCREENSHOTS  # noqa: E402


@pytest.fixture
def member(live_server):
    from django.contrib.auth import get_user_model

    from contextviewer.accounts.models import Membership, Role
    from contextviewer.accounts.services import get_or_create_project

    project = get_or_create_project("Uploads")
    user = get_user_model().objects.create_user("uma", password="pw-uma-12345")
    Membership.objects.create(project=project, user=user, role=Role.MEMBER)
    return user


def _session_file(tmp_path: Path) -> tuple[Path, str]:
    """A real fixture when ../shared is there, else a synthetic session; and its expected title."""
    from tests.conftest import shared_fixtures_dir

    root = shared_fixtures_dir()
    if root is not None:
        path = root / "claude-code" / "oneryalcin__fasthooks__sample_main_transcript.jsonl"
        if path.exists():
            return path, "can you run a command ls -la"
    path = tmp_path / "synthetic-session.jsonl"
    builder = SessionBuilder()
    write_lines(path, [builder.user("Upload me: refactor the parser"), *session_lines(3, builder)])
    return path, "Upload me: refactor the parser"


def test_upload_a_session_and_see_it_listed(page, live_server, worker_process, member, tmp_path):
    watch = Watch(page)
    login(page.context, live_server, member)
    path, title = _session_file(tmp_path)

    page.goto(f"{live_server.url}/import/")
    page.set_input_files("#files", str(path))
    expect(page.locator("#chosen li")).to_contain_text(path.name)
    page.click("#upload-form button[type=submit]")

    # The job page polls itself until the import is done.
    page.wait_for_url("**/jobs/*/")
    status = page.locator("#job-progress")
    expect(status).to_have_attribute("data-status", "succeeded", timeout=60_000)
    expect(page.locator(".import-result")).to_contain_text(title)
    expect(page.get_by_role("button", name="Cancel")).to_have_count(0)  # nothing left to cancel
    page.screenshot(path=str(SCREENSHOTS / "import-job.png"), full_page=True)

    page.goto(f"{live_server.url}/")
    expect(page.locator("body")).to_contain_text(title)
    page.get_by_text(title).first.click()
    expect(page.locator("body")).to_contain_text(title)
    watch.assert_clean()


def test_an_oversized_upload_is_refused_with_a_message(page, live_server, member, tmp_path, settings):
    settings.MAX_UPLOAD_BYTES = 1_000_000
    watch = Watch(page)
    login(page.context, live_server, member)
    big = tmp_path / "big.jsonl"
    builder = SessionBuilder()
    with open(big, "w") as fh:
        for i in range(300):
            fh.write(builder.user(f"{i} " + "x" * 10_000) + "\n")
    page.goto(f"{live_server.url}/import/")
    page.set_input_files("#files", str(big))
    page.click("#upload-form button[type=submit]")
    expect(page.locator("#upload-status")).to_contain_text("over the 1 MB limit")
    assert not watch.dialogs
