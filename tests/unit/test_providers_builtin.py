"""The flat transcript, its parsing back, section parsing, and the builtin summarizer (pure)."""

from __future__ import annotations

import pytest

from contextviewer.core import handoff as core
from contextviewer.core.handoff import Entry
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
    assert "Next I will update docs/CHANGES.md" in sections["Next steps"]
    constraints = sections["Constraints and preferences"]
    assert "Never push to main" in constraints and "use uv, not pip" in constraints


def test_builtin_is_deterministic_and_reports_tokens():
    prompt = core.build_prompt(core.render_transcript(_entries()))
    a = BuiltinProvider().complete(system=prompt[0], prompt=prompt[1], role="handoff")
    b = BuiltinProvider().complete(system=prompt[0], prompt=prompt[1], role="handoff")
    assert a.text == b.text and a.input_tokens > 0 and a.output_tokens > 0 and a.cost_usd == 0
    title = BuiltinProvider().complete(system="", prompt=core.title_prompt("## Add retries to the HTTP client\nmore")[1], role="title")
    assert title.text == "Add retries to the HTTP client"
