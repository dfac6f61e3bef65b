"""Other agents' tool names, argument shapes and result shapes (viewer/tool_agents.py), and
the clip of terminal output that never cuts an escape sequence in two (rendering.clip)."""

from __future__ import annotations

import pytest

from contextviewer.display import rendering
from contextviewer.importers import formats
from contextviewer.viewer import tool_agents, tool_display
from contextviewer.viewer.tool_agents import (
    decode_escapes,
    file_text,
    normalize,
    numbered_listing,
    path_lines,
    shell_output,
)
from contextviewer.viewer.tool_display import tool_view


@pytest.mark.parametrize(
    ("name", "tool_input", "expected"),
    [
        ("execute_bash", {"command": "ls", "is_input": "false"}, ("Bash", "ls")),
        ("terminal", {"command": "make"}, ("Bash", "make")),
        ("run", {"command": "pwd"}, ("Bash", "pwd")),
        ("run_shell_command", {"command": "npm test", "directory": "web"}, ("Bash", "npm test")),
        ("bash", {"command": "go test ./...", "description": "tests"}, ("Bash", "go test ./...")),
        (None, {"kind": "ExecuteBashAction", "command": "id"}, ("Bash", "id")),
        ("str_replace_editor", {"command": "create", "path": "/a.py", "file_text": "x"}, ("Write", "/a.py")),
        ("file_editor", {"command": "view", "path": "/a.py", "view_range": [10, 20]}, ("Read", "/a.py")),
        ("str_replace_editor", {"command": "insert", "path": "/a.py", "insert_line": 3, "new_str": "y"}, ("Edit", "/a.py")),
        ("replace", {"file_path": "/a.py", "old_string": "a", "new_string": "b"}, ("Edit", "/a.py")),
        ("edit", {"filePath": "/a.go", "oldString": "a", "newString": "b"}, ("Edit", "/a.go")),
        ("edit", {"path": "/a.py", "content": "new body", "start": 1, "end": 4}, ("Write", "/a.py")),
        ("write_file", {"file_path": "/n.md", "content": "# n"}, ("Write", "/n.md")),
        ("view", {"file_path": "/v.ts"}, ("Read", "/v.ts")),
        ("read_file", {"absolute_path": "/r.py"}, ("Read", "/r.py")),
        ("open", {"path": "src/a.py"}, ("Read", "src/a.py")),
        ("multiedit", {"file_path": "/m.py", "edits": [{"old_string": "a", "new_string": "b"}]}, ("MultiEdit", "/m.py")),
        ("glob", {"pattern": "**/*.py"}, ("Search", "**/*.py")),
        ("list_directory", {"path": "/w"}, ("Search", "")),
        ("write_todos", {"todos": [{"description": "x", "status": "cancelled"}]}, ("TodoWrite", None)),
        ("task_tracker", {"command": "plan", "task_list": [{"title": "x", "status": "done"}]}, ("TodoWrite", None)),
        ("browse", {"url": "https://example.org"}, ("Browse", "https://example.org")),
        ("think", {"thought": "hmm"}, ("Think", "hmm")),
        ("execute_ipython_cell", {"code": "print(1)"}, ("Code", "print(1)")),
        ("patch", {"patch_text": "*** Update File: a.go\n+x"}, ("Patch", None)),
        ("ls", "ls -F", ("Bash", "ls -F")),  # a SWE-agent action line
        ("open", "open src/a.py 40", ("Read", "src/a.py")),
        ("edit", "edit 3:4\nnew\nend_of_edit", ("Edit", "")),
        ("submit", "submit", ("Submit", None)),
    ],
)
def test_other_agents_calls_map_onto_the_views_of_claude_code_tools(name, tool_input, expected):
    call, args = normalize(name, tool_input)
    assert call == expected[0]
    if expected[1] is not None:
        assert expected[1] in (args.get("command"), args.get("file_path"), args.get("pattern"), args.get("url"),
                               args.get("thought"), args.get("code"))  # fmt: skip


@pytest.mark.parametrize(("name", "tool_input"), [("mystery", {"a": 1}), ("edit", {"path": "/a"}), ("bash", {"cmd": 1}),
                                                   ("vim", "emacs x"), ("str_replace_editor", {"command": "undo_edit", "path": "/a"})])  # fmt: skip
