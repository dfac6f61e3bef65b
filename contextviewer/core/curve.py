"""The curve of a conversation: context size per model call, measured and estimated.

Pure and streaming: the ingest service feeds (position, token_total) pairs in position order on
every import; the pages feed the stored calls back in to draw the curve, its severity bands, the
drops at folds, the velocity (tokens per turn) and where a fold policy would have fired.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .segments import FoldSpan
from .severity import CRITICAL_AT, fraction as _fraction, severity as _severity

MEASURED = "measured"
ESTIMATED = "estimated"

# A point lower than this share of the previous one is a drop (a fold), not noise.
DROP_RATIO = 0.90


def estimated_contexts(
    messages: Iterable[tuple[int, int]],
    calls: Iterable[int],
    folds: Sequence[FoldSpan],
) -> list[int]:
    """For each model call position, in sorted order: the estimated tokens of the visible messages
    in that call's input.

    The visible messages of a call at position c are those with position < c in the loaded view at
    that moment: when folds have positions < c, the latest such fold (position p) drops every
    message <= p except its preserved positions; its summary message (after p) counts as it
    appears. `messages` must come sorted by position and is read once (a generator is fine); the
    work is O(messages + calls + folds + preserved positions).
    """
    call_positions = sorted(calls)
    ordered_folds = sorted(folds, key=lambda f: f.position)
    wanted = {p for f in ordered_folds for p in f.preserved_positions if p <= f.position}
    captured: dict[int, int] = {}  # token totals of positions some fold preserves

    results: list[int] = []
    base = 0  # preserved messages of the fold in effect
    running = 0  # messages after the fold in effect, consumed so far
    fold_i = 0
    pending: tuple[int, int] | None = None
    stream = iter(messages)

    def apply_folds_before(position: int) -> None:
        """Apply every fold that takes effect before `position` (fold.position < position)."""
        nonlocal fold_i, base, running
        while fold_i < len(ordered_folds) and ordered_folds[fold_i].position < position:
            fold = ordered_folds[fold_i]
            base = sum(captured.get(p, 0) for p in set(fold.preserved_positions) if p <= fold.position)
            base += fold.summary_tokens
            running = 0
            fold_i += 1

    for call in call_positions:
        while True:
            if pending is None:
                pending = next(stream, None)
                if pending is None:
                    break
            position, total = pending
            if position >= call:
                break
            apply_folds_before(position)
            running += total
            if position in wanted:
                captured[position] = captured.get(position, 0) + total
            pending = None
        apply_folds_before(call)
        results.append(base + running)
    return results


@dataclass(frozen=True, slots=True)
class Point:
    position: int
    turn: int | None
    model: str | None
    measured: int | None
    estimated: int | None
    used: int  # measured when known, else estimated
    source: str  # "measured" | "estimated"
    window: int | None
    fraction: float
    severity: str


def curve_points(calls: Iterable[Mapping], window: int | None) -> list[Point]:
    """Points from call dicts with keys position, measured (or None), estimated, model, and
    optionally turn and window (a per-call window overrides `window`, e.g. after a model change)."""
    points = []
    for call in sorted(calls, key=lambda c: c["position"]):
        measured = call.get("measured")
        estimated = call.get("estimated")
        used = measured if measured is not None else (estimated or 0)
        call_window = call.get("window") or window
        points.append(
            Point(
                position=call["position"],
                turn=call.get("turn"),
                model=call.get("model"),
                measured=measured,
                estimated=estimated,
                used=used,
                source=MEASURED if measured is not None else ESTIMATED,
                window=call_window,
                fraction=_fraction(used, call_window),
                severity=_severity(used, call_window),
            )
        )
    return points


def drops(points: Sequence[Point]) -> list[int]:
    """Indexes of points that fell below DROP_RATIO of the previous point (folds, as seen)."""
    return [i for i in range(1, len(points)) if points[i].used < points[i - 1].used * DROP_RATIO]


def velocity(points: Sequence[Point], *, last_turns: int | None = None) -> float | None:
    """Growth in tokens per turn since the latest drop: (last - first) / turns between them,
    using the last point of each turn (the call index stands in for the turn when turns are
    unknown). `last_turns` limits the span to the most recent turns. None with fewer than two turns.
    """
    if not points:
        return None
    cut = drops(points)
    run = points[cut[-1] :] if cut else points
    per_turn: dict[int, int] = {}
    for i, point in enumerate(run):
        per_turn[point.turn if point.turn is not None else i] = point.used
    turns = sorted(per_turn)
    if last_turns is not None and last_turns > 0:
        turns = turns[-(last_turns + 1) :]
    if len(turns) < 2 or turns[-1] == turns[0]:
        return None
    return (per_turn[turns[-1]] - per_turn[turns[0]]) / (turns[-1] - turns[0])


def turns_until_critical(
    points: Sequence[Point], window: int | None = None, *, last_turns: int | None = None
) -> int | None:
    """Turns left before the latest point's context reaches the critical level, at the current
    velocity; 0 when already critical; None when unknown (no window, no growth)."""
    if not points:
        return None
    last = points[-1]
    window = window or last.window
    if not window:
        return None
    remaining = CRITICAL_AT * window - last.used
    if remaining <= 0:
        return 0
    speed = velocity(points, last_turns=last_turns)
    if speed is None or speed <= 0:
        return None
    return math.ceil(remaining / speed)


def fold_preview(points: Sequence[Point], threshold_fraction: float, window: int | None = None) -> list[int]:
    """Indexes of the points where an automatic fold at `threshold_fraction` of the window would
    have fired, replaying the recorded calls unchanged (open loop): the first point at or above the
    threshold fires; the policy re-arms once the recorded curve is back below it (a real fold)."""
    fired = []
    armed = True
    for i, point in enumerate(points):
        w = window or point.window
        if not w:
            continue
        above = point.used >= threshold_fraction * w
        if above and armed:
            fired.append(i)
            armed = False
        elif not above:
            armed = True
    return fired
