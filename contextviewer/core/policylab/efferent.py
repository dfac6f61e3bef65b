"""efferent: append-time tool-result compression ("headroom") with grep-aware and log-aware
planners and a blind head+tail clip, plus the cumulative auto-handoff at 85 % (policy-lab.md
§1.1-1.5, efferent@7beac83, "efferent classic"); and the engine fold of current main (§1.6).

Open loop: the handoff trigger is the last call's full input, here this replay's window at that
call, checked once at the end of each user turn (§1.2)."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

from .common import (
    clip_event,
    finish,
    Trigger,
    fold_event,
    folded_summary,
    Meter,
    keep_last_assistant_turns,
    merged,
    slot,
    steps,
    window_of,
)
from .model import CLIPPED, Replay, Session

DEFAULT_TOOL_RESULT_MAX_CHARS = 16_000
DEFAULT_AUTO_HANDOFF_PCT = 85
SUMMARY_MIN_DROPPED_CHARS = 4_000
DIGEST_TOKENS = 160  # ≤ 120 words [inf]
HANDOFF_NOTE = (
    "[System note: the earlier history of this conversation has been handed off into the summary "
    "below to free up context. Treat the summary as the source of truth for everything before this point.]"
)
HANDOFF_NOTE_TOKENS = 45  # the handoff note around a summary, in tokens (policy-lab §8): both variants' wrapper
DIGEST = " Summary of the omitted part: …"


def js_round(x: float) -> int:
    return math.floor(x + 0.5)


# -- (a) grep / search shape ------------------------------------------------------------------

MATCH_RE = re.compile(r"^(.{1,260}?)[:-](\d+)[:-]")
SEARCH_MIN_LINES, SEARCH_MIN_RATIO, PER_FILE, MATCH_TEXT_MAX = 20, 0.75, 5, 240


def _match(line: str):
    m = MATCH_RE.match(line)
    if m and ("/" in m.group(1) or "." in m.group(1)):
        return m.group(1), m.group(2), line[m.end() :]
    return None


def plan_search(text: str, max_chars: int) -> str | None:
    nonempty = [ln for ln in text.split("\n") if ln.strip()]
    parsed = [p for p in map(_match, nonempty) if p]
    if len(nonempty) < SEARCH_MIN_LINES or len(parsed) < SEARCH_MIN_LINES or len(parsed) / len(nonempty) < SEARCH_MIN_RATIO:
        return None
    files: dict[str, list[tuple[str, str]]] = {}
    for path, line_no, rest in parsed:
        files.setdefault(path, []).append((line_no, rest))
    budget, used, blocks, shown = 0.9 * max_chars, 0, [], 0
    for path, matches in files.items():
        n = len(matches)
        head = f"{path} ({n} matches, showing {PER_FILE})" if n > PER_FILE else f"{path} ({n} {'match' if n == 1 else 'matches'})"
        body = [f"  {no}: {t[:MATCH_TEXT_MAX]}" for no, t in matches[:PER_FILE]]
        block = "\n".join([head, *body])
        if blocks and used + len(block) + 1 > budget:
            break
        blocks.append(block)
        used += len(block) + 1
        shown += min(n, PER_FILE)
    marker = (
        f"[…compaction: {len(parsed) - shown} of {len(parsed)} matched lines omitted ({len(files)} files, "
        f"{len(blocks)} shown, first {PER_FILE} matches each). To retrieve, re-run the search narrower — "
        "a more specific pattern, a subdirectory, or fewer context lines.]"
    )
    return "\n".join(blocks) + "\n" + marker


# -- (b) Bash log shape -----------------------------------------------------------------------

ERROR_RE = re.compile(
    r"\b(error|err!|fail|failed|failure|failing|fatal|exception|panic|panicked|traceback|assert|assertion|"
    r"assertionerror|assertion failed)\b|[✗✖]",
    re.I,
)
SUMMARY_RE = re.compile(
    r"\b\d+\s+(passing|passed|failing|failed|errors?|warnings?|tests?|pass|fail|skipped)\b|\b(tests|suites|snapshots):"
    r"|exit code|build (failed|succeeded)|(compilation|compile) (failed|error)",
    re.I,
)
WARN_RE = re.compile(r"\bwarn(ing)?\b", re.I)
CONT_RE = re.compile(r"^\s+at\s|^\s*File \"|^\s*\d+\s*\||^\s*\^~*|^\s*Caused by:|^ {4,}")
HEAD, TAIL, MAX_SUMMARIES, MAX_ERROR_BLOCKS, BLOCK_LINES, MAX_WARNINGS = 10, 10, 15, 25, 30, 15


def classify(line: str) -> str:
    if ERROR_RE.search(line):
        return "error"
    if SUMMARY_RE.search(line):
        return "summary"
    if WARN_RE.search(line):
        return "warning"
    return ""


def plan_log(text: str, max_chars: int, digest: str = "") -> str | None:
    lines = text.split("\n")
    n = len(lines)
    kinds = [classify(ln) for ln in lines]
    if n < HEAD + TAIL + 10 or not (kinds.count("error") >= 1 or kinds.count("summary") >= 2):
        return None
    budget, kept, shown = 0.9 * max_chars, set(), {}
    cost = lambda idx: sum(len(lines[i]) + 1 for i in idx if i not in kept)  # noqa: E731

    def take(idx) -> bool:
        nonlocal budget
        c = cost(idx)
        if c > budget:
            return False
        budget -= c
        kept.update(idx)
        return True

    take(range(HEAD))
    take(range(n - TAIL, n))
    take([i for i, k in enumerate(kinds) if k == "summary"][:MAX_SUMMARIES])
    blocks = 0
    for i in [i for i, k in enumerate(kinds) if k == "error"]:
        if blocks == MAX_ERROR_BLOCKS or i in kept and i - 1 in kept:
            continue
        block = [j for j in (i - 1, i) if j >= 0]
        j = i + 1
        while j < n and len(block) < BLOCK_LINES and CONT_RE.match(lines[j]):
            block.append(j)
            j += 1
        if not take(block):
            break
        blocks += 1
    counts: dict[str, list[int]] = {}
    for i, k in enumerate(kinds):
        if k == "warning":
            counts.setdefault(lines[i].strip(), []).append(i)
    for text_, idx in list(counts.items())[:MAX_WARNINGS]:
        label = f"{lines[idx[0]]}  (×{len(idx)})" if len(idx) > 1 else lines[idx[0]]
        if len(label) + 1 > budget:
            break
        budget -= len(label) + 1
        kept.add(idx[0])
        shown[idx[0]] = label
    order = sorted(kept)
    for a, b in zip(order, order[1:], strict=False):  # gaps of 1-2 lines are filled verbatim
        if 1 < b - a <= 3:
            kept.update(range(a + 1, b))
    out, prev = [], -1
    for i in sorted(kept):
        if i - prev > 1:
            out.append(f"  […{i - prev - 1} lines omitted…]")
        out.append(shown.get(i, lines[i]))
        prev = i
    if prev < n - 1:
        out.append(f"  […{n - 1 - prev} lines omitted…]")
    marker = (
        f"[…compaction: {n - len(kept)} of {n} log lines omitted (kept: head/tail, {blocks} error block(s), "
        f"warnings, summaries).{digest} To retrieve, re-run the command piped through grep/head/tail to see an omitted region.]"
    )
    return "\n".join(out) + "\n" + marker


# -- (c) blind head + tail --------------------------------------------------------------------


def plan_clip(text: str, max_chars: int, tool_name: str, fast_model: bool = False) -> tuple[str, str]:
    head, tail = text[: math.floor(0.75 * max_chars)], text[len(text) - math.floor(0.125 * max_chars) :]
    dropped = len(text) - len(head) - len(tail)
    digest = DIGEST if fast_model and dropped >= SUMMARY_MIN_DROPPED_CHARS else ""
    marker = (
        f"[…compaction: ~{js_round(dropped / 4)} tokens of this {tool_name} output omitted.{digest} To retrieve it, "
        "re-run the tool narrower — read_file with offset/limit, a more specific grep, or bash piped through head/tail.]"
    )
    return head + "\n" + marker + "\n" + tail, marker


def compress_string(
    text: str, tool_name: str, max_chars: int = DEFAULT_TOOL_RESULT_MAX_CHARS, fast_model: bool = False
) -> tuple[str, str] | None:
    """`compressString` (§1.1): None when the text is at or under the budget; else (text, marker)
    from the search planner (any tool), the log planner (Bash only) or the blind clip."""
    if max_chars <= 0 or len(text) <= max_chars:
        return None
    out = plan_search(text, max_chars)
    if out is None and tool_name == "Bash":
        out = plan_log(text, max_chars, DIGEST if fast_model else "")
    if out is not None:
        return out, out[out.rindex("\n") + 1 :]
    return plan_clip(text, max_chars, tool_name, fast_model)


class Efferent:
    name = "efferent"
    label = "efferent classic (≤ 2026-07-07): clip > 16k chars, handoff at 85 %"
    wrapper_tokens = HANDOFF_NOTE_TOKENS
    default = True  # drawn on every conversation's lab page
    params: dict[str, Any] = {"max_chars": DEFAULT_TOOL_RESULT_MAX_CHARS, "pct": DEFAULT_AUTO_HANDOFF_PCT, "fast_model": False}

    def replay(self, session: Session, **params: Any) -> Replay:
        p = merged(self.params, params)
        oh, loaded, summary, windows, folds, last_input = session.overhead_tokens, [], None, [], 0, None
        meter, trigger, handed = Meter(session, self.name), Trigger(), False
        for call, new in steps(session):
            window, events = window_of(session, call), []
            limit = math.ceil(window * p["pct"] / 100)
            handed = False
            for m in new:
                # Once per crossing (common.Trigger): a handoff that leaves the input over the limit
                # is not made again at every later prompt.
                if (
                    m.role == "user"
                    and last_input is not None
                    and loaded
                    and p["pct"] > 0
                    and window > 0
                    and not handed
                    and trigger.fires(last_input, limit)
                ):
                    view = ([summary] if summary else []) + loaded
                    after = folded_summary(session, self.wrapper_tokens, view, folds, None, HANDOFF_NOTE)
                    detail = f"auto-handoff: last input {last_input:,} ≥ {p['pct']} % of {window:,}"
                    events.append(fold_event(call.index, "handoff", view, [after], oh, loaded, detail, meter, last_input))
                    summary, loaded, folds, handed = after, [], folds + 1, True
                s = slot(m)
                if m.role == "tool":
                    done = compress_string(m.text, m.tool_name or "tool", p["max_chars"], p["fast_model"])
                    if done:
                        s = s.rewrite(CLIPPED, done[0], done[1])
                        if DIGEST in done[1]:
                            s = replace(s, tokens=s.tokens + DIGEST_TOKENS)
                        events.append(clip_event(call.index, "clip", m, s, done[1][:160]))
                loaded.append(s)
            w = meter.freeze(call, ([summary] if summary else []) + loaded, oh, window, events)
            windows.append(w)
            if handed:
                trigger.acted(call.index, w.total_tokens, limit)
            last_input = w.total_tokens  # the provider's usage (measured until the replay diverges)
        return finish(self.name, self.label, session, windows, p, trigger.unresolved)


class EfferentEngine:
    """§1.6: fold when the last turn's input > thresholdTokens inside a run, keep the last
    `keep_turns` assistant turns, then skip 3 turns. Smith's settings are the defaults."""

    name = "efferent_engine"
    label = "efferent engine (main): fold > 80k, keep 2 turns"
    wrapper_tokens = HANDOFF_NOTE_TOKENS
    params: dict[str, Any] = {"threshold_tokens": 80_000, "keep_turns": 2, "cooldown_turns": 3}

    def replay(self, session: Session, **params: Any) -> Replay:
        p = merged(self.params, params)
        oh, buf, summary, windows, folds, last_input, cooldown = session.overhead_tokens, [], None, [], 0, None, 0
        meter = Meter(session, self.name)
        for call, new in steps(session):
            window, events = window_of(session, call), []
            in_run = not any(m.role == "user" for m in new)
            buf.extend(slot(m) for m in new)
            if cooldown:
                cooldown -= 1
            elif in_run and last_input is not None and last_input > p["threshold_tokens"]:
                cut = keep_last_assistant_turns(buf, p["keep_turns"])
                if cut > 0:
                    view = ([summary] if summary else []) + buf[:cut]
                    after = folded_summary(session, self.wrapper_tokens, view, folds, None, HANDOFF_NOTE)
                    detail = f"engine fold: last input {last_input:,} > {p['threshold_tokens']:,}"
                    events.append(fold_event(call.index, "fold", view, [after], oh, buf[:cut], detail, meter))
                    summary, buf, folds, cooldown = after, buf[cut:], folds + 1, p["cooldown_turns"]
            w = meter.freeze(call, ([summary] if summary else []) + buf, oh, window, events)
            windows.append(w)
            last_input = w.total_tokens
        return finish(self.name, self.label, session, windows, p)


POLICY = Efferent()
POLICIES = (POLICY, EfferentEngine())
