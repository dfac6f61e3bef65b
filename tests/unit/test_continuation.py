"""What the continuation needed (core/continuation.py): what the recorded session did after a fold,
against what the fold's summary kept. On the two real folds of test_fact_tiers.py, checked by hand,
and on hand-made transcripts for each rule."""


import pytest

from contextviewer.core import continuation, facts, salience
from tests.unit.test_fact_tiers import SPOTTER_4TE, SPOTTER_FUM, fold_and_after as _fold_and_after

# --- the real folds ---------------------------------------------------------------------------


# How both folds were checked by hand. Every tool_call block of the main thread was listed with the
# importer (position, tool, tool_input; Bash by its command), before the fold and after it, with the
# user text blocks; the summary was read as text (grep).
# - calls_before_first_edit: the tool calls after the fold counted one by one up to the first
#   Edit/Write (fum: 38 calls at 234..327, first edit the Edit at 330; 4te: 14 calls at 420..451,
#   first edit the Edit at 454).
# - reread_after: the files read after the fold (Read file_path; Grep path when a file, not a
#   directory; a Glob pattern without wildcards; the file arguments of cat/head/grep/sed -n ...
#   commands) compared with the same list before it, relative to the cwd, in order of first re-read.
# - anticipated: the first 10 calls after the fold, each compared with the summary text: does it
#   name a file the call reads, edits or names as a word of its command, or the command (as run, or
#   its words before the first option or quoted argument: `bd close spotter-fum.3`, `mix credo`).
# - used_after: each lost path, command, identifier and URL of the probe (facts.probe) searched in
#   the raw tool inputs after the fold and in the user's text (grep on the JSON of each input field),
#   leaving out Bash's `description`, the text an Edit/Write writes and the compaction summary at the
#   head of the continuation (412 in 4te names several lost facts: it is the summary, not a use).

FUM_CALLS_BEFORE_FIRST_EDIT = 38
FUM_REREAD = [
    "assets/build.js",  # Read 247 (Read 190 before)
    "test/spotter/services/transcript_renderer_test.exs",  # Read 274 (Read 21, 72, 84 before)
    "lib/spotter_web/live/session_live.ex",  # Read 282 (Read 123, 149, 220 before)
    "assets/package.json",  # Glob pattern `assets/package.json` 287, Read 293 (Read 207 before)
    "lib/spotter/services/transcript_renderer.ex",  # Read 305 (Read 12, 62 before)
    "lib/spotter/transcripts/session.ex",  # Grep path 319, Read 321 (Grep path 166 before)
    "test/fixtures/transcripts/subagent.jsonl",  # Grep path 347, `head -5 ...` 356 (Read 25, 28, 48 before)
    "config/config.exs",  # Read 377 (Grep path 183 before)
    "config/dev.exs",  # Read 380 (Read 188 before)
]
# Not re-read: assets/test/*.js, assets/vitest.config.js, test/test_helper.exs, test/support/data_case.ex,
# lib/spotter/transcripts/message.ex, config/test.exs, mix.exs: first read after the fold; lib/spotter_web
# and config are directories searched.
FUM_FIRST_CALLS = [  # (position, command or file, touches what the summary names)
    (234, "cd ... && mix compile", True),  # "complete spotter-fum.3 by running `mix compile`, `mix test`, `mix credo`"
    (236, "mix compile", True),
    (239, "mix test", True),
    (240, "mix credo", True),
    (244, "node assets/build.js", True),  # "esbuild JS pipeline (assets/build.js)"
    (247, "Read assets/build.js", True),
    (250, "cd .../assets && node build.js", True),  # build.js under assets/: assets/build.js
    (253, 'bd close spotter-fum.3 --reason="..."', True),  # "then `bd close spotter-fum.3`"
    (255, "git status", False),  # the summary never says git status
    (257, "git diff --stat", False),  # nor git diff
]
FUM_USED_AFTER = [
    "lib/spotter/transcripts/session.ex",  # Grep path 319, Read 321
    "mix test test/spotter/services/transcript_renderer_test.exs",  # `cd ... && mix test test/.../transcript_renderer_test.exs` 341
    "config/config.exs",  # Read 377
    "config/dev.exs",  # Read 380
]
# Lost and not used again: agentId and PaneViewLive (in no input nor user text after the fold), the plan
# file drifting-tumbling-whisper.md, .gitignore; `mix credo lib/...` (only `mix credo` after), `mix compile
# --warnings-as-errors` (only `mix compile`), `git add lib/...` (later `git add`s list other files first),
# `bd close spotter-fum.1/.2`, `npm install highlight.js` (only `npm install --save-dev happy-dom`).

