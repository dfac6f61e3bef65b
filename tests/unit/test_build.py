"""Builds from selected turns and folds' summaries: validation, mutual exclusion, structure."""

import pytest

from contextviewer.core import build
from contextviewer.core.build import BuildError, TurnSpan


def _msg(role, *blocks, **extra):
    return {"role": role, "blocks": list(blocks), **extra}


def text(t):
    return {"kind": "text", "text": t}


def call(i, name="Bash"):
    return {"kind": "tool_call", "tool_id": i, "tool_name": name, "tool_input": {"command": "ls"}}


def result(i, t="ok"):
    return {"kind": "tool_result", "tool_id": i, "text": t}


# A conversation of 6 turns (positions 0..17, three messages a turn); fold 1 put away turns 0-1
# (positions 0..5) and its summary opens turn 2 at position 6; fold 2 put away turns 2-3.
SPANS = [TurnSpan(t, 3 * t, 3 * t + 2) for t in range(6)]
FOLDS = build.make_folds(
    [
        {"position": 5, "summary_text": "first summary", "summary_position": 6},
        {"position": 11, "summary_text": "second summary", "summary_position": 12},
    ]
)


def test_numbers_are_read_from_lists_and_ranges():
    assert build.parse_numbers("3,7-9, 1") == [1, 3, 7, 8, 9]
    assert build.parse_numbers([2, "4", 2]) == [2, 4]
    with pytest.raises(BuildError, match="runs backwards"):
        build.parse_numbers("9-7")
    with pytest.raises(BuildError, match="3,7-9"):
        build.parse_numbers("three")


def test_a_folds_summary_excludes_the_turns_it_put_away_and_the_turn_it_opens():
    assert build.exclusions(SPANS, FOLDS) == {1: [0, 1, 2], 2: [2, 3, 4]}


def test_a_selection_with_both_a_summary_and_its_turns_is_refused_with_reasons():
    with pytest.raises(BuildError) as err:
        build.validate("0,5", "1", SPANS, FOLDS)
    assert "fold 1 put turn 0 away" in str(err.value)
    with pytest.raises(BuildError, match="turn 4 opens with fold 2's summary"):
        build.validate([4], [2], SPANS, FOLDS)


def test_unknown_and_empty_selections_say_what_exists():
    with pytest.raises(BuildError, match="No turn 9 .*turns 0–5"):
        build.validate("9", "", SPANS, FOLDS)
    with pytest.raises(BuildError, match="No fold 3 .*folds 1–2"):
        build.validate("", "3", SPANS, FOLDS)
    with pytest.raises(BuildError, match="at least one"):
        build.validate("", "", SPANS, FOLDS)


def test_the_plan_keeps_conversation_order_with_each_summary_where_its_fold_was():
    plan = build.validate("5,3", "1", SPANS, FOLDS)
    assert plan.items == [("fold", 1), ("turn", 3), ("turn", 5)]


def test_preserved_messages_were_not_put_away():
    folds = build.make_folds([{"position": 5, "summary_text": "s", "preserved": [3, 4, 5]}])
    assert build.exclusions(SPANS, folds) == {1: [0]}


def test_assemble_drops_dangling_tool_pairs_and_says_so():
    turns = {
        0: [_msg("user", text("go")), _msg("assistant", text("running"), call("toolu_a")), _msg("tool", result("toolu_a"))],
        # Turn 1's call gets its result in turn 2, which is not selected; turn 3's result answers turn 2.
        1: [_msg("user", text("next")), _msg("assistant", call("toolu_b"))],
        3: [_msg("user", text("later")), _msg("tool", result("toolu_c")), _msg("system", text("Conversation compacted"), subtype="compact_boundary")],
    }
    plan = build.Plan(turns=[0, 1, 3], folds=[1], items=[("fold", 1), ("turn", 0), ("turn", 1), ("turn", 3)])
    folds = build.make_folds([{"position": -1, "summary_text": "earlier work"}])
    out = build.assemble(plan, turns, folds)
    assert build.check_structure(out.messages) == []
    kinds = [(m["role"], [b["kind"] for b in m["blocks"]]) for m in out.messages]
    assert kinds == [
        ("user", ["text"]),  # the summary
        ("user", ["text"]), ("assistant", ["text", "tool_call"]), ("tool", ["tool_result"]),
        ("user", ["text"]),  # turn 1's assistant message held only the dangling call: dropped
        ("user", ["text"]),
    ]
    assert out.messages[0]["is_compact_summary"] and out.messages[0]["blocks"][0]["text"] == "earlier work"
    assert [m["turn"] for m in out.messages] == [0, 1, 1, 1, 2, 3]
    assert [m["position"] for m in out.messages] == list(range(6))
    notes = " ".join(out.notes)
    assert "1 tool call without a result" in notes and "1 tool result without a call" in notes
    assert "fold marker" in notes
    # The inputs were not changed.
    assert turns[1][1]["blocks"] == [call("toolu_b")]


