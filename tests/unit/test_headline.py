"""The one line a fold's summary shows in the compact list of older folds."""

from contextviewer.core.headline import LIMIT, summary_headline

CLAUDE_CODE = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
    "Analysis:\nLet me chronologically analyze the conversation:\n\n"
    "1. **Initial Request**: the user asked for a parser.\n\n"
    "Summary:\n1. Primary Request and Intent:\n   The user wants the importer to skip over-long lines.\n"
)


def test_the_users_request_heads_a_claude_code_summary():
    assert summary_headline(CLAUDE_CODE) == "The user wants the importer to skip over-long lines."


def test_without_a_request_the_first_line_past_the_openings():
    text = CLAUDE_CODE.split("Summary:")[0]
    assert summary_headline(text) == "Initial Request: the user asked for a parser."
    assert summary_headline("## Summary 3\nGoal: keep the tests green.") == "Summary 3"
    assert summary_headline("Primary Request and Intent: ship the release") == "ship the release"


def test_a_long_line_is_cut_on_a_word_with_an_ellipsis():
    line = summary_headline("Analysis:\n" + "parser " * 60)
    assert len(line) <= LIMIT and line.endswith("parser…")


def test_tags_and_empty_summaries():
    assert summary_headline("<analysis>\nFixed the <b>parser</b> bug\n</analysis>") == "Fixed the parser bug"
    assert summary_headline("") == "" and summary_headline(None) == ""
    # Only openings: the first one rather than nothing.
    assert summary_headline("Analysis:\n") == "Analysis:"
