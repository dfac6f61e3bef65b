"""OpenHands LLMSummarizingCondenser, app default (keep_first=4, max_size=120): counted in
events, not tokens; observations over 30,000 chars are cut in the middle first (policy-lab.md §6).
One message = one event."""

from __future__ import annotations

from typing import Any

from .common import Meter, clip_event, finish, fold_event, folded_summary, merged, slot, steps, window_of
from .model import CLIPPED, Replay, Session

MAX_MESSAGE_CHARS = 30_000
CONDENSATION_SUMMARY = "condensation summary (USER_CONTEXT, TASK_TRACKING, …)"
TRUNCATED = "\n[... Observation truncated due to length ...]\n"


def truncate_observation(text: str, max_chars: int = MAX_MESSAGE_CHARS) -> str | None:
    if len(text) <= max_chars:
        return None
    half = max_chars // 2
    return text[:half] + TRUNCATED + text[-half:]


class OpenHands:
    name = "openhands"
    label = "OpenHands condenser (keep first 4, fold over 120 events)"
    wrapper_tokens = 20  # not in §8's list: the default wrapper
    params: dict[str, Any] = {"max_size": 120, "keep_first": 4}

    def replay(self, session: Session, **params: Any) -> Replay:
        p = merged(self.params, params)
        if not p["keep_first"] < p["max_size"] // 2:
            raise ValueError("keep_first must be < max_size // 2")
        oh, view, summ, windows, folds = session.overhead_tokens, [], None, [], 0
        meter = Meter(session, self.name)
        k = p["keep_first"]
        for call, new in steps(session):
            events = []
            for m in new:
                s = slot(m)
                if m.role == "tool" and (cut := truncate_observation(m.text)):
                    s = s.rewrite(CLIPPED, cut, TRUNCATED.strip())
                    events.append(clip_event(call.index, "clip", m, s))
                view.append(s)
            v = view[:k] + ([summ] if summ else []) + view[k:]
            if len(v) > p["max_size"]:
                tail = p["max_size"] // 2 - k - 1
                forgotten = view[k : len(view) - tail]
                summ = folded_summary(session, self.wrapper_tokens, forgotten, folds, None, CONDENSATION_SUMMARY)
                view = view[:k] + view[len(view) - tail :]
                after = view[:k] + [summ] + view[k:]
                events.append(fold_event(call.index, "condense", v, after, oh, forgotten, f"{len(v)} events > {p['max_size']}"))
                v, folds = after, folds + 1
            windows.append(meter.freeze(call, v, oh, window_of(session, call), events))
        return finish(self.name, self.label, session, windows, p)


POLICY = OpenHands()