TE_CALLS_BEFORE_FIRST_EDIT = 14
TE_REREAD = [
    "mix.exs",  # `grep -n "ignore_warnings\|dialyzer" mix.exs` 427, Read 429 (Read 14 before)
    "deps/opentelemetry_api/src/opentelemetry.erl",  # `grep -A5 "record(span_ctx" ...` 444 (`grep -A 5 ...` 65 before)
    "config/config.exs",  # Read 498 (Read 18 before)
    "lib/spotter_web/controllers/hooks_controller.ex",  # Read 506 (Read 255, 331 before)
    "lib/spotter_web/controllers/otel_trace_helpers.ex",  # Read 509 (Read 290 ... before)
    "lib/spotter/application.ex",  # Read 546 (Read 16, 148 before)
]
# Not re-read: tracer.ex, open_telemetry.ex, opentelemetry.hrl, otel_span.erl (first grepped after the fold),
# `deps/opentelemetry_api/include/*.hrl` (a glob), enrich_commits.ex, terminal_channel.ex, the test files,
# README.md (before, only deps/opentelemetry/README.md was grepped), router.ex.
TE_FIRST_CALLS = [
    (420, "git status --short", False),  # no git status in the summary
    (422, "bd ready", True),  # "`bd ready` showed 8 ready issues"
    (424, "bd list --status=in_progress", False),  # no bd list
    (427, 'grep -n "..." mix.exs', True),  # "mix.exs (OTEL deps added)"
    (429, "Read mix.exs", True),
    (433, "grep -r ... deps/opentelemetry_api/lib/", False),  # a directory; grep -r not named
    (436, "grep ... deps/opentelemetry_api/lib/open_telemetry/tracer.ex", False),  # the file is never named
    (438, "grep -r ... deps/opentelemetry_api/lib/open_telemetry/", False),
    (440, "grep ... deps/opentelemetry_api/lib/open_telemetry.ex", False),  # never named
    (442, "grep -r ... deps/opentelemetry_api/src/", False),
]
TE_USED_AFTER = [
    "mix compile",  # `mix compile --warnings-as-errors 2>&1 | tail -5` 462: it states `mix compile`
    "mix credo --strict",  # `mix format ...; echo; mix credo --strict 2>&1 | tail -20` 464
]
# Lost and not used again: the four hexdocs.pm URLs, mix.lock, set_text_map_propagator, otel_configuration,
# error_content, Spotter.Application (in no input after the fold; only the summary at 412 names
# set_text_map_propagator and the tasks), `mix deps.get`, `mix test --seed 0` (only `mix test` after),
# `MIX_ENV=test mix run ...`, `git add -A && git commit ...` (later `git add <files>`), the bd commands of
# tasks 1-3, the `bash -n`/`source`/`bash -c` checks of the plugin scripts.

REAL = [
    (SPOTTER_FUM, FUM_CALLS_BEFORE_FIRST_EDIT, FUM_REREAD, FUM_FIRST_CALLS, FUM_USED_AFTER),
    (SPOTTER_4TE, TE_CALLS_BEFORE_FIRST_EDIT, TE_REREAD, TE_FIRST_CALLS, TE_USED_AFTER),
]


@pytest.mark.parametrize("name, before_edit, reread, first_calls, used", REAL, ids=["spotter-fum", "spotter-4te"])
def test_real_fold_matches_the_hand_check(name, before_edit, reread, first_calls, used):
    before, summary, cwd, after = _fold_and_after(name)
    report = facts.probe(before, summary, cwd=cwd)
    found = continuation.measure(before, summary, after, report, cwd=cwd)
    assert found.calls_before_first_edit == before_edit
    assert found.reread_after == reread
    calls = [m["position"] for m in after for b in m["blocks"] if b["kind"] == "tool_call"]
    assert calls[: len(first_calls)] == [position for position, _, _ in first_calls]
    assert found.anticipated == (sum(hit for _, _, hit in first_calls), len(first_calls))
    assert found.used_after == used
    lost = {f.key for f in report.lost}
    assert set(found.used_after) <= lost
    assert found.after_messages == len(after) and after[0]["is_compact_summary"]


# --- each rule on a hand-made transcript ------------------------------------------------------


def msg(position, role, *blocks, is_compact_summary=False):
    return {"position": position, "turn": 0, "role": role, "blocks": list(blocks), "is_meta": False,
            "is_compact_summary": is_compact_summary}


def text(t):
    return {"kind": "text", "text": t}


def call(name, tool_id="t", **inp):
    return {"kind": "tool_call", "tool_name": name, "tool_input": inp, "text": str(inp), "tool_id": tool_id}


def result(t, tool_id="t"):
    return {"kind": "tool_result", "text": t, "tool_id": tool_id, "is_error": False}


