"""The flat transcript, its parsing back, section parsing, and the builtin summarizer (pure)."""

from __future__ import annotations

import pytest

from contextviewer.core import handoff as core
from contextviewer.core.handoff import Entry
from contextviewer.core.tokens import count_text
from contextviewer.providers.builtin import BuiltinProvider, summarize


def _entries():
    return [
        Entry("summary", "## Goal\nShip v2.\n\n## State and what is done\n- Ran `make build`\n\n## Next steps\n- Tag it\n\n## Constraints and preferences\n- Never push to main"),
        Entry("user", "Fix the crash in src/app/main.py. Always run `pytest -q`; use uv, not pip."),
        Entry("assistant", "Looking at `parse_config()` in src/app/main.py."),
        Entry("tool", "1 failed\nUSER: this line is tool output, not a user", "Bash", {"command": "pytest -q tests/test_main.py", "description": "run"}),
        Entry("tool", "String not found", "Edit", {"file_path": "src/app/main.py", "old_string": "x" * 5000}, is_error=True),
        Entry("assistant", "Fixed. Next I will update docs/CHANGES.md."),
    ]


def test_the_transcript_is_flat_and_reads_back_the_same():
    text = core.render_transcript(_entries())
    lines = text.split("\n")
    heads = [ln.split(" ", 1)[0] for ln in lines if not ln.startswith("  ")]
    assert heads == ["SUMMARY:", "USER:", "ASSISTANT:", "TOOL", "TOOL", "ASSISTANT:"]
    assert "  USER: this line is tool output" in text  # indented: cannot pass for a new entry
    assert "x" * 401 not in text  # long input values are cut, the JSON stays valid
    back = core.parse_transcript(core.build_prompt(text)[1])
    assert [e.role for e in back] == ["summary", "user", "assistant", "tool", "tool", "assistant"]
    assert back[3].tool_name == "Bash" and back[3].tool_input["command"] == "pytest -q tests/test_main.py"
    assert back[3].text.endswith("USER: this line is tool output, not a user")
    assert back[4].is_error and back[4].tool_input["file_path"] == "src/app/main.py"
    assert back[0].text.startswith("## Goal")


def test_a_long_transcript_keeps_the_summary_the_first_request_and_the_latest_entries():
    entries = [Entry("summary", "old"), Entry("user", "the goal")] + [Entry("assistant", f"step {i} " + "y" * 200) for i in range(500)]
    text = core.render_transcript(entries, max_chars=5_000)
    assert len(text) <= 5_000 and "SUMMARY:" in text and "USER: the goal" in text
    assert "step 499" in text and "step 0 " not in text and "entries omitted" in text


def test_sections_are_found_in_the_ways_models_write_them():
    text = "**Goal**\nA\n\n2. State and what is done:\nB\n### Next steps\nC\nConstraints and preferences\nD"
    assert core.parse_sections(text) == {"Goal": "A", "State and what is done": "B", "Next steps": "C", "Constraints and preferences": "D"}
    with pytest.raises(core.SummaryInvalid, match='missing "Next steps", "Constraints and preferences"; empty "Goal"'):
        core.validate_sections("## Goal\n\n## State and what is done\nx")


def test_builtin_builds_the_four_sections_from_the_transcript_and_keeps_the_previous_summary():
    sections = core.validate_sections(summarize(_entries()))
    assert sections["Goal"].startswith("Ship v2.") and "Latest request: Fix the crash" in sections["Goal"]
    state = sections["State and what is done"]
    assert "`src/app/main.py`" in state and "Ran `pytest -q tests/test_main.py`" in state
    assert "`parse_config()`" in state and "Error seen: Edit: String not found" in state
    assert "Ran `make build`" in state  # from the previous summary
    # What the assistant said it would do is its last state; the next steps are the latest request
    # and the error no later run resolved, nothing else.
    assert "Next I will update docs/CHANGES.md" in state and "Next I will" not in sections["Next steps"]
    steps = sections["Next steps"].split("\n")
    assert steps[0].endswith(": Fix the crash in src/app/main.py. Always run `pytest -q`; use uv, not pip.")
    assert "Edit on `src/app/main.py`" in steps[1] and len(steps) == 2
    constraints = sections["Constraints and preferences"]
    assert "Never push to main" in constraints and "use uv, not pip" in constraints


def test_builtin_is_deterministic_and_reports_tokens():
    prompt = core.build_prompt(core.render_transcript(_entries()))
    a = BuiltinProvider().complete(system=prompt[0], prompt=prompt[1], role="handoff")
    b = BuiltinProvider().complete(system=prompt[0], prompt=prompt[1], role="handoff")
    assert a.text == b.text and a.input_tokens > 0 and a.output_tokens > 0 and a.cost_usd == 0
    title = BuiltinProvider().complete(system="", prompt=core.title_prompt("## Add retries to the HTTP client\nmore")[1], role="title")
    assert title.text == "Add retries to the HTTP client"


# --- cumulative handoffs, measured with the fact probes ----------------------------------------

from contextviewer.core import facts  # noqa: E402


