"""Shell tool calls shown like Bash calls (conversations/tools.py): the command line a call ran
(`bash -lc SCRIPT` unwrapped), where and why it ran, and its result read from each shape a shell
tool's output takes in the logs (a JSON object with metadata, an `Exit code:` header, a unified
exec header, an object of stdout/stderr/exit code, the run an `exec_command_end` recorded), with
anything else left to the generic rendering. Every shape here is one seen in ../shared/fixtures/codex
or written by the Codex CLI; the importer side (exec_command_end kept on the result block) too."""

from __future__ import annotations

import json

import pytest

from contextviewer.viewer import tool_display as tools
from contextviewer.viewer.tool_display import tool_view
from contextviewer.viewer.tool_shell import shell_line, shell_result
from contextviewer.core.records import MessageRecord
from contextviewer.importers.codex import parser as codex
from tests.importers import of

# -- the command line -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "line"),
    [
        (["bash", "-lc", "cd x && ls"], "cd x && ls"),
        (["bash", "-lc", "set -e\nmake\nmake test"], "set -e\nmake\nmake test"),
        (["/bin/sh", "-c", "echo hi"], "echo hi"),
        (["zsh", "-l", "-c", "rg TODO"], "rg TODO"),
        (["bash", "--login", "-c", "pwd"], "pwd"),
        (["pwsh.exe", "-NoProfile", "-Command", "Get-ChildItem"], "Get-ChildItem"),
        (["ls", "-la", "my dir"], "ls -la 'my dir'"),  # not a shell: the argv quoted as a shell reads it
        (["bash", "script.sh"], "bash script.sh"),  # a script file, not -c
        (["bash", "--norc", "x.sh"], "bash --norc x.sh"),
        (["bash", "-lc"], "bash -lc"),
        ("git status && git diff", "git status && git diff"),  # a string as is
    ],
)
def test_the_command_line_is_the_script_a_shell_ran(command, line):
    assert shell_line(command) == line


@pytest.mark.parametrize("command", [None, [], [1, 2], ["ls", None], {"cmd": "ls"}, 3])
def test_a_command_that_is_no_command_line_gives_none(command):
    assert shell_line(command) is None


# -- the result, by shape -------------------------------------------------------------------------

# As written by Codex CLI 0.39 (Mai0313 fixture): the output and its metadata as a JSON string.
JSON_OK = '{"output":"total 124\\ndrwxrwxr-x 11 u u 4096 .\\n","metadata":{"exit_code":0,"duration_seconds":0.4}}'
JSON_FAIL = '{"output":"error: <b>no</b> such file\\n","metadata":{"exit_code":2,"duration_seconds":0.0}}'


def test_the_json_output_with_metadata_gives_the_exit_code_and_duration():
    r = shell_result(JSON_OK)
    assert (r.exit_code, r.stdout, r.stderr, r.duration, r.combined) == (0, "total 124\ndrwxrwxr-x 11 u u 4096 .\n", "", 0.4, True)
    assert r.duration_text == "0.4 s"
    r = shell_result(JSON_FAIL)
    assert r.exit_code == 2 and r.stdout == "error: <b>no</b> such file\n" and r.duration == 0.0


def test_the_exit_code_header_of_the_freeform_shell_output():
    r = shell_result("Exit code: 1\nWall time: 0.2 seconds\nOutput:\nFAILED tests/test_a.py::test_x\n1 failed")
    assert (r.exit_code, r.stdout, r.duration, r.note) == (1, "FAILED tests/test_a.py::test_x\n1 failed", 0.2, "")
    r = shell_result("Exit code: 0\nWall time: 3 seconds\nTotal output lines: 912\nOutput:\nline 1\n[... omitted ...]\nline 912")
    assert r.exit_code == 0 and r.duration == 3.0 and r.note == "912 output lines, cut for the model"
    assert r.stdout.startswith("line 1\n")
    r = shell_result("Exit code: 0\r\nWall time: 0 seconds\r\nOutput:\r\n")  # no output at all
    assert r.exit_code == 0 and r.stdout == ""


