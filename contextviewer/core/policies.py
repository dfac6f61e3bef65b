"""Fold policies over the measured curve, open loop: where an automatic fold at a threshold would
have fired on the recorded calls, and what each fold would have put away. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .curve import Point, drops, fold_preview


@dataclass(frozen=True, slots=True)
class FoldFire:
    index: int  # index of the point (model call) where the fold fires
    position: int
    turn: int | None
    used: int  # context at that call: what the fold would have summarized
    window: int
    fraction: float
    source: str  # measured | estimated
    from_turn: int | None  # first turn the fold would put away (after the previous real fold)
    to_turn: int | None  # the turn of the call where it fires
    calls: int  # model calls since the previous real fold, up to this one

    @property
    def percent(self) -> float:
        return self.fraction * 100


def fire_points(points: Sequence[Point], threshold_fraction: float, window: int | None = None) -> list[FoldFire]:
    """Where a fold at `threshold_fraction` of the window would have fired, with what it folds.

    The recorded actions are replayed unchanged: after a fire the curve goes on as recorded, and
    the policy fires again only once the recorded curve has dropped below the threshold (a real
    fold happened), so each fire folds what was loaded since the previous real fold."""
    cut = drops(points)
    fires = []
    for i in fold_preview(points, threshold_fraction, window):
        point = points[i]
        w = window or point.window or 0
        start = max((d for d in cut if d <= i), default=0)
        fires.append(
            FoldFire(
                index=i,
                position=point.position,
                turn=point.turn,
                used=point.used,
                window=w,
                fraction=point.used / w if w else 0.0,
                source=point.source,
                from_turn=points[start].turn,
                to_turn=point.turn,
                calls=i - start + 1,
            )
        )
    return fires
