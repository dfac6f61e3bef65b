"""The curve of the conversation page: context size per model call, measured and estimated, with
the folds as drops, the severity bands and the harness's auto-fold line, as SVG coordinates.

The calls come from the one loader (segments.call_points); the geometry is core.curve's.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from django.template.defaultfilters import pluralize

from contextviewer.core import curve as core_curve
from contextviewer.display.templatetags.cv import tok
from contextviewer.importers import formats

from contextviewer.conversations import segments as loader
from contextviewer.conversations.models import Conversation, Fold

FOLD_MARKS = 60  # fold marks drawn on the curve, at most (close ones merge)
CURVE_POINTS = 400  # points drawn on the curve, at most


@dataclass
class CurvePoint:
    x: float
    y_measured: float | None
    y_estimated: float | None
    position: int
    turn: int | None
    measured: int
    estimated: int
    severity: str
    call: int = 0  # 1-based number of the call (as `manage.py window --call` takes it)


@dataclass
class CurveView:
    width: int
    height: int
    points: list[CurvePoint]
    measured_path: str
    estimated_path: str
    bands: list[tuple[str, float, float]]  # (severity, y, height)
    folds: list[dict]
    ymax: int
    window: int | None
    total_calls: int
    data: str  # compact figures for app.js hover: x,position,turn,measured,estimated,call;...
    ticks: list[tuple[float, str]]
    thresholds: list[tuple[str, int, float]] = field(default_factory=list)  # the harness's auto-fold: (label, tokens, y)
    x_labels: list[tuple[float, str]] = field(default_factory=list)  # (x, "turn N" / "call N") under the axis
    growth: core_curve.Growth | None = None  # per turn, or per call where turns are too few (core.curve.growth)
    left: int | None = None  # turns or calls (growth.per) until CRITICAL_AT of the window; 0: there already
    critical_pct: int = int(core_curve.CRITICAL_AT * 100)
    estimate_share: float | None = None  # median estimated / measured over the calls that have both

    # The legend under the curve (conversation.html#curve-card).
    @property
    def estimate_note(self) -> str:
        """What the estimated line counts, and how it compares with the measured one."""
        share = f"; here about {round(self.estimate_share * 100)} % of the measured" if self.estimate_share is not None else ""
        return (
            "(the stored messages each call carried, counted with o200k: no system prompt or tool definitions, "
            f"another tokenizer{share})"
        )

    @property
    def growth_text(self) -> str:
        """"+1.8k tokens per turn" or "+1.7k tokens per call"."""
        g = self.growth
        return f"{'+' if g.rate >= 0 else ''}{tok(g.rate)} tokens per {g.per}" if g else ""

    @property
    def growth_note(self) -> str:
        """Over what the growth is measured, and why per call when it is: "(last 5 turns)", "(last
        10 calls; fewer than two turns since the last fold)"; without a growth, why."""
        g = self.growth
        since = "since the last fold" if (g.since_drop if g else self.folds) else "so far"
        if g is None:
            return f"growth: one model call {since}, nothing to measure yet"
        over = f"last {g.span} {g.per}{pluralize(g.span)}"
        if g.per == core_curve.TURN:
            return f"({over})"
        why = "the log has no turns" if not g.turns else f"fewer than two turns {since}"
        return f"({over}; {why})"

    @property
    def left_text(self) -> str:
        """"about 34 turns until 90 % of the window" (or calls); without a count, why."""
        if self.left is not None:
            unit = f"{self.growth.per}{pluralize(self.left)}"
            return f"about {self.left} {unit} until {self.critical_pct} % of the window"
        if not self.window:
            return f"window unknown: no count to {self.critical_pct} %"
        if self.growth is None:
            return f"no count to {self.critical_pct} % yet"
        return f"not growing: no {self.growth.per} count to {self.critical_pct} %"

    @property
    def calls_note(self) -> str:
        """The calls in the curve, and how many of them are drawn when not all are."""
        drawn = f" ({len(self.points)} drawn: maxima, minima and folds kept)" if len(self.points) < self.total_calls else ""
        return f"{self.total_calls} call{pluralize(self.total_calls)}{drawn}"


VELOCITY_TURNS = 5
VELOCITY_CALLS = 10  # calls the growth is measured over where turns are too few
X_LABELS = 6  # labels under the x-axis, at most


