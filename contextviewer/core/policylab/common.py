"""Shared helpers of the policy lab: estimators, working slots, safe cut points, the summary-size
model and the replay bookkeeping (policy-lab.md §0 and §8). Pure."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ..budget import FACTOR_RANGE, MIN_FIT_CALLS
from .model import CLIPPED, FULL, SUMMARY, Call, CallWindow, Event, Item, Msg, Replay, Session

PREVIEW_CHARS = 160
FOLD_KINDS = frozenset({"fold", "handoff", "summarize", "condense"})
# Every event kind, by the action it is (Replay.actions; the page and `policies --json` show them).
ACTION_OF = {
    "fold": "folds", "handoff": "folds", "summarize": "folds", "condense": "folds",
    "clip": "clips", "compress": "clips", "args_truncate": "clips",
    "clear": "clears", "microcompact": "clears", "mask": "clears",
    "offload": "offloads",
    "drop": "drops", "evict": "drops",
}
ACTIONS = ("folds", "clips", "clears", "offloads", "drops")


# ---------------------------------------------------------------------------------------------
# Estimators (each harness decides with its own; §0 "Token estimation")


def chars4(text_or_chars: str | int) -> int:
    """round(chars/4): efferent `estimateTokens`, Claude Code `roughTokenCountEstimation`."""
    n = text_or_chars if isinstance(text_or_chars, int) else len(text_or_chars)
    return round(n / 4)


def bytes4(text: str) -> int:
    """Codex `approx_token_count`: UTF-8 bytes / 4."""
    return len(text.encode("utf-8")) // 4


def lc_approx(chars: int, chars_per_token: float = 4.0) -> int:
    """langchain-core `count_tokens_approximately` for one message: ceil(chars/cpt) + 3 (§2.4)."""
    return math.ceil(chars / chars_per_token) + 3


def picoclaw_est(chars: int) -> int:
    """picoclaw `EstimateMessageTokens`: (chars + 12 per message)·2/5, integer math (§5.1)."""
    return (chars + 12) * 2 // 5


def lab_tokens(text: str, ref: Msg | None = None) -> int:
    """Display count of a rewritten text: the message's own tokens-per-char ratio when known."""
    if ref is not None and ref.chars and ref.tokens:
        return max(1, round(len(text) * ref.tokens / ref.chars)) if text else 0
    return chars4(text)


# ---------------------------------------------------------------------------------------------
# Working slots: what a policy holds in its window before it is frozen into Items


@dataclass(frozen=True, slots=True)
class Slot:
    key: str
    state: str
    text: str  # the current text (full, clipped, marker, stub)
    tokens: int  # lab tokens of `text`
    msg: Msg | None = None
    marker: str = ""  # the marker or note shown instead of the text
    cached: Item | None = field(default=None, init=False, compare=False, repr=False)  # item(), made once

    @property
    def role(self) -> str | None:
        return self.msg.role if self.msg else None

    @property
    def chars(self) -> int:
        return len(self.text)

    def rewrite(self, state: str, text: str, marker: str = "") -> Slot:
        return replace(self, state=state, text=text, tokens=lab_tokens(text, self.msg), marker=marker)

    def item(self) -> Item:
        if self.cached is not None:
            return self.cached
        shown = self.marker or self.text[:PREVIEW_CHARS]
        item = Item(
            key=self.key,
            state=self.state,
            text_or_marker=shown,
            tokens=self.tokens,
            msg_id=self.msg.id if self.msg else None,
            role=self.role,
        )
        object.__setattr__(self, "cached", item)  # a window holds the same slot call after call
        return item


def slot(msg: Msg) -> Slot:
    tokens = msg.tokens if msg.tokens or not msg.text else lab_tokens(msg.text)
    return Slot(key=msg.id, state=FULL, text=msg.text, tokens=tokens, msg=msg)


def synthetic(key: str, state: str, tokens: int, marker: str, role: str = "user") -> Slot:
    return Slot(key=key, state=state, text=marker, tokens=tokens, msg=None, marker=marker)


def clip(s: Slot, text: str, marker: str, state: str = CLIPPED) -> Slot:
    return s.rewrite(state, text, marker)


# ---------------------------------------------------------------------------------------------
# Walking the session


def history(session: Session) -> list[Msg]:
    """The recorded messages a replay works on: the session's own fold artifacts left out."""
    return [m for m in session.messages if not m.is_recorded_fold]


