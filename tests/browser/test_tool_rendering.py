"""Tool calls as a person sees them in Chromium: an Edit as a red/green diff, a TodoWrite as a
checklist, a Bash call with its exit code and stderr, a Codex shell call the same way; the raw input
one click away; no console errors, no CSP violations. Screenshots: tool-diff.png,
tool-checklist.png, tool-bash.png, tool-codex-shell.png."""

from __future__ import annotations

import json

import pytest

from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation
from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login, wait_for_htmx
from tests.factories import make_project, make_user
from tests.sessions import SessionBuilder, write_lines

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OLD = '''def parse(text):
    """Parse one line."""
    if not text:
        return None
    return text.split(",")
'''
NEW = '''def parse(text: str) -> list[str]:
    """Parse one line; empty input gives an empty list."""
    if not text:
        return []
    return [part.strip() for part in text.split(",")]
'''


@pytest.fixture
def seeded(live_server, tmp_path):
    project = make_project("tools", "Tools")
    user = make_user("tess", project=project)
    b = SessionBuilder()
    lines = [b.user("Make parse() return a list for empty input <script>alert(1)</script>")]
    lines += b.assistant("Editing the parser.", tool=("Edit", {"file_path": "src/parser.py", "old_string": OLD, "new_string": NEW}))
    lines.append(b.tool_result("The file src/parser.py has been updated."))
    lines.append(b.user("Plan the rest"))
    todos = [
        {"content": "Return [] for empty input", "status": "completed", "activeForm": "Returning []"},
        {"content": "Strip spaces around parts", "status": "in_progress", "activeForm": "Stripping"},
        {"content": "Add a test for <empty> lines", "status": "pending", "activeForm": "Adding a test"},
    ]
    lines += b.assistant("Tracking the work.", tool=("TodoWrite", {"todos": todos}))
    lines.append(b.tool_result("Todos have been modified successfully."))
    lines.append(b.user("Run the tests"))
    lines += b.assistant("Running the suite.", tool=("Bash", {"command": "pytest -q tests/test_parser.py", "description": "Run the parser tests"}))
    lines.append(b.tool_result(
        "Exit code 1\n..F\nFAILED tests/test_parser.py::test_empty - assert None == []\n1 failed, 2 passed",
        tool_use_result={"stdout": "..F\nFAILED tests/test_parser.py::test_empty - assert None == []\n1 failed, 2 passed",
                         "stderr": "DeprecationWarning: <parser> is deprecated", "interrupted": False, "isImage": False},
    ))  # fmt: skip
    lines.append(b.user("Show the parser"))
    lines += b.assistant("Reading it.", tool=("Read", {"file_path": "src/parser.py", "offset": 41, "limit": 4}))
    lines.append(b.tool_result("    41→def parse(text: str) -> list[str]:\n    42→    if not text:\n    43→        return []\n"
                               "    44→    return [part.strip() for part in text.split(\",\")]"))
    path = tmp_path / "tools.jsonl"
    write_lines(path, lines)
    ingest.import_file(project, path)
    codex_path = tmp_path / f"rollout-2026-03-01T12-00-00-{CODEX_SID}.jsonl"
    write_lines(codex_path, [json.dumps({"timestamp": f"2026-03-01T12:00:{i:02d}Z", "type": kind, "payload": payload})
                             for i, (kind, payload) in enumerate(CODEX_LINES)])  # fmt: skip
    ingest.import_file(project, codex_path)
    return {"user": user, "conv": Conversation.objects.get(project=project, external_id=b.session_id),
            "codex": Conversation.objects.get(project=project, external_id=CODEX_SID)}  # fmt: skip


