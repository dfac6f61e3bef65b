"""Tool calls as people read them, on the turn fragments a user opens: Edit and MultiEdit as diffs,
Codex apply_patch as a diff, Read and Write highlighted with line numbers, Bash with description,
command, exit code and stderr apart (and the shell tools of Codex the same way), TodoWrite as a checklist, Glob/Grep as paths, Task prompts and
reports as Markdown with the sub-agent's turns in place, the raw input one click away. Hostile text
stays text everywhere."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation, Fold
from tests.factories import TextSource, build_conversation, make_project
from tests.module_worlds import make_user, project_and_user
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _project_and_alice():
    project = make_project()
    return project, make_user(project=project)


# The project and its user, made once for the module (tests/module_worlds.py).
_module_world, project, user = project_and_user(_project_and_alice)


@pytest.fixture
def logged_in(client, user):
    client.force_login(user)
    return client


def _session(tmp_path, project, steps) -> Conversation:
    """One turn per step: a user line, an assistant call of (tool, input), and its result."""
    b = SessionBuilder()
    lines = []
    for i, (tool, tool_input, result) in enumerate(steps):
        lines.append(b.user(f"step {i}"))
        lines += b.assistant(f"doing step {i}", tool=(tool, tool_input))
        if result is not None:
            text, kwargs = result if isinstance(result, tuple) else (result, {})
            lines.append(b.tool_result(text, **kwargs))
    path = tmp_path / "s.jsonl"
    write_lines(path, lines)
    ingest.import_file(project, path)
    return Conversation.objects.get(project=project, external_id=b.session_id)


def _turn(client, conv, turn: int) -> str:
    response = client.get(reverse("turn", args=[conv.id, turn]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode()


def _no_markup(html: str) -> None:
    assert "<script>" not in html and "<img" not in html
    assert not re.search(r"<[a-z][^<>]*\son\w+\s*=", html, re.I)


def _lines(html: str, cls: str) -> list[str]:
    found = re.findall(rf'<span class="diff-line {cls}"><span class="diff-sign"[^>]*>[^<]*</span>(.*?)</span>', html, re.S)
    return found


def test_edit_is_a_red_green_diff_and_hostile_strings_stay_text(tmp_path, project, logged_in):
    old = "def greet():\n    return 'hi'\n" + HOSTILE + "\nkeep me"
    new = "def greet():\n    return 'hello'\n" + HOSTILE + "\nkeep me"
    conv = _session(tmp_path, project, [("Edit", {"file_path": "src/app.py", "old_string": old, "new_string": new},
                                         "The file src/app.py has been updated.")])
    html = _turn(logged_in, conv, 0)
    assert _lines(html, "diff-del") == ["    return &#x27;hi&#x27;"]
    assert _lines(html, "diff-add") == ["    return &#x27;hello&#x27;"]
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html  # unchanged context, as text
    assert "src/app.py" in html and 'class="diff-count count-add">+1<' in html
    _no_markup(html)
    # the raw input is one click away, and unknown-to-the-diff text is all there
    raw = re.search(r'<details class="tool-raw"><summary>raw</summary>(.*?)</details>', html, re.S).group(1)
    assert "old_string" in raw and "&lt;img src=x onerror=alert(1)&gt;" in raw


def test_multiedit_shows_one_diff_per_edit(tmp_path, project, logged_in):
    edits = [{"old_string": "alpha = 1", "new_string": "alpha = 2"}, {"old_string": "beta", "new_string": "gamma"}]
    conv = _session(tmp_path, project, [("MultiEdit", {"file_path": "m.py", "edits": edits}, "ok")])
    html = _turn(logged_in, conv, 0)
    assert html.count('<div class="diff">') == 2
    assert _lines(html, "diff-del") == ["alpha = 1", "beta"] and _lines(html, "diff-add") == ["alpha = 2", "gamma"]


def test_codex_apply_patch_is_a_diff(tmp_path, project, logged_in):
    patch = ("*** Begin Patch\n*** Update File: src/lib.rs\n@@ fn main\n-    println!(\"old\");\n"
             "+    println!(\"<b>new</b>\");\n     keep();\n*** Add File: NOTES.md\n+hello\n*** End Patch\n")
    lines = [
        json.dumps({"timestamp": "2026-03-01T12:00:00Z", "type": "session_meta", "payload": {"id": "0199aaaa-0000-7000-8000-000000000001", "cwd": "/w", "cli_version": "0.60.0"}}),
        json.dumps({"timestamp": "2026-03-01T12:00:01Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "patch it"}]}}),
        json.dumps({"timestamp": "2026-03-01T12:00:02Z", "type": "response_item", "payload": {"type": "custom_tool_call", "status": "completed", "call_id": "call_1", "name": "apply_patch", "input": patch}}),
        json.dumps({"timestamp": "2026-03-01T12:00:03Z", "type": "response_item", "payload": {"type": "custom_tool_call_output", "call_id": "call_1", "output": "Success. Updated the following files:\nM src/lib.rs"}}),
    ]
    path = tmp_path / "rollout-2026-03-01T12-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl"
    write_lines(path, lines)
    ingest.import_file(project, path)
    conv = Conversation.objects.get(project=project, agent="codex")
    html = _turn(logged_in, conv, 0)
    assert _lines(html, "diff-del") == ['    println!(&quot;old&quot;);']
    assert _lines(html, "diff-add") == ['    println!(&quot;&lt;b&gt;new&lt;/b&gt;&quot;);', "hello"]
    assert "src/lib.rs" in html and "NOTES.md" in html and "<b>new" not in html


CODEX_SID = "0199aaaa-0000-7000-8000-0000000000c5"


def _codex_session(tmp_path, project, items: list[tuple[str, dict]]) -> Conversation:
    """A Codex rollout of (line type, payload) items after its session_meta."""
    lines = [json.dumps({"timestamp": "2026-03-01T12:00:00Z", "type": "session_meta",
                         "payload": {"id": CODEX_SID, "cwd": "/w", "cli_version": "0.104.0"}})]  # fmt: skip
    for i, (kind, payload) in enumerate(items):
        lines.append(json.dumps({"timestamp": f"2026-03-01T12:00:{i + 1:02d}Z", "type": kind, "payload": payload}))
    path = tmp_path / f"rollout-2026-03-01T12-00-00-{CODEX_SID}.jsonl"
    write_lines(path, lines)
    ingest.import_file(project, path)
    return Conversation.objects.get(project=project, agent="codex", external_id=CODEX_SID)


def _codex_user(text: str) -> tuple[str, dict]:
    return "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _codex_call(call_id: str, name: str, arguments: dict) -> tuple[str, dict]:
    return "response_item", {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id}


def _codex_output(call_id: str, output: str) -> tuple[str, dict]:
    return "response_item", {"type": "function_call_output", "call_id": call_id, "output": output}


def _bash_command(html: str) -> str:
    return re.search(r'<pre class="bash-command"><span class="prompt" aria-hidden="true">\$ </span>(.*?)</pre>', html, re.S).group(1)


def test_codex_shell_calls_show_command_exit_code_and_output_like_bash(tmp_path, project, logged_in):
    json_output = json.dumps({"output": "a.txt\n<b>bold</b>.txt\n", "metadata": {"exit_code": 0, "duration_seconds": 0.4}})
    conv = _codex_session(tmp_path, project, [
        _codex_user("list the files"),
        _codex_call("c1", "shell", {"command": ["bash", "-lc", "cd src && ls '<b>'"], "workdir": "/w/<app>",
                                    "justification": "List the <files>"}),
        _codex_output("c1", json_output),
        _codex_user("build it"),
        _codex_call("c2", "exec_command", {"cmd": "make build", "workdir": "/w"}),
        ("event_msg", {"type": "exec_command_end", "call_id": "c2", "command": ["bash", "-lc", "make build"], "cwd": "/w",
                       "stdout": "cc -o app main.c\n", "stderr": "main.c:3: error: <oops>\n", "aggregated_output": "",
                       "exit_code": 2, "duration": {"secs": 2, "nanos": 0}, "formatted_output": "", "status": "failed"}),
        _codex_output("c2", "Chunk ID: 9\nWall time: 2.0000 seconds\nProcess exited with code 2\nOutput:\n"
                            "cc -o app main.c\nmain.c:3: error: <oops>\n"),
        _codex_user("serve it"),
        _codex_call("c3", "exec_command", {"cmd": "python -m http.server"}),
        _codex_output("c3", "Chunk ID: 10\nWall time: 10.0000 seconds\nProcess running with session ID 4\nOutput:\nServing HTTP\n"),
        _codex_user("and this?"),
        _codex_call("c4", "shell", {"command": ["ls"]}),
        _codex_output("c4", "[REDACTED_OUTPUT len=12 sha=00000000] " + HOSTILE),
    ])  # fmt: skip
    html = _turn(logged_in, conv, 0)
    assert _bash_command(html) == "cd src &amp;&amp; ls &#x27;&lt;b&gt;&#x27;"  # the script of bash -lc, as text
    assert '<p class="bash-description">List the &lt;files&gt;</p>' in html
    assert 'in <span class="path">/w/&lt;app&gt;</span>' in html
    assert '<span class="exit-code exit-ok">exit code 0</span>' in html and ">0.4 s</span>" in html
    assert '<div class="stream-label">output</div><pre class="stdout">a.txt\n&lt;b&gt;bold&lt;/b&gt;.txt\n</pre>' in html
    assert "metadata" not in html.split('class="tool-raw"')[0]  # the JSON wrapper is not what is shown
    _no_markup(html)

    html = _turn(logged_in, conv, 1)  # exec_command: its exec_command_end split stdout and stderr
    assert _bash_command(html) == "make build"
    assert '<span class="exit-code exit-fail">exit code 2</span>' in html and ">2.0 s</span>" in html
    assert '<div class="stream-label">stdout</div><pre class="stdout">cc -o app main.c\n</pre>' in html
    assert '<pre class="stderr">main.c:3: error: &lt;oops&gt;\n</pre>' in html

    html = _turn(logged_in, conv, 2)  # still running when the model read it
    assert '<span class="exit-code exit-running">running</span>' in html and "still running (session 4)" in html
    assert "exit code" not in html and "Serving HTTP" in html

    html = _turn(logged_in, conv, 3)  # an output of no known shape: the command, then the result as it is
    assert _bash_command(html) == "ls" and 'class="bash-result"' not in html
    assert "[REDACTED_OUTPUT len=12 sha=00000000]" in html
    _no_markup(html)


@pytest.mark.fixtures
def test_a_real_codex_rollout_shows_its_shell_calls_like_bash(fixtures_dir, project, logged_in):
    path = fixtures_dir / "codex" / "Mai0313__VibeCodingTracker__test_conversation_codex.jsonl"
    if not path.exists():
        pytest.skip(f"{path.name} is not in the shared fixtures")
    ingest.import_file(project, path)
    conv = Conversation.objects.get(project=project, agent="codex")
    turns = {}
    for m in conv.messages.filter(role="assistant").order_by("position"):
        for b in m.blocks:
            if b.get("tool_name") == "shell":
                turns.setdefault(b["tool_input"]["command"][2], m.turn)
    html = _turn(logged_in, conv, turns["ls -la"])
    assert "<span class=\"prompt\" aria-hidden=\"true\">$ </span>ls -la</pre>" in html
    assert '<span class="exit-code exit-ok">exit code 0</span>' in html
    assert re.search(r'<pre class="stdout">total 124\n', html)
    patch_turn = next(t for cmd, t in turns.items() if "*** Update File: go.mod" in cmd)
    html = _turn(logged_in, conv, patch_turn)  # apply_patch sent through the shell: still a diff
    assert "go.mod" in html and "go 1.24" in _lines(html, "diff-add") and "PATCH" not in _lines(html, "diff-ctx")


def _line_numbers(html: str) -> list[int]:
    """The numbers a browser shows beside highlighted code: an ordered list numbered from its
    `start` (1 by default), a `value` where the numbers jump."""
    numbers = []
    for start, items in re.findall(r'<ol class="hl code-lines[^"]*"(?: start="(\d+)")?>(.*?)</ol>', html, re.S):
        n = int(start or 1) - 1
        for value in re.findall(r'<li(?: value="(\d+)")?>', items):
            n = int(value) if value else n + 1
            numbers.append(n)
    return numbers


def test_read_and_write_are_highlighted_with_line_numbers(tmp_path, project, logged_in):
    read_result = "    41→def f(x):\n    42→    return '<script>x</script>'\n    43→"
    conv = _session(tmp_path, project, [
        ("Read", {"file_path": "/w/src/mod.py", "offset": 41, "limit": 3}, read_result),
        ("Write", {"file_path": "/w/new.py", "content": "import os\nprint(os.sep)\n"}, "File created"),
    ])
    html = _turn(logged_in, conv, 0)
    assert _line_numbers(html) == [41, 42, 43]  # the file's own numbers
    assert '<span class="k">def</span>' in html and '<span class="nf">f</span>' in html  # pygments classes
    assert "&lt;script&gt;x&lt;/script&gt;" in html
    assert "style=" not in html
    _no_markup(html)
    html = _turn(logged_in, conv, 1)
    assert _line_numbers(html) == [1, 2]
    assert '<span class="kn">import</span>' in html


def test_bash_shows_description_command_exit_code_and_stderr_apart(tmp_path, project, logged_in):
    conv = _session(tmp_path, project, [
        ("Bash", {"command": "make build && echo '<b>done</b>'", "description": "Build the <project>"},
         ("built\n<b>done</b>\nwarning: deprecated", {"tool_use_result": {"stdout": "built\n<b>done</b>", "stderr": "warning: deprecated", "interrupted": False, "isImage": False}})),
        ("Bash", {"command": "pytest -q", "description": "Run the tests"},
         ("Exit code 2\n1 failed, 3 passed", {"is_error": True, "tool_use_result": "Error: Exit code 2\n1 failed, 3 passed"})),
    ])
    html = _turn(logged_in, conv, 0)
    assert '<p class="bash-description">Build the &lt;project&gt;</p>' in html
    assert "make build &amp;&amp; echo &#x27;&lt;b&gt;done&lt;/b&gt;&#x27;</pre>" in html
    assert '<span class="exit-code exit-ok">exit code 0</span>' in html
    assert '<pre class="stdout">built\n&lt;b&gt;done&lt;/b&gt;</pre>' in html
    assert '<pre class="stderr">warning: deprecated</pre>' in html
    html = _turn(logged_in, conv, 1)
    assert '<span class="exit-code exit-fail">exit code 2</span>' in html
    assert '<pre class="stdout">1 failed, 3 passed</pre>' in html  # the "Exit code" line became the badge


def test_todowrite_is_a_checklist(tmp_path, project, logged_in):
    todos = [{"content": "Write the parser", "status": "completed", "activeForm": "Writing"},
             {"content": "Test <edge> cases", "status": "in_progress", "activeForm": "Testing"},
             {"content": "Ship it", "status": "pending", "activeForm": "Shipping"}]
    conv = _session(tmp_path, project, [("TodoWrite", {"todos": todos}, "Todos have been modified successfully.")])
    html = _turn(logged_in, conv, 0)
    items = re.findall(r'<li class="todo todo-(\w+)"[^>]*><span class="todo-box" aria-hidden="true">(.)</span> <span class="todo-text">(.*?)</span>', html)
    assert items == [("completed", "☑", "Write the parser"), ("in_progress", "◐", "Test &lt;edge&gt; cases"), ("pending", "☐", "Ship it")]


def test_glob_and_grep_results_are_lists_of_paths(tmp_path, project, logged_in):
    conv = _session(tmp_path, project, [
        ("Glob", {"pattern": "assets/**/*.css"}, "/w/assets/a.css\n/w/assets/deep/<b>.css"),
        ("Grep", {"pattern": "TODO", "output_mode": "files_with_matches"}, "Found 2 files\nsrc/a.py\nsrc/b.py"),
        ("Grep", {"pattern": "TODO", "output_mode": "content"}, "src/a.py:3:# TODO one\nsrc/b.py:9:# TODO two"),
    ])
    html = _turn(logged_in, conv, 0)
    assert re.findall(r"<li><code>(.*?)</code></li>", html) == ["/w/assets/a.css", "/w/assets/deep/&lt;b&gt;.css"]
    assert "<code>assets/**/*.css</code>" in html
    html = _turn(logged_in, conv, 1)
    assert re.findall(r"<li><code>(.*?)</code></li>", html) == ["src/a.py", "src/b.py"]
    assert "Found 2 files" in html
    html = _turn(logged_in, conv, 2)  # matching lines are not paths: shown as the result text
    assert '<ul class="path-list">' not in html and "src/a.py:3:# TODO one" in html


def test_task_prompt_and_report_are_markdown_with_the_subagent_inline(project, logged_in):
    texts = TextSource(tool_input=lambda t: {"description": "Explore the repo", "subagent_type": "Explore",
                                             "prompt": "Find:\n\n1. the **parser**\n2. its tests\n\n<script>x</script>",
                                             "command": "ls", "file_path": "/w/a.py"})
    built = build_conversation(project, turns=4, subagent_turn=3, image_turn=None, long_block_turn=None, texts=texts)
    task = next(m for m in built.conversation.messages.all() if any(b.get("tool_name") == "Task" for b in m.blocks))
    html = _turn(logged_in, built.conversation, task.turn)
    assert '<span class="agent-type">Explore</span> Explore the repo' in html
    assert "<ol>\n<li>the <strong>parser</strong></li>" in html and "&lt;script&gt;x&lt;/script&gt;" in html
    inline = reverse("subagent_turns", args=[built.child.id])
    assert f'hx-get="{inline}"' in html
    fragment = logged_in.get(inline, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.count('class="turn subagent-turn"') == built.child.messages.values("turn").distinct().count()
    assert 'name="turns"' not in fragment  # the sub-agent's turns cannot be picked into the parent's build
    assert reverse("turn", args=[built.child.id, 1]) in fragment


def test_unknown_tools_keep_the_generic_view(tmp_path, project, logged_in):
    conv = _session(tmp_path, project, [("mcp__thing__do", {"x": HOSTILE}, "done")])
    html = _turn(logged_in, conv, 0)
    assert '<pre class="json" hx-disable>' in html and "tool-view" not in html and "tool-raw" not in html
    _no_markup(html)


def test_fold_summaries_expand_in_place_to_the_whole_text(project, logged_in):
    long_summary = "## Summary\n" + "\n".join(f"- fact {i}: kept" for i in range(900)) + "\n\nTHE-LAST-LINE"
    built = build_conversation(project, turns=30, fold_at=40_000, texts=TextSource(summary=lambda k: long_summary))
    conv = built.conversation
    page = logged_in.get(reverse("conversation", args=[conv.id])).content.decode()
    assert "THE-LAST-LINE" not in page
    fold = Fold.objects.filter(conversation=conv).order_by("position").last()
    url = reverse("fold_summary", args=[conv.id, fold.id])
    assert f'hx-get="{url}"' in page and f"({len(long_summary)} characters)" in page
    full = logged_in.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "THE-LAST-LINE" in full and full.count("<li>fact") == 900
    assert "THE-LAST-LINE" in logged_in.get(url).content.decode()  # without htmx: a page of its own
    other = make_project("other")
    logged_in.force_login(make_user("mallory", project=other))
    assert logged_in.get(url).status_code == 404
