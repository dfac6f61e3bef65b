"""OpenAI Codex CLI: compaction at 90 % of the model's context window (272k → 244,800, not 90 % of
the 258,400 a rollout logs as `model_context_window`, which is the usable 95 %), kept user
messages ≤ 20k tokens + SUMMARY_PREFIX summary, tool outputs middle-truncated at record time
(policy-lab.md §4, pseudo-algorithm §4.4).

The trigger is active_tokens: the last response's total + bytes/4 for every item since (§4.1);
it is checked before each call (pre-turn and mid-turn alike)."""

from __future__ import annotations

from typing import Any

from .common import (
    Meter,
    Trigger,
    bytes4,
    clip_event,
    finish,
    fold_event,
    folded_summary,
    lab_tokens,
    merged,
    slot,
    steps,
    usage_then_estimate,
    window_of,
)
from .model import CLIPPED, Replay, Session

COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking process. "
    "You also have access to the state of the tools that were used by that language model. "
    "Use this to build on the work that has already been done and avoid duplicating work."
)


def auto_compact_limit(window: int, limit: int | None = None) -> int:
    """`context_window × 9 / 10` unless configured; newer builds clamp it to ≤ 90 % (§4.1)."""
    default = window * 9 // 10
    return min(limit, default) if limit else default


def middle_truncate(text: str, mode: str = "tokens", limit: int = 10_000) -> tuple[str, str] | None:
    """§4.3: over the budget (tokens × 4 bytes, or bytes), keep the first and last half of it,
    at newline boundaries when possible, with `…{N} tokens truncated…` / `…{N} chars truncated…`."""
    budget = limit * 4 if mode == "tokens" else limit
    raw = text.encode("utf-8")
    if len(raw) <= budget:
        return None
    head = raw[: budget // 2].decode("utf-8", "ignore")
    tail = raw[len(raw) - budget // 2 :].decode("utf-8", "ignore")
    if "\n" in head:
        head = head[: head.rindex("\n") + 1]
    if "\n" in tail:
        tail = tail[tail.index("\n") + 1 :]
    cut = text[len(head) : len(text) - len(tail)]
    marker = f"…{bytes4(cut)} tokens truncated…" if mode == "tokens" else f"…{len(cut)} chars truncated…"
    return head + marker + tail, marker


class Codex:
    name = "codex"
    label = "Codex CLI: compact at 90 % of the window"
    wrapper_tokens = 100  # SUMMARY_PREFIX (policy-lab §8)
    params: dict[str, Any] = {
        "limit": None,  # model_auto_compact_token_limit (clamped to ≤ 90 % of the context window)
        "context_window": None,  # the model's context window; default: the model's input limit (272,000 for gpt-5.x)
        "trunc_mode": "tokens",
        "trunc_limit": 10_000,
        # Whether it also checks before a new turn (0.171.0 does); 0.58.0 was seen compacting only
        # mid-turn, after a response that calls a tool (docs/policy-lab.md "Each version's own rule").
        "pre_turn": True,
    }

    def replay(self, session: Session, **params: Any) -> Replay:
        p = merged(self.params, params)
        oh, hist, windows, folds, meter = session.overhead_tokens, [], [], 0, Meter(session, self.name)
        trigger = Trigger()
        prev_total = prev_call = None
        for call, new in steps(session):
            window, events = window_of(session, call), []
            limit = auto_compact_limit(p["context_window"] or call.input_limit or window, p["limit"])
            for m in new:
                s = slot(m)
                if m.role == "tool" and (done := middle_truncate(m.text, p["trunc_mode"], p["trunc_limit"])):
                    s = s.rewrite(CLIPPED, *done)
                    events.append(clip_event(call.index, "clip", m, s, done[1]))
                hist.append(s)
            # Pre-turn, Codex checks before the new turn records its prompt (and the context it
            # adds): only what came before the new user message counts; mid-turn, every item since.
            first_user = next((i for i, m in enumerate(new) if m.role == "user"), len(new))
            active = usage_then_estimate(
                prev_total, prev_call, new[:first_user], lambda m: bytes4(m.text), oh + sum(bytes4(s.text) for s in hist)
            )
            checks = p["pre_turn"] or first_user == len(new)  # mid-turn: no new prompt since the last call
            fold_now = bool(hist) and checks and trigger.fires(active, limit)
            if fold_now:
                after = self._compact(session, hist, folds)
                dropped = [s for s in hist if s not in after]
                events.append(fold_event(call.index, "fold", hist, after, oh, dropped, f"active {active:,} ≥ {limit:,}", meter, active))
                hist, folds = after, folds + 1
            w = meter.freeze(call, hist, oh, window, events)
            windows.append(w)
            if fold_now:
                trigger.acted(call.index, w.total_tokens, limit)
            # What the provider measured (or would have) for this window: the harness counts from it.
            prev_total, prev_call = w.total_tokens, call
        return finish(self.name, self.label, session, windows, p, trigger.unresolved)

    @staticmethod
    def _compact(session, hist, folds):
        """§4.2: real user messages newest-first until 20,000 tokens (the one that overflows is
        truncated, the rest dropped; earlier summaries never re-kept), then the summary message."""
        users, budget = [], COMPACT_USER_MESSAGE_MAX_TOKENS
        for s in reversed(hist):
            if not s.msg or s.msg.role != "user" or budget <= 0:
                continue
            t = lab_tokens(s.text, s.msg)
            if t > budget:
                keep_chars = budget * 4
                s = s.rewrite(CLIPPED, s.text[:keep_chars], f"user message truncated to {budget:,} tokens")
                t = budget
            users.append(s)
            budget -= t
        return [*reversed(users), folded_summary(session, Codex.wrapper_tokens, hist, folds, None, SUMMARY_PREFIX)]


POLICY = Codex()
