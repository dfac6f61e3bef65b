"""Other agents' tools as people read them, on the turn fragments a user opens (issue 22, item 6):
OpenHands, Gemini CLI, SWE-agent, mini-swe-agent, opencode and Crush calls get the views Claude
Code's tools get (a shell call as command, exit code and output; an edit as a red/green diff; a
write or a read as numbered, highlighted lines; a glob or a folder as paths; a todo list as a
checklist), an OpenHands browse shows its URL and a think its thought; results written with `\\n`
escapes read as text; terminal colours in a clipped block are coloured spans, never boxes; the
whole-block page of a tool call shows the same view as the turn.

Each agent has a synthetic case (imported through its importer where the format is one JSON
document, else stored as the importer stores it), and a real fixture where ../shared/fixtures has
one with such tools; the fixture counts are counted here with plain json or come from SOURCES.md.
"""

from __future__ import annotations

import json
import re
import uuid as uuidlib
from html import unescape
from pathlib import Path

import pytest
from django.urls import reverse

from contextviewer.display import rendering
from contextviewer.viewer import turn_content
from contextviewer.conversations.models import Conversation, Message
from contextviewer.ingest import files as ingest
from tests.conftest import shared_fixtures_dir
from tests.factories import make_project
from tests.module_worlds import make_user, project_and_user

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("x")</script>'


def _project_and_alice():
    project = make_project()
    return project, make_user(project=project)


# The project and its user, made once for the module (tests/module_worlds.py).
_module_world, project, user = project_and_user(_project_and_alice)


@pytest.fixture
def logged_in(client, user):
    client.force_login(user)
    return client


def _import(project, path: Path) -> Conversation:
    report = ingest.import_file(project, path)
    assert not getattr(report, "error", None), report
    return Conversation.objects.filter(project=project, parent__isnull=True).order_by("-id").first()


def _turns_html(client, conv: Conversation) -> str:
    """Every turn fragment of `conv`, the later pages of a long turn included."""
    html = []
    turns = sorted(set(Message.objects.filter(conversation=conv).values_list("turn", flat=True)))
    for turn in turns:
        url = reverse("turn", args=[conv.id, turn])
        while url:
            response = client.get(url, HTTP_HX_REQUEST="true")
            assert response.status_code == 200
            page = response.content.decode()
            html.append(page)
            more = re.search(r'class="more-messages" hx-get="([^"]+)"', page)
            url = more.group(1).replace("&amp;", "&") if more else None
    return "\n".join(html)


def _commands(html: str) -> list[str]:
    return re.findall(r'<pre class="bash-command"><span class="prompt" aria-hidden="true">\$ </span>(.*?)</pre>', html, re.S)


def _diff(html: str, cls: str) -> list[str]:
    return re.findall(rf'<span class="diff-line {cls}"><span class="diff-sign"[^>]*>[^<]*</span>(.*?)</span>', html, re.S)


def _code_lines(html: str) -> list[str]:
    """The text of every highlighted line (tags dropped, entities decoded)."""
    lists = re.findall(r'<ol class="hl code-lines[^"]*"[^>]*>(.*?)</ol>', html, re.S)
    return [
        unescape(re.sub(r"<[^>]+>", "", li)) for ol in lists for li in re.findall(r"<li(?: value=\"\d+\")?>(.*?)</li>", ol, re.S)
    ]


def _stdout(html: str) -> list[str]:
    return re.findall(r'<pre class="stdout[^"]*">(.*?)</pre>', html, re.S)


def _no_markup(html: str) -> None:
    assert "<script>" not in html
    assert not re.search(r"<[a-z][^<>]*\son\w+\s*=", html, re.I)