from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def tool_transcripts(draw):
    """Messages with tool calls and results in any order, some unanswered, some answering nothing."""
    ids = [f"toolu_{i}" for i in range(draw(st.integers(0, 6)))]
    messages = []
    for _ in range(draw(st.integers(0, 14))):
        role = draw(st.sampled_from(["user", "assistant", "tool"]))
        blocks = []
        for _ in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(["text", "tool_call", "tool_result"]))
            if kind == "text":
                blocks.append(text("t"))
            elif ids:
                tid = draw(st.sampled_from(ids))
                blocks.append(call(tid) if kind == "tool_call" else result(tid))
        messages.append(_msg(role, *blocks))
    return messages


@settings(max_examples=300, deadline=None)
@given(tool_transcripts())
def test_repair_always_leaves_every_call_answered_and_every_result_called(messages):
    repaired, notes = build.repair_tool_pairs(messages)
    renumbered = [dict(m, position=i) for i, m in enumerate(repaired)]
    assert build.check_structure(renumbered) == []
    # Only tool blocks go, and only when something was wrong (then the notes say so).
    before = [b for m in messages for b in m["blocks"] if b["kind"] == "text"]
    after = [b for m in repaired for b in m["blocks"] if b["kind"] == "text"]
    assert before == after
    if build.check_structure([dict(m, position=i) for i, m in enumerate(messages)]) == []:
        assert repaired == messages and notes == []
    else:
        assert notes


# --- "a fold's summary plus what followed it", and summaries held by selected turns ------------


def test_a_turn_holding_a_summary_excludes_the_turns_that_summary_stands_for():
    # Turn 2 opens with fold 1's summary (a message of the log); turns 0-1 are what it stands for.
    with pytest.raises(BuildError) as err:
        build.validate("1-2", "", SPANS, FOLDS)
    assert "turn 2 holds fold 1's summary, and fold 1 put turn 1 away" in str(err.value)
    assert "Select either the summary or those turns" in str(err.value)
    # Turns that no selected summary stands for go together as before.
    assert build.validate("2,3", "", SPANS, FOLDS).turns == [2, 3]
    assert build.validate("0,1", "", SPANS, FOLDS).turns == [0, 1]


def test_after_fold_takes_the_turn_the_summary_opens_and_what_followed_up_to_the_next_fold():
    # Fold 1's summary opens turn 2; fold 2 (position 11) put turns 2-3 away and opens turn 4.
    assert build.after_fold(1, SPANS, FOLDS) == ([2, 3], [])
    # The latest fold: its summary's turn and everything after it (the loaded view).
    assert build.after_fold(2, SPANS, FOLDS) == ([4, 5], [])
    plan = build.validate(*build.after_fold(1, SPANS, FOLDS), SPANS, FOLDS)
    assert plan.items == [("turn", 2), ("turn", 3)]


def test_after_fold_without_a_summary_message_writes_the_summary_then_the_turns_after_it():
    folds = build.make_folds([{"position": 5, "summary_text": "handoff summary"}])
    turns, numbers = build.after_fold(1, SPANS, folds)
    assert (turns, numbers) == ([2, 3, 4, 5], [1])
    plan = build.validate(turns, numbers, SPANS, folds)
    assert plan.items[0] == ("fold", 1)


def test_after_fold_names_what_exists_when_the_number_is_wrong():
    with pytest.raises(BuildError, match="No fold 3 .*folds 1–2"):
        build.after_fold(3, SPANS, FOLDS)
    empty = build.make_folds([{"position": 5, "summary_text": ""}])
    with pytest.raises(BuildError, match="no summary"):
        build.after_fold(1, SPANS, empty)