CODEX_SID = "0199aaaa-0000-7000-8000-0000000000c6"
CODEX_LINES = [
    ("session_meta", {"id": CODEX_SID, "cwd": "/w/parser", "cli_version": "0.104.0"}),
    ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Run the parser tests"}]}),
    ("response_item", {"type": "function_call", "name": "exec_command", "call_id": "c1", "arguments": json.dumps(
        {"cmd": "cd tests && pytest -q test_parser.py", "workdir": "/w/parser", "justification": "Run the parser tests"})}),
    ("event_msg", {"type": "exec_command_end", "call_id": "c1", "exit_code": 1, "duration": {"secs": 1, "nanos": 250_000_000},
                   "stdout": "..F\nFAILED test_parser.py::test_empty - assert None == []\n1 failed, 2 passed\n",
                   "stderr": "DeprecationWarning: <parser> is deprecated\n"}),
    ("response_item", {"type": "function_call_output", "call_id": "c1", "output": (
        "Chunk ID: 7\nWall time: 1.2500 seconds\nProcess exited with code 1\nOutput:\n..F\n"
        "FAILED test_parser.py::test_empty - assert None == []\n1 failed, 2 passed\nDeprecationWarning: <parser> is deprecated\n")}),
]  # fmt: skip


def _open_turn(page, turn: int):
    page.locator(f"#turn-{turn} > summary .turn-first").click()
    page.wait_for_selector(f"#turn-{turn} .tool-view")
    wait_for_htmx(page)
    return page.locator(f"#turn-{turn} .block-tool").first


def _rgb(locator) -> tuple[int, ...]:
    value = locator.evaluate("e => getComputedStyle(e).backgroundColor")
    return tuple(int(x) for x in value[value.index("(") + 1 : value.index(")")].split(",")[:3])


def test_diff_checklist_and_bash_as_people_read_them(page, live_server, seeded):
    watch = Watch(page)
    login(page.context, live_server, seeded["user"])
    page.goto(f"{live_server.url}/c/{seeded['conv'].id}/")
    page.wait_for_selector("#turn-0")

    # Edit: removed lines on red, added lines on green, the file named, the raw input a click away
    tool = _open_turn(page, 0)
    removed, added = tool.locator(".diff-line.diff-del"), tool.locator(".diff-line.diff-add")
    assert removed.count() == 4 and added.count() == 4
    assert "return [part.strip() for part in text.split(\",\")]" in added.all_inner_texts()[-1]
    red, green = _rgb(removed.first), _rgb(added.first)
    assert red[0] > red[1] and green[1] > green[0]
    assert tool.locator(".diff-line.diff-ctx").first.inner_text().strip() == "if not text:"
    assert "src/parser.py" in tool.locator(".diff-head").inner_text()
    raw = tool.locator("details.tool-raw").first
    assert not raw.locator("pre.json").is_visible()
    raw.locator("summary").click()
    assert "old_string" in raw.locator("pre.json").inner_text()
    raw.locator("summary").click()
    tool.screenshot(path=str(SCREENSHOTS / "tool-diff.png"))

    # TodoWrite: a checklist, each item with its state
    tool = _open_turn(page, 1)
    items = tool.locator("ul.todo-list > li")
    assert items.count() == 3
    assert [items.nth(i).get_attribute("class") for i in range(3)] == ["todo todo-completed", "todo todo-in_progress", "todo todo-pending"]
    assert [items.nth(i).locator(".todo-box").inner_text() for i in range(3)] == ["☑", "◐", "☐"]
    assert items.nth(2).locator(".todo-text").inner_text() == "Add a test for <empty> lines"
    assert "line-through" in items.nth(0).locator(".todo-text").evaluate("e => getComputedStyle(e).textDecorationLine")
    tool.screenshot(path=str(SCREENSHOTS / "tool-checklist.png"))

    # Bash: description, command, exit code, stdout and stderr apart
    tool = _open_turn(page, 2)
    assert tool.locator(".bash-description").inner_text() == "Run the parser tests"
    assert tool.locator("pre.bash-command").inner_text() == "$ pytest -q tests/test_parser.py"
    assert tool.locator(".exit-code").inner_text() == "exit code 1"
    assert _rgb(tool.locator(".exit-code"))[0] > 200
    assert "1 failed, 2 passed" in tool.locator("pre.stdout").inner_text()
    assert tool.locator("pre.stderr").inner_text() == "DeprecationWarning: <parser> is deprecated"
    tool.screenshot(path=str(SCREENSHOTS / "tool-bash.png"))

    # Read: the file's own line numbers beside highlighted lines; copying the code copies no numbers
    tool = _open_turn(page, 3)
    code = tool.locator("ol.code-lines")
    assert code.get_attribute("start") == "41" and code.locator("> li").count() == 4
    assert code.evaluate("e => getComputedStyle(e).listStyleType") == "code-line"
    assert code.inner_text().splitlines()[0] == "def parse(text: str) -> list[str]:"
    assert code.locator("> li").first.bounding_box()["x"] > code.bounding_box()["x"] + 20  # room for the numbers
    tool.screenshot(path=str(SCREENSHOTS / "tool-read.png"))

    # A Codex exec_command: the same, with where it ran and how long it took
    page.goto(f"{live_server.url}/c/{seeded['codex'].id}/")
    page.wait_for_selector("#turn-0")
    tool = _open_turn(page, 0)
    assert tool.locator(".bash-description").inner_text() == "Run the parser tests"
    assert tool.locator(".bash-workdir").inner_text() == "in /w/parser"
    assert tool.locator("pre.bash-command").inner_text() == "$ cd tests && pytest -q test_parser.py"
    assert tool.locator(".exit-code").inner_text() == "exit code 1"
    assert _rgb(tool.locator(".exit-code"))[0] > 200
    assert tool.locator(".bash-duration").inner_text() == "1.2 s"
    assert "1 failed, 2 passed" in tool.locator("pre.stdout").inner_text()
    assert tool.locator("pre.stderr").inner_text().strip() == "DeprecationWarning: <parser> is deprecated"
    tool.screenshot(path=str(SCREENSHOTS / "tool-codex-shell.png"))

    watch.assert_clean()