def test_the_unified_exec_header_exited_or_still_running():
    r = shell_result("Chunk ID: 4f2a\nWall time: 0.5012 seconds\nProcess exited with code 127\nOriginal token count: 9\n"
                     "Output:\nbash: frobnicate: command not found\n")  # fmt: skip
    assert (r.exit_code, r.running, r.stdout, r.duration) == (127, False, "bash: frobnicate: command not found\n", 0.5012)
    r = shell_result("Chunk ID: 77\nWall time: 10.0010 seconds\nProcess running with session ID 3\nOutput:\nserving on :8000\n")
    assert r.exit_code is None and r.running and r.note == "still running (session 3)" and r.stdout == "serving on :8000\n"


def test_an_object_of_stdout_stderr_and_exit_code_keeps_the_streams_apart():
    # jazzyalex large.jsonl: {"stdout", "stderr", "exitCode"} (stored as its JSON text)
    r = shell_result(json.dumps({"stdout": "line1\nline2\n", "stderr": "warn: x", "exitCode": 0}))
    assert (r.exit_code, r.stdout, r.stderr, r.combined) == (0, "line1\nline2\n", "warn: x", False)
    r = shell_result(json.dumps({"stdout": "", "stderr": "boom", "exit_code": 3}))
    assert r.exit_code == 3 and r.stderr == "boom"


def test_the_run_an_exec_command_end_recorded_splits_stdout_and_stderr():
    extra = {"exit_code": 1, "duration_seconds": 1.25, "stdout": "3 passed", "stderr": "1 failed"}
    r = shell_result("Exit code: 1\nWall time: 1.3 seconds\nOutput:\n3 passed\n1 failed", extra)
    assert (r.exit_code, r.stdout, r.stderr, r.combined, r.duration) == (1, "3 passed", "1 failed", False, 1.3)
    # an output of no known shape, with the run's exit code: the text is the output
    r = shell_result("3 passed", {"exit_code": 0, "duration_seconds": 0.5})
    assert (r.exit_code, r.stdout, r.duration) == (0, "3 passed", 0.5)
    # the streams apart, the text of no known shape
    r = shell_result("aggregated", {"exit_code": 0, "stdout": "out", "stderr": "err"})
    assert (r.exit_code, r.stdout, r.stderr) == (0, "out", "err")
    # a running process's exit code came with the run
    r = shell_result("Wall time: 1 seconds\nProcess running with session ID 5\nOutput:\n", {"exit_code": 0})
    assert r.exit_code == 0 and not r.running


@pytest.mark.parametrize(
    "text",
    [
        "[REDACTED_OUTPUT len=5030 sha=28c2f7e1]",  # madshn: redacted
        "patch rejected: empty patch",  # Mai0313: a refusal
        "Plan updated",
        "a.txt\nb.txt\n",  # jazzyalex small.jsonl: a content list read as text, no exit code anywhere
        "failed in sandbox: Operation not permitted",
        '{"output": "x", "metadata": ',  # cut JSON
        '{"output": "x"}',  # no metadata
        '{"metadata": {"exit_code": 0}}',  # no output
        '{"stdout": "x"}',  # no exit code
        '{"stdout": 1, "exitCode": 0}',
        "[1, 2]",
        '"just a string"',
        "{not json",
        "Exit code: abc\nOutput:\nx",
        "Exit code: 0\nWall time: 0.1 seconds\nno output marker",
        "Wall time: 0.1 seconds\nOutput:\nno exit code",
        "Output:\nonly the marker",
        "Exit code: 0\nSomething else: 1\nOutput:\nx",  # an unknown header line
        "",
    ],
)
def test_an_unknown_or_malformed_output_is_left_to_the_generic_rendering(text):
    assert shell_result(text) is None
    assert shell_result(text, {"stdout": "x", "stderr": ""}) is None  # streams without an exit code say nothing of the end
    view = tool_view("shell", {"command": ["bash", "-lc", "ls"]}, text, False, None)
    assert view.kind == "bash" and view.command == "ls" and view.bash is None and not view.shows_result


