"""The recorded window as is: the baseline curve every policy is drawn against (policy-lab.md §0).

Each call holds what the log says it held: every message since the session's own last fold
(its boundary or summary message onward). The total is the measured prompt size when the call
has one, else overhead + the lab tokens of those messages (calibrated, common.calibrated).

One pass: each call's window is the previous one plus the messages that arrived since, started
over at the session's own fold."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .common import calibrated, finish, freeze, slot, window_of, zone
from .model import Replay, Session


def _recorded_windows(session: Session):
    msgs = sorted(session.messages, key=lambda m: m.seq)
    window: list = []
    i = 0
    for call in sorted(session.calls, key=lambda c: c.index):
        while i < len(msgs) and msgs[i].seq < call.seq:
            m = msgs[i]
            i += 1
            if m.is_recorded_fold:
                # The session's own fold: the window starts over at its summary (the boundary
                # marker itself is not sent).
                window = [] if m.kind == "boundary" else [slot(m)]
            else:
                window.append(slot(m))
        yield call, window


def recorded_estimates(session: Session) -> tuple[list[tuple[int, int, int]], list[int]]:
    """(call seq, measured input or 0, lab tokens of its recorded window) per call, and the seqs of
    the session's own folds: what common.calibrate fits the scale on."""
    rows = []
    for call, slots in _recorded_windows(session):
        rows.append((call.seq, call.usage_input, sum(s.tokens for s in slots)))
    folds = sorted(m.seq for m in session.messages if m.kind == "boundary") or sorted(
        m.seq for m in session.messages if m.kind == "summary"
    )
    return rows, folds


def recorded_totals(session: Session) -> dict[int, int]:
    out = {}
    for call, slots in _recorded_windows(session):
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
        for call, slots in _recorded_windows(session):
            w = freeze(call, slots, session.overhead_tokens, window_of(session, call), ())
            t = call.usage_input or calibrated(session, w.total_tokens)
            windows.append(replace(w, total_tokens=t, zone=zone(t, window_of(session, call))))
        return finish(self.name, self.label, session, windows, {}, raw=False)


POLICY = Recorded()