def _rows(project, agent: str, calls: list[tuple[str, object, str, bool]]) -> Conversation:
    """A conversation stored as the importers of `agent` store it (for formats kept in a database
    or a folder): one turn per call: a user prompt, the assistant's tool_call, the tool_result."""
    conv = Conversation.objects.create(project=project, agent=agent, external_id=str(uuidlib.uuid4()), title=f"{agent} tools")
    pos = 0
    for turn, (name, tool_input, result, is_error) in enumerate(calls):
        call_id = f"call-{turn}"
        result_block = {"kind": "tool_result", "text": result, "tool_id": call_id}
        if is_error:
            result_block["is_error"] = True
        for role, blocks in (
            ("user", [{"kind": "text", "text": f"step {turn}"}]),
            ("assistant", [{"kind": "tool_call", "tool_id": call_id, "tool_name": name, "tool_input": tool_input}]),
            ("tool", [result_block]),
        ):
            Message.objects.create(conversation=conv, position=pos, turn=turn, uuid=f"m{pos}", role=role, record_type=role,
                                   blocks=blocks, raw=json.dumps({"role": role}))  # fmt: skip
            pos += 1
    return conv


def _fixture(folder: str, name: str) -> Path:
    root = shared_fixtures_dir()
    if root is None:
        pytest.skip("shared fixtures not found (../shared/fixtures)")
    path = root / folder / name
    if not path.exists():
        pytest.skip(f"{folder}/{name} not in the shared fixtures")
    return path


# -- OpenHands ---------------------------------------------------------------------------------


def _tcm(call_id: str, name: str, arguments: dict, response: str) -> dict:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"function_name": name, "tool_call_id": call_id, "total_calls_in_response": 1,
            "model_response": {"id": response, "model": "claude-x", "choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}],
                               "usage": {"prompt_tokens": 100, "completion_tokens": 10}}}  # fmt: skip


def openhands_events() -> list:
    edit = {"command": "str_replace", "path": "/workspace/app.py", "old_str": "return 'hi'", "new_str": "return 'hello'"}
    create = {"command": "create", "path": "/workspace/new.py", "file_text": "import os\nprint(os.getcwd())\n" + HOSTILE + "\n"}
    view = {"command": "view", "path": "/workspace/app.py"}
    think = {"thought": "The **greeting** is in app.py."}
    events = [
        {
            "id": 1,
            "timestamp": "2025-01-01T10:00:01",
            "source": "user",
            "message": "fix it",
            "action": "message",
            "args": {"content": "Fix the greeting"},
        },
        {
            "id": 2,
            "timestamp": "2025-01-01T10:00:02",
            "source": "agent",
            "message": "Running",
            "action": "run",
            "args": {"command": "ls /workspace && false"},
            "tool_call_metadata": _tcm("t1", "execute_bash", {"command": "ls /workspace && false"}, "r1"),
        },
        {
            "id": 3,
            "timestamp": "2025-01-01T10:00:03",
            "source": "agent",
            "cause": 2,
            "observation": "run",
            "content": "app.py\nnew.py\n[The command completed with exit code 1.]",
            "extras": {},
            "tool_call_metadata": _tcm("t1", "execute_bash", {}, "r1"),
        },
        {
            "id": 4,
            "timestamp": "2025-01-01T10:00:04",
            "source": "agent",
            "message": "Editing",
            "action": "edit",
            "args": edit,
            "tool_call_metadata": _tcm("t2", "str_replace_editor", edit, "r2"),
        },
        {
            "id": 5,
            "timestamp": "2025-01-01T10:00:05",
            "source": "agent",
            "cause": 4,
            "observation": "edit",
            "content": "The file was edited.",
            "extras": {},
            "tool_call_metadata": _tcm("t2", "str_replace_editor", {}, "r2"),
        },
        {
            "id": 6,
            "timestamp": "2025-01-01T10:00:06",
            "source": "agent",
            "message": "Creating",
            "action": "edit",
            "args": create,
            "tool_call_metadata": _tcm("t3", "str_replace_editor", create, "r3"),
        },
        {
            "id": 7,
            "timestamp": "2025-01-01T10:00:07",
            "source": "agent",
            "cause": 6,
            "observation": "edit",
            "content": "File created.",
            "extras": {},
            "tool_call_metadata": _tcm("t3", "str_replace_editor", {}, "r3"),
        },
        {
            "id": 8,
            "timestamp": "2025-01-01T10:00:08",
            "source": "agent",
            "message": "Reading",
            "action": "read",
            "args": {"path": "/workspace/app.py"},
            "tool_call_metadata": _tcm("t4", "str_replace_editor", view, "r4"),
        },
        {
            "id": 9,
            "timestamp": "2025-01-01T10:00:09",
            "source": "agent",
            "cause": 8,
            "observation": "read",
            "content": "Here's the result of running `cat -n` on /workspace/app.py:\n     1\tdef greet():\n     2\t    return 'hello'\n",
            "extras": {},
            "tool_call_metadata": _tcm("t4", "str_replace_editor", {}, "r4"),
        },
        {
            "id": 10,
            "timestamp": "2025-01-01T10:00:10",
            "source": "agent",
            "message": "Thinking",
            "action": "think",
            "args": {"thought": ""},
            "tool_call_metadata": _tcm("t5", "think", think, "r5"),
        },
        {
            "id": 11,
            "timestamp": "2025-01-01T10:00:11",
            "source": "agent",
            "cause": 10,
            "observation": "think",
            "content": "Your thought has been logged.",
            "extras": {},
            "tool_call_metadata": _tcm("t5", "think", {}, "r5"),
        },
        # A non-function-calling browse action: no tool_call_metadata, its observation pairs by cause.
        {
            "id": 12,
            "timestamp": "2025-01-01T10:00:12",
            "source": "agent",
            "message": "Browsing",
            "action": "browse",
            "args": {"url": "https://example.org/docs?q=<b>"},
        },
        {
            "id": 13,
            "timestamp": "2025-01-01T10:00:13",
            "source": "agent",
            "cause": 12,
            "observation": "browse",
            "content": "Example docs",
            "extras": {},
        },
    ]
    return events


