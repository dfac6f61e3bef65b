"""The builtin handoff stays true over many folds (issue 17, item 5): within its token budget, the
earlier summary merged item by item (not pasted), next steps only from the latest request, open
tasks and unresolved errors, and no vendored, build or temporary paths.

Every handoff here runs through the real job path (builds/handoffs.py) on an imported session."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings

from contextviewer.builds import handoffs as handoff
from contextviewer.conversations.models import Conversation, Fold
from contextviewer.core import handoff as core
from contextviewer.core.tokens import count_text
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import JobStatus
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db

FIRST_REQUEST = "Build the JSON parser in src/parser.py. Never use regex for JSON."


def _run_handoff(conv) -> Fold:
    job, _ = handoff.start_handoff(conv, enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    return Fold.objects.get(conversation=conv, key=job.idempotency_key)


def _append(project, path, lines: list[str]) -> Conversation:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    ingest.import_file(project, path)
    return Conversation.objects.get()


def _tool(b: SessionBuilder, text: str, tool: str, tool_input: dict, result: str, *, is_error: bool = False) -> list[str]:
    return [*b.assistant(text, tool=(tool, tool_input)), b.tool_result(result, is_error=is_error)]


def _first_segment(b: SessionBuilder) -> list[str]:
    lines = [b.user(FIRST_REQUEST)]
    lines += _tool(b, "Writing the parser.", "Write", {"file_path": "src/parser.py", "content": "def parse(text): ..."}, "ok")
    lines += _tool(b, "Running its tests.", "Bash", {"command": "pytest -q tests/test_parser.py -k nested"}, "3 passed")
    lines += _tool(b, "Checking the lexer.", "Read", {"file_path": "src/lexer.py"}, "def lex(): ...")
    lines += [*b.assistant("The parser handles objects and arrays; `parse()` is in src/parser.py.")]
    return lines


def _module_work(b: SessionBuilder, segment: int, modules: int = 30) -> list[str]:
    """A segment's worth of work: a request, then reads, edits and test runs over many modules."""
    lines = [b.user(f"Now port the modules of batch {segment} to the new parser.")]
    for m in range(modules):
        name = f"batch{segment}/module_{m}"
        lines += _tool(b, f"Reading {name}.", "Read", {"file_path": f"src/{name}.py"}, "import json")
        lines += _tool(b, f"Porting {name}.", "Edit", {"file_path": f"src/{name}.py", "old_string": "json", "new_string": "parser"}, "ok")
        lines += _tool(b, "Testing it.", "Bash", {"command": f"pytest -q tests/{name}_test.py -k port_{segment}_{m}"}, "1 passed")
    lines += [*b.assistant(f"Batch {segment} is ported.")]
    return lines


@pytest.mark.parametrize("budget", [None, 1_200], ids=["default", "setting-1200"])
def test_five_folds_stay_within_the_budget_and_keep_what_the_latest_request_names(project, tmp_path, settings, budget):
    if budget is not None:
        settings.HANDOFF_BUDGET = budget  # CONTEXTVIEWER_HANDOFF_BUDGET, read in contextviewer/settings.py
    budget = django_settings.HANDOFF_BUDGET
    b = SessionBuilder()
    path = tmp_path / "s.jsonl"
    write_lines(path, _first_segment(b) + _module_work(b, 1))
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    summaries = [_run_handoff(conv).summary_text]
    for segment in range(2, 6):
        more = _module_work(b, segment)
        if segment == 5:  # the latest request goes back to what the first segment did
            more += [b.user("Go back to src/parser.py and make it accept trailing commas. Keep the tests green.")]
        conv = _append(project, path, more)
        view = handoff.loaded_input(conv)
        assert [e.role for e in view.entries].count("summary") == 1  # the previous summary, then the new turns
        summaries.append(_run_handoff(conv).summary_text)

    assert conv.folds.filter(kind="handoff").count() == 5
    for i, text in enumerate(summaries):
        assert count_text(text) <= budget, f"fold {i + 1}: {count_text(text)} tokens over {budget}"
        core.validate_sections(text)
    # The budget bit: what was touched is more than the last summary can list, so some gave way.
    last = core.parse_sections(summaries[-1])
    state = last["State and what is done"]
    touched = [f"src/batch{s}/module_{m}.py" for s in range(1, 6) for m in range(30)]
    assert 0 < sum(p in state for p in touched) < len(touched)
    # The earlier summaries were merged, not pasted: no section heading or summary quoted inside.
    assert summaries[-1].count("## Goal") == 1 and "carried whole" not in summaries[-1]
    # Facts of the first segment that the latest request names survive four folds of other work, in State
    # (what the goal names gives way after the other work, what the latest request names last).
    assert "`src/parser.py`" in state
    assert "Ran `pytest -q tests/test_parser.py -k nested`" in state
    assert "Never use regex for JSON." in last["Constraints and preferences"]
    assert last["Goal"].startswith(FIRST_REQUEST)
    # The latest batch's latest work is there too.
    assert "src/batch5/module_29.py" in state