# --- issue 36, item 6: what a Windows Codex session and other agents' own tools look like -------

WIN_SID = "0199aaaa-0000-7000-8000-0000000000d7"
WIN_LISTING = "\r\n\r\n    Directory: C:\\Users\\dev\\parser\r\n\r\n\r\nMode                 LastWriteTime         Length Name\r\n" + "".join(
    f"-a----          3/1/2026  12:{i % 60:02d} PM           {1000 + i:4d} module_{i:03d}.py\r\n" for i in range(60)
)  # fmt: skip


def _codex_output(output: str, code: int = 0) -> str:
    """A Codex 0.39 shell result as it logs it: a JSON string (here, a Windows shell's CRLF lines)."""
    return json.dumps({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.4}}, separators=(",", ":"))


WIN_LINES = [
    ("session_meta", {"id": WIN_SID, "cwd": "C:\\Users\\dev\\parser", "cli_version": "0.39.0"}),
    ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Which Python version?"}]}),
    ("response_item", {"type": "function_call", "name": "shell", "call_id": "w1", "arguments": json.dumps(
        {"command": ["powershell.exe", "-Command", "python --version; git status --short"], "workdir": "C:\\Users\\dev\\parser"})}),
    ("response_item", {"type": "function_call_output", "call_id": "w1", "output": _codex_output("Python 3.12.4\r\n M src/parser.py\r\n")}),
    ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the folder"}]}),
    ("response_item", {"type": "function_call", "name": "shell", "call_id": "w2", "arguments": json.dumps(
        {"command": ["powershell.exe", "-Command", "Get-ChildItem"], "workdir": "C:\\Users\\dev\\parser"})}),
    ("response_item", {"type": "function_call_output", "call_id": "w2", "output": _codex_output(WIN_LISTING)}),
]  # fmt: skip