def test_unknown_calls_keep_the_generic_view(name, tool_input):
    assert normalize(name, tool_input) is None


def test_shell_results_by_their_shape():
    mini = shell_output("<returncode>2</returncode>\n<output>\nboom\n</output>")
    assert (mini.exit_code, mini.output) == (2, "boom")
    gemini = shell_output(
        "Command: ls\nDirectory: src\nOutput: a\nb\nError: oops\nExit Code: 1\nSignal: (none)\nProcess Group PGID: 3"
    )
    assert (gemini.exit_code, gemini.output, gemini.stderr, gemini.workdir) == (1, "a\nb", "oops", "src")
    escaped = shell_output("Command: ls\\nDirectory: (root)\\nOutput: a\\nb\\nError: (none)\\nExit Code: 0")
    assert (escaped.exit_code, escaped.output, escaped.stderr, escaped.workdir) == (0, "a\nb", "", "")
    openhands = shell_output("a\nb\n[The command completed with exit code 0.]\n[Current working directory: /w]")
    assert (openhands.exit_code, openhands.output, openhands.workdir) == (0, "a\nb", "/w")
    swe = shell_output("8.2\n(Open file: n/a)\n(Current directory: /repo)\nbash-$")
    assert (swe.exit_code, swe.output, swe.workdir) == (None, "8.2", "/repo")
    crush = shell_output("built\n\n<cwd>/w/app</cwd>")
    assert (crush.output, crush.workdir) == ("built", "/w/app")
    plain = shell_output("Error: not a gemini header\n")
    assert (plain.exit_code, plain.output) == (None, "Error: not a gemini header")


def test_a_shell_result_without_an_exit_code_is_not_called_a_failure():
    view = tool_view("bash", {"command": "ls"}, "a.txt", False, None)
    assert view.bash.exit_code is None and view.bash.exit_unknown and view.bash.stdout == "a.txt"
    failed = tool_view("bash", {"command": "ls"}, "permission denied", True, None)
    assert failed.bash.exit_code is None and not failed.bash.exit_unknown and failed.bash.stderr == "permission denied"


def test_numbered_listings_of_other_agents():
    crush = numbered_listing("<file>\n     1|a = 1\n     2|b = 2\n</file>\n")
    assert (crush.numbers, crush.lines) == ([1, 2], ["a = 1", "b = 2"])
    opencode = numbered_listing("<file>\n00010| x\n00011| y\n\n(End of file - total 11 lines)\n</file>")
    assert (opencode.numbers, opencode.lines, opencode.trailer) == ([10, 11], ["x", "y"], "(End of file - total 11 lines)")
    openhands = numbered_listing("Here's the result of running `cat -n` on /a.py:\n     5\tdef f():\n     6\t    pass\n")
    assert (openhands.numbers, openhands.lines) == ([5, 6], ["def f():", "    pass"])
    swe = numbered_listing("Text replaced.\n[File: /r/a.py (40 lines total)]\n(10 more lines above)\n11:x\n12:y\n(28 more lines below)\n"
                           "(Open file: /r/a.py)\n(Current directory: /r)\nbash-$")  # fmt: skip
    assert (swe.path, swe.numbers, swe.lines, swe.trailer) == ("/r/a.py", [11, 12], ["x", "y"], "")
    assert numbered_listing("just text") is None


def test_path_lines_of_other_agents():
    assert path_lines(
        'Found 2 file(s) matching "*.py" within /w, sorted by modification time (newest first):\n/w/a.py\n/w/b.py'
    ) == (["/w/a.py", "/w/b.py"], 'Found 2 file(s) matching "*.py" within /w, sorted by modification time (newest first):')
    assert path_lines("Directory listing for /w:\n[DIR] src\nREADME.md")[0] == ["src/", "README.md"]
    assert path_lines("- /w/\n  - a.py\n  - src/\n    - b.py\n")[0] == ["/w/", "/w/a.py", "/w/src/", "/w/src/b.py"]
    assert path_lines("Found 3 matches\n/w/a.py:\n  Line 4, Char 1: x = 1") is None  # grep hits are not paths


