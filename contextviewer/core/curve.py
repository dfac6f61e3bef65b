"""The curve of a conversation: context size per model call, measured and estimated.

Pure and streaming: the ingest service feeds (position, token_total) pairs in position order on
every import; the pages feed the stored calls back in to draw the curve, its severity bands, the
drops at folds, the growth (tokens per turn, or per call within one long turn) and where a fold policy would have fired; and the
chart's geometry (SVG coordinates, the severity bands, the axis ticks, which points to draw).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .segments import FoldSpan
from .severity import CRITICAL, CRITICAL_AT, WARN, WARN_AT, fraction as _fraction, severity as _severity

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
    return left_until_critical(points, velocity(points, last_turns=last_turns), window)


def left_until_critical(points: Sequence[Point], rate: float | None, window: int | None = None) -> int | None:
    """Steps (turns or calls: the unit of `rate`, tokens per step) left before the latest point's
    context reaches the critical level; 0 when already critical; None when unknown (no window, no
    growth)."""
    if not points:
        return None
    last = points[-1]
    window = window or last.window
    if not window:
        return None
    remaining = CRITICAL_AT * window - last.used
    if remaining <= 0:
        return 0
    if rate is None or rate <= 0:
        return None
    return math.ceil(remaining / rate)


TURN, CALL = "turn", "call"


@dataclass(frozen=True, slots=True)
class Growth:
    """How fast the context grows since the latest drop: `rate` tokens per `per` (turn or call),
    measured over the last `span` turns or calls. `turns`: the turns with a model call since the
    drop (per call when fewer than two, or when the log has no turns: `turns` is then 0);
    `since_drop`: whether a drop (a fold) starts the run."""

    rate: float
    per: str  # TURN | CALL
    span: int
    turns: int
    since_drop: bool


def growth(points: Sequence[Point], *, last_turns: int = 5, last_calls: int = 10) -> Growth | None:
    """The growth since the latest drop: per turn over the last `last_turns` turns (the last point
    of each turn, as `velocity`) when the run holds two turns or more; else per model call over the
    last `last_calls` calls (a run that is one long turn still grows call by call). None with fewer
    than two calls since the drop."""
    if not points:
        return None
    cut = drops(points)
    run = points[cut[-1] :] if cut else points
    per_turn: dict[int, int] = {p.turn: p.used for p in run if p.turn is not None}
    turned = all(p.turn is not None for p in run)
    turns = sorted(per_turn) if turned else []
    if len(turns) >= 2:
        turns = turns[-(last_turns + 1) :]
        span = turns[-1] - turns[0]
        return Growth((per_turn[turns[-1]] - per_turn[turns[0]]) / span, TURN, span, len(per_turn), bool(cut))
    if len(run) < 2:
        return None
    span = min(last_calls, len(run) - 1)
    return Growth((run[-1].used - run[-1 - span].used) / span, CALL, span, len(turns), bool(cut))


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


# --- the chart: SVG geometry ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frame:
    """The chart's coordinates: `n` calls spread over `width`, tokens 0..`ymax` over `height`
    (SVG: y grows downwards)."""

    width: int
    height: int
    ymax: int
    n: int

    def y(self, value: float) -> float:
        return round(self.height - self.height * min(value, self.ymax) / self.ymax, 1)

    def x(self, i: int) -> float:
        if self.n == 1:  # one call: its point (drawn as a dot, a path through one point draws nothing) mid-chart
            return round(self.width / 2, 1)
        return round(self.width * i / (self.n - 1), 1)


def severity_bands(frame: Frame, window: int | None) -> list[tuple[str, float, float]]:
    """(severity, y, height) of the warn and critical bands of a window, at the thresholds of
    core.severity; none when the window is unknown."""
    if not window:
        return []
    warn, critical = frame.y(window * WARN_AT), frame.y(window * CRITICAL_AT)
    return [(WARN, critical, warn - critical), (CRITICAL, frame.y(window), critical - frame.y(window))]


def svg_path(points: Iterable[tuple[float, float | None]]) -> str:
    """An SVG path through the points; a point without y lifts the pen."""
    parts = []
    pen = False
    for x, y in points:
        if y is None:
            pen = False
            continue
        parts.append(f"{'L' if pen else 'M'}{x} {y}")
        pen = True
    return " ".join(parts)


def ticks(ymax: int) -> list[int]:
    """Three to six round values up to `ymax` for the y axis (0 left out)."""
    step = 10 ** max(0, int(math.log10(max(ymax, 1))))
    while ymax / step < 3:
        step //= 2 if step > 1 else 1
        if step <= 1:
            break
    while ymax / step > 6:
        step *= 2
    return list(range(0, ymax + 1, max(step, 1)))[1:]


def tick_label(value: int) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 1000:
        return f"{value / 1000:.0f}k"
    return str(value)


def merge_marks(marks: list[dict], width: int, limit: int) -> list[dict]:
    """At most `limit` fold marks (dicts with x and after): marks closer than width / limit become
    one (its `count` says how many), so a conversation of hundreds of folds draws a bounded curve."""
    out: list[dict] = []
    step = width / limit
    for m in marks:
        if out and m["x"] - out[-1]["x"] < step:
            out[-1]["count"] = out[-1].get("count", 1) + 1
            out[-1]["after"] = m["after"]
            continue
        out.append(dict(m))
    return out


def downsample(values: list[int], positions: list[int], fold_positions: list[int], limit: int) -> list[int]:
    """Indices to draw: every point when few; else per bucket the maximum and the minimum, plus the
    last call before and the first call after each fold (so drops stay drops), plus both ends."""
    n = len(values)
    if n <= limit:
        return list(range(n))
    keep = {0, n - 1}
    for fp in fold_positions:
        i = bisect.bisect_right(positions, fp)
        if 0 < i < n:
            keep.update((i - 1, i))
    buckets = max(1, (limit - len(keep)) // 2)
    size = n / buckets
    for b in range(buckets):
        lo, hi = int(b * size), min(n, int((b + 1) * size))
        if lo >= hi:
            continue
        chunk = range(lo, hi)
        keep.add(max(chunk, key=values.__getitem__))
        keep.add(min(chunk, key=values.__getitem__))
    return sorted(keep)
