"""Blind review takes the builtin summarizer's fixed phrases out (issue 36, item 2): "None stated in
the transcript.", "Latest request (see Last state for where it stands): ...", "Paths mentioned:",
"Ran `...`", "Last state:" ... are written by no other summarizer, so in blind review they would tell
the builtin's summary from the agent's own. Disguised, both read in the shared vocabulary."""

from __future__ import annotations

import json

from contextviewer.core import handoff as core
from contextviewer.core.handoff import Entry
from contextviewer.providers import builtin
from contextviewer.providers.builtin import BuiltinProvider
from contextviewer.review import blind

# Every fixed phrase the builtin summarizer writes (providers/builtin: _goal, _render, _next_steps).
PHRASES = [
    "Latest request:", builtin._LATEST, builtin._ANSWER, builtin._OPEN_TASK, builtin._NAMED, "From the earlier summary:",
    "Files changed:", "Files read:", "Paths mentioned:", "Ran `", "Searched:", "Symbols:", "Tasks done:", "Error seen:",
    "Last state:", "Earlier state:", "Resolve the error", "None stated in the transcript.", "Nothing was done in the loaded view",
    "No open request, task or error in the transcript.", "Not stated in the transcript",
]


def _handoff(entries: list[Entry]) -> str:
    system, prompt = core.build_prompt(core.render_transcript(entries))
    return BuiltinProvider().complete(system=system, prompt=prompt, role="handoff").text


def _claude_code_summary(fixtures_dir) -> str:
    """The real Claude Code summary of marot__spotter__8463… (spotter-fum): analysis, then nine sections."""
    path = fixtures_dir / "claude-code" / "marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
    line = next(x for x in path.read_text(encoding="utf-8").splitlines() if '"isCompactSummary":true' in x.replace(" ", ""))
    content = json.loads(line)["message"]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content if isinstance(b, dict))


def _work() -> list[Entry]:
    return [
        Entry("user", "Fix the crash in src/app/main.py. Always run `pytest -q`; use uv, not pip."),
        Entry("assistant", "Looking at `parse_config()` in src/app/main.py and docs/notes.md."),
        Entry("tool", "ok", "TodoWrite", {"todos": [{"content": "read the code", "status": "completed"},
                                                   {"content": "write the fix", "status": "in_progress"}]}),
        Entry("tool", "src/app/main.py:3: def parse_config", "Grep", {"pattern": "parse_config", "path": "src"}),
        Entry("tool", "def parse_config(): ...", "Read", {"file_path": "src/app/config.py"}),
        Entry("tool", "1 failed\nE   AssertionError: boom", "Bash", {"command": "pytest -q tests/test_main.py"}, is_error=True),
        Entry("tool", "String not found", "Edit", {"file_path": "src/app/main.py", "old_string": "x"}, is_error=True),
        Entry("tool", "ok", "Edit", {"file_path": "src/app/util.py", "old_string": "x", "new_string": "y"}),
        Entry("assistant", "Fixed. Next I will update docs/CHANGES.md."),
    ]


def test_blind_review_shows_the_builtin_summary_without_its_fixed_phrases(fixtures_dir):
    recorded = _claude_code_summary(fixtures_dir)
    after_claude = _handoff([Entry("summary", recorded), *_work()])  # the builtin written again after Claude Code's
    chained = _handoff([Entry("summary", _handoff(_work())), Entry("user", "Now the docs."), Entry("assistant", "Reading them.")])
    bare = _handoff([Entry("user", "What does this repo do?")])
    empty = _handoff([Entry("assistant", "Hello.")])
    summaries = [after_claude, chained, bare, empty]
    stored = "\n".join(summaries)
    assert [p for p in PHRASES if p not in stored] == []  # the summaries write every phrase

    shown = {text: blind.disguise(text) for text in [*summaries, recorded]}
    for text in summaries:
        assert [p for p in PHRASES if p in shown[text]] == [], shown[text]
    assert "Latest request" in after_claude  # the stored summary keeps them

    # Both read in one vocabulary: the same section names, in one order, and the words stay.
    names = {text: [ln[3:] for ln in out.splitlines() if ln.startswith("## ")] for text, out in shown.items()}
    for text, found in names.items():
        assert set(found) <= set(blind.NEUTRAL) and found == sorted(found, key=blind.NEUTRAL.index), found
    assert set(names[after_claude]) - {"Constraints"} <= set(names[recorded]), names
    out = shown[after_claude]
    files = out.split("## Files\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert {"- `src/app/util.py`", "- `src/app/config.py`", "- `src/app/main.py`"} <= set(files), files
    assert "- `pytest -q tests/test_main.py`: E AssertionError: boom (Bash)" in out.split("## Errors\n", 1)[1]
    steps = out.split("## Next steps\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert steps == ["- Fix the crash in src/app/main.py. Always run `pytest -q`; use uv, not pip.", "- write the fix"], steps
    assert "- Fixed. Next I will update docs/CHANGES.md." in out.split("## State\n", 1)[1]
    assert blind.disguise(bare) == "## Goal\nWhat does this repo do?\n\n## Next steps\n- What does this repo do?\n"
    # The agent's own summary: every line as it was written.
    written = {ln.strip() for ln in recorded.splitlines()}
    assert all(ln.strip() in written for ln in shown[recorded].splitlines() if ln.strip() and not ln.startswith("## "))