def _segment(start: int, n: int) -> list[dict]:
    """A synthetic segment with many files and commands (plain messages, as the probes take them)."""
    out: list[dict] = []
    for i in range(start, start + n):
        tid = f"t{i}"
        out.append({"position": len(out), "turn": i, "role": "user", "is_meta": False, "blocks": [{"kind": "text", "text": f"Now fix module {i}."}]})
        for j, (tool, inp, result) in enumerate([
            ("Read", {"file_path": f"/repo/src/pkg{i}/module_{i}.py"}, "def f():\n    pass"),
            ("Grep", {"pattern": "f\\(", "path": f"/repo/src/pkg{i}"}, f"src/pkg{i}/module_{i}.py:1:def f():\nsrc/pkg{i}/helpers_{i}.py:3:f()"),
            ("Edit", {"file_path": f"/repo/src/pkg{i}/module_{i}.py", "old_string": "pass", "new_string": "return 1"}, "ok"),
            ("Bash", {"command": f"pytest -q tests/test_module_{i}.py -k case_{i}"}, "1 passed"),
            ("Bash", {"command": f'git add -A && git commit -m "fix module {i}\n\n' + "details of the change\n" * 30 + '"'}, "[main abc] fix"),
        ]):
            call_id = f"{tid}-{j}"
            out.append({"position": len(out), "turn": i, "role": "assistant", "is_meta": False,
                        "blocks": [{"kind": "tool_call", "tool_name": tool, "tool_input": inp, "tool_id": call_id}]})
            out.append({"position": len(out), "turn": i, "role": "user", "is_meta": False,
                        "blocks": [{"kind": "tool_result", "text": result, "tool_id": call_id}]})
        out.append({"position": len(out), "turn": i, "role": "assistant", "is_meta": False,
                    "blocks": [{"kind": "text", "text": f"Fixed src/pkg{i}/module_{i}.py; see docs/module_{i}.md."}]})
    return out


def _handoff(entries: list[Entry], budget: int | None = None) -> str:
    system, prompt = core.build_prompt(core.render_transcript(entries))
    return BuiltinProvider(budget).complete(system=system, prompt=prompt, role="handoff").text


ROOMY = 50_000  # a budget the merge never reaches: what is kept is what the merge keeps


def _entries_of(messages: list[dict]) -> list[Entry]:
    return core.entries_from_messages((m["role"], m["blocks"], m["is_meta"], False) for m in messages)


def test_a_second_builtin_handoff_keeps_the_paths_and_commands_of_everything_folded():
    first, second = _segment(0, 30), _segment(30, 30)
    s1 = _handoff(_entries_of(first), ROOMY)
    s2 = _handoff([Entry("summary", s1)] + _entries_of(second), ROOMY)
    report = facts.probe(first + second, s2, cwd="/repo")
    per_kind = report.per_kind()
    assert per_kind["path"]["total"] >= 150 and per_kind["command"]["total"] >= 60
    assert per_kind["path"]["retention"] >= 0.9, [f.text for f in report.lost if f.kind == "path"][:10]
    assert per_kind["command"]["retention"] >= 0.9, [f.text for f in report.lost if f.kind == "command"][:10]
    # Files read are files: the searched directories are not listed as read.
    state = core.parse_sections(s2)["State and what is done"]
    read_line = next(ln for ln in state.split("\n") if ln.startswith("- Files read:") or ln.startswith("- Files changed:"))
    assert "`/repo/src/pkg3`" not in state and "`/repo/src/pkg3/module_3.py`" in read_line
    # Deduplicated, not grown beyond the facts: a third handoff with nothing new says it again, no longer.
    s3 = _handoff([Entry("summary", s2)], ROOMY)
    assert facts.probe(first + second, s3, cwd="/repo").per_kind()["path"]["kept"] == per_kind["path"]["kept"]
    assert len(s3) <= len(s2) * 1.05
    assert state.count("Ran `pytest -q tests/test_module_3.py -k case_3`") == 1


def test_within_the_default_budget_the_carried_items_give_way_before_the_new_ones():
    first, second = _segment(0, 30), _segment(30, 30)
    s1 = _handoff(_entries_of(first))
    s2 = _handoff([Entry("summary", s1)] + _entries_of(second))
    assert count_text(s1) <= core.DEFAULT_BUDGET and count_text(s2) <= core.DEFAULT_BUDGET
    # The second view's commands all stay; its latest files do; the first segment's give way first.
    assert facts.probe(second, s2, cwd="/repo").per_kind()["command"]["retention"] >= 0.9
    assert all(f"/repo/src/pkg{i}/module_{i}.py" in s2 for i in range(55, 60))
    kept_first = facts.probe(first, s2, cwd="/repo").per_kind()["path"]["retention"]
    kept_second = facts.probe(second, s2, cwd="/repo").per_kind()["path"]["retention"]
    assert kept_first < kept_second


def test_a_foreign_summary_is_merged_item_by_item_and_secrets_stay_masked():
    secret = "ghp_" + "x1Y2z3W4v5" * 4
    files = [f"lib/area_{i}/file_{i}.ex" for i in range(80)]
    foreign = "Summary:\n1. Primary Request and Intent:\n   Ship tracing.\n\n## Goal\n" + "\n".join(
        f"   - **{p}** changed; ran `mix test test/area_{i}_test.exs`" for i, p in enumerate(files)
    ) + f"\n   token was {secret}\n"
    assert len(foreign) > 5_000
    s1 = _handoff([Entry("summary", foreign), Entry("user", "Carry on.")], ROOMY)
    assert all(p in s1 for p in files) and "mix test test/area_79_test.exs" in s1  # not cut at 1,500 characters
    assert secret not in s1
    sections = core.validate_sections(s1)  # the carried "## Goal" line cannot pass for a section
    assert sections["Goal"].startswith("From the earlier summary: Ship tracing.")
    assert "**lib/area_3/file_3.ex** changed" not in s1  # its items are merged, its text is not pasted
    # And on to the next handoff, still all there.
    s2 = _handoff([Entry("summary", s1), Entry("user", "And more.")], ROOMY)
    assert all(p in s2 for p in files) and secret not in s2
    # Within the default budget, the earlier summary's latest items stay.
    small = _handoff([Entry("summary", foreign), Entry("user", "Carry on.")])
    assert count_text(small) <= core.DEFAULT_BUDGET and secret not in small
    assert "lib/area_79/file_79.ex" in small and "mix test test/area_79_test.exs" in small
