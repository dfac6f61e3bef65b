"""Geometry of the analytics page's SVG charts, drawn on the server like the curve: pure functions
from figures to rectangles and labels (the template only writes them out).

Colours are presentation attributes from a fixed palette (no inline style: the CSP forbids it)."""

from __future__ import annotations

from dataclasses import dataclass

PALETTE = ("#2563eb", "#d97706", "#059669", "#7c3aed", "#dc2626", "#0891b2", "#65a30d", "#db2777", "#475569")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass(frozen=True, slots=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    fill: str
    title: str


def _nice(top: float) -> float:
    """The smallest of 1, 2, 5 x 10^k at or above `top` (an axis' end)."""
    if top <= 0:
        return 1.0
    step = 10 ** len(str(int(top))) / 10 if top >= 1 else 1.0
    for m in (1, 2, 5, 10):
        if m * step >= top:
            return m * step
    return 10 * step


def stacked_bars(columns: list[str], series: dict[str, dict[str, float]], *, width: int = 720, height: int = 180,
                 unit: str = "$", digits: int = 0) -> dict:
    """One bar per column, stacked by series (e.g. spend per day by model). `series`: name -> column -> value."""
    names = sorted(series, key=lambda n: -sum(series[n].values()))
    colours = {n: PALETTE[i] if i < len(PALETTE) - 1 else PALETTE[-1] for i, n in enumerate(names)}
    totals = [sum(series[n].get(c, 0.0) for n in names) for c in columns]
    top = _nice(max(totals, default=0.0))
    slot = width / max(1, len(columns))
    bar = max(1.0, slot * 0.8)
    rects = []
    for i, col in enumerate(columns):
        y = float(height)
        for n in names:
            v = series[n].get(col, 0.0)
            if v <= 0:
                continue
            h = height * v / top
            y -= h
            rects.append(Rect(round(i * slot + (slot - bar) / 2, 2), round(y, 2), round(bar, 2), round(h, 2), colours[n],
                              f"{col} · {n}: {unit}{v:,.2f}" if unit == "$" else f"{col} · {n}: {v:,.{digits}f}"))
    every = max(1, len(columns) // 8)
    labels = [(round(i * slot + slot / 2, 2), c[5:] if len(c) == 10 else c) for i, c in enumerate(columns) if i % every == 0]
    ticks = [(round(height - height * f, 2), f"{unit}{top * f:,.2f}" if unit == "$" else f"{top * f:,.{digits}f}") for f in (0.5, 1.0)]
    return {"width": width, "height": height, "rects": rects, "labels": labels, "ticks": ticks,
            "legend": [(n, colours[n], sum(series[n].values())) for n in names]}


def heatmap(counts: dict[tuple[int, int], int], *, cell: int = 22) -> dict:
    """Model calls per weekday (0 = Monday) and hour: 7 rows of 24 cells, darker with more calls."""
    top = max(counts.values(), default=0)
    rects = []
    for (day, hour), n in sorted(counts.items()):
        if n <= 0:
            continue
        level = 0.15 + 0.85 * n / top
        rects.append(Rect(hour * cell, day * cell, cell - 2, cell - 2, _blue(level),
                          f"{WEEKDAYS[day]} {hour:02d}:00–{hour:02d}:59: {n:,} model calls"))
    return {"width": 24 * cell, "height": 7 * cell, "cell": cell, "rects": rects,
            "rows": [(i * cell + cell / 2, d) for i, d in enumerate(WEEKDAYS)],
            "hours": [(h * cell + cell / 2, f"{h:02d}") for h in range(0, 24, 3)], "top": top}


def _blue(level: float) -> str:
    """White to #1d4ed8 as level goes from 0 to 1."""
    r, g, b = (round(255 + (c - 255) * level) for c in (0x1D, 0x4E, 0xD8))
    return f"#{r:02x}{g:02x}{b:02x}"


def histogram(values: list[float], edges: list[float], labels: list[str], *, width: int = 360, height: int = 140,
              fills: list[str] | None = None) -> dict:
    """Counts of `values` in [edges[i], edges[i+1]) (the last bin open), one labelled bar each."""
    counts = [0] * len(labels)
    for v in values:
        i = next((k for k in range(len(labels) - 1, -1, -1) if v >= edges[k]), 0)
        counts[i] += 1
    top = max(counts, default=0) or 1
    slot = width / len(labels)
    rects = [Rect(round(i * slot + slot * 0.1, 2), round(height - height * n / top, 2), round(slot * 0.8, 2),
                  round(height * n / top, 2), (fills or [PALETTE[0]] * len(labels))[i], f"{labels[i]}: {n:,}")
             for i, n in enumerate(counts)]
    return {"width": width, "height": height, "rects": rects, "counts": counts,
            "labels": [(round(i * slot + slot / 2, 2), lab) for i, lab in enumerate(labels)], "total": len(values)}
