"""Claude Code: auto-compact at effective window − 13,000, microcompact, tool-result limits
(policy-lab.md §3, pseudo-algorithm §3.6).

Open loop: the recorded calls are replayed unchanged; the count that triggers the fold is the last
call's usage + round(chars/4) for every message after it (§3.1): the measured usage while the
replay has not diverged from the recording, then the estimate of this replay's window."""

from __future__ import annotations

from typing import Any

from .common import (
    Meter,
    Trigger,
    api_round_start,
    chars4,
    clip_event,
    finish,
    fold_event,
    folded_summary,
    merged,
    parse_ts,
    slot,
    steps,
    synthetic,
    total,
    usage_then_estimate,
    window_of,
)
from .model import CLEARED, CLIPPED, EVICTED_TO_FILE, FULL, NOTE, Event, Replay, Session

AUTOCOMPACT_BUFFER_TOKENS = 13_000
MAX_OUTPUT_TOKENS_FOR_SUMMARY = 20_000
WARNING_BELOW_THRESHOLD = 20_000
CLEARED_MARKER = "[Old tool result content cleared]"
COMPACTABLE = frozenset({"Read", "Bash", "PowerShell", "Grep", "Glob", "WebSearch", "WebFetch", "Edit", "Write"})
BASH_MAX_OUTPUT_LENGTH = 30_000
DEFAULT_MAX_RESULT_SIZE_CHARS = 50_000
RESULT_CAPS = {"Bash": 30_000, "Read": None}  # Read bounds itself
PREVIEW_BYTES = 2_000
RESTORE_FILES, RESTORE_PER_FILE, RESTORE_TOTAL = 5, 5_000, 50_000
SUMMARY_INTRO = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation."
)


def threshold(window: int, max_output: int = 20_000, pct: float | None = None, auto_compact_window: int | None = None,
              reserve_cap: int = MAX_OUTPUT_TOKENS_FOR_SUMMARY) -> int:
    """§3.1: effective = min(window, ACW) − min(max_output, 20,000); threshold = effective − 13,000;
    CLAUDE_AUTOCOMPACT_PCT_OVERRIDE can only lower it. 2.0.x reserves min(max output, 32,000)
    (`reserve_cap`; measured on 2.0.57: 155,000 on a 200k window, docs/policy-lab.md)."""
    w = min(window, auto_compact_window) if auto_compact_window else window
    effective = w - min(max_output, reserve_cap)
    thr = effective - AUTOCOMPACT_BUFFER_TOKENS
    if pct:
        thr = min(int(effective * pct / 100), thr)
    return thr


def proactive(auto_windows, model: str | None, window: int) -> bool:
    """Whether the client compacts this model in this window on its threshold. `auto_windows` None:
    every model (Claude Code up to 2.1.152, and 2.0). Else only the (model, window) pairs it lists,
    each a model name prefix and the window it runs in (2.1.163 on: claude-opus-4-6 in 200k, not in
    1M); any other model is compacted only reactively, when the API answers "prompt too long"."""
    if auto_windows is None:
        return True
    name = (model or "").lower()
    return any(name.startswith(prefix) and window == w for prefix, w in auto_windows)


def persisted_stub(text: str, path: str) -> str:
    """§3.5 persisted output: ~2,000 bytes cut at a newline."""
    head = text[:PREVIEW_BYTES]
    if "\n" in head:
        head = head[: head.rindex("\n")]
    size_kb = round(len(text.encode("utf-8")) / 1024, 1)
    return (
        f"<persisted-output>\nOutput too large ({size_kb}KB). Full output saved to: {path}\n\n"
        f"Preview (first 2KB):\n{head}\n...\n</persisted-output>"
    )


def limit_result(s, bash_max: int = BASH_MAX_OUTPUT_LENGTH):
    """§3.5: results over the tool's cap go to a file with a 2 KB preview; Bash output over
    BASH_MAX_OUTPUT_LENGTH keeps its head. Already-limited recorded results pass unchanged."""
    m = s.msg
    cap = RESULT_CAPS.get(m.tool_name or "", DEFAULT_MAX_RESULT_SIZE_CHARS)
    if cap is not None and len(s.text) > cap and not s.text.startswith("<persisted-output>"):
        stub = persisted_stub(s.text, f"tool-results/{(m.tool_call_ids or (m.id,))[0]}.txt")
        return s.rewrite(EVICTED_TO_FILE, stub, stub[:200])
    if m.tool_name == "Bash" and len(s.text) > bash_max:
        rest = s.text[bash_max:]
        marker = f"\n\n... [{rest.count(chr(10)) + 1} lines truncated] ..."
        return s.rewrite(CLIPPED, s.text[:bash_max] + marker, marker.strip())
    return s


def microcompact(hist, keep: int):
    """Clear every compactable tool result except the last `keep` (§3.4)."""
    idx = [
        j for j, s in enumerate(hist) if s.msg and s.msg.role == "tool" and s.msg.tool_name in COMPACTABLE and s.state != CLEARED
    ]
    clear = set(idx[: max(0, len(idx) - keep)])
    return [s.rewrite(CLEARED, CLEARED_MARKER, CLEARED_MARKER) if j in clear else s for j, s in enumerate(hist)]