@pytest.fixture
def windows(live_server, tmp_path):
    project = make_project("win", "Windows")
    user = make_user("wanda", project=project)
    path = tmp_path / f"rollout-2026-03-01T12-00-00-{WIN_SID}.jsonl"
    write_lines(path, [json.dumps({"timestamp": f"2026-03-01T12:00:{i:02d}Z", "type": kind, "payload": payload})
                       for i, (kind, payload) in enumerate(WIN_LINES)])  # fmt: skip
    ingest.import_file(project, path)
    return {"user": user, "conv": Conversation.objects.get(project=project, external_id=WIN_SID)}


def test_a_windows_codex_shell_call_shows_what_the_command_printed(page, live_server, windows):
    """Issue 36: the output of a Codex `shell` call on Windows read as the raw JSON string, `\\r\\n`
    and all. Short or long, it reads as the lines the command printed."""
    watch = Watch(page)
    login(page.context, live_server, windows["user"])
    page.goto(f"{live_server.url}/c/{windows['conv'].id}/")
    page.wait_for_selector("#turn-0")

    tool = _open_turn(page, 0)
    assert tool.locator("pre.bash-command").inner_text() == "$ python --version; git status --short"
    assert tool.locator(".bash-workdir").inner_text() == "in C:\\Users\\dev\\parser"
    assert tool.locator(".exit-code").inner_text() == "exit code 0"
    assert tool.locator("pre.stdout").inner_text().splitlines() == ["Python 3.12.4", " M src/parser.py"]
    tool.screenshot(path=str(SCREENSHOTS / "tool-codex-windows-shell.png"))

    # A long listing: the result block under the call shows the lines, not the JSON it was logged as
    tool = _open_turn(page, 1)
    assert tool.locator(".exit-code").inner_text() == "exit code 0"
    shown = tool.locator(".tool-result .block-content").first.inner_text()
    assert shown.lstrip().startswith("Directory: C:\\Users\\dev\\parser")
    assert "module_000.py" in shown.splitlines()[5]
    for raw in ('{"output"', "\\r\\n", "\\n", '\\"'):
        assert raw not in shown, raw
    tool.screenshot(path=str(SCREENSHOTS / "tool-codex-windows-listing.png"))
    watch.assert_clean()