def test_openhands_run_edit_create_view_think_and_browse_get_their_views(tmp_path, project, logged_in):
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(openhands_events()))
    conv = _import(project, path)
    assert conv.agent == "openhands"
    html = _turns_html(logged_in, conv)
    # execute_bash: the command, the exit code from OpenHands' own line, the output without that line
    assert _commands(html) == ["ls /workspace &amp;&amp; false"]
    assert 'class="exit-code exit-fail">exit code 1<' in html
    assert _stdout(html) == ["app.py\nnew.py"]
    # str_replace: a diff; create: the new file's lines, hostile text as text
    assert _diff(html, "diff-del") == ["return &#x27;hi&#x27;"] and _diff(html, "diff-add") == ["return &#x27;hello&#x27;"]
    lines = _code_lines(html)
    assert "import os" in lines and HOSTILE in lines
    # view: the cat -n listing as numbered lines (the header line gone)
    assert "def greet():" in lines and "Here's the result" not in "".join(lines)
    # think: the thought as Markdown; browse: the URL as text
    assert re.search(r'<div class="md think-text">.*<strong>greeting</strong>', html, re.S)
    assert '<code class="url">https://example.org/docs?q=&lt;b&gt;</code>' in html
    _no_markup(html)


def test_openhands_fixture_edit_and_shell_calls_get_views(project, logged_in):
    path = _fixture("openhands", "All-Hands-AI__OpenHands__basic.json")
    events = json.loads(path.read_text())
    # Counted with plain json: the model's str_replace_editor calls that create a file (their
    # arguments are in the response the event carries).
    creates = []
    for e in events:
        tcm = e.get("tool_call_metadata") or {}
        if "action" in e and tcm.get("function_name") == "str_replace_editor":
            for call in tcm["model_response"]["choices"][0]["message"].get("tool_calls") or []:
                args = json.loads(call["function"]["arguments"])
                if call["id"] == tcm["tool_call_id"] and args.get("command") == "create":
                    creates.append(args)
    assert creates, "the fixture has a create call"
    conv = _import(project, path)
    html = _turns_html(logged_in, conv)
    assert html.count('class="tool-view tool-write"') == len(creates)
    assert creates[0]["file_text"].split("\n")[0] in _code_lines(html)
    assert "&quot;file_text&quot;" not in html.split('<details class="tool-raw">')[0]  # the JSON is only in "raw"


