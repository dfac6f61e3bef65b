"""The conformance check's window comparison (ops/conformance.compare_window): what a request carried
against what the window shows, in order; a named Allowance accepts an item the log cannot hold."""

from __future__ import annotations

from ops.conformance import compare_window
from ops.drivers.base import Allowance
from ops.scripted.view import Item


def _shown(*items):
    return [{"role": r, "kind": k, "tool_id": t, "tool_name": None, "text": x} for r, k, t, x in items]


SENT = [
    Item("user", "text", "This session is being continued. <summary>facts</summary>"),
    Item("user", "text", "kept tail"),
    Item("user", "text", "cv-prompt-3: new prompt"),
    Item("assistant", "tool_call", '{"a": 1}', "t1", "Read"),
    Item("tool", "tool_result", "body", "t1"),
]


def test_the_same_items_in_the_same_order_match():
    shown = _shown(("user", "summary", None, "This session is being continued. <summary>facts</summary>"),
                   ("user", "text", None, "kept tail"), ("user", "text", None, "cv-prompt-3: new prompt"),
                   ("assistant", "tool_call", "t1", '{"a": 1}'), ("tool", "tool_result", "t1", "body"))
    assert compare_window(SENT, shown, []) == []


def test_the_summary_after_the_new_prompt_is_caught():
    # What the page showed before issue 33: file order, not the order sent.
    shown = _shown(("user", "text", None, "kept tail"), ("user", "text", None, "cv-prompt-3: new prompt"),
                   ("user", "summary", None, "This session is being continued. <summary>facts</summary>"),
                   ("assistant", "tool_call", "t1", '{"a": 1}'), ("tool", "tool_result", "t1", "body"))
    problems = compare_window(SENT, shown, [])
    assert len(problems) == 4 and "kept tail" in problems[0][1] and "not in the window" in problems[2][1]


def test_a_dropped_item_and_an_unsent_item_are_both_differences():
    shown = _shown(("user", "summary", None, "This session is being continued. <summary>facts</summary>"),
                   ("user", "text", None, "cv-prompt-3: new prompt"), ("assistant", "text", None, "api-request-blob text"),
                   ("assistant", "tool_call", "t1", '{"a": 1}'), ("tool", "tool_result", "t1", "body"))
    problems = compare_window(SENT, shown, [])
    assert [p[1] for p in problems] == ["not in the window at this place", "window shows text 'api-request-blob text'"]


def test_an_allowance_accepts_a_request_item_the_log_never_held():
    sent = [Item("user", "text", "<system-reminder>today is Monday</system-reminder>"), *SENT]
    shown = _shown(("user", "summary", None, "This session is being continued. <summary>facts</summary>"),
                   ("user", "text", None, "kept tail"), ("user", "text", None, "cv-prompt-3: new prompt"),
                   ("assistant", "tool_call", "t1", '{"a": 1}'), ("tool", "tool_result", "t1", "body"))
    assert len(compare_window(sent, shown, [])) == 1
    reminders = Allowance("system reminders", "rendered into the request, never logged", ("<system-reminder>",))
    assert compare_window(sent, shown, [reminders]) == []


def test_tool_ids_must_agree_and_an_encrypted_summary_matches_a_summary():
    sent = [Item("user", "summary", ""), Item("assistant", "tool_call", "{}", "t9", "Read")]
    shown = _shown(("user", "summary", None, ""), ("assistant", "tool_call", "t1", "{}"))
    assert compare_window(sent, shown, []) == [
        ("sent tool_call [t9] '{}'", "not in the window at this place"), ("not sent here", "window shows tool_call [t1] '{}'")]