def _gemini_call(call_id: str, name: str, args: dict, output: str) -> dict:
    return {"id": call_id, "name": name, "args": args, "status": "success",
            "result": [{"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}]}  # fmt: skip


GEMINI_CALLS = [
    _gemini_call("t1", "update_topic", {"title": "Fix the parser", "strategic_intent": "Make parse() return [] for empty input.",
                                        "summary": "The **empty-input** test fails: parse() returns None."},  # fmt: skip
                 'Current topic: "Fix the parser"\nTopic summary: The **empty-input** test fails.'),
    _gemini_call("t2", "save_memory", {"fact": "The user wants type hints on every new function."},
                 '{"success":true,"message":"Okay, I\'ve remembered that."}'),
    _gemini_call("t3", "ask_user", {"questions": [
        {"header": "Empty input", "question": "What should parse('') return?", "type": "choice",
         "options": [{"label": "None", "description": "as today"}, {"label": "[]", "description": "an empty list"}]},
        {"header": "Tests", "question": "Anything else to cover?", "type": "text"}]},  # fmt: skip
        '{"answers":{"0":"[]","1":"lines with only spaces"}}'),
]


@pytest.fixture
def own_tools(live_server, tmp_path):
    """A Gemini CLI session with a topic, a memory and a question; a deepagents run (a LangChain
    message array) with its sandbox's `execute`."""
    project = make_project("own", "Own tools")
    user = make_user("otto", project=project)
    messages = [{"id": "u1", "timestamp": "2026-01-16T18:34:01.000Z", "type": "user", "content": [{"text": "Fix the parser"}]}]
    messages += [{"id": f"g{i}", "timestamp": f"2026-01-16T18:35:{i:02d}.000Z", "type": "gemini", "content": "",
                  "model": "gemini-2.5-pro", "toolCalls": [call]} for i, call in enumerate(GEMINI_CALLS)]  # fmt: skip
    gemini = tmp_path / "session-2026-01-16T18-34-3739ef95.json"
    gemini.write_text(json.dumps({"sessionId": "3739ef95-aaaa-bbbb-cccc-0000000000bb", "projectHash": "cd" * 32,
                                  "startTime": "2026-01-16T18:34:00.000Z", "lastUpdated": "2026-01-16T18:40:00.000Z",
                                  "messages": messages}))  # fmt: skip
    ingest.import_file(project, gemini)
    deep = tmp_path / "deepagents-run.json"
    deep.write_text(json.dumps([
        {"type": "human", "content": "Run the parser tests"},
        {"type": "ai", "content": "Running them.", "tool_calls": [{"name": "execute", "args": {"command": "pytest -q tests", "timeout": 120},
                                                                   "id": "call_x1"}]},  # fmt: skip
        {"type": "tool", "tool_call_id": "call_x1", "content": "..F\n1 failed, 2 passed\n[stderr] DeprecationWarning: <parser> is deprecated"
                                                                 "\n\n[Command failed with exit code 1]"},  # fmt: skip
    ]))
    ingest.import_file(project, deep)
    return {"user": user, "gemini": Conversation.objects.get(project=project, agent="gemini"),
            "deep": Conversation.objects.get(project=project, external_id="deepagents-run")}  # fmt: skip


def test_deepagents_execute_and_geminis_topic_memory_and_question_have_views(page, live_server, own_tools):
    """Issue 36: deepagents' `execute` and Gemini's `update_topic`, `save_memory` and `ask_user` were
    shown as raw JSON. Now: a shell run; a note; the questions with the answers given."""
    watch = Watch(page)
    login(page.context, live_server, own_tools["user"])
    page.goto(f"{live_server.url}/c/{own_tools['deep'].id}/")
    page.wait_for_selector("#turn-0")
    tool = _open_turn(page, 0)
    assert tool.locator("pre.bash-command").inner_text() == "$ pytest -q tests"
    assert tool.locator(".exit-code").inner_text() == "exit code 1"
    assert tool.locator("pre.stdout").inner_text() == "..F\n1 failed, 2 passed"
    assert tool.locator("pre.stderr").inner_text() == "DeprecationWarning: <parser> is deprecated"
    assert not tool.locator(".tool-view pre.json").count()
    tool.screenshot(path=str(SCREENSHOTS / "tool-deepagents-execute.png"))

    page.goto(f"{live_server.url}/c/{own_tools['gemini'].id}/")
    page.wait_for_selector("#turn-0")
    _open_turn(page, 0)
    tools = page.locator("#turn-0 .block-tool")
    topic, memory, ask = tools.nth(0), tools.nth(1), tools.nth(2)
    assert topic.locator(".note-label").inner_text() == "topic"
    assert topic.locator(".note-title").inner_text() == "Fix the parser"
    assert topic.locator(".note-intent").inner_text() == "Make parse() return [] for empty input."
    assert topic.locator(".note-text strong").inner_text() == "empty-input"  # the summary as Markdown
    assert memory.locator(".note-label").inner_text() == "remembered"
    assert memory.locator(".note-text").inner_text().strip() == "The user wants type hints on every new function."
    questions = ask.locator("li.ask-question")
    assert questions.count() == 2
    assert questions.nth(0).locator(".ask-text").inner_text() == "Empty input What should parse('') return?"
    chosen = questions.nth(0).locator(".ask-option.chosen")
    assert chosen.count() == 1 and "an empty list" in chosen.inner_text() and "as today" not in chosen.inner_text()
    assert questions.nth(0).locator(".ask-option").count() == 2
    assert questions.nth(1).locator(".ask-answer").inner_text() == "ANSWER lines with only spaces"
    for t in (topic, memory, ask):  # the result the tool gave the model: one click away, not in the way
        assert not t.locator(".tool-result").first.is_visible()
    page.locator("#turn-0").screenshot(path=str(SCREENSHOTS / "tool-gemini-note-ask.png"))
    watch.assert_clean()
