"""A builtin handoff states only what the log shows (issue 34, item 4), on synthetic transcripts
(always run; the real sessions are in tests/integration/builds/test_handoff_truth.py): commands
are the commands that ran, files read are the reads that succeeded, paths stay whole (spaces,
Windows, cuts), sections end on whole sentences."""

from __future__ import annotations

import re

from contextviewer.core import handoff as core
from contextviewer.core import handoff_truth as truth
from contextviewer.core.handoff import Entry
from contextviewer.providers.builtin import BuiltinProvider


def _handoff(entries: list[Entry], budget: int = 50_000) -> dict[str, str]:
    """The sections of the builtin handoff of `entries`, through the flat transcript as the job sends it."""
    system, prompt = core.build_prompt(core.render_transcript(entries))
    return core.parse_sections(BuiltinProvider(budget).complete(system=system, prompt=prompt, role="handoff").text)


def _listed(state: str, label: str) -> list[str]:
    line = next((ln for ln in state.split("\n") if ln.startswith(f"- {label}: ")), "")
    return re.findall(r"`([^`]+)`", line)


def _ran(state: str) -> list[str]:
    return [ln[len("- Ran `") : -1] for ln in state.split("\n") if ln.startswith("- Ran `")]


def test_files_read_are_the_reads_that_succeeded():
    state = _handoff([
        Entry("user", "Look at the config."),
        Entry("tool", "<tool_use_error>File does not exist.</tool_use_error>", "Read", {"file_path": "/repo/conf/missing.toml"}, is_error=True),
        Entry("tool", "EISDIR: illegal operation on a directory, read", "Read", {"file_path": "/repo/src/components"}, is_error=True),
        Entry("tool", "File content (85812 tokens) exceeds maximum allowed tokens (25000).", "Read", {"file_path": "/repo/big.jsonl"}, is_error=True),
        Entry("tool", "[tool]\nname = 'x'", "Read", {"file_path": "/repo/conf/app.toml"}),
        Entry("tool", "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>", "Write",
              {"file_path": "/repo/conf/new.toml", "content": "x"}, is_error=True),
    ])["State and what is done"]
    assert _listed(state, "Files read") == ["/repo/conf/app.toml"]
    assert "Files changed" not in state  # the one write was refused: nothing was changed
    # The failures are errors, each with its message and file.
    assert "Error seen: Read: File does not exist. (on `/repo/conf/missing.toml`)" in state
    assert "Error seen: Read: EISDIR: illegal operation on a directory, read (on `/repo/src/components`)" in state


def test_commands_are_the_commands_that_ran():
    sections = _handoff([
        Entry("summary", "Summary:\n1. Primary Request and Intent:\n   Fix the guard.\n\n2. Key points: the error was "
                         "`cannot invoke remote function Access.get/2 inside a guard`; the plan said to run `bd ready` next."),
        Entry("user", "Go on."),
        Entry("tool", "The user doesn't want to proceed with this tool use. The tool use was rejected.", "Bash", {"command": "rm -rf build"}, is_error=True),
        Entry("tool", "<tool_use_error>InputValidationError: Bash failed due to the following issue: The required parameter `command` is missing</tool_use_error>",
              "Bash", {"command": "make deploy"}, is_error=True),
        Entry("tool", "<tool_use_error>Sibling tool call errored</tool_use_error>", "Bash", {"command": "npx vitest run"}, is_error=True),
        Entry("tool", "Exit code 2\n3 tests, 1 failure", "Bash", {"command": "mix test"}, is_error=True),
        Entry("tool", "total 8", "shell", {"command": ["bash", "-lc", "ls -la"]}),  # Codex: the script a shell ran
        Entry("tool", "ok", "exec_command", {"cmd": "sed -n '1,20p' go.mod"}),
        Entry("tool", "[main 1a2b] fix", "Bash", {"command": 'git add lib/a.ex && git commit -m "$(cat <<EOF\n' + "body line\n" * 60 + 'EOF\n)"'}),
    ])
    state = sections["State and what is done"]
    ran = _ran(state)
    assert ran == ["mix test", "ls -la", "sed -n '1,20p' go.mod", "git add lib/a.ex && git commit -m …"]
    # A foreign summary's backticked prose is named as what it is, never as a command that ran.
    assert "Named by the earlier summary: `bd ready`" not in state  # `bd ready` has no argument: not command-shaped
    assert not any("Access.get" in c or "bd ready" in c for c in ran)


