"""The pure parts of a builtin handoff that stays true: what is noise, when an error is resolved,
and the budget that holds whatever the transcript holds."""

from __future__ import annotations

import pytest

from contextviewer.core import handoff as core
from contextviewer.core.handoff import Entry
from contextviewer.core.tokens import count_text
from contextviewer.providers.builtin import summarize


@pytest.mark.parametrize(
    "path, noise",
    [
        ("node_modules/react/index.js", True),
        ("/home/dev/app/node_modules/.bin/vite", True),
        ("/tmp/claude-1000/tasks/b7636e2.output", True),
        ("/nonexistent/path.jsonl", True),
        ("_build/dev/lib/app/ebin/app.beam", True),
        ("deps/phoenix/lib/phoenix.ex", True),
        ("/home/dev/app/.venv/lib/python3.12/site-packages/a.py", True),
        ("target/debug/app", True),
        ("dist/bundle.js", True),
        ("src/parser.py", False),
        ("src/dist_utils.py", False),
        ("/home/dev/app/lib/target.ex", False),
    ],
)
def test_noise_paths(path, noise):
    assert core.is_noise_path(path) is noise
    assert core.names_noise_path(f"cat {path} | head") is noise


@pytest.mark.parametrize(
    "error, later, resolved",
    [
        ("pytest -q tests/test_a.py", "pytest -q tests/test_a.py", True),
        ("pytest -q tests/test_a.py", "pytest -q", True),  # the whole suite passed after
        ("pytest -q tests/test_a.py", "pytest -q tests/test_b.py", False),  # another file's run says nothing
        ("cd app && mix test test/a_test.exs 2>&1", "mix test test/a_test.exs test/b_test.exs | tail", True),
        ("git push 2>&1", "git push --set-upstream origin main", True),
        ("git push", "git status", False),
        ("make docs", "make test", False),
    ],
)
def test_an_error_is_resolved_by_a_later_run_of_the_same_command_on_the_same_target(error, later, resolved):
    assert core.resolves("Bash", error, "Bash", later) is resolved


def test_a_file_error_is_resolved_by_a_later_call_on_that_file_only():
    assert core.resolves("Read", "src/a.py", "Write", "src/a.py")
    assert not core.resolves("Read", "src/a.py", "Read", "src/b.py")


def test_the_budget_holds_whatever_the_transcript_holds():
    long_request = "Port everything. " + " ".join(f"Never touch area {i} without a test." for i in range(200))
    entries = [Entry("user", long_request)]
    for i in range(300):
        entries.append(Entry("tool", "ok", "Edit", {"file_path": f"src/area_{i}/very/long/directory/name/module_{i}.py"}))
        entries.append(Entry("tool", "boom " * 50, "Bash", {"command": f"pytest tests/area_{i}_test.py -k case_{i}"}, is_error=True))
    entries.append(Entry("assistant", "Still going. " * 300))
    for budget in (300, 800, core.DEFAULT_BUDGET):
        text = summarize(entries, budget)
        assert count_text(text) <= budget
        sections = core.validate_sections(text)
        assert all(sections[s] for s in core.SECTIONS)
        assert "module_299.py" in sections["State and what is done"] or budget < 800  # the latest work stays while it can


def test_a_previous_summary_is_merged_not_pasted_and_does_not_grow_the_next():
    def segment(start: int) -> list[Entry]:
        out = [Entry("user", f"Do batch {start}.")]
        for i in range(start, start + 60):
            out.append(Entry("tool", "ok", "Edit", {"file_path": f"src/m_{i}.py"}))
            out.append(Entry("tool", "1 passed", "Bash", {"command": f"pytest tests/test_m_{i}.py"}))
        return out + [Entry("assistant", f"Batch {start} done.")]

    summary, sizes = None, []
    for k in range(5):
        entries = ([Entry("summary", summary)] if summary else []) + segment(k * 60)
        summary = summarize(entries, 1_500)
        sizes.append(count_text(summary))
    assert max(sizes) <= 1_500
    assert summary.count("## State and what is done") == 1 and summary.count("Last state:") == 1
    assert "Batch 240 done." in summary and "src/m_299.py" in summary


def test_the_budget_holds_even_when_nothing_is_left_to_drop_but_the_goal():
    goal = "\n".join(f"Goal line {i}: keep the service at {i} ms." for i in range(400))
    previous = core.format_sections({"Goal": goal, "State and what is done": "- Ran `make`", "Next steps": "- Ship", "Constraints and preferences": "- None stated."})
    text = summarize([Entry("summary", previous), Entry("assistant", "ok")], 300)
    assert count_text(text) <= 300 and core.validate_sections(text)
