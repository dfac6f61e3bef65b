"""Which messages call N carried, and in which order (core/window.py): the summary of the latest fold
before the call, then the messages it preserved wherever they lie in the file, then the rest after
the fold. Positions as Claude Code 2.1.332 wrote them in issue 33's run: the kept tail (40, 41) and
the new prompt (42) come BEFORE the compact_boundary (43) and its summary (44) in the file, yet the
request sent [summary, tail, prompt, ...]."""

from __future__ import annotations

from contextviewer.core import window
from contextviewer.core.segments import FoldSpan


def _positions(call: int, folds, present=range(0, 60)) -> list[int]:
    return window.plan(call, folds).positions(list(present))


def test_without_a_fold_a_call_carries_everything_before_it():
    assert _positions(5, []) == [0, 1, 2, 3, 4]


def test_the_summary_comes_first_then_the_preserved_tail_then_what_followed():
    fold = FoldSpan("b", position=39, summary_position=44, preserved_positions=(40, 41, 42))
    # 43 (the boundary marker) is in range: the loader leaves it out by its role (system), not here.
    assert _positions(46, [fold]) == [44, 40, 41, 42, 43, 45]


def test_preserved_messages_before_the_fold_position_stay_in_order_after_the_summary():
    fold = FoldSpan("b", position=43, summary_position=44, preserved_positions=(42, 40, 41))
    assert _positions(46, [fold]) == [44, 40, 41, 42, 45]


def test_a_call_before_a_fold_does_not_see_it_and_a_later_fold_replaces_an_earlier_one():
    first = FoldSpan("a", position=10, summary_position=11)
    second = FoldSpan("b", position=20, summary_position=21, preserved_positions=(19,))
    assert _positions(10, [first, second]) == list(range(10))
    assert _positions(15, [second, first]) == [11, 12, 13, 14]
    assert _positions(23, [first, second]) == [21, 19, 22]


def test_a_summary_the_log_keeps_outside_the_messages_has_no_position_and_the_items_say_so():
    fold = FoldSpan("c", position=5, summary_position=None)
    plan = window.plan(8, [fold])
    assert plan.summary_position is None and plan.fold_index == 0 and plan.positions(list(range(10))) == [6, 7]
    assert window.summary_item("")["note"] == window.MISSING_SUMMARY_NOTE
    assert "encrypted" in window.summary_item("", encrypted=True)["note"]


def test_message_items_follow_the_blocks_and_a_summary_message_is_a_summary():
    blocks = [
        {"kind": "text", "text": "hi"},
        {"kind": "tool_call", "tool_id": "t1", "tool_name": "Read", "tool_input": {"file_path": "a"}},
        {"kind": "tool_result", "tool_id": "t1", "text": "body"},
        {"kind": "weird", "text": "?"},
    ]
    items = window.message_items("assistant", blocks)
    assert [(i["role"], i["kind"], i["tool_id"]) for i in items] == [
        ("assistant", "text", None), ("assistant", "tool_call", "t1"), ("tool", "tool_result", "t1"), ("assistant", "other", None)]
    assert items[1]["text"] == '{"file_path": "a"}'
    (summary,) = window.message_items("user", [{"kind": "text", "text": "the summary"}], summary=True)
    assert summary["kind"] == "summary" and summary["text"] == "the summary"
    (encrypted,) = window.message_items("user", [{"kind": "other", "raw_type": window.ENCRYPTED}], summary=True)
    assert encrypted["kind"] == "summary" and "encrypted" in encrypted["note"]
    assert window.sent("user", {}) and not window.sent("system", {}) and not window.sent("user", {"queued": True})


def test_preserved_messages_listed_by_the_log_keep_its_order_and_a_listed_summary_goes_where_listed():
    # Codex 0.171: replacement_history = [prompt-1 (3), env (2), prompt-2 (7), encrypted summary (12)],
    # while the file holds env before prompt-1.
    fold = FoldSpan("r", position=11, summary_position=12, preserved_positions=(2, 3, 7))
    plan = window.plan(14, [fold])
    assert plan.positions(list(range(20))) == [12, 2, 3, 7, 13]
    assert plan.listed([3, 2, 7], summary_last=True).positions(list(range(20))) == [3, 2, 7, 12, 13]
    assert plan.listed([3, 2, 7]).positions(list(range(20))) == [12, 3, 2, 7, 13]
    assert window.plan(5, [fold]).listed([3, 2]).positions(list(range(20))) == [0, 1, 2, 3, 4]
    # Gemini CLI lists the summary among what it kept: [context (2), summary (12), "Got it" (3), kept (7)].
    assert plan.listed([2, 12, 3, 7]).positions(list(range(20))) == [2, 12, 3, 7, 13]


# --- the log's own record of each request (Claude Code 2.1.3xx: flags.request) --------------------


def test_each_request_keeps_entries_of_the_one_before_and_adds_its_tail():
    a, b, c = {"hash": "a", "uuids": ["u1"]}, {"hash": "b", "role": "system", "content": "Today's date is X."}, {"hash": "c"}
    requests = [{"keep": 0, "tail": [a]}, None, {"keep": 1, "tail": [b]}, {"keep": 2, "tail": [c]}]
    assert window.sent_entries(requests) == [a, b, c]
    assert window.sent_entries(requests[:3]) == [a, b]
    assert window.sent_entries(requests[:2]) is None  # the last call has no request: positions tell
    assert window.sent_entries([{"keep": 3, "tail": [a]}]) is None  # keeps what no request gave


def test_request_entries_become_items_and_a_sent_summary_is_the_summary():
    summary = "This session is being continued from a previous conversation. " * 5
    entries = [
        {"hash": "s", "role": "user", "content": [{"type": "text", "text": summary + "\n<system-reminder>x</system-reminder>"}]},
        {"hash": "t", "uuids": ["u1", "u2"]},
        {"hash": "r", "role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}]}]},
        {"hash": "h"},
    ]
    messages = {"u1": ("assistant", [{"kind": "text", "text": "reading"}], False),
                "u2": ("assistant", [{"kind": "tool_call", "tool_id": "t1", "tool_name": "Read", "tool_input": {}}], False)}
    items = window.request_items(entries, messages, [summary])
    assert [(i["role"], i["kind"], i["tool_id"]) for i in items] == [
        ("user", "summary", None), ("assistant", "text", None), ("assistant", "tool_call", "t1"), ("tool", "tool_result", "t1"),
        ("user", "other", None)]
    assert items[-1]["note"] == window.HASH_ONLY_NOTE