BEFORE = [
    msg(0, "user", text("Fix the parser; the docs are at https://example.org/spec.")),
    msg(1, "assistant", call("Read", "r1", file_path="/repo/app/parser.py")),
    msg(2, "assistant", call("Read", "r2", file_path="/repo/app/lexer.py")),
    msg(3, "assistant", call("Bash", "b1", command="cd /repo && sed -n '1,40p' app/tokens.py")),
    msg(4, "assistant", text("I'll use `parse_header()` from app/util.py.")),
    msg(5, "assistant", call("Edit", "e1", file_path="/repo/app/parser.py", old_string="a", new_string="b")),
    msg(6, "assistant", call("Bash", "b2", command="pytest -q tests/test_parser.py 2>&1 | tail -5")),
]
SUMMARY = "Fixed app/parser.py; next: run the tests."


def run(after, before=BEFORE, summary=SUMMARY):
    report = facts.probe(before, summary, cwd="/repo")
    return continuation.measure(before, summary, after, report, cwd="/repo"), report


def test_a_lost_fact_used_again_by_a_later_call_or_user_message():
    _, report = run([])
    lost = {f.key for f in report.lost}
    assert {"app/lexer.py", "app/tokens.py", "app/util.py", "pytest -q tests/test_parser.py", "parse_header"} <= lost
    assert "app/parser.py" not in lost
    after = [
        msg(10, "user", text("This session is being continued from a previous conversation. app/util.py ..."), is_compact_summary=True),
        msg(11, "assistant", text("Looking at app/tokens.py again."), call("Grep", "g", pattern="parse_header", path="/repo/app")),
        msg(12, "tool", result("app/lexer.py:3: import x", "g")),
        msg(13, "assistant", call("Bash", "b", command="cd /repo && pytest -q tests/test_parser.py 2>&1", description="app/util.py")),
        msg(14, "user", text("Also check app/lexer.py and https://example.org/spec")),
        msg(15, "assistant", call("Write", "w", file_path="/repo/NOTES.md", content="see app/tokens.py")),
    ]
    found, _ = run(after)
    # In order of first use (one message: in report order): the identifier grepped, the command run
    # again and the file it names, the URL and the file the user named.
    assert found.used_after == ["parse_header", "pytest -q tests/test_parser.py", "tests/test_parser.py",
                                "https://example.org/spec", "app/lexer.py"]
    # Not uses: the compaction summary (app/util.py), assistant prose and tool output (tokens.py, lexer.py
    # at 12), a call's description (util.py), the text a Write writes (tokens.py).
    assert "app/util.py" not in found.used_after and "app/tokens.py" not in found.used_after


def test_a_lost_path_used_by_a_command_and_by_a_unique_basename():
    after = [msg(10, "assistant", call("Bash", "b", command="python -m black app/tokens.py")),
             msg(11, "assistant", call("Read", "r", file_path="/repo/app/lexer.py", limit=10))]
    found, _ = run(after)
    assert found.used_after == ["app/tokens.py", "app/lexer.py"]
    found, _ = run([msg(10, "user", text("what does util.py do?"))])
    assert found.used_after == ["app/util.py"]


def test_a_kept_path_read_again_is_a_reread_not_a_use():
    after = [
        msg(10, "assistant", call("Read", "r", file_path="/repo/app/parser.py")),  # kept by the summary
        msg(11, "assistant", call("Bash", "b", command="cd app && cat tokens.py | head -3")),  # app/tokens.py again
        msg(12, "assistant", call("Grep", "g", pattern="x", path="/repo/app")),  # a directory: not a file read
        msg(13, "assistant", call("Glob", "gl", pattern="app/*.py")),  # wildcards: no file named
        msg(14, "assistant", call("Read", "r2", file_path="/repo/app/new.py")),  # not read before
        msg(15, "assistant", call("Glob", "gl2", pattern="lexer.py", path="/repo/app")),  # a literal Glob names a file
        msg(16, "assistant", call("Read", "r3", file_path="/repo/app/parser.py", offset=5)),  # once in the list
    ]
    found, _ = run(after)
    assert found.reread_after == ["app/parser.py", "app/tokens.py", "app/lexer.py"]
    assert "app/parser.py" not in found.used_after  # kept: re-reading it is a cost, not a loss
    # A file only edited after the fold is not re-read; `pytest app/lexer.py` reads nothing (not cat-like).
    found, _ = run([msg(10, "assistant", call("Edit", "e", file_path="/repo/app/parser.py")),
                    msg(11, "assistant", call("Bash", "b", command="pytest app/lexer.py"))])
    assert found.reread_after == []