# -- the view -------------------------------------------------------------------------------------


def test_a_shell_call_is_shown_like_bash_with_where_and_why():
    view = tool_view("shell", {"command": ["bash", "-lc", "pytest -q"], "workdir": "/w/app", "timeout_ms": 120000,
                               "justification": "Run the tests <now>"}, JSON_FAIL, True, None)  # fmt: skip
    assert (view.kind, view.command, view.workdir, view.description) == ("bash", "pytest -q", "/w/app", "Run the tests <now>")
    assert view.bash.exit_code == 2 and view.shows_result


@pytest.mark.parametrize(
    ("name", "tool_input", "command", "workdir"),
    [
        ("exec_command", {"cmd": "cargo build", "workdir": "/w", "yield_time_ms": 1000}, "cargo build", "/w"),
        ("shell_command", {"command": "npm test", "workdir": "/w/web"}, "npm test", "/w/web"),
        ("local_shell", {"type": "exec", "command": ["bash", "-lc", "ls src"], "working_directory": "/w"}, "ls src", "/w"),
        ("container.exec", {"command": ["ls", "-la"], "workdir": "/repo"}, "ls -la", "/repo"),
        ("run_shell_command", {"command": "printf 'a\\n'", "cwd": "/tmp/large"}, "printf 'a\\n'", "/tmp/large"),
        ("shell", {"command": ["ls"]}, "ls", ""),
    ],
)
def test_every_shell_tool_shows_its_command(name, tool_input, command, workdir):
    view = tool_view(name, tool_input, "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok", False, None)
    assert (view.kind, view.command, view.workdir) == ("bash", command, workdir)
    assert view.bash.exit_code == 0 and view.bash.stdout == "ok"
    assert tool_view(name, tool_input).bash is None  # a call without its result: the command alone


@pytest.mark.parametrize(
    ("name", "tool_input"),
    [
        ("exec_command", "[REDACTED_ARGUMENTS len=153 sha=23291271]"),  # madshn: arguments that are no JSON
        ("shell", {"command": None}),
        ("shell", {"cmd": ["a", 1]}),
        ("exec_command", {"chars": "y\n", "session_id": 3}),
        ("write_stdin", {"chars": "y\n", "session_id": 3}),  # not a command
    ],
)
def test_a_shell_call_of_another_shape_keeps_the_generic_view(name, tool_input):
    assert tool_view(name, tool_input, JSON_OK, False, None) is None


def test_apply_patch_through_a_shell_is_still_a_diff():
    patch = "*** Begin Patch\n*** Update File: go.mod\n@@\n-go 1.24.0\n+go 1.24\n*** End Patch"
    view = tool_view("shell", {"command": ["bash", "-lc", f"applypatch << 'PATCH'\n{patch}\nPATCH"]}, JSON_OK, False, None)
    assert view.kind == "edit" and [d.path for d in view.diffs] == ["go.mod"]
    assert [(line.kind, line.text) for line in view.diffs[0].lines] == [("gap", "…"), ("del", "go 1.24.0"), ("add", "go 1.24")]
    view = tool_view("shell", {"command": ["apply_patch", patch]})
    assert view.kind == "edit"
    view = tool_view("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}\nEOF\n"})
    assert view.kind == "edit" and view.diffs[0].lines[-1].text == "go 1.24"  # the heredoc's end is not a line of it
    # an empty patch sent through a shell: the command, as sent
    view = tool_view("shell", {"command": ["bash", "-lc", "applypatch << 'PATCH'\n*** Begin Patch\n*** End Patch\nPATCH"]},
                     "patch rejected: empty patch", False, None)  # fmt: skip
    assert view.kind == "bash" and "*** Begin Patch" in view.command and view.bash is None
    assert tool_view("apply_patch", "*** Begin Patch\n*** End Patch") is None


