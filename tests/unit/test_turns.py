"""Turns: starts, assignment, safe cut points."""

from contextviewer.core.turns import assign_turns, safe_cut_points, starts_turn

TEXT = [{"kind": "text", "text": "do it"}]
IMAGE = [{"kind": "image", "data_size": 10}]


def call(tool_id):
    return [{"kind": "tool_call", "tool_id": tool_id, "tool_name": "Bash"}]


def result(tool_id):
    return [{"kind": "tool_result", "tool_id": tool_id, "text": "ok"}]


def test_starts_turn():
    assert starts_turn("user", TEXT)
    assert starts_turn("user", IMAGE)
    assert not starts_turn("user", result("t1"))
    assert not starts_turn("user", TEXT + result("t1"))
    assert not starts_turn("user", TEXT, is_meta=True)
    assert starts_turn("user", TEXT, is_meta=True, is_compact_summary=True)
    assert not starts_turn("assistant", TEXT)
    assert not starts_turn("system", TEXT)


def test_assign_turns_fresh_conversation():
    messages = [
        ("user", TEXT),
        ("assistant", call("t1")),
        ("user", result("t1")),
        ("assistant", TEXT),
        ("user", TEXT),
        ("assistant", TEXT),
    ]
    assert list(assign_turns(messages)) == [0, 0, 0, 0, 1, 1]


def test_preamble_joins_the_first_turn():
    messages = [("system", TEXT), ("user", TEXT, True), ("user", TEXT), ("assistant", TEXT), ("user", TEXT)]
    assert list(assign_turns(messages)) == [0, 0, 0, 0, 1]


def test_start_turn_and_continuing():
    grown = [("assistant", TEXT), ("user", TEXT), ("assistant", TEXT)]
    assert list(assign_turns(grown, start_turn=4, continuing=True)) == [4, 5, 5]
    assert list(assign_turns(grown, start_turn=4)) == [4, 4, 4]
    assert list(assign_turns([("user", TEXT), ("user", TEXT)], start_turn=4)) == [4, 5]
    assert list(assign_turns([("user", TEXT)], start_turn=4, continuing=True)) == [5]


def test_compact_summary_starts_a_turn():
    messages = [("user", TEXT), ("assistant", TEXT), ("system", []), ("user", TEXT, True, True), ("assistant", TEXT)]
    assert list(assign_turns(messages)) == [0, 0, 0, 1, 1]


def test_assign_turns_is_lazy():
    def endless():
        while True:
            yield ("user", TEXT)

    turns = assign_turns(endless())
    assert [next(turns) for _ in range(3)] == [0, 1, 2]
    assert list(assign_turns([])) == []


def test_safe_cut_points_never_split_a_call_from_its_result():
    messages = [
        ("user", TEXT),  # 0 safe
        ("assistant", call("t1")),
        ("user", result("t1")),
        ("assistant", TEXT),
        ("user", TEXT),  # 4 safe: t1 answered at 2
        ("assistant", call("t2")),
        ("user", TEXT),  # 6 starts a turn, but t2's result comes at 7
        ("user", result("t2")),
        ("user", TEXT),  # 8 safe
    ]
    assert safe_cut_points(messages) == [0, 4, 8]


def test_a_call_without_result_blocks_nothing():
    messages = [("user", TEXT), ("assistant", call("t9")), ("user", TEXT)]
    assert safe_cut_points(messages) == [0, 2]
    assert safe_cut_points([]) == []
    assert safe_cut_points([("assistant", TEXT)]) == []