def steps(session: Session) -> Iterator[tuple[Call, list[Msg]]]:
    """Each recorded call with the messages that arrived since the previous call (seq < call.seq)."""
    msgs = sorted(history(session), key=lambda m: m.seq)
    i = 0
    for call in sorted(session.calls, key=lambda c: c.index):
        new = []
        while i < len(msgs) and msgs[i].seq < call.seq:
            new.append(msgs[i])
            i += 1
        yield call, new


def window_of(session: Session, call: Call | None = None) -> int:
    return (call.window if call and call.window else 0) or session.window or 0


def total(slots: Sequence[Slot], overhead: int) -> int:
    return overhead + sum(s.tokens for s in slots)


def starts_user_turn(new: Sequence[Msg]) -> bool:
    return any(m.role == "user" for m in new)


def parse_ts(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# Safe cut points (§0): four variants, each keeps a tool call together with its results.


def _answers(tool: Msg, call: Msg) -> bool:
    return call.role == "assistant" and bool(set(tool.tool_call_ids) & set(call.tool_call_ids))


def snap_back_to_ai(msgs: Sequence[Msg | Slot], cut: int) -> int:
    """LangChain SummarizationMiddleware (§2.3): a cut on a ToolMessage moves back to the
    AIMessage that issued the calls; only if there is none, forward past the ToolMessages."""
    ms = [_msg(m) for m in msgs]
    if cut <= 0 or cut >= len(ms) or ms[cut] is None or ms[cut].role != "tool":
        return cut
    for j in range(cut - 1, -1, -1):
        m = ms[j]
        if m is not None and (_answers(ms[cut], m) or (m.role == "assistant" and not ms[cut].tool_call_ids)):
            return j
    while cut < len(ms) and ms[cut] is not None and ms[cut].role == "tool":
        cut += 1
    return cut


def keep_last_assistant_turns(msgs: Sequence[Msg | Slot], keep_turns: int) -> int:
    """efferent engine `safeKeepFrom` (§1.6): index of the keep_turns-th assistant message from
    the end, never 0. Returns 0 (no fold) when there are not enough assistant messages."""
    seen = 0
    for j in range(len(msgs) - 1, 0, -1):
        m = _msg(msgs[j])
        if m is not None and m.role == "assistant":
            seen += 1
            if seen == keep_turns:
                return j
    return 0


def find_safe_boundary(msgs: Sequence[Msg | Slot], target: int) -> int:
    """picoclaw `findSafeBoundary` (§5.2): the last user-message index at or before target, else
    the first one after it; 0 means no safe cut."""
    users = [j for j, m in enumerate(msgs) if (mm := _msg(m)) is not None and mm.role == "user"]
    before = [j for j in users if 0 < j <= target]
    if before:
        return before[-1]
    after = [j for j in users if j > target]
    return after[0] if after else 0


def api_round_start(msgs: Sequence[Msg | Slot], cut: int) -> int:
    """Claude Code (§3.3): history is cut only at API-round starts (an assistant turn together
    with the tool results answering it); a cut inside a round moves back to its assistant."""
    while 0 < cut < len(msgs) and (m := _msg(msgs[cut])) is not None and m.role == "tool":
        cut -= 1
    return cut


def _msg(x: Msg | Slot) -> Msg | None:
    return x.msg if isinstance(x, Slot) else x


def separates_pair(msgs: Sequence[Msg | Slot], cut: int) -> bool:
    """True when cutting before index `cut` leaves a tool result apart from its call."""
    head, tail = [_msg(m) for m in msgs[:cut]], [_msg(m) for m in msgs[cut:]]
    head_ids = {i for m in head if m and m.role == "assistant" for i in m.tool_call_ids}
    return any(m and m.role == "tool" and set(m.tool_call_ids) & head_ids for m in tail)


# ---------------------------------------------------------------------------------------------
# Summary size (§8)

# The wrapper text a harness adds around a summary is exact (§8 "Always add"): each policy says its own
# size in tokens (its `wrapper_tokens`, read through the registry); one that does not gets this.
DEFAULT_WRAPPER_TOKENS = 20
SUMMARY_A, SUMMARY_B, SUMMARY_FLOOR = 1_500, 0.015, 500


@dataclass(frozen=True, slots=True)
class SummarySize:
    tokens: int  # body + wrapper
    modelled: bool  # False only when measured in this session at this fold
    source: str  # measured | session median | formula


def summary_size(session: Session, wrapper: int, folded_tokens: int, fold_no: int, cap: int | None) -> SummarySize:
    """SummaryModel(harness, folded) of §8, first source wins: the session's own compaction at
    this fold (exact), the median of the session's own compactions, else
    min(cap, max(floor, a + b·folded)). The harness's wrapper text (`wrapper` tokens: the policy's
    `wrapper_tokens`) is always added."""
    real = [t for t in session.real_summary_tokens if t > 0]
    if fold_no < len(real):
        return SummarySize(real[fold_no] + wrapper, False, "measured")
    if real:
        return SummarySize(int(statistics.median(real)) + wrapper, True, "session median")
    body = max(SUMMARY_FLOOR, round(SUMMARY_A + SUMMARY_B * folded_tokens))
    if cap:
        body = min(cap, body)
    return SummarySize(body + wrapper, True, "formula")


def summary_slot(key: str, size: SummarySize, text: str) -> Slot:
    badge = "" if not size.modelled else f" [modelled: {size.source}]"
    return synthetic(key, SUMMARY, size.tokens, text + badge)


def folded_summary(session: Session, wrapper: int, folded: Sequence[Slot], fold_no: int, cap: int | None, text: str) -> Slot:
    """The summary of fold `fold_no` (counted from 0) standing for the `folded` slots, sized by
    summary_size with the policy's `wrapper` tokens."""
    size = summary_size(session, wrapper, sum(s.tokens for s in folded), fold_no, cap)
    return summary_slot(f"summary:{fold_no}", size, text)


def fold_event(
    call_index: int, kind: str, before: Sequence[Slot], after: Sequence[Slot], overhead: int,
    dropped: Iterable[Slot], detail: str, meter: Meter | None = None, count: int | None = None,
) -> Event:
    """A fold, handoff, summary or condensation: the window's tokens before and after, the messages
    it put away. With the replay's `meter`, both figures are provider tokens: before = `count` (the
    harness's own count that fired it) or the meter's estimate anchored on the last measured call."""
    if meter is None:
        return Event(call_index, kind, total(before, overhead), total(after, overhead), dropped_msg_ids=ids(dropped), detail=detail)
    b = count if count is not None else meter.count(total(before, overhead))
    a = meter.estimate(total(after, overhead))
    return Event(call_index, kind, b, a, dropped_msg_ids=ids(dropped), detail=detail, scope="provider")


def clip_event(call_index: int, kind: str, msg: Msg, now: Slot, detail: str = "") -> Event:
    """A message rewritten in place (clipped, truncated, offloaded): its tokens as recorded and as
    rewritten (one message's tokens, not a window's: scope "message")."""
    return Event(call_index, kind, slot(msg).tokens, now.tokens, clipped_msg_ids=(msg.id,), detail=detail, scope="message")


# ---------------------------------------------------------------------------------------------
# Freezing windows and the replay


def zone(total_tokens: int, window: int) -> str:
    """Gauge bands as efferent's status bar (§1.2): ok < 70 %, warn ≥ 70 %, red ≥ 90 %."""
    if not window:
        return "ok"
    f = total_tokens / window
    return "red" if f >= 0.9 else "warn" if f >= 0.7 else "ok"


def freeze(
    call: Call,
    slots: Sequence[Slot],
    overhead: int,
    window: int,
    events: Sequence[Event],
    zone_of: Callable[[int, int], str] = zone,
) -> CallWindow:
    t = total(slots, overhead)
    return CallWindow(call.index, tuple(s.item() for s in slots), t, zone_of(t, window), tuple(events))


def recorded_windows(session: Session) -> Iterator[tuple[Call, list[Slot]]]:
    """Per call, what the log says it held: every message since the session's own last fold (its
    summary onward; the boundary marker itself is not sent). One pass: each call's window is the
    previous one plus the messages that arrived since, started over at the session's own fold.
    The recorded curve (recorded.py) draws it; calibrate fits the scale on it."""
    msgs = sorted(session.messages, key=lambda m: m.seq)
    window: list[Slot] = []
    i = 0
    for call in sorted(session.calls, key=lambda c: c.index):
        while i < len(msgs) and msgs[i].seq < call.seq:
            m = msgs[i]
            i += 1
            if m.is_recorded_fold:
                window = [] if m.kind == "boundary" else [slot(m)]
            else:
                window.append(slot(m))
        yield call, window


def recorded_estimates(session: Session) -> tuple[list[tuple[int, int, int]], list[int]]:
    """(call seq, measured input or 0, lab tokens of its recorded window) per call, and the seqs of
    the session's own folds: what calibrate fits the scale on."""
    rows = []
    for call, slots in recorded_windows(session):
        rows.append((call.seq, call.usage_input, sum(s.tokens for s in slots)))
    folds = sorted(m.seq for m in session.messages if m.kind == "boundary") or sorted(
        m.seq for m in session.messages if m.kind == "summary"
    )
    return rows, folds


def calibrated(session: Session, raw_total: int) -> int:
    """A replayed total (overhead + lab tokens) in provider tokens: overhead + scale x lab tokens."""
    oh = session.overhead_tokens
    if session.scale == 1.0:
        return raw_total
    return oh + round(session.scale * (raw_total - oh))


def unmodified_totals(session: Session) -> dict[int, int]:
    """Per call, the whole history it saw (no fold, no clip: a policy that never acts), in provider
    tokens as a Meter gives them (measured up to the session's own first fold). Tokens saved are
    counted against it, so a policy that only removes things never saves less than 0."""
    out, running, meter = {}, 0, Meter(session)
    for call, new in steps(session):
        running += sum(slot(m).tokens for m in new)
        out[call.index] = meter.close(call, session.overhead_tokens + running, ())
    return out


def calibrate(session: Session) -> Session:
    """The session with its scale and harness overhead fitted on its own measured calls (§0,
    "scale = recorded prompt tokens ÷ estimated tokens" on the unmodified history): a least-squares
    line of measured input against the lab tokens of each call's window, over the calls before the
    session's own first fold; scale = its slope (provider tokens per lab token), overhead = its
    intercept (what every call carries besides the messages). With measured calls only after the
    session's own first fold, the calibration FAILS (below) with the overhead of the first of them.
    With fewer than three measured calls
    the overhead is the first measured call's input minus its messages (§0, "Harness overhead") and
    scale = 1. A slope outside budget.FACTOR_RANGE is no tokenizer's gap (the log's text is not what
    the model read: redacted or elided outputs): the calibration FAILS, scale = 1, and the session
    says so (`calibrated=False`, `calibration_note`): every replayed figure is then an uncalibrated
    estimate, not comparable with the measured curve."""
    rows, folds = recorded_estimates(session)
    points = [(m, e) for seq, m, e in rows if m and (not folds or seq <= folds[0])]
    if not points:
        measured = [(m, e) for _seq, m, e in rows if m]
        if measured:
            # Measured calls, but only after the session's own first fold: none measured the
            # unmodified history. The overhead is still what the first measured call read besides
            # its logged window (§0, "Harness overhead"), so the replays are in provider tokens;
            # the scale is not fitted, and the figures are uncalibrated estimates (said, flagged).
            m, e = measured[0]
            note = (
                "calibration failed: every measured call comes after the session's own first fold, so none "
                "measured the unmodified history; the overhead is the first measured call's input less its "
                "logged window and the scale is not fitted: the replayed curves are uncalibrated estimates"
            )
            return replace(session, scale=1.0, overhead_tokens=max(0, m - e), calibrated=False, calibration_note=note)
        # Nothing measured, nothing to calibrate against: every figure, the recorded curve's too, is
        # the same estimate, so the replays stay comparable with it (said, not flagged as a failure).
        note = "no measured model call: every figure, the recorded curve's too, is the lab's estimate" if session.calls else ""
        return replace(session, calibrated=True, calibration_note=note)
    scale, overhead = 1.0, points[0][0] - points[0][1]
    n = len(points)
    if n >= MIN_FIT_CALLS:
        mean_m, mean_e = sum(m for m, _ in points) / n, sum(e for _, e in points) / n
        den = sum((e - mean_e) ** 2 for _, e in points)
        k = sum((e - mean_e) * (m - mean_m) for m, e in points) / den if den else 0.0
        if not FACTOR_RANGE[0] <= k <= FACTOR_RANGE[1]:
            note = (
                f"calibration failed: the measured input grows {k:.2f} tokens per token of the logged text "
                f"(a tokenizer's ratio lies between {FACTOR_RANGE[0]} and {FACTOR_RANGE[1]}); the log does not hold "
                "what the model read (redacted or elided text), so the replayed curves are uncalibrated estimates"
            )
            return replace(session, scale=1.0, overhead_tokens=max(0, round(overhead)), calibrated=False, calibration_note=note)
        scale, overhead = k, round(mean_m - k * mean_e)
    return replace(session, scale=scale, overhead_tokens=max(0, round(overhead)), calibrated=True, calibration_note="")


def recorded_fold_seqs(session: Session) -> list[int]:
    """The positions of the session's own folds: as logged (recorded_folds), else its boundary
    messages, else its summary messages (one position per fold)."""
    if session.recorded_folds:
        return sorted(f.seq for f in session.recorded_folds)
    marks = [m.seq for m in session.messages if m.kind == "boundary"] or [m.seq for m in session.messages if m.kind == "summary"]
    return sorted(marks)


def first_recorded_fold(session: Session) -> int | None:
    """The position of the session's own first fold (its boundary, summary or a logged fold)."""
    seqs = [m.seq for m in session.messages if m.is_recorded_fold] + [f.seq for f in session.recorded_folds]
    return min(seqs) if seqs else None


class Meter:
    """What the provider would have measured for each replayed window, call after call.

    While the replay's window is still the recorded one, that is the call's MEASURED input: the
    trigger counts of the harnesses ("last usage + an estimate of what came after it") start from
    real usage, not from the lab's estimate. The window stops being the recorded one at the
    policy's first action or at the session's own fold, whichever comes first; the replay of the
    session's own harness (`policy` == session.own_policy) that folds exactly where the session
    folded is back in step with the recording (both now hold that fold's summary), and is measured
    again until the next difference. Out of step, windows are estimates: overhead + scale x lab
    tokens (`calibrated`) plus the part of the last measured call's gap that the window still
    holds (`estimate`). `count(raw)` estimates a window not sent yet (a zone check, a fold's
    "before"): the last call's provider total plus the calibrated growth since it."""

    def __init__(self, session: Session, policy: str = ""):
        self.session = session
        self.fold_seqs = recorded_fold_seqs(session)
        self.own = bool(policy) and policy == session.own_policy
        self.in_step = True
        self.prev_seq: int | None = None
        self.last: tuple[int, int] | None = None  # (provider total, raw total) of the previous call
        self.last_measured = False
        # At the last measured call: what the measurement exceeded the calibrated estimate by, and
        # the lab tokens of that window. An estimate carries that gap for the part of the window it
        # still holds, so a replay that keeps growing goes on from the measured curve, not below it.
        self.gap, self.gap_raw = 0, 0

    def count(self, raw: int) -> int:
        if self.last is None:
            return calibrated(self.session, raw)
        provider, last_raw = self.last
        return provider + round(self.session.scale * (raw - last_raw))

    def close(self, call: Call, raw: int, events: Sequence[Event]) -> int:
        """The provider total of `call`'s window (raw: overhead + lab tokens), after its events."""
        fold_passed = any((self.prev_seq is None or self.prev_seq < f) and f < call.seq for f in self.fold_seqs)
        if fold_passed:
            folded = [e for e in events if e.kind in FOLD_KINDS]
            self.in_step = self.own and bool(folded) and len(folded) == len(events)
        elif events:
            self.in_step = False
        self.prev_seq = call.seq
        self.last_measured = self.in_step and bool(call.usage_input)
        if self.last_measured:
            provider = call.usage_input
            self.gap, self.gap_raw = provider - calibrated(self.session, raw), raw
        else:
            provider = self.estimate(raw)
        self.last = (provider, raw)
        return provider

    def estimate(self, raw: int) -> int:
        """A window the provider never measured: overhead + scale x its lab tokens, plus the gap of
        the last measured call in proportion to how much of that window's messages it still holds
        (all of it while the window only grows; a fold that keeps a tenth keeps a tenth of the gap)."""
        oh = self.session.overhead_tokens
        base = calibrated(self.session, raw)
        if not self.gap or self.gap_raw <= oh:
            return base
        return max(oh, base + round(self.gap * min(1.0, max(0, raw - oh) / (self.gap_raw - oh))))

    def freeze(
        self, call: Call, slots: Sequence[Slot], overhead: int, window: int, events: Sequence[Event],
        zone_of: Callable[[int, int], str] | None = None,
    ) -> CallWindow:
        """The call's window with its provider total (measured or estimated) and the zone of that
        total; its events' window figures (lab tokens) in provider tokens, anchored like `count`."""
        events = tuple(
            replace(e, tokens_before=self.count(e.tokens_before), tokens_after=self.count(e.tokens_after), scope="provider")
            if e.scope == "window" else e
            for e in events
        )
        w = freeze(call, slots, overhead, window, events)
        t = self.close(call, w.total_tokens, events)
        return replace(w, total_tokens=t, zone=(zone_of or zone)(t, window))


class Trigger:
    """A threshold that fires once per crossing (issue 34): the policy acts when its count reaches the
    limit while armed, and is armed again only once a count is under the limit. An action that leaves
    the window at or over the limit is remembered in `unresolved` (the replay says the policy could
    not bring the window under its limit) instead of firing again at every call after it."""

    def __init__(self) -> None:
        self.armed = True
        self.unresolved: list[tuple[int, int, int]] = []

    def fires(self, count: int, limit: int) -> bool:
        if count < limit:
            self.armed = True
            return False
        return self.armed

    def acted(self, call_index: int, count_after: int, limit: int) -> None:
        """After the action: armed again when it brought the count under the limit, else not until a
        later count is under it."""
        self.armed = count_after < limit
        if not self.armed:
            self.unresolved.append((call_index, count_after, limit))


def finish(name: str, label: str, session: Session, windows: list[CallWindow], params: dict[str, Any],
           unresolved: Sequence[tuple[int, int, int]] = ()) -> Replay:
    """The replay's figures. The windows' totals are provider tokens already (Meter.freeze); each
    event's figures are brought to provider tokens here by what they measure (Event.scope): a
    window's lab tokens with the overhead, one message's with the scale only, provider tokens as they are."""
    def provider(e: Event) -> Event:
        if e.scope == "provider":
            return e
        if e.scope == "message":
            return replace(e, tokens_before=round(session.scale * e.tokens_before), tokens_after=round(session.scale * e.tokens_after))
        return replace(e, tokens_before=calibrated(session, e.tokens_before), tokens_after=calibrated(session, e.tokens_after))

    if session.scale != 1.0:
        windows = [replace(w, events=tuple(provider(e) for e in w.events)) for w in windows]
    events = [e for w in windows for e in w.events]
    base = unmodified_totals(session)
    saved = sum(base.get(w.call_index, w.total_tokens) - w.total_tokens for w in windows)
    actions = dict.fromkeys(ACTIONS, 0)
    for e in events:
        group = ACTION_OF.get(e.kind, "folds" if e.kind in FOLD_KINDS else "clips")
        actions[group] += 1
    calls = {c.index: c for c in session.calls}
    fold_seq = first_recorded_fold(session)
    diverged = [c.index for c in session.calls if fold_seq is not None and c.seq > fold_seq] + [e.call_index for e in events]
    overflow = sum(1 for w in windows if (limit := window_of(session, calls.get(w.call_index))) and w.total_tokens > limit)
    return Replay(
        policy=name,
        label=label,
        windows=windows,
        events=events,
        peak=max((w.total_tokens for w in windows), default=0),
        saved_tokens=saved,
        fires=len(events),
        red_zone_calls=sum(1 for w in windows if w.zone == "red"),
        params=dict(params),
        actions=actions,
        overflow_calls=overflow,
        estimated_from=min(diverged) if diverged and min(diverged) < len(session.calls) else None,
        unresolved=tuple(unresolved),
    )


def merged(defaults: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    unknown = set(params) - set(defaults)
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(sorted(unknown))}; known: {', '.join(defaults)}")
    return {**defaults, **params}


def ids(slots: Iterable[Slot]) -> tuple[str, ...]:
    return tuple(s.msg.id for s in slots if s.msg is not None)


def usage_then_estimate(
    prev_total: int | None, prev_call: Call | None, new: Sequence[Msg], est: Callable[[Msg], int], rough: int,
    *, usage_covers: str = "all",
) -> int:
    """ "Last API usage + an estimate for every message after it" (Claude Code
    `tokenCountWithEstimation` §3.1, Codex active_tokens §4.1). Open loop, the last usage is the
    previous call's window in provider tokens as the replay's Meter gave it (its measured input
    while nothing has diverged, else the calibrated estimate) plus its output. What that output
    covers of the response that call produced (when it was measured): `usage_covers="all"` its
    every message (Codex: the response's items); `"first"` only its first record (Claude Code
    writes one record per content block, each with the usage of the stream's start, and counts the
    records after the first one of the last response by estimate). Before any response: `rough`."""
    if prev_total is None or prev_call is None:
        return rough
    value = prev_total + prev_call.output
    covered = 0
    for m in new:
        if m.role == "assistant" and m.call_index == prev_call.index and prev_call.output:
            if usage_covers == "all" or covered == 0:
                covered += 1
                continue
        value += est(m)
    return value
