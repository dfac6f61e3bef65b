"""The curve's growth (issue 36, item 5): per turn over the last turns when the run since the
latest fold holds two turns or more; per model call over the last calls where it does not (a
segment that is one long turn still grows call by call), and the turns or calls left to 90 %."""

from contextviewer.core.curve import CALL, TURN, curve_points, growth, left_until_critical, velocity


def _points(values, turns=None, window=100_000):
    return curve_points(
        [
            {"position": i, "measured": v, "estimated": None, "model": "m", **({"turn": turns[i]} if turns else {})}
            for i, v in enumerate(values)
        ],
        window,
    )


def test_per_turn_over_the_last_turns_with_the_last_call_of_each():
    points = _points([10_000, 12_000, 20_000, 30_000, 34_000, 40_000], turns=[0, 0, 1, 2, 3, 3])
    g = growth(points, last_turns=5)
    assert (g.per, g.span, g.turns, g.since_drop) == (TURN, 3, 4, False)
    assert g.rate == 28_000 / 3  # the end of turn 0 (12k) to the end of turn 3 (40k)
    one = growth(points, last_turns=1)
    assert (one.rate, one.span) == (10_000, 1)  # the end of turn 2 (30k) to the end of turn 3 (40k)
    assert left_until_critical(points, g.rate) == 6  # (90k - 40k) / 9.3k = 5.4


def test_one_long_turn_after_a_fold_grows_per_call():
    """Turns 0-2 reach 150k, a fold drops the context to 51k, then turn 3 is one long turn of 18
    calls, 51k to 68k (+1k a call): per turn there is nothing (one turn), per call +1k over the
    last 10 calls; 90 % of 100k is 90k, 22k away: 22 calls."""
    before = [50_000, 100_000, 150_000]
    after = [51_000 + 1_000 * k for k in range(18)]
    points = _points(before + after, turns=[0, 1, 2] + [3] * 18)
    assert velocity(points) is None  # what the page said: "not growing"
    g = growth(points, last_turns=5, last_calls=10)
    assert (g.per, g.span, g.turns, g.since_drop, g.rate) == (CALL, 10, 1, True, 1_000)
    assert left_until_critical(points, g.rate) == 22
    assert growth(points, last_calls=40).span == 17  # at most the calls since the fold


def test_without_turns_per_call_and_too_little_to_measure():
    g = growth(_points([10_000, 12_000, 15_000]))
    assert (g.per, g.span, g.turns, g.rate) == (CALL, 2, 0, 2_500)
    assert growth(_points([10_000])) is None
    assert growth(_points([80_000, 20_000], turns=[0, 1])) is None  # one call since the drop
    assert growth([]) is None


def test_what_is_left_to_90_percent():
    points = _points([50_000, 95_000], turns=[0, 0])
    assert left_until_critical(points, growth(points).rate) == 0  # there already
    flat = _points([40_000, 40_000, 39_000], turns=[0, 0, 0])
    assert left_until_critical(flat, growth(flat).rate) is None  # not growing
    assert left_until_critical(_points([40_000, 50_000], window=None), 10_000) is None
    assert left_until_critical([], 10_000) is None