def restore_files(hist):
    """§3.3: up to 5 recently read files, ≤ 5,000 tokens each, ≤ 50,000 in total."""
    out, seen, budget = [], set(), RESTORE_TOTAL
    for s in reversed(hist):
        m = s.msg
        if not m or m.role != "tool" or m.tool_name != "Read" or s.state != FULL:
            continue
        key = m.text[:200]
        if key in seen:
            continue
        seen.add(key)
        t = min(s.tokens, RESTORE_PER_FILE, budget)
        if t <= 0:
            break
        out.append(synthetic(f"restore:{m.id}", NOTE, t, f"re-read file after compaction ({t} tokens)"))
        budget -= t
        if len(out) == RESTORE_FILES:
            break
    return list(reversed(out))


class ClaudeCode:
    name = "claude_code"
    label = "Claude Code (auto-compact at effective window − 13k)"
    wrapper_tokens = 80  # the summary intro + continuation lines around a summary (policy-lab §8)
    default = True  # drawn on every conversation's lab page
    params: dict[str, Any] = {
        "max_output": 20_000,  # the model's max output; the reserve is capped at reserve_cap
        "reserve_cap": MAX_OUTPUT_TOKENS_FOR_SUMMARY,  # 20,000 (2.1.x); 32,000 (2.0.x)
        "pct": None,  # CLAUDE_AUTOCOMPACT_PCT_OVERRIDE
        "auto_compact_window": None,  # CLAUDE_CODE_AUTO_COMPACT_WINDOW
        # The (model prefix, window) pairs compacted on the threshold; None: every model (proactive()).
        "auto_windows": None,
        "microcompact": "none",  # none | legacy (≤ 2.0.x: last 3, saves ≥ 20k) | time (60 min, keep 5)
        "gap_minutes": 60,
        "keep_recent": 5,
    }

    def replay(self, session: Session, **params: Any) -> Replay:
        p = merged(self.params, params)
        oh = session.overhead_tokens
        hist, windows, folds, meter, trigger = [], [], 0, Meter(session, self.name), Trigger()
        prev_total = prev_call = None
        last_assistant_ts = None
        # The user's own /compact is part of the recording, not the policy's decision: replaying the
        # session's own harness, it happens where the log says (before the first call after it).
        manual = sorted(f.seq for f in session.recorded_folds if f.trigger == "manual") if session.own_policy == self.name else []
        prev_seq = None
        for call, new in steps(session):
            window = window_of(session, call)
            reactive = not proactive(p["auto_windows"], call.model, window)
            # Reactive: the API refuses a prompt over the window ("prompt too long"), then it compacts.
            thr = window + 1 if reactive else threshold(window, p["max_output"], p["pct"], p["auto_compact_window"], p["reserve_cap"])
            events = []
            for m in new:
                s = slot(m)
                if m.role == "tool":
                    s2 = limit_result(s)
                    if s2.state != FULL:
                        events.append(clip_event(call.index, "clip", m, s2, s2.marker[:120]))
                    s = s2
                hist.append(s)
            # Before any response the client counts its messages only (no usage to start from: the
            # system prompt and tools are not in it), so a session that starts full does not fold
            # before its first call.
            count = usage_then_estimate(
                prev_total, prev_call, new, lambda m: chars4(m.text), sum(chars4(s.text) for s in hist), usage_covers="first"
            )
            mode = p["microcompact"]
            before = total(hist, oh)
            if mode == "legacy" and count > thr - WARNING_BELOW_THRESHOLD:
                cleared = microcompact(hist, 3)
                if before - total(cleared, oh) >= 20_000:
                    hist, count = cleared, count - (before - total(cleared, oh))
            elif mode == "time":
                now, last = parse_ts(new[-1].ts if new else None), parse_ts(last_assistant_ts)
                if now and last and (now - last).total_seconds() >= p["gap_minutes"] * 60:
                    hist = microcompact(hist, max(1, p["keep_recent"]))
            if total(hist, oh) < before:
                events.append(Event(call.index, "microcompact", before, total(hist, oh), detail=CLEARED_MARKER))
            by_hand = any((prev_seq is None or prev_seq < f) and f < call.seq for f in manual)
            prev_seq = call.seq
            fold_now = bool(hist) and (by_hand or trigger.fires(count, thr))
            if fold_now:
                cut = api_round_start(hist, len(hist))
                folded = hist[:cut] or hist
                summary = folded_summary(session, self.wrapper_tokens, folded, folds, MAX_OUTPUT_TOKENS_FOR_SUMMARY, SUMMARY_INTRO)
                after = [summary, *restore_files(folded)]
                detail = (f"manual /compact at {count:,} tokens (as recorded)" if by_hand
                          else f"reactive compact: {count:,} tokens passed the {window:,} window (prompt too long)" if reactive
                          else f"auto-compact at {count:,} ≥ {thr:,} tokens")
                events.append(fold_event(call.index, "fold", hist, after, oh, folded, detail, meter, count))
                hist, folds = after, folds + 1
            w = meter.freeze(call, hist, oh, window, events)
            windows.append(w)
            if fold_now:
                trigger.acted(call.index, w.total_tokens, thr)
            # What the provider measured (or would have) for this window: the harness counts from it.
            prev_total, prev_call = w.total_tokens, call
            last_assistant_ts = next((m.ts for m in reversed(new) if m.role == "assistant"), last_assistant_ts)
        return finish(self.name, self.label, session, windows, p, trigger.unresolved)


POLICY = ClaudeCode()