def test_next_steps_name_the_latest_request_cut_to_a_sentence(project, tmp_path):
    b = SessionBuilder()
    path = tmp_path / "s.jsonl"
    request = (
        "Add a --verbose flag to the CLI in src/cli.py so that each step prints what it reads. "
        "It should default to off, and the help text should say what it does. "
        + " ".join(f"Detail {i}: the flag must also cover case {i} of the import path and log it once." for i in range(8))
    )
    write_lines(path, _first_segment(b) + [b.user(request)])
    ingest.import_file(project, path)
    steps = core.parse_sections(_run_handoff(Conversation.objects.get()).summary_text)["Next steps"].split("\n")
    one_line = " ".join(request.split())
    head, _, named = steps[0].partition(": ")
    assert head == "- Answer the latest request"  # the request is the last word: not answered yet
    assert one_line.startswith(named) and len(named) < len(one_line)  # its exact text, cut...
    assert named.endswith(".") and named.startswith("Add a --verbose flag to the CLI in src/cli.py")  # ...at a sentence end
    assert len(steps) == 1  # nothing else is open


def test_vendored_build_and_temporary_paths_stay_out(project, tmp_path):
    b = SessionBuilder()
    path = tmp_path / "s.jsonl"
    noise = [
        "node_modules/react/cjs/react.development.js",
        "/tmp/claude-1000/tasks/b7636e2.output",
        "/nonexistent/path.jsonl",
        "_build/dev/lib/app/ebin/app.beam",
        "/home/dev/project/.venv/lib/python3.12/site-packages/requests/api.py",
    ]
    lines = _first_segment(b)
    lines += _tool(b, "Reading React's source.", "Read", {"file_path": noise[0]}, "'use strict';")
    lines += _tool(b, "Checking the task output.", "Bash", {"command": f"cat {noise[1]}"}, "done")
    lines += _tool(b, "Trying the old log.", "Read", {"file_path": noise[2]}, "File does not exist.", is_error=True)
    lines += _tool(b, "Looking at the build.", "Read", {"file_path": noise[3]}, "binary")
    lines += [*b.assistant(f"The bug is in {noise[4]} and in {noise[0]}, not in src/parser.py.")]
    write_lines(path, lines)
    ingest.import_file(project, path)
    text = _run_handoff(Conversation.objects.get()).summary_text
    for p in noise:
        assert p not in text
    assert "node_modules" not in text and "/tmp/" not in text and "/nonexistent" not in text
    assert "File does not exist" not in text  # the error on a made-up path is no next step either
    assert "`src/parser.py`" in text and "`src/lexer.py`" in text  # the project's own files stay


def test_open_tasks_and_unresolved_errors_are_the_next_steps(project, tmp_path):
    b = SessionBuilder()
    path = tmp_path / "s.jsonl"
    todos = [
        {"content": "Write the parser", "status": "completed", "activeForm": "Writing the parser"},
        {"content": "Document the parser", "status": "in_progress", "activeForm": "Documenting the parser"},
        {"content": "Add parser benchmarks", "status": "pending", "activeForm": "Adding benchmarks"},
    ]
    lines = _first_segment(b)
    lines += _tool(b, "Reading the old one.", "Read", {"file_path": "src/old_parser.py"}, "x")  # deleted below
    lines += _tool(b, "Planning.", "TodoWrite", {"todos": todos}, "Todos have been modified successfully.")
    # An error a later run of the same command resolves, and one nothing resolves.
    lines += _tool(b, "Running the suite.", "Bash", {"command": "pytest -q tests/test_lexer.py"}, "1 failed", is_error=True)
    lines += _tool(b, "Fixed; again.", "Bash", {"command": "pytest -q tests/test_lexer.py"}, "4 passed")
    lines += _tool(b, "Building the docs.", "Bash", {"command": "make docs"}, "Error: sphinx not found", is_error=True)
    lines += _tool(b, "Removing the old module.", "Bash", {"command": "rm src/old_parser.py"}, "")
    lines += [*b.assistant("The parser is written; the docs are next.")]
    write_lines(path, lines)
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    first = core.parse_sections(_run_handoff(conv).summary_text)
    steps = first["Next steps"]
    assert "Open task: Document the parser" in steps and "Open task: Add parser benchmarks" in steps
    assert "Write the parser" not in steps and "Write the parser" in first["State and what is done"]  # done, said so
    assert "`make docs`" in steps  # unresolved
    assert "test_lexer" not in steps and "1 failed" not in first["State and what is done"]  # resolved by the later run
    files = [ln for ln in first["State and what is done"].split("\n") if ln.startswith(("- Files", "- Paths"))]
    assert files and not any("src/old_parser.py" in ln for ln in files)  # read, then deleted: no longer a file of the work
    assert "Ran `rm src/old_parser.py`" in first["State and what is done"]  # what was done stays

    # The next fold carries the open tasks over; a later list that finishes one supersedes it, and a
    # later successful `make docs` resolves the carried error.
    todos[1]["status"] = "completed"
    more = [b.user("Carry on with the docs.")]
    more += _tool(b, "Installing sphinx and building.", "Bash", {"command": "make docs"}, "build succeeded")
    more += _tool(b, "Updating the plan.", "TodoWrite", {"todos": todos}, "Todos have been modified successfully.")
    more += [*b.assistant("Docs are built.")]
    conv = _append(project, path, more)
    second = core.parse_sections(_run_handoff(conv).summary_text)
    steps = second["Next steps"]
    assert "Open task: Add parser benchmarks" in steps
    assert "Document the parser" not in steps and "make docs" not in steps and "sphinx not found" not in second["State and what is done"]
    assert "Carry on with the docs." in steps  # the latest request, answered: still named, with where it stands
