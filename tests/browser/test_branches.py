"""A re-edited prompt in Chromium: the abandoned turn is set apart (indented) with a "branch of
turn N" badge that leads to the turn the conversation went on with; its messages are marked when
opened. Screenshot: branch.png."""

from __future__ import annotations

import pytest

from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation
from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login, wait_for_htmx
from tests.factories import make_project, make_user
from tests.sessions import SessionBuilder, write_lines

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_abandoned_branch_is_set_apart_and_links_to_the_kept_turn(page, live_server, tmp_path):
    project = make_project("branches", "Branches")
    user = make_user("bea", project=project)
    b = SessionBuilder()
    lines = b.turn(0)
    fork = b.parent
    lines += [b.user("Rename the helper to parse_rows"), *b.assistant("Renaming it", tool=("Bash", {"command": "sed -i s/load/parse_rows/ src/app.py"}))]
    lines += [b.tool_result("done"), *b.assistant("Renamed to parse_rows.")]
    b.parent = fork  # the prompt re-edited: the first version and its answer are abandoned
    lines += [b.user("Rename the helper to parse_records instead"), *b.assistant("Renamed to parse_records.")]
    lines += b.turn(3)
    path = tmp_path / "branch.jsonl"
    write_lines(path, lines)
    ingest.import_file(project, path)
    conv = Conversation.objects.get(project=project, external_id=b.session_id)

    watch = Watch(page)
    login(page.context, live_server, user)
    page.goto(f"{live_server.url}/c/{conv.id}/")
    abandoned, kept = page.locator("#turn-1"), page.locator("#turn-2")
    badge = abandoned.locator(".turn-head .badge.branch")
    assert badge.inner_text() == "branch of turn 2"
    assert page.locator(".badge.branch").count() == 1
    # set apart: indented from the turns the log went on with
    assert abandoned.bounding_box()["x"] > kept.bounding_box()["x"] + 10
    assert page.locator("#turn-0").bounding_box()["x"] == kept.bounding_box()["x"]

    abandoned.locator(".turn-no").click()
    wait_for_htmx(page)
    page.wait_for_selector("#turn-1 .message.branch")
    assert "Renamed to parse_rows." in abandoned.locator(".turn-body").inner_text()
    assert abandoned.locator(".message.branch").count() >= 3
    # one badge for the run of abandoned messages, the rest dimmed alike
    assert abandoned.locator(".message.branch .badge.branch").all_inner_texts() == ["branch of turn 2"]
    page.locator("#segments").screenshot(path=str(SCREENSHOTS / "branch.png"))

    badge.click()
    page.wait_for_url(f"**/c/{conv.id}/?turn=2#turn-2")
    assert "parse_records" in page.locator("#turn-2 .turn-first").inner_text()
    watch.assert_clean()

