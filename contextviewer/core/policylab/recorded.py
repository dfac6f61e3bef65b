"""The recorded window as is: the baseline curve every policy is drawn against (policy-lab.md §0),
with the session's own actions: its folds and the tool results its harness clipped.

Each call holds what the log says it held: every message since the session's own last fold
(its boundary or summary message onward). The total is the measured prompt size when the call
has one, else overhead + the lab tokens of those messages (calibrated, common.calibrated).

The actions are the log's: a fold at the first call after it (its logged token figures where the
log has them, else the calls around it), and a clip where a clipped tool result first reaches the
model (its original where the log keeps it). The walk over the calls (common.recorded_windows)
lives beside calibrate, which fits the scale on it: this module imports common, never the other way."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .common import calibrated, finish, freeze, lab_tokens, recorded_windows, window_of, zone
from .model import Event, Msg, RecordedFold, Replay, Session

FOLD_EVENT = {"handoff": "handoff", "microcompact": "microcompact"}  # a recorded fold kind -> event kind; else "fold"


def recorded_totals(session: Session) -> dict[int, int]:
    """The recorded curve per call: measured input where there is one, else overhead + every
    message the call saw (with the session's own fold artifacts as recorded), calibrated."""
    out = {}
    for call, slots in recorded_windows(session):
        out[call.index] = call.usage_input or calibrated(session, session.overhead_tokens + sum(s.tokens for s in slots))
    return out


def recorded_folds(session: Session) -> list[RecordedFold]:
    """The session's own folds: as the importer gave them, else one per boundary (or summary) message."""
    if session.recorded_folds:
        return sorted(session.recorded_folds, key=lambda f: f.seq)
    marks = [m for m in session.messages if m.kind == "boundary"] or [m for m in session.messages if m.kind == "summary"]
    return [RecordedFold(seq=m.seq) for m in sorted(marks, key=lambda m: m.seq)]


def _clip_event(call_index: int, m: Msg) -> Event:
    """A tool result the harness clipped: its original's tokens and what the model got (one message)."""
    return Event(
        call_index, "clip", lab_tokens(m.original_text or "", m), m.tokens, clipped_msg_ids=(m.id,),
        detail=f"clipped by the harness ({m.tool_name or 'tool'} result)", scope="message",
    )


class Recorded:
    name = "recorded"
    label = "Recorded (as logged)"
    params: dict[str, Any] = {}

    def replay(self, session: Session, **params: Any) -> Replay:
        if params:
            raise ValueError(f"the recorded curve takes no parameters (got {', '.join(params)})")
        folds = recorded_folds(session)
        clipped = sorted((m for m in session.messages if m.original_text and m.role == "tool"), key=lambda m: m.seq)
        windows, prev, prev_ids = [], None, set()
        seq_of = {m.id: m.seq for m in session.messages}
        for call, slots in recorded_windows(session):
            w = freeze(call, slots, session.overhead_tokens, window_of(session, call), ())
            t = call.usage_input or calibrated(session, w.total_tokens)
            events = []
            while folds and folds[0].seq < call.seq:
                f = folds.pop(0)
                ids_now = {s.msg.id for s in slots if s.msg is not None}
                before = f.tokens_before or (prev.total_tokens if prev else 0)
                after = f.tokens_after or t
                trigger = f"{f.trigger} " if f.trigger else ""
                events.append(
                    Event(
                        call.index, FOLD_EVENT.get(f.kind, "fold"), before, after,
                        dropped_msg_ids=tuple(sorted(prev_ids - ids_now, key=seq_of.__getitem__)) if f.kind != "microcompact" else (),
                        detail=f"the session's own {trigger}{f.kind} ({before:,} → {after:,} tokens as logged)"
                        if f.tokens_before else f"the session's own {trigger}{f.kind}",
                        scope="provider",
                    )
                )
            while clipped and clipped[0].seq < call.seq:
                events.append(_clip_event(call.index, clipped.pop(0)))
            w = replace(w, total_tokens=t, zone=zone(t, window_of(session, call)), events=tuple(events))
            windows.append(w)
            prev, prev_ids = w, {s.msg.id for s in slots if s.msg is not None}
        return finish(self.name, self.label, session, windows, {})


POLICY = Recorded()
