"""The recorded window as is: the baseline curve every policy is drawn against (policy-lab.md §0).

Each call holds what the log says it held: every message since the session's own last fold
(its boundary or summary message onward). The total is the measured prompt size when the call
has one, else overhead + the lab tokens of those messages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .common import finish, freeze, slot, window_of, zone
from .model import Replay, Session


def _recorded_windows(session: Session):
    msgs = sorted(session.messages, key=lambda m: m.seq)
    for call in sorted(session.calls, key=lambda c: c.index):
        seen = [m for m in msgs if m.seq < call.seq]
        start = max((j for j, m in enumerate(seen) if m.is_recorded_fold), default=0)
        if start and seen[start].kind == "boundary":
            start += 1  # the boundary marker itself is not sent
        yield call, [slot(m) for m in seen[start:]]


def recorded_totals(session: Session) -> dict[int, int]:
    out = {}
    for call, slots in _recorded_windows(session):
        out[call.index] = call.usage_input or session.overhead_tokens + sum(s.tokens for s in slots)
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
            if call.usage_input:
                w = replace(w, total_tokens=call.usage_input, zone=zone(call.usage_input, window_of(session, call)))
            windows.append(w)
        return finish(self.name, self.label, session, windows, {})


POLICY = Recorded()