def test_paths_stay_whole():
    # A long output is cut (core/handoff.clip keeps its last 450 characters): the cut falls 20
    # characters into this path, which the transcript then shows only in part.
    cut_path = "lib/spotter/services/waiting_summary/slice_builder.ex"
    clipped = "x" * 1500 + " " + cut_path + " " + "y" * (469 - len(cut_path))
    state = _handoff([
        Entry("user", "Read my notes."),
        Entry("tool", "notes", "Read", {"file_path": "/Users/me/My Notes/The Man.md"}),
        Entry("tool", "notes", "Read", {"file_path": "C:\\Users\\John Doe\\proj\\notes.md"}),
        Entry("tool", "/Users/me/My Notes/The Man.md\nC:\\Users\\John Doe\\proj\\todo.md\n/Users/me/Docs/Big Plan Draft.md", "Bash", {"command": "ls -R"}),
        Entry("tool", '{"text": "1.24\\nexamples/claude_code_log.json"}', "Bash", {"command": "cat out.json"}),
        Entry("tool", clipped, "Bash", {"command": "grep -r slice lib"}),
        Entry("assistant", "Done: see src/app/main.py; then /Users/me/My Notes/Later Man.md too."),
    ])["State and what is done"]
    assert _listed(state, "Files read") == ["/Users/me/My Notes/The Man.md", "C:\\Users\\John Doe\\proj\\notes.md"]
    mentioned = _listed(state, "Paths mentioned")
    assert "src/app/main.py" in mentioned
    # No piece of a path: not the tail of one with spaces, not after an escaped newline, not at a cut.
    for piece in ("Man.md", "Notes/The Man.md", "Later Man.md", "Doe\\proj\\todo.md", "proj\\todo.md", "todo.md", "Plan Draft.md",
                  "Draft.md", "nexamples/claude_code_log.json", "1.24\\nexamples/claude_code_log.json"):
        assert piece not in mentioned, (piece, mentioned)
    for path in mentioned:
        assert not path.endswith(("…", ".e", ".ex/")), path
    assert "[... " in core.render_transcript([Entry("tool", clipped, "Bash", {})])  # the cut is there
    assert not any(cut_path.endswith(p) for p in mentioned), mentioned


def test_sections_end_on_whole_sentences():
    last = ("The build is green again. " + "I checked every module of the parser, one by one, with its tests and the linters, " * 12
            + "and nothing else failed.")
    long_rule = "Always keep every module's tests in step with the parser, " * 8 + "whatever the change."
    sections = _handoff([
        Entry("user", "Fix the parser. " + "It drops the last key of nested objects. " * 30 + "Never push to main without a green build."),
        Entry("user", long_rule),
        Entry("assistant", last),
    ])
    state = sections["State and what is done"]
    last_state = next(ln for ln in state.split("\n") if ln.startswith("- Last state: "))
    assert last_state == "- Last state: The build is green again."  # the next sentence does not fit whole
    goal = sections["Goal"].split("\n")[0]
    assert goal.startswith("Fix the parser. It drops") and goal.endswith("nested objects.")
    constraints = sections["Constraints and preferences"].split("\n")
    assert "- Never push to main without a green build." in constraints
    # Only a single sentence longer than its room is cut: at a clause break, said with "…".
    cut = next(c for c in constraints if c.startswith("- Always keep"))
    assert cut.endswith("…") and (cut[2:-1] + ",") in long_rule
    for name in core.SECTIONS:  # every other line ends on a whole sentence, or on such a clause
        for line in sections[name].split("\n"):
            assert not line.endswith("…") or line.split(": ", 1)[-1].removeprefix("- ")[:-1] + "," in long_rule, line


def test_a_path_is_whole_only_where_it_is_written_whole():
    assert truth.is_whole("a/b.py", "see a/b.py.")
    assert not truth.is_whole("b.py", "see a/b.py and a/cb.py")  # only inside longer words
    assert not truth.is_whole("Man.md", "at /Users/me/The Man.md")
    assert truth.is_whole("notes.md", "edited src/a.py; notes.md too")  # a phrase ended before it
    assert truth.is_whole("notes.md", "open the src/app folder notes.md") is False  # two plain words back: left out, not cut
    assert truth.uncut("abc/de\n[... 20 characters cut ...]\nfg/h.py rest") == "  rest"
    assert truth.command_of({"command": ["bash", "-lc", "ls   -la"]}) == "ls -la"
    assert truth.refused("The user doesn't want to proceed with this tool use.", True)
    assert not truth.refused("Exit code 1", True)


def test_a_search_is_listed_whole_or_not_at_all():
    long_pattern = "|".join(f"name_{i}" for i in range(30))  # 250 characters: whole
    cut_pattern = "|".join(f"name_{i}" for i in range(60))  # over the transcript's 400: cut there, so left out
    state = _handoff([
        Entry("user", "Find the names."),
        Entry("tool", "a.py:1", "Grep", {"pattern": long_pattern, "path": "src"}),
        Entry("tool", "a.py:2", "Grep", {"pattern": cut_pattern, "path": "lib"}),
        Entry("tool", "<tool_use_error>InputValidationError: pattern is required</tool_use_error>", "Grep", {"pattern": "x", "path": "docs"}, is_error=True),
    ])["State and what is done"]
    searched = next(ln for ln in state.split("\n") if ln.startswith("- Searched: "))
    assert searched == f"- Searched: Grep {long_pattern!r} in src"
