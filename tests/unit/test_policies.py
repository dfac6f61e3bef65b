from contextviewer.core.curve import curve_points
from contextviewer.core.policies import fire_points


def _points(values, window=100):
    return curve_points(
        [{"position": i * 10, "turn": i, "measured": v, "estimated": v, "model": "m"} for i, v in enumerate(values)], window
    )


def test_fires_at_the_first_call_over_the_threshold_and_folds_since_the_last_real_fold():
    # 50, 70, 86 (fire), 90, then a real fold (drop to 20), 40, 88 (fire again).
    fires = fire_points(_points([50, 70, 86, 90, 20, 40, 88]), 0.85)
    assert [f.index for f in fires] == [2, 6]
    first, second = fires
    assert (first.from_turn, first.to_turn, first.calls, first.used) == (0, 2, 3, 86)
    assert (second.from_turn, second.to_turn, second.calls) == (4, 6, 3)
    assert abs(second.fraction - 0.88) < 1e-9


def test_no_fire_below_the_threshold_and_a_lower_threshold_fires_earlier():
    points = _points([10, 30, 55, 62, 64])
    assert fire_points(points, 0.85) == []
    assert [f.index for f in fire_points(points, 0.5)] == [2]
    assert [f.index for f in fire_points(points, 0.6)] == [3]