def _x_labels(points: list[CurvePoint], frame) -> list[tuple[float, str]]:
    """At most X_LABELS labels under the axis, evenly spread (the first and the last call among
    them): the turn of the call there, or the call's number where the log has no turns."""
    if not points:
        return []
    xs = [p.x for p in points]
    chosen: list[int] = []
    for k in range(X_LABELS):
        target = frame.width * k / (X_LABELS - 1)
        i = min(bisect.bisect_left(xs, target), len(xs) - 1)
        if i > 0 and abs(xs[i - 1] - target) <= abs(xs[i] - target):
            i -= 1
        if i not in chosen:
            chosen.append(i)
    out: list[tuple[float, str]] = []
    for i in chosen:
        p = points[i]
        call = round(p.x / frame.width * max(frame.n - 1, 1)) + 1 if frame.n > 1 else 1
        label = f"turn {p.turn}" if p.turn is not None else f"call {call}"
        if not out or out[-1][1] != label:
            out.append((p.x, label))
    return out


def _estimate_share(calls) -> float | None:
    shares = sorted(c.estimated / c.measured for c in calls if c.measured and c.estimated)
    return shares[len(shares) // 2] if shares else None


def curve_view(conv: Conversation, spec, folds: list[Fold]) -> CurveView | None:
    calls = loader.call_points(conv)
    if not calls:
        return None
    window = calls[-1].window
    fold_positions = sorted(f.position for f in folds)
    measured_values = [c.measured or 0 for c in calls]
    keep = core_curve.downsample(measured_values, [c.position for c in calls], fold_positions, CURVE_POINTS)
    peak = max(max(measured_values), max(c.estimated or 0 for c in calls))
    frame = core_curve.Frame(width=1000, height=250, ymax=max(window or 0, peak, 1), n=len(calls))
    y = frame.y

    points = []
    for i in keep:
        call = calls[i]
        measured, est = call.measured or 0, call.estimated or 0
        points.append(
            CurvePoint(
                x=frame.x(i),
                y_measured=y(measured) if measured else None,
                y_estimated=y(est) if est else None,
                position=call.position,
                turn=call.turn,
                measured=measured,
                estimated=est,
                severity=call.severity,
                call=i + 1,
            )
        )
    measured_path = core_curve.svg_path([(p.x, p.y_measured) for p in points])
    estimated_path = core_curve.svg_path([(p.x, p.y_estimated) for p in points])
    bands = core_curve.severity_bands(frame, window)
    call_positions = [c.position for c in calls]
    fold_marks = []
    for f in folds:
        i = bisect.bisect_right(call_positions, f.position)
        fold_marks.append(
            {
                "x": frame.x(min(i, frame.n - 1)),
                "trigger": f.trigger or f.kind,
                "before": f.tokens_before,
                "after": f.tokens_after,
                "position": f.position,
            }
        )
    if len(fold_marks) > FOLD_MARKS:
        fold_marks = core_curve.merge_marks(fold_marks, frame.width, FOLD_MARKS)
    data = ";".join(f"{p.x},{p.position},{'' if p.turn is None else p.turn},{p.measured},{p.estimated},{p.call}" for p in points)
    ticks = [(y(v), core_curve.tick_label(v)) for v in core_curve.ticks(frame.ymax)]
    last_spec = loader.call_spec(conv, calls[-1].model)
    line = formats.harness(conv.agent, last_spec).fold_line(last_spec)
    thresholds = [(line[0], line[1], y(line[1]))] if line else []
    return CurveView(
        frame.width, frame.height, points, measured_path, estimated_path, bands, fold_marks, frame.ymax, window,
        frame.n, data, ticks, thresholds, x_labels=_x_labels(points, frame),
        estimate_share=_estimate_share(calls), **_growth(calls, window),
    )  # fmt: skip


def _growth(calls, window) -> dict:
    """The growth since the latest drop and what is left to CRITICAL_AT, in its unit (turn or
    call): the curve card and the overview bar say both."""
    g = core_curve.growth(calls, last_turns=VELOCITY_TURNS, last_calls=VELOCITY_CALLS)
    return {"growth": g, "left": core_curve.left_until_critical(calls, g.rate if g else None, window)}
