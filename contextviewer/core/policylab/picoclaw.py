"""picoclaw (legacyContextManager): summarize after a turn when history > 20 messages or > 75 % of
the window; before a turn's first call, when history + tools + MaxTokens exceed the window, drop
the oldest half of the turns (policy-lab.md §5, pseudo-algorithm §5.3; sipeed/picoclaw@cf67dd3).

Estimator: 2.5 chars/token, (chars + 12)·2/5 per message (§5.1). The async summary is applied
at the next user turn (§5.2)."""

from __future__ import annotations

from typing import Any

from .common import (
    find_safe_boundary,
    finish,
    fold_event,
    folded_summary,
    Meter,
    ids,
    merged,
    picoclaw_est,
    slot,
    steps,
    synthetic,
    total,
    window_of,
)
from .model import NOTE, Event, Replay, Session

SUMMARIZE_MESSAGE_THRESHOLD = 20
SUMMARIZE_TOKEN_PERCENT = 75
KEEP_LAST = 4
CONTEXT_SUMMARY = (
    "CONTEXT_SUMMARY: The following is an approximate summary of prior conversation for reference only. "
    "It may be incomplete or outdated — always defer to explicit instructions."
)


def emergency_note(n: int) -> str:
    return f"[Emergency compression dropped {n} oldest messages due to context limit]"


def est(slots) -> int:
    return sum(picoclaw_est(len(s.text)) for s in slots)


def force_compression_cut(hist) -> int:
    """`forceCompression` (§5.2): with ≥ 2 turns cut at turns[len/2] (the oldest ~half of the
    turns go), else at findSafeBoundary(len/2); ≤ 0 means keep only the last user message."""
    if len(hist) <= 2:
        return 0
    turns = [j for j, s in enumerate(hist) if s.msg and s.msg.role == "user"]
    if len(turns) >= 2:
        cut = turns[len(turns) // 2]
    else:
        cut = find_safe_boundary(hist, len(hist) // 2)
    if cut <= 0:
        cut = turns[-1] if turns else 0
    return cut


class Picoclaw:
    name = "picoclaw"
    label = "picoclaw: summarize > 20 msgs or 75 %, emergency drop of the oldest half"
    wrapper_tokens = 35  # the CONTEXT_SUMMARY: line (policy-lab §8; the emergency drop writes no summary)
    params: dict[str, Any] = {"max_tokens": 32_768, "context_window": None}

    def replay(self, session: Session, **params: Any) -> Replay:
        p = merged(self.params, params)
        oh, hist, summary, note, windows, folds = session.overhead_tokens, [], None, "", [], 0
        meter = Meter(session, self.name)
        stuck: list[tuple[int, int, int]] = []  # drops that left the window over its budget
        for call, new in steps(session):
            cw = p["context_window"] or window_of(session, call) or p["max_tokens"] * 4
            events = []
            for m in new:
                if (
                    m.role == "user"
                    and hist
                    and (len(hist) > SUMMARIZE_MESSAGE_THRESHOLD or est(hist) > cw * SUMMARIZE_TOKEN_PERCENT // 100)
                    and len(hist) > KEEP_LAST
                ):
                    cut = find_safe_boundary(hist, len(hist) - KEEP_LAST)
                    if cut > 0:
                        folded = [s for s in hist[:cut] if s.msg and s.msg.role in ("user", "assistant")]
                        summary = folded_summary(session, self.wrapper_tokens, folded, folds, p["max_tokens"], CONTEXT_SUMMARY)
                        detail = f"{len(hist)} messages, est {est(hist):,} tokens"
                        events.append(fold_event(call.index, "summarize", hist, [summary, *hist[cut:]], oh, hist[:cut], detail))
                        hist, folds, note = hist[cut:], folds + 1, ""
                hist.append(slot(m))
            if any(m.role == "user" for m in new):  # the first call of a turn: proactive budget check

                def head():
                    return ([summary] if summary else []) + (
                        [synthetic("note:emergency", NOTE, picoclaw_est(len(note)), note)] if note else []
                    )

                def over() -> bool:
                    return est(head()) + est(hist) + oh + p["max_tokens"] > cw

                if over() and len(hist) > 2:
                    before, cut = total(head() + hist, oh), force_compression_cut(hist)
                    dropped = hist[:cut]
                    hist = hist[cut:]
                    while over() and len(hist) > 1:  # trimHistoryToFitContextWindow: whole oldest turns
                        nxt = next((j for j, s in enumerate(hist) if j > 0 and s.msg and s.msg.role == "user"), None)
                        if nxt is None:
                            break
                        dropped, hist = dropped + hist[:nxt], hist[nxt:]
                    note = (note + "\n\n" if note else "") + emergency_note(len(dropped))
                    events.append(
                        Event(
                            call.index,
                            "drop",
                            before,
                            total(head() + hist, oh),
                            dropped_msg_ids=ids(dropped),
                            detail=emergency_note(len(dropped)),
                        )
                    )
                    # picoclaw checks at every turn (and drops again): a drop that cannot get the
                    # window under its budget is said, as in common.Trigger.
                    if over():
                        stuck.append((call.index, est(head()) + est(hist) + oh, cw - p["max_tokens"]))
            win = (
                ([summary] if summary else [])
                + ([synthetic("note:emergency", NOTE, picoclaw_est(len(note)), note)] if note else [])
                + hist
            )
            windows.append(meter.freeze(call, win, oh, cw, events))
        return finish(self.name, self.label, session, windows, p, stuck)


POLICY = Picoclaw()