def test_decode_escapes():
    assert decode_escapes('"a\\nb"') == "a\nb"
    assert decode_escapes('"quoted"') == "quoted"
    assert decode_escapes("one\\ntwo\\nthree") == "one\\ntwo\\nthree"  # only a shell's output is read loosely
    assert decode_escapes("one\\ntwo\\nthree", loose=True) == "one\ntwo\nthree"
    assert decode_escapes("a\nb\\nc", loose=True) == "a\nb\\nc"  # real line breaks: as is


def test_a_clip_never_cuts_an_escape_sequence_and_segments_drop_every_control():
    red = "\x1b[31m"
    text = "a" * (rendering.HEAD_CHARS - 2) + red + "b" * 5000 + red + "tail" + "c" * (rendering.TAIL_CHARS - 6)
    clip = rendering.clip(text)
    assert clip.head == "a" * (rendering.HEAD_CHARS - 2)  # ends before the escape it would cut
    assert clip.tail.startswith(red + "tail")  # starts with the whole escape
    assert clip.hidden == len(text) - len(clip.head) - len(clip.tail)
    segments = rendering.ansi_segments("x\x07y\x08z\x1b[32mok\x1b[3")  # a bell, a backspace, a sequence cut short
    assert "".join(s.text for s in segments) == "xyzok" and segments[-1].classes == "ansi-green"


def test_a_truncated_gemini_read_starts_at_its_own_first_line():
    text = ("IMPORTANT: The file content has been truncated.\nStatus: Showing lines 101-102 of 900 total lines.\n"
            "Action: use offset.\n\n--- FILE CONTENT (truncated) ---\nalpha\nbeta\n")  # fmt: skip
    assert file_text(text) == ("alpha\nbeta\n", 101, "lines 101-102 of 900 shown to the model")
    view = tool_view("read_file", {"absolute_path": "/big.py", "offset": 100, "limit": 2}, text, False, None)
    assert view.kind == "read" and view.code.lines == 2 and 'start="101"' in view.code.html
    assert view.note == "lines 101-102 of 900 shown to the model"


def test_an_unknown_tool_gets_its_arguments_one_by_one_only_when_some_text_spans_lines():
    view = tool_view("remember_lines", {"fact": "line one\nline two", "scope": ["a", 1]})
    assert view.kind == "args"
    assert [(a.name, a.text, a.multiline) for a in view.args] == [
        ("fact", "line one\nline two", True),
        ("scope", '["a", 1]', False),
    ]
    assert tool_view("remember_lines", {"fact": "one line"}) is None  # the raw JSON reads as well
    long = tool_view("remember_lines", {"fact": "x\n" * 5000})
    assert len(long.args[0].text) == 6000 and long.args[0].more == 4000


# --- the vocabularies come from the formats (importers/<format>/tools.py) through the registry ----


@pytest.mark.parametrize("entry", formats.entries(), ids=lambda e: e.name)
def test_each_formats_declared_tools_get_the_view_of_their_kind(entry):
    """What a format declares is what the viewer uses: every shell, read, search and sub-agent tool a
    format names is shown as Bash, Read, Search and Task."""
    for name in entry.tools.shell:
        assert tool_agents.normalize(name, {"command": "ls -la"})[0] == "Bash", name
    for name in entry.tools.read:
        assert tool_agents.normalize(name, {"path": "src/a.py"})[0] == "Read", name
    for name in entry.tools.search - entry.tools.commands - {"find_file"}:
        assert tool_agents.normalize(name, {"pattern": "*.py", "path": "src"})[0] == "Search", name
    for name in entry.tools.task:
        assert tool_agents.normalize(name, {"prompt": "look", "description": "d"})[0] == "Task", name


def test_the_viewer_reads_every_formats_vocabulary_and_no_name_of_its_own():
    merged = formats.tool_vocabulary()
    for entry in formats.entries():
        assert entry.tools.shell <= merged.shell and entry.tools.edit <= merged.edit
    assert tool_agents.SHELL == merged.shell and tool_agents.SEARCHES == merged.search
    assert tool_display.SHELL_TOOLS == merged.exec and "apply_patch" in tool_display.PATCH_TOOLS
    assert tool_agents.normalize("an_unknown_tool", {"command": "ls"}) is None