# -- Gemini CLI --------------------------------------------------------------------------------


def _gemini_call(call_id: str, name: str, args: dict, output: str, status: str = "success") -> dict:
    return {"id": call_id, "name": name, "args": args, "status": status,
            "result": [{"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}]}  # fmt: skip


def gemini_chat() -> dict:
    shell = ("Command: printf 'a\\nb'\nDirectory: /w\nOutput: a\nb\nError: (none)\nExit Code: 0\nSignal: (none)\n"
             "Background PIDs: (none)\nProcess Group PGID: 7")  # fmt: skip
    escaped = "Command: ls\\nDirectory: (root)\\nOutput: one.txt\\ntwo.txt\\nError: (none)\\nExit Code: 2\\nSignal: 0"
    calls = [
        _gemini_call(
            "c1", "run_shell_command", {"command": "printf 'a\\nb'", "description": "Print two lines", "directory": "/w"}, shell
        ),
        _gemini_call("c2", "run_shell_command", {"command": "ls"}, escaped),
        _gemini_call(
            "c3",
            "write_file",
            {"file_path": "/w/hello.py", "content": "print('hello')\n" + HOSTILE + "\n"},
            "Successfully created",
        ),
        _gemini_call(
            "c4",
            "replace",
            {"file_path": "/w/hello.py", "old_string": "print('hello')", "new_string": "print('bye')"},
            "Replaced 1",
        ),
        _gemini_call("c5", "read_file", {"absolute_path": "/w/hello.py", "offset": 10}, "x = 1\ny = 2\n"),
        _gemini_call(
            "c6",
            "glob",
            {"pattern": "**/*.py"},
            'Found 2 file(s) matching "**/*.py" within /w, sorted by modification time (newest first):\n/w/a.py\n/w/b.py',
        ),
        _gemini_call("c7", "list_directory", {"path": "/w"}, "Directory listing for /w:\n[DIR] src\nREADME.md"),
        _gemini_call(
            "c8",
            "write_todos",
            {
                "todos": [
                    {"description": "Write the fix", "status": "completed"},
                    {"description": "Run the tests", "status": "in_progress"},
                ]
            },
            "ok",
        ),  # fmt: skip
    ]
    messages = [{"id": "u1", "timestamp": "2026-01-16T18:34:01.000Z", "type": "user", "content": [{"text": "Do the work"}]}]
    for i, call in enumerate(calls):
        messages.append({"id": f"g{i}", "timestamp": f"2026-01-16T18:35:{i:02d}.000Z", "type": "gemini", "content": "",
                         "model": "gemini-2.5-pro", "toolCalls": [call]})  # fmt: skip
    return {"sessionId": "3739ef95-aaaa-bbbb-cccc-0000000000aa", "projectHash": "ab" * 32, "startTime": "2026-01-16T18:34:00.000Z",
            "lastUpdated": "2026-01-16T18:40:00.000Z", "messages": messages}  # fmt: skip


def test_gemini_shell_write_replace_read_glob_list_and_todos_get_their_views(tmp_path, project, logged_in):
    path = tmp_path / "session-2026-01-16T18-34-3739ef95.json"
    path.write_text(json.dumps(gemini_chat()))
    conv = _import(project, path)
    assert conv.agent == "gemini"
    html = _turns_html(logged_in, conv)
    assert _commands(html) == ["printf &#x27;a\\nb&#x27;", "ls"]
    assert '<p class="bash-description">Print two lines</p>' in html and '<span class="path">/w</span>' in html
    # the output lines, not Gemini's labels; the escaped one decoded: no "\n" left in it
    assert _stdout(html) == ["a\nb", "one.txt\ntwo.txt"]
    assert 'exit-ok">exit code 0<' in html and 'exit-fail">exit code 2<' in html
    lines = _code_lines(html)
    assert "print('hello')" in lines and HOSTILE in lines
    assert _diff(html, "diff-del") == ["print(&#x27;hello&#x27;)"] and _diff(html, "diff-add") == ["print(&#x27;bye&#x27;)"]
    assert '<ol class="hl code-lines w2" start="11">' in html  # read_file from offset 10: lines 11, 12
    assert "<li><code>/w/a.py</code></li>" in html and "<li><code>src/</code></li>" in html
    assert 'class="todo todo-completed"' in html and "Run the tests" in html
    _no_markup(html)


def test_gemini_fixture_writes_and_reads_are_code(project, logged_in):
    path = _fixture("gemini-cli", "Mai0313__VibeCodingTracker__test_conversation_gemini.json")
    doc = json.loads(path.read_text())
    names = [c.get("name") for m in doc["messages"] for c in (m.get("toolCalls") or [])]
    conv = _import(project, path)
    html = _turns_html(logged_in, conv)
    # counted with plain json: 4 write_file and 3 read_file calls (SOURCES.md: toolCalls with results)
    assert html.count('class="tool-view tool-write"') == names.count("write_file") == 4
    assert html.count('class="tool-view tool-read"') == names.count("read_file") == 3
    assert html.count('class="hl code-lines') == 7


def test_gemini_fixture_shell_results_read_as_output(project, logged_in):
    path = _fixture("gemini-cli", "jazzyalex__agent-sessions__large.json")
    doc = json.loads(path.read_text())
    shells = [c for m in doc["messages"] for c in (m.get("toolCalls") or []) if c.get("name") == "run_shell_command"]
    conv = _import(project, path)
    html = _turns_html(logged_in, conv)
    assert len(_commands(html)) == len(shells) > 0
    for out in _stdout(html):
        assert "\\n" not in out and "Process Group PGID" not in out


# -- SWE-agent ---------------------------------------------------------------------------------


def swe_traj() -> dict:
    trail = "\n(Open file: /repo/src/calc.py)\n(Current directory: /repo)\nbash-$"
    diff = ("diff --git a/src/calc.py b/src/calc.py\nindex 1..2 100644\n--- a/src/calc.py\n+++ b/src/calc.py\n"
            "@@ -1,2 +1,2 @@\n def div(a, b):\n-    return a/b\n+    return a / b if b else None\n")  # fmt: skip
    steps = [
        ("open src/calc.py", "[File: /repo/src/calc.py (2 lines total)]\n1:def div(a, b):\n2:    return a/b" + trail),
        (
            "edit 2:2\n    return a / b if b else None\nend_of_edit",
            "[File: /repo/src/calc.py (2 lines total)]\n1:def div(a, b):\n2:    return a / b if b else None" + trail,
        ),
        ("python -c 'print(1/2)'", "0.5" + trail),
        ("submit", diff),
    ]
    query = [
        {"role": "system", "content": "You are an autonomous programmer"},
        {"role": "user", "content": "Fix division by zero"},
    ]
    return {"trajectory": [{"thought": f"step {i}", "action": a, "observation": o, "response": f"step {i}\n```\n{a}\n```",
                            "state": "{}", "execution_time": 0.1, **({"query": query} if i == 0 else {})}
                           for i, (a, o) in enumerate(steps)], "info": {"exit_status": "submitted"}}  # fmt: skip


def test_swe_agent_actions_get_read_edit_bash_and_diff_views(tmp_path, project, logged_in):
    path = tmp_path / "calc-1.traj"
    path.write_text(json.dumps(swe_traj()))
    conv = _import(project, path)
    assert conv.agent == "swe-agent"
    html = _turns_html(logged_in, conv)
    assert "def div(a, b):" in _code_lines(html)  # open: the window as numbered lines
    assert "lines 2-2 replaced" in html and _diff(html, "diff-add")[0] == "    return a / b if b else None"
    assert _commands(html) == ["python -c &#x27;print(1/2)&#x27;"]
    assert _stdout(html) == ["0.5"] and '<span class="path">/repo</span>' in html  # the trailer is where it ran
    assert "(Open file:" not in "".join(_stdout(html))
    assert "    return a/b" in _diff(html, "diff-del")  # submit: the submitted diff
    assert "src/calc.py" in html


def test_swe_agent_fixture_bash_calls_are_commands(project, logged_in):
    path = _fixture("swe-agent", "SWE-agent__SWE-agent__function_calling_simple.traj")
    doc = json.loads(path.read_text())
    bash = [c for m in doc.get("history", []) if m.get("role") == "assistant" for c in (m.get("tool_calls") or [])
            if c.get("function", {}).get("name") == "bash"]  # fmt: skip
    conv = _import(project, path)
    html = _turns_html(logged_in, conv)
    assert len(_commands(html)) == len(bash) > 0
    assert all("bash-$" not in out for out in _stdout(html))


# -- mini-swe-agent ----------------------------------------------------------------------------


def test_mini_swe_agent_bash_actions_show_exit_code_and_output(tmp_path, project, logged_in):
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Fix the bug"},
        {"role": "assistant", "content": "THOUGHT: run it\n\n```bash\npython run.py\n```"},
        {"role": "user", "content": "<returncode>1</returncode>\n<output>\nTraceback: boom " + HOSTILE + "\n</output>"},
        {"role": "assistant", "content": "THOUGHT: list\n\n```bash\nls\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\nrun.py\n</output>"},
    ]
    doc = {"info": {"mini_version": "1.15.0"}, "messages": messages, "trajectory_format": "mini-swe-agent-1"}
    path = tmp_path / "bug-1.traj.json"
    path.write_text(json.dumps(doc))
    conv = _import(project, path)
    assert conv.agent == "mini-swe-agent"
    html = _turns_html(logged_in, conv)
    assert _commands(html) == ["python run.py", "ls"]
    assert 'exit-fail">exit code 1<' in html and 'exit-ok">exit code 0<' in html
    assert _stdout(html) == ["Traceback: boom &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;", "run.py"]
    assert "&lt;returncode&gt;" not in "".join(_stdout(html))
    _no_markup(html)


def test_mini_swe_agent_fixture_every_action_is_a_command_with_its_exit_code(project, logged_in, monkeypatch):
    # The run is one long turn: shown on one page here, so that no page ends between a call and its result.
    monkeypatch.setattr(turn_content, "TURN_PAGE_CHARS", 10**9)
    monkeypatch.setattr(turn_content, "MESSAGES_PER_TURN_PAGE", 1000)
    path = _fixture("mini-swe-agent", "gruckion__mini-swe-agent__django__django-15104.traj.json")
    conv = _import(project, path)
    html = _turns_html(logged_in, conv)
    # SOURCES.md: 24 bash actions, 23 `<returncode>` observations (the last is the submission)
    assert len(_commands(html)) == 24
    assert len(re.findall(r'class="exit-code exit-(?:ok|fail)">exit code -?\d+<', html)) == 23


# -- opencode and Crush (stored as their importers store them) ---------------------------------


def test_opencode_bash_edit_write_and_read_get_their_views(project, logged_in):
    conv = _rows(project, "opencode", [
        ("bash", {"command": "go test ./...", "description": "Run the tests"}, "ok  \tpkg\t0.2s\n", False),
        ("edit", {"filePath": "/w/main.go", "oldString": "fmt.Println(1)", "newString": "fmt.Println(2)"}, "", False),
        ("write", {"filePath": "/w/notes.md", "content": "# Notes\n" + HOSTILE + "\n"}, "", False),
        ("read", {"filePath": "/w/main.go"}, "<file>\n00001| package main\n00002| \n00003| func main() {}\n</file>", False),
    ])  # fmt: skip
    html = _turns_html(logged_in, conv)
    assert _commands(html) == ["go test ./..."] and '<p class="bash-description">Run the tests</p>' in html
    assert "exit-unknown" in html and "exit code 1" not in html  # opencode does not log it: not called a failure
    assert _diff(html, "diff-del") == ["fmt.Println(1)"] and _diff(html, "diff-add") == ["fmt.Println(2)"]
    lines = _code_lines(html)
    assert HOSTILE in lines and "package main" in lines and "00001|" not in html.split("tool-raw")[0]
    _no_markup(html)


def test_crush_tools_get_their_views(project, logged_in):
    conv = _rows(project, "crush", [
        ("bash", {"command": "make", "description": "Build"}, "built\n\n<cwd>/w/app</cwd>", False),
        ("multiedit", {"file_path": "/w/a.py", "edits": [{"old_string": "a = 1", "new_string": "a = 2"}, {"old_string": "b", "new_string": "c"}]}, "ok", False),
        ("view", {"file_path": "/w/a.py"}, "<file>\n     1|a = 2\n     2|c\n</file>\n", False),
        ("ls", {"path": "/w"}, "- /w/\n  - a.py\n  - src/\n    - b.py\n", False),
        ("todos", {"todos": [{"content": "Ship it", "status": "pending", "active_form": "Shipping"}]}, "ok", False),
        ("glob", {"pattern": "**/*.py"}, "/w/a.py\n/w/src/b.py", False),
    ])  # fmt: skip
    html = _turns_html(logged_in, conv)
    assert _commands(html) == ["make"] and _stdout(html) == ["built"] and '<span class="path">/w/app</span>' in html
    assert _diff(html, "diff-add") == ["a = 2", "c"]
    assert "a = 2" in _code_lines(html)
    assert "<li><code>/w/src/b.py</code></li>" in html and "<li><code>/w/src/</code></li>" in html
    assert 'class="todo todo-pending"' in html


def test_crush_fixture_edits_and_views(project, logged_in):
    import sqlite3

    path = _fixture("crush", "AndresGaibor__cisco-auto__crush.db")
    db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    names = []
    for (parts,) in db.execute("select parts from messages where role = 'assistant'"):
        for p in json.loads(parts):
            if p.get("type") == "tool_call":
                names.append(p.get("data", {}).get("name"))
    db.close()
    assert names.count("edit") > 0
    ingest.import_file(project, path)
    html = "".join(_turns_html(logged_in, c) for c in Conversation.objects.filter(project=project, agent="crush"))
    # plain sqlite3 count of the edit and multiedit calls: each is a diff view
    assert html.count('class="tool-view tool-edit"') == names.count("edit") + names.count("multiedit")
    assert len(_commands(html)) == names.count("bash")


# -- ANSI in a clipped block, and the whole-block page -----------------------------------------


def test_ansi_colours_in_a_clipped_result_are_spans_never_escape_codes(project, logged_in):
    red, green, reset = "\x1b[31m", "\x1b[1;32m", "\x1b[0m"
    # long enough to be clipped (head and tail), with an escape sequence cut by the head's end
    # and one by the tail's start, and a colour in each
    head = f"{red}FAILED{reset} test_a\n"  # 23 characters
    tail = f"{red}E   assert 1 == 2{reset}\n"  # 27 characters
    # the head ends 3 characters into the green escape (at HEAD_CHARS); the tail starts 2 into the red one
    body = (
        head
        + "x" * (rendering.HEAD_CHARS - 3 - 23)
        + f"{green}ok{reset}"
        + "y" * 3000
        + tail
        + "z" * (rendering.TAIL_CHARS + 2 - 27)
    )
    assert body[rendering.HEAD_CHARS - 3] == "\x1b" and body[len(body) - rendering.TAIL_CHARS - 2] == "\x1b"
    conv = _rows(project, "opencode", [("unknown_tool", {"arg": 1}, body, False)])
    html = _turns_html(logged_in, conv)
    assert "Load the rest" in html
    assert "\x1b" not in html and "[31m" not in html and "[0m" not in html and "[1;32m" not in html
    assert '<span class="ansi-red">FAILED</span>' in html
    assert '<span class="ansi-red">E   assert 1 == 2</span>' in html  # the tail keeps its colour too
    # the rest, loaded in place, is coloured the same way
    message = Message.objects.get(conversation=conv, role="tool")
    rest = logged_in.get(reverse("block", args=[conv.id, message.id, 0]), HTTP_HX_REQUEST="true").content.decode()
    assert (
        "\x1b" not in rest
        and "[31m" not in rest
        and '<span class="ansi-bold ansi-green">ok</span>' in rest.replace("ansi-green ansi-bold", "ansi-bold ansi-green")
    )


def test_ansi_in_a_shell_view_is_coloured(project, logged_in):
    conv = _rows(project, "crush", [("bash", {"command": "pytest"}, "\x1b[32m3 passed\x1b[0m in 0.1s", False)])
    html = _turns_html(logged_in, conv)
    assert "\x1b" not in html and "[32m" not in html
    assert '<pre class="stdout ansi"><span class="ansi-green">3 passed</span> in 0.1s</pre>' in html


def test_the_whole_block_page_of_a_write_shows_the_tool_view(project, logged_in):
    content = "\n".join(f"line_{i} = {i}" for i in range(400)) + "\n" + HOSTILE
    conv = _rows(project, "claude-code", [("Write", {"file_path": "/w/big.py", "content": content}, "File created", False)])
    message = Message.objects.get(conversation=conv, role="assistant")
    url = reverse("block", args=[conv.id, message.id, 0])
    page = logged_in.get(url).content.decode()
    assert 'class="tool-view tool-write"' in page and '<ol class="hl code-lines' in page
    assert "line_0 = 0" in _code_lines(page)
    assert "/w/big.py" in page and "File created" in page  # the path in the head, the result under it
    head = page.split('<details class="tool-raw">')[0]
    assert "&quot;content&quot;" not in head and "&quot;content&quot;" in page  # the raw JSON only behind "raw"
    _no_markup(page)
    # htmx ("Load the rest" inside the raw view) still gets the raw text
    fragment = logged_in.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "&quot;content&quot;: &quot;line_0 = 0" in fragment and "tool-view" not in fragment


def test_a_result_written_as_a_json_string_reads_as_its_text(project, logged_in):
    conv = _rows(project, "opencode", [("unknown_tool", {"q": 1}, json.dumps("first line\nsecond <b>line</b>"), False)])
    html = _turns_html(logged_in, conv)
    assert '<pre class="plain" hx-disable>first line\nsecond &lt;b&gt;line&lt;/b&gt;</pre>' in html
    assert "first line\\nsecond" not in html


def test_an_unknown_tool_with_text_over_several_lines_shows_each_argument_as_it_reads(project, logged_in):
    prompt = "Summarize this page:\nhttps://example.org\n" + HOSTILE
    conv = _rows(project, "gemini", [("web_fetch", {"prompt": prompt, "limit": 3}, "A summary", False)])
    html = _turns_html(logged_in, conv)
    view = html.split('<details class="tool-raw">')[0]
    assert '<dt>prompt</dt><dd><pre class="plain arg-text">Summarize this page:\nhttps://example.org\n&lt;script&gt;' in view
    assert "<dt>limit</dt><dd><code>3</code></dd>" in view
    assert "\\n" not in view  # no JSON escapes before the raw view
    _no_markup(html)
