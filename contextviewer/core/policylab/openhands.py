"""OpenHands LLMSummarizingCondenser, app default (keep_first=4, max_size=120): counted in
events, not tokens; observations over 30,000 chars are cut in the middle first (policy-lab.md §6).
One message = one event."""

from __future__ import annotations

from typing import Any

from .common import finish, freeze, ids, merged, slot, steps, summary_size, summary_slot, total, window_of
from .model import CLIPPED, Event, Replay, Session

MAX_MESSAGE_CHARS = 30_000
TRUNCATED = "\n[... Observation truncated due to length ...]\n"


def truncate_observation(text: str, max_chars: int = MAX_MESSAGE_CHARS) -> str | None:
    if len(text) <= max_chars:
        return None
    half = max_chars // 2
    return text[:half] + TRUNCATED + text[-half:]


class OpenHands:
    name = "openhands"
    label = "OpenHands condenser (keep first 4, fold over 120 events)"
    params: dict[str, Any] = {"max_size": 120, "keep_first": 4}

    def replay(self, session: Session, **params: Any) -> Replay:
        p = merged(self.params, params)
        if not p["keep_first"] < p["max_size"] // 2:
            raise ValueError("keep_first must be < max_size // 2")
        oh, view, summ, windows, folds = session.overhead_tokens, [], None, [], 0
        k = p["keep_first"]
        for call, new in steps(session):
            events = []
            for m in new:
                s = slot(m)
                if m.role == "tool" and (cut := truncate_observation(m.text)):
                    s = s.rewrite(CLIPPED, cut, TRUNCATED.strip())
                    events.append(Event(call.index, "clip", slot(m).tokens, s.tokens, clipped_msg_ids=(m.id,)))
                view.append(s)
            v = view[:k] + ([summ] if summ else []) + view[k:]
            if len(v) > p["max_size"]:
                tail = p["max_size"] // 2 - k - 1
                forgotten = view[k : len(view) - tail]
                size = summary_size(session, "openhands", sum(s.tokens for s in forgotten), folds, None)
                summ = summary_slot(f"summary:{folds}", size, "condensation summary (USER_CONTEXT, TASK_TRACKING, …)")
                view = view[:k] + view[len(view) - tail :]
                after = view[:k] + [summ] + view[k:]
                events.append(
                    Event(
                        call.index,
                        "condense",
                        total(v, oh),
                        total(after, oh),
                        dropped_msg_ids=ids(forgotten),
                        detail=f"{len(v)} events > {p['max_size']}",
                    )
                )
                v, folds = after, folds + 1
            windows.append(freeze(call, v, oh, window_of(session, call), events))
        return finish(self.name, self.label, session, windows, p)


POLICY = OpenHands()