def test_calls_before_the_first_edit():
    reads = [msg(10 + i, "assistant", call("Read", f"r{i}", file_path=f"/repo/x{i}.py")) for i in range(3)]
    assert run(reads)[0].calls_before_first_edit is None  # no edit after the fold
    assert run([])[0].calls_before_first_edit is None
    edit = msg(20, "assistant", call("MultiEdit", "m", file_path="/repo/a.py", edits=[]))
    assert run(reads + [edit])[0].calls_before_first_edit == 3
    assert run([edit] + reads)[0].calls_before_first_edit == 0
    # Parallel calls of one message count one by one; an editor's `view` is a read, not an edit.
    two = msg(10, "assistant", call("Read", "a", file_path="/repo/a.py"), call("Grep", "b", pattern="x"))
    view = msg(11, "assistant", call("str_replace_based_edit_tool", "v", command="view", path="/repo/a.py"))
    write = msg(12, "assistant", call("str_replace_based_edit_tool", "s", command="create", path="/repo/b.py", file_text="x"))
    assert run([two, view, write])[0].calls_before_first_edit == 3
    patch = msg(13, "assistant", call("Bash", "p", command="apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.py\nEOF"))
    assert run([two, patch])[0].calls_before_first_edit == 2
    assert run([two, msg(14, "assistant", call("NotebookEdit", "n", notebook_path="/repo/n.ipynb"))])[0].calls_before_first_edit == 2


def test_anticipated_counts_the_first_ten_calls_touching_what_the_summary_names():
    summary = "Edited app/parser.py and lexer.py. Next: run `mix credo`, then `bd close proj-1`."
    after = [
        msg(10, "assistant", call("Bash", "a", command="mix credo --strict 2>&1")),  # its words: `mix credo`
        msg(11, "assistant", call("Read", "b", file_path="/repo/app/lexer.py")),  # a unique basename
        msg(12, "assistant", call("Bash", "c", command='bd close proj-1 --reason="done, see app/other.py"')),
        msg(13, "assistant", call("Bash", "d", command="git status")),  # not named
        msg(14, "assistant", call("Bash", "e", command='git commit -m "fix app/parser.py"')),  # a path inside a message is no target
        msg(15, "assistant", call("TodoWrite", "f", todos=[])),  # touches nothing
        msg(16, "assistant", call("Bash", "g", command="cd app && python parser.py")),  # app/parser.py, under the cd
    ] + [msg(20 + i, "assistant", call("Read", f"r{i}", file_path="/repo/app/parser.py")) for i in range(5)]
    found, _ = run(after, summary=summary)
    assert found.anticipated == (7, 10)  # 10, 11, 12, 16 and three of the five Reads
    found, _ = run(after[:4], summary=summary)
    assert found.anticipated == (3, 4)
    assert run([], summary=summary)[0].anticipated == (0, 0)
    # A basename two known paths end with does not name either of them.
    before = BEFORE + [msg(7, "assistant", call("Read", "x", file_path="/repo/lib/lexer.py"))]
    found, _ = run([msg(10, "assistant", call("Read", "b", file_path="/repo/app/lexer.py"))], before=before, summary=summary)
    assert found.anticipated == (0, 1)


def test_the_shape_the_caller_reads():
    after = [msg(10, "assistant", call("Read", "r", file_path="/repo/app/lexer.py")), msg(11, "tool", result("x", "r"))]
    found, report = run(after)
    assert found.as_dict() == {"used_after": ["app/lexer.py"], "reread_after": ["app/lexer.py"],
                               "calls_before_first_edit": None, "anticipated": [0, 1], "after_messages": 2}
    # The caller marks the lost facts used again by their keys.
    assert [f.key for f in report.lost if f.key in set(found.used_after)] == ["app/lexer.py"]


def test_command_helpers():
    assert salience.simple_commands("cd /r && grep -n \"a|b\" x.py 2>&1 | head -5; echo 'x;y'") == [
        "cd /r", 'grep -n "a|b" x.py', "head -5", "echo 'x;y'"]
    assert salience.reads_files("sed -n '1,5p' a.py") and salience.reads_files("cat a") and not salience.reads_files("python a.py")
    assert salience.shell_command(["bash", "-lc", "cat a.py"]) == "cat a.py"
    assert salience.is_edit("apply_patch", "*** Begin Patch") and not salience.is_edit("Read", {"file_path": "a"})
    assert continuation.command_words("MIX_ENV=test mix test test/a_test.exs --trace") == "mix test test/a_test.exs"
    # A command is keyed as the probe keys it: a long one by its head.
    long = "git add -A && git commit -m \"$(cat <<'EOF'\n" + "word " * 100 + "\nEOF\n)\""
    for command in ("cd /r && mix test 2>&1 | tail -5", long):
        (fact,) = [f for f in facts.extract([msg(0, "assistant", call("Bash", command=command))]) if f.kind == "command"]
        assert continuation.command_key(command) == fact.key
    assert continuation.command_key(long) == "git add -A && git commit -m"
