"""The recorded window as is: the baseline curve every policy is drawn against (policy-lab.md §0).

Each call holds what the log says it held: every message since the session's own last fold
(its boundary or summary message onward). The total is the measured prompt size when the call
has one, else overhead + the lab tokens of those messages (calibrated, common.calibrated).

The walk over the calls (common.recorded_windows) lives beside calibrate, which fits the scale on
it: this module imports common, never the other way."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .common import calibrated, finish, freeze, recorded_windows, window_of, zone
from .model import Replay, Session


def recorded_totals(session: Session) -> dict[int, int]:
    """The recorded curve per call: measured input where there is one, else overhead + every
    message the call saw (with the session's own fold artifacts as recorded), calibrated."""
    out = {}
    for call, slots in recorded_windows(session):
        out[call.index] = call.usage_input or calibrated(session, session.overhead_tokens + sum(s.tokens for s in slots))
    return out


class Recorded:
    name = "recorded"
    label = "Recorded (as logged)"
    params: dict[str, Any] = {}

    def replay(self, session: Session, **params: Any) -> Replay:
        if params:
            raise ValueError(f"the recorded curve takes no parameters (got {', '.join(params)})")
        windows = []
        for call, slots in recorded_windows(session):
            w = freeze(call, slots, session.overhead_tokens, window_of(session, call), ())
            t = call.usage_input or calibrated(session, w.total_tokens)
            windows.append(replace(w, total_tokens=t, zone=zone(t, window_of(session, call))))
        return finish(self.name, self.label, session, windows, {}, raw=False)


POLICY = Recorded()