def test_bash_calls_are_read_as_before():
    view = tool_view("Bash", {"command": "ls", "description": "List"}, "Exit code 2\nnope", True, None)
    assert view.bash.exit_code == 2 and view.bash.stdout == "nope" and view.workdir == ""
    assert tools.SHELL_TOOLS.isdisjoint({"Bash"})


# -- the importer: an exec_command_end's run goes on its call's result ----------------------------

SID = "019c0000-aaaa-7bbb-8ccc-00000000beef"


def _env(kind: str, payload: dict) -> str:
    return json.dumps({"timestamp": "2026-02-23T12:00:00.000Z", "type": kind, "payload": payload})


def _rollout(tmp_path, lines: list[str]):
    path = tmp_path / f"rollout-2026-02-23T12-00-00-{SID}.jsonl"
    path.write_text("\n".join([_env("session_meta", {"id": SID, "cwd": "/w"})] + lines) + "\n", encoding="utf-8")
    with open(path, "rb") as fh:
        return list(codex.parse(fh, path=path))


def _call(call_id: str, cmd: str) -> str:
    return _env("response_item", {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": cmd}),
                                  "call_id": call_id})  # fmt: skip


def _end(call_id: str, **fields) -> str:
    return _env("event_msg", {"type": "exec_command_end", "call_id": call_id, "command": ["bash", "-lc", "x"], "cwd": "/w",
                              "aggregated_output": "", "formatted_output": "", "status": "completed", **fields})  # fmt: skip


def _out(call_id: str, text: str) -> str:
    return _env("response_item", {"type": "function_call_output", "call_id": call_id, "output": text})


def test_the_importer_keeps_an_exec_command_end_on_its_results_block(tmp_path):
    secret = "sk-ant-api03-" + "A" * 90
    records = _rollout(tmp_path, [
        _call("c1", "make test"),
        _end("c1", stdout="built\n", stderr=f"warning: {secret}\n", exit_code=2, duration={"secs": 1, "nanos": 500_000_000}),
        _out("c1", "Chunk ID: 1\nWall time: 1.5 seconds\nProcess exited with code 2\nOutput:\nbuilt\nwarning: x\n"),
        _call("c2", "ls"),
        _out("c2", "Chunk ID: 2\nWall time: 0.0 seconds\nProcess exited with code 0\nOutput:\na\n"),
        _end("c3", stdout="x" * (codex.EXEC_STREAM_CAP + 10), stderr="", exit_code=0, duration=0.25),
        _call("c3", "yes | head"),
        _out("c3", "xxxx"),
        _end("c9", exit_code=0),  # a run whose call never answers: nothing breaks
    ])  # fmt: skip
    messages = of(records, MessageRecord)
    results = {b.tool_id: b for m in messages for b in m.blocks if b.kind == "tool_result"}
    first = results["c1"].extra
    assert first["exit_code"] == 2 and first["duration_seconds"] == 1.5 and first["stdout"] == "built\n"
    assert secret not in first["stderr"] and first["stderr"].startswith("warning: ")  # masked here: it came from another line
    assert results["c2"].extra is None  # no exec_command_end for it
    assert len(results["c3"].extra["stdout"]) < codex.EXEC_STREAM_CAP + 10 and results["c3"].extra["duration_seconds"] == 0.25
    assert results["c1"].as_dict()["extra"] == first and "extra" not in results["c2"].as_dict()
    # the events are still kept as events (nothing imported is lost)
    assert sum(1 for m in messages if m.role == "other" and m.subtype == "exec_command_end") == 3
    view = tool_view("exec_command", {"cmd": "make test"}, results["c1"].text, False, first)
    assert (view.bash.exit_code, view.bash.stdout, view.bash.combined) == (2, "built\n", False)
