"""The context curve: estimated contexts per call, points, velocity, fold preview."""

import pytest

from contextviewer.core.curve import (
    Point,
    curve_points,
    drops,
    estimated_contexts,
    fold_preview,
    turns_until_critical,
    velocity,
)
from contextviewer.core.segments import FoldSpan

# positions 0..7; fold puts away 0..3 keeping 2; boundary at 4 (0 tokens), summary at 5
MESSAGES = [(0, 100), (1, 200), (2, 300), (3, 400), (4, 0), (5, 50), (6, 60), (7, 70)]
FOLD = FoldSpan("f", 3, summary_position=5, preserved_positions=(2,))


def test_no_folds_is_a_running_sum_of_earlier_messages():
    assert estimated_contexts(MESSAGES, [0, 1, 3, 8], []) == [0, 100, 600, 1180]


def test_fold_drops_archived_messages_but_keeps_preserved_and_summary():
    # call 1: {0}; call 3: {0,1,2}; call 6: {2 preserved, 4, 5}; call 8: + 6 + 7
    assert estimated_contexts(MESSAGES, [1, 3, 6, 8], [FOLD]) == [100, 600, 350, 480]


def test_calls_are_sorted_and_messages_may_be_a_generator():
    assert estimated_contexts(iter(MESSAGES), [8, 1, 6, 3], [FOLD]) == [100, 600, 350, 480]
    assert estimated_contexts((m for m in MESSAGES), [6, 6], [FOLD]) == [350, 350]


def test_call_right_after_the_fold():
    assert estimated_contexts(MESSAGES, [4], [FOLD]) == [300]  # only the preserved message


def test_fold_at_the_last_message():
    fold = FoldSpan("end", 7, summary_position=None)
    assert estimated_contexts(MESSAGES, [7, 8], [fold]) == [1110, 0]


def test_second_fold_replaces_the_first():
    second = FoldSpan("g", 6, summary_position=8, preserved_positions=(1, 5))
    messages = MESSAGES + [(8, 30), (9, 5)]
    # call 7: fold g in effect -> preserved 1 (200) + 5 (50); call 10: + 7 (70) + 8 (30) + 9 (5)
    assert estimated_contexts(messages, [7, 10], [second, FOLD]) == [250, 355]


def test_folds_beyond_the_calls_and_no_messages():
    late = FoldSpan("late", 50)
    assert estimated_contexts(MESSAGES, [3], [late]) == [600]
    assert estimated_contexts([], [0, 5], [FOLD]) == [0, 0]
    assert estimated_contexts(MESSAGES, [], [FOLD]) == []


def _points(values, window=100_000, turns=True):
    return curve_points(
        [
            {"position": i * 10, "measured": v, "estimated": None, "model": "m", **({"turn": i} if turns else {})}
            for i, v in enumerate(values)
        ],
        window,
    )


def test_curve_points_severity_and_source():
    points = curve_points(
        [
            {"position": 20, "measured": None, "estimated": 50_000, "model": "a"},
            {"position": 10, "measured": 150_000, "estimated": 140_000, "model": "a", "turn": 3},
            {"position": 30, "measured": 90_000, "estimated": 80_000, "model": "b", "window": 100_000},
        ],
        200_000,
    )
    assert [p.position for p in points] == [10, 20, 30]
    first, second, third = points
    assert isinstance(first, Point)
    assert (first.used, first.source, first.severity, first.turn) == (150_000, "measured", "warn", 3)
    assert first.fraction == pytest.approx(0.75)
    assert (second.used, second.source, second.severity) == (50_000, "estimated", "ok")
    assert (third.window, third.severity) == (100_000, "critical")


def test_curve_points_without_window():
    (point,) = curve_points([{"position": 1, "measured": 10, "estimated": 5, "model": None}], None)
    assert (point.fraction, point.severity) == (0.0, "ok")


def test_velocity_tokens_per_turn():
    assert velocity(_points([10_000, 20_000, 30_000, 40_000])) == 10_000
    assert velocity(_points([10_000, 20_000, 30_000, 40_000], turns=False)) == 10_000  # by call
    assert velocity(_points([10_000])) is None
    assert velocity([]) is None


def test_velocity_since_the_last_drop_and_last_turns():
    points = _points([10_000, 50_000, 100_000, 20_000, 30_000, 40_000])
    assert drops(points) == [3]
    assert velocity(points) == 10_000
    points = _points([0, 1_000, 2_000, 10_000, 20_000])
    assert velocity(points) == 5_000  # (20k - 0) / 4 turns
    assert velocity(points, last_turns=1) == 10_000


def test_velocity_uses_the_last_call_of_each_turn():
    points = curve_points(
        [
            {"position": 1, "measured": 10_000, "estimated": None, "model": None, "turn": 0},
            {"position": 2, "measured": 14_000, "estimated": None, "model": None, "turn": 0},
            {"position": 3, "measured": 24_000, "estimated": None, "model": None, "turn": 1},
        ],
        100_000,
    )
    assert velocity(points) == 10_000


def test_turns_until_critical():
    points = _points([10_000, 20_000, 30_000, 40_000])
    assert turns_until_critical(points) == 5  # (90k - 40k) / 10k
    assert turns_until_critical(points, 200_000) == 14  # (180k - 40k) / 10k
    assert turns_until_critical(_points([50_000, 95_000])) == 0
    assert turns_until_critical(_points([40_000, 40_000])) is None
    assert turns_until_critical(_points([40_000, 50_000], window=None)) is None
    assert turns_until_critical([]) is None


def test_fold_preview_fires_once_per_crossing():
    points = _points([10_000, 40_000, 55_000, 70_000, 20_000, 45_000, 60_000])
    assert fold_preview(points, 0.5) == [2, 6]
    assert fold_preview(points, 0.5, window=200_000) == []
    assert fold_preview(points, 0.10) == [0]  # 10k reaches 10 % exactly; never back below
    assert fold_preview(points, 0.15) == [1]
    assert fold_preview(_points([60_000], window=None), 0.5) == []


def test_a_summary_kept_outside_the_messages_counts_in_the_calls_after_its_fold():
    from contextviewer.core.curve import estimated_contexts
    from contextviewer.core.segments import FoldSpan

    messages = [(p, 100) for p in range(6)]
    fold = FoldSpan(key="checkpoint", position=2, summary_position=None, summary_tokens=40)
    # call at 2 sees 0..1; call at 5 sees the summary (40) + positions 3..4
    assert estimated_contexts(messages, [2, 5], [fold]) == [200, 240]
