"""Other agents' tools as a person sees them in Chromium (issue 22, item 6): a Gemini CLI shell
call with its command, exit code and output lines (no `\\n` escapes, no labels), a Gemini
write_file as numbered highlighted lines, an OpenHands str_replace_editor edit as a red/green diff
and a browse as its URL; terminal colours as colours. No console errors, no CSP violations.
Screenshots: tool-gemini-shell.png, tool-openhands-edit.png."""

from __future__ import annotations

import json

import pytest

from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login, wait_for_htmx
from tests.factories import make_project, make_user
from tests.integration.viewer.test_tool_views_agents import gemini_chat, openhands_events

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def seeded(live_server, tmp_path):
    project = make_project("agents", "Agents")
    user = make_user("olga", project=project)
    gemini = tmp_path / "session-2026-01-16T18-34-3739ef95.json"
    gemini.write_text(json.dumps(gemini_chat()))
    ingest.import_file(project, gemini)
    openhands = tmp_path / "trajectory.json"
    openhands.write_text(json.dumps(openhands_events()))
    ingest.import_file(project, openhands)
    return {"user": user, "gemini": Conversation.objects.get(project=project, agent="gemini"),
            "openhands": Conversation.objects.get(project=project, agent="openhands")}  # fmt: skip


def _open_turn(page, turn: int):
    page.locator(f"#turn-{turn} > summary .turn-first").click()
    page.wait_for_selector(f"#turn-{turn} .tool-view")
    wait_for_htmx(page)
    return page.locator(f"#turn-{turn} .block-tool")


def _rgb(locator, prop: str = "backgroundColor") -> tuple[int, ...]:
    value = locator.evaluate(f"e => getComputedStyle(e).{prop}")
    return tuple(int(x) for x in value[value.index("(") + 1 : value.index(")")].split(",")[:3])


def test_gemini_and_openhands_tools_as_people_read_them(page, live_server, seeded):
    watch = Watch(page)
    login(page.context, live_server, seeded["user"])
    page.goto(f"{live_server.url}/c/{seeded['gemini'].id}/")
    page.wait_for_selector("#turn-0")
    tools = _open_turn(page, 0)

    # run_shell_command: description, where it ran, the command, exit code 0 on green, the output's two lines
    shell = tools.nth(0)
    assert shell.locator(".bash-description").inner_text() == "Print two lines"
    assert shell.locator(".bash-workdir").inner_text() == "in /w"
    assert shell.locator("pre.bash-command").inner_text() == "$ printf 'a\\nb'"
    assert shell.locator(".exit-code").inner_text() == "exit code 0"
    green = _rgb(shell.locator(".exit-code"))
    assert green[1] > green[0]
    assert shell.locator("pre.stdout").inner_text().splitlines() == ["a", "b"]
    shell.screenshot(path=str(SCREENSHOTS / "tool-gemini-shell.png"))

    # the escaped result reads as lines, and exit code 2 is red
    escaped = tools.nth(1)
    assert escaped.locator("pre.stdout").inner_text().splitlines() == ["one.txt", "two.txt"]
    assert _rgb(escaped.locator(".exit-code"))[0] > 200

    # write_file: numbered, highlighted lines; hostile text stays text
    write = tools.nth(2)
    code = write.locator("ol.code-lines")
    assert code.locator("> li").count() == 2
    assert code.locator("> li").nth(1).inner_text() == '<script>alert("x")</script>'
    assert write.locator(".code-head .path").inner_text() == "/w/hello.py"

    page.goto(f"{live_server.url}/c/{seeded['openhands'].id}/")
    page.wait_for_selector("#turn-0")
    tools = _open_turn(page, 0)
    edit = tools.nth(1)
    removed, added = edit.locator(".diff-line.diff-del"), edit.locator(".diff-line.diff-add")
    assert removed.inner_text().strip().endswith("return 'hi'")
    assert added.inner_text().strip().endswith("return 'hello'")
    red, green = _rgb(removed), _rgb(added)
    assert red[0] > red[1] and green[1] > green[0]
    assert "/workspace/app.py" in edit.locator(".diff-head").inner_text()
    edit.screenshot(path=str(SCREENSHOTS / "tool-openhands-edit.png"))

    assert page.locator("#turn-0 .browse-url code.url").inner_text() == "https://example.org/docs?q=<b>"
    assert "greeting" in page.locator("#turn-0 .think-text strong").inner_text()
    watch.assert_clean()
