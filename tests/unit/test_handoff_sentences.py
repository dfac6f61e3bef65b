"""The builtin handoff's Goal ends on whole sentences (issue 36, item 7): a long first request is
taken as its whole sentences, paragraphs and list items, never cut mid-phrase."""

from __future__ import annotations

import re

from contextviewer.core import handoff as core
from contextviewer.core.handoff import Entry
from contextviewer.providers.builtin import summarize

# The first request of a real Claude Code sub-agent (marot/spotter, agent-a2898e3), whose Goal
# ended "... - lib/spotter_w…".
REQUEST = """Very thorough exploration. I need to understand:

1. How `SessionLive` and `SubagentLive` currently render transcripts - what's duplicated, what's different
2. How `AshComputer.LiveView` is used in `PaneListLive` (as the existing pattern to follow)
3. The `TranscriptRenderer` service - its API and what it returns
4. The current transcript markup/HEEx templates in both LiveViews
5. How annotation selection works in the transcript
6. Any JS hooks related to transcript rendering

Key files to read:
- lib/spotter_web/live/session_live.ex
- lib/spotter_web/live/session_live.html.heex
- lib/spotter_web/live/subagent_live.ex
- lib/spotter_web/live/subagent_live.html.heex
- lib/spotter_web/live/pane_list_live.ex
- lib/spotter/services/transcript_renderer.ex
- test/spotter/services/transcript_renderer_test.exs
- test/spotter_web/live/session_live_test.exs
- assets/js/app.js (for hooks)

Please provide the FULL content of each file - don't summarize."""


def _goal(entries) -> str:
    return core.parse_sections(summarize(entries))["Goal"]


def test_a_long_first_request_gives_a_goal_of_whole_sentences():
    goal = _goal([Entry("user", REQUEST), Entry("assistant", "Reading the files now.")])
    assert not goal.endswith("…"), goal
    assert goal.startswith("Very thorough exploration. I need to understand: 1. How `SessionLive`")
    # The numbered list is whole; the file list that did not fit is left out with its heading.
    assert goal.endswith("6. Any JS hooks related to transcript rendering"), goal
    assert "Key files to read" not in goal


def test_prose_is_cut_after_its_last_whole_sentence():
    request = " ".join(f"Step {i} of the port keeps the public API stable and adds a test for it." for i in range(40))
    goal = _goal([Entry("user", request)])
    assert goal.endswith("adds a test for it."), goal
    assert len(goal) <= 600


def test_the_earlier_summarys_intent_is_cut_on_a_sentence_too():
    foreign = "Summary:\n1. Primary Request and Intent:\n   " + " ".join(
        f"The user asked for change {i}, which touches the importer and the viewer." for i in range(30)
    ) + "\n\n2. Key Technical Concepts:\n   - Django"
    goal = _goal([Entry("summary", foreign), Entry("user", "Go on with the importer.")])
    first = goal.split("\n")[0]
    assert first.startswith("From the earlier summary: The user asked for change 0")
    assert first.endswith("the importer and the viewer."), first


def test_first_sentences_ends_on_sentences_lists_and_lines():
    assert core.first_sentences("Short request.", 300) == "Short request."
    text = "Fix it. " + "Then port the parser, e.g. the lexer, and keep the API. " * 10
    out = core.first_sentences(text, 120)
    assert out == "Fix it. Then port the parser, e.g. the lexer, and keep the API. Then port the parser, e.g. the lexer, and keep the API."
    # One sentence longer than the limit: cut at a clause break, said with "…".
    long_one = "Port the parser, " + ", ".join(f"module {i}" for i in range(80)) + " and stop"
    cut = core.first_sentences(long_one, 200)
    assert len(cut) <= 200 and cut.endswith("…") and re.search(r"module \d+…$", cut)


def test_a_line_shortened_for_the_budget_keeps_whole_sentences():
    line = "- Last state: " + " ".join(f"Test {i} passes now." for i in range(30))
    short = core.shorten_line(line, len(line) * 2 // 3)
    assert short.startswith("- Last state: Test 0 passes now.") and short.endswith("passes now.")
    assert len(short) <= len(line) * 2 // 3
