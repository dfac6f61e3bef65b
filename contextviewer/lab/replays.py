"""The policy lab's database side: a recorded conversation as the lab's `Session`, every chosen
policy replayed over it, and what each action would have put at risk.

The replay is OPEN LOOP (docs/policy-lab.md §0): the recorded messages and calls are fixed; a
policy only decides what its harness would have put in the window before each recorded call.
After the first fold the real agent would have behaved differently. Every surface says so.

What comes from where:
- messages: every message of the conversation in position order except the session's own
  compaction summaries and fold boundaries (the lab models summaries itself), sidechain lines and
  records that carry no tokens; tokens are the lab tokenizer's counts stored at import;
- calls: the recorded model calls with their measured usage; windows from the harness rules
  (window.call_window, the same as the conversation page);
- summary sizes: the session's own compaction summaries (imported folds that make a segment);
- calibration: scale (provider tokens per lab token) and harness overhead fitted on the
  session's measured calls (core/policylab/common.calibrate);
- clipped tool results: the `clip` the importer put on a tool result's `extra` (core/records.py
  Block.extra): the harness's marker, the tokens it says were omitted and the original where the
  log holds it (some formats keep the whole output beside the clipped one, others only say how
  much was left out);
- the session's own folds: the imported Fold rows (their boundary messages and summaries).

Facts at risk: the fact probes (core/facts.py) run on what an action drops or clips, checked
against the text that remains in the window right after it. A summary whose size is modelled
has no text, so a fact a modelled summary might have kept still counts as at risk.
"""

from __future__ import annotations

import bisect
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from contextviewer.core import facts as core_facts, model_specs, tokens
from contextviewer.core.harness import harness_window
from contextviewer.core.policylab import Call, Msg, Replay, Session, get as get_policy, names as policy_names
from contextviewer.core.policylab.common import ACTION_OF, FOLD_KINDS, calibrate
from contextviewer.core.policylab.model import CLIPPED, FULL, RecordedFold
from contextviewer.importers import formats
from contextviewer.core.severity import CRITICAL_AT

from contextviewer.conversations import page_cache, segments
from contextviewer.conversations.models import Conversation, Fold, FoldOrigin, Message, ModelCall

OPEN_LOOP_NOTE = (
    "Open loop: the recorded actions are replayed unchanged; after the first fold the real agent "
    "would have behaved differently."
)
FACTS_SHOWN = 12  # facts listed per action on the page (the count is always whole)

BASELINE = "recorded"  # the registry's recorded window: the curve every policy is drawn against


class UnknownPolicy(ValueError):
    pass


# --- the session ------------------------------------------------------------------------------


@dataclass
class Clip:
    """A tool result the model got clipped, with what the log holds of the original."""

    position: int
    turn: int
    tool_name: str
    given: str  # what the model got (the marker included)
    original: str | None  # the whole output, when the log holds it
    marker: str
    given_tokens: int
    original_tokens: int | None
    clipped_tokens: int  # original - given; without an original: the count its marker states


@dataclass
class LabSession:
    session: Session
    by_id: dict[str, dict]  # Msg id -> the fact probes' message dict (position, turn, role, blocks)
    clips: list[Clip]
    usage: list[dict]  # per call: its measured usage split and model (cost at list price)
    summaries_measured: int  # compaction summaries of the session itself
    cwd: str = ""
    # The session's own summaries by the call that first carried them: a replayed fold at that call
    # coincides with the recorded one and carries that summary (facts at risk are checked against it).
    real_summaries: dict[int, str] = field(default_factory=dict)
    # The params of the own harness's policy for the session's recorded CLI version, and what the page
    # says about that rule (core/harness.py Harness.rule_for): a version with no measured rule says so.
    own_params: dict = field(default_factory=dict)
    rule_note: str = ""
    fact_cache: dict[str, list] = field(default_factory=dict)  # Msg id -> its facts (core/facts.py)
    prepared_cache: dict = field(default_factory=dict)  # a held text -> core_facts.prepare of it

    @property
    def clipped_tokens(self) -> int:
        return sum(c.clipped_tokens for c in self.clips)


def _role(role: str, blocks: list[dict]) -> str:
    if blocks and all(b.get("kind") == "tool_result" for b in blocks):
        return "tool"
    return role if role in ("system", "user", "assistant", "tool") else "system"


def _text(blocks: list[dict]) -> str:
    return "\n".join(b.get("text") or "" for b in blocks if b.get("text"))


def _clip_of(blocks: list[dict]) -> dict | None:
    """The first `clip` (marker, omitted_tokens, original) the importer put on a tool result's extra."""
    for b in blocks:
        extra = b.get("extra") if b.get("kind") == "tool_result" else None
        if isinstance(extra, dict) and isinstance(extra.get("clip"), dict) and extra["clip"].get("marker"):
            return extra["clip"]
    return None


def load_session(conv: Conversation) -> LabSession:
    """The conversation as the lab's Session (one pass over messages, one over calls)."""
    calls, usage, call_of_api = _calls(conv)
    # The session's own folds (imported, making a segment): their boundary messages.
    folds = [f for f in segments.segment_folds(conv) if f.origin == FoldOrigin.IMPORTED]
    boundary_ids = [f.boundary_id for f in folds if f.boundary_id]
    boundaries = set(Message.objects.filter(pk__in=boundary_ids).values_list("position", flat=True)) if boundary_ids else set()
    msgs, by_id, clip_rows = _messages(conv, boundaries, calls, call_of_api)
    clips = _clips(clip_rows)
    originals = {str(c.position): c.original for c in clips if c.original}
    if originals:
        msgs = [_with_original(m, originals[m.id]) if m.id in originals else m for m in msgs]
    summary_sizes = tuple(tokens.count_text(f.summary_text) for f in folds if f.summary_text)
    # Calibrated per session (docs/policy-lab.md §0): scale and harness overhead fitted on the
    # session's own measured calls, so a policy that does nothing draws the recorded curve.
    session = calibrate(
        Session(
            agent=conv.agent,
            messages=tuple(msgs),
            calls=tuple(calls),
            window=segments.call_window(conv, None),
            real_summary_tokens=summary_sizes,
            recorded_folds=_recorded_folds(conv),
            own_policy=formats.harness(conv.agent).own_policy or "",
        )
    )
    real_summaries = {m.call_index: m.text for m in msgs if m.kind == "summary" and m.call_index is not None and m.text}
    own_params, rule_note = formats.harness(conv.agent).rule_for(conv.cli_version or None)
    return LabSession(session, by_id, clips, usage, len(summary_sizes), conv.cwd or "", real_summaries,
                      own_params=own_params, rule_note=rule_note)


def _calls(conv: Conversation) -> tuple[list[Call], list[dict], dict[str, int]]:
    """The recorded model calls in order, each with its model's window and input limit (the harness
    rules'); per call its measured usage split and model (for its cost); the first call of each
    API message id."""
    call_rows = list(
        ModelCall.objects.filter(conversation=conv)
        .order_by("position", "id")
        .values_list(
            "position", "api_message_id", "model", "input_uncached", "cache_write", "cache_write_5m",
            "cache_write_1h", "cache_read", "output", "estimated_context",
        )
    )
    window_of: dict[str, int] = {}
    limit_of: dict[str, int] = {}
    calls: list[Call] = []
    usage: list[dict] = []
    call_of_api: dict[str, int] = {}
    for i, (pos, api, model, unc, cw, cw5, cw1, cr, out, _est) in enumerate(call_rows):
        if model not in window_of:
            spec = segments.call_spec(conv, model)
            rules = formats.harness(conv.agent, spec)
            # Each model in the window its harness ran it in: a Claude Code session that switched to
            # an Anthropic model whose API window is 1M ran it in 200k unless the user chose [1m].
            if conv.window is None and model and (ran_in := harness_window(rules, model, conv.peak_context or 0)):
                spec = model_specs.lookup(model, override_window=ran_in)
            # Codex: the window its log records for the model, not the model's API limit.
            window_of[model] = spec.window
            limit_of[model] = rules.input_limit_logged(conv.window) or rules.input_limit(spec)
        calls.append(
            Call(
                index=i, seq=pos, usage_input=unc + cw + cr, output=out, model=model or None, window=window_of[model],
                input_limit=limit_of[model],
            )
        )
        w5, w1 = model_specs.split_cache_write(cw, cw5, cw1)
        usage.append({"model": model, "input_uncached": unc, "cache_write_5m": w5, "cache_write_1h": w1, "cache_read": cr, "output": out})
        call_of_api.setdefault(api, i)
    return calls, usage, call_of_api


def _messages(
    conv: Conversation, boundaries: set[int], calls: list[Call], call_of_api: dict[str, int]
) -> tuple[list[Msg], dict[str, dict], list[tuple[int, int, str, str, dict]]]:
    """The lab's messages (sidechain lines and records without tokens left out; the session's own
    summaries and fold boundaries kept, marked), each with the call that carried it; the fact
    probes' dict of each message but those; and the clipped tool results."""
    call_seqs = [c.seq for c in calls]
    msgs: list[Msg] = []
    by_id: dict[str, dict] = {}
    clip_rows: list[tuple[int, int, str, str, dict]] = []  # position, turn, tool, given, the result's clip
    tool_names: dict[str, str] = {}
    rows = (
        Message.objects.filter(conversation=conv, is_sidechain=False)
        .order_by("position")
        .values_list("position", "turn", "role", "blocks", "is_meta", "is_compact_summary", "api_message_id", "token_total", "timestamp")
        .iterator(chunk_size=2000)
    )
    for pos, turn, role, blocks, is_meta, is_compact_summary, api, token_total, ts in rows:
        blocks = blocks or []
        # The session's own fold: its summary and boundary stay (the recorded curve starts over at
        # them; every other policy skips them).
        kind_mark = ""
        if is_compact_summary:
            kind_mark = "summary"
        elif pos in boundaries:
            kind_mark = "boundary"
        elif not token_total:
            continue
        text = _text(blocks)
        kind = _role(role, blocks)
        call_ids, tool_name = _tool_ids(blocks, tool_names)
        if kind == "assistant" and api in call_of_api:
            call_index = call_of_api[api]
        else:
            i = bisect.bisect_right(call_seqs, pos)
            call_index = i if i < len(calls) else None
        mid = str(pos)
        if kind == "tool" and (clip := _clip_of(blocks)):
            clip_rows.append((pos, turn, tool_name or "", text, clip))
        msgs.append(
            Msg(
                id=mid, seq=pos, role=kind, text=text, tool_name=tool_name or None, tool_call_ids=tuple(call_ids),
                call_index=call_index, ts=ts.isoformat() if ts else None, tokens=int(token_total or 0), chars=len(text),
                kind=kind_mark,
            )
        )
        if kind_mark:
            continue  # a recorded summary is no action's to drop: no facts are read from it
        by_id[mid] = {"position": pos, "turn": turn, "role": role, "blocks": blocks, "is_meta": is_meta}
    return msgs, by_id, clip_rows


def _tool_ids(blocks: list[dict], tool_names: dict[str, str]) -> tuple[list[str], str | None]:
    """The tool ids of a message's calls and results, and the tool its result answers (named on the
    result, else on its call: `tool_names`, tool id -> name, remembers the calls seen)."""
    call_ids = []
    tool_name = None
    for b in blocks:
        if b.get("kind") == "tool_call" and b.get("tool_id"):
            call_ids.append(b["tool_id"])
            tool_names[b["tool_id"]] = b.get("tool_name") or ""
        elif b.get("kind") == "tool_result":
            if b.get("tool_id"):
                call_ids.append(b["tool_id"])
            tool_name = tool_name or b.get("tool_name") or tool_names.get(b.get("tool_id") or "")
    return call_ids, tool_name


def _recorded_folds(conv: Conversation) -> tuple[RecordedFold, ...]:
    """The session's own folds (imported, counted), where each happened: at its boundary, else its
    summary, else just after its position."""
    return tuple(
        RecordedFold(seq=b if b is not None else s if s is not None else p + 1, kind=kind, trigger=trigger or "",
                     tokens_before=before or 0, tokens_after=after or 0)
        for b, s, p, kind, trigger, before, after in Fold.objects.filter(conversation=conv, origin=FoldOrigin.IMPORTED)
        .counted()
        .order_by("position", "id")
        .values_list("boundary__position", "summary_message__position", "position", "kind", "trigger", "tokens_before", "tokens_after")
    )


def _with_original(m: Msg, original: str) -> Msg:
    return replace(m, original_text=original)


def _clips(rows: list[tuple[int, int, str, str, dict]]) -> list[Clip]:
    """The clipped tool results, with their originals where the importer found them in the log."""
    out = []
    for pos, turn, tool, given, clip in rows:
        original = clip.get("original") if isinstance(clip.get("original"), str) else None
        if original is not None and len(original) <= len(given):
            original = None  # the log's copy is no longer than what the model got: nothing was cut
        given_tokens = tokens.count_text(given)
        if original is not None:
            original_tokens = tokens.count_text(original)
            clipped = max(0, original_tokens - given_tokens)
        else:
            original_tokens = None
            omitted = clip.get("omitted_tokens")
            clipped = omitted if isinstance(omitted, int) and not isinstance(omitted, bool) and omitted > 0 else 0
        out.append(Clip(pos, turn, tool, given, original, str(clip["marker"]), given_tokens, original_tokens, clipped))
    return out


# --- replays ----------------------------------------------------------------------------------


@dataclass
class FactAtRisk:
    kind: str
    text: str
    position: int
    turn: int
    digest: int = 0  # crc32 of the fact's key: finds the text again (the cache keeps no text)


@dataclass
class Action:
    call_index: int
    position: int | None  # the call's position (links to its turn)
    kind: str
    tokens_before: int
    tokens_after: int
    detail: str
    dropped: int
    clipped: int
    facts: list[FactAtRisk] = field(default_factory=list)
    turn: int | None = None  # the turn of the call's position

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def group(self) -> str:
        """folds | clips | clears | offloads | drops (a clip reports the tokens it removed)."""
        return ACTION_OF.get(self.kind, "folds" if self.kind in FOLD_KINDS else "clips")


@dataclass
class PolicyResult:
    name: str
    label: str
    totals: list[int]  # per call: the replayed window's tokens
    fires: int  # every action
    actions: list[Action]
    peak: int
    saved_tokens: int
    red_zone_calls: int
    calls: int
    params: dict
    cost: float | None  # USD at list price, modelled (see cost_of); None when not comparable
    by_kind: dict = field(default_factory=dict)  # folds, clips, clears, offloads, drops
    overflow_calls: int = 0  # calls whose replayed window holds more than the model's window
    estimated_from: int | None = None  # the first call whose figure is an estimate (before it: measured)
    calibrated: bool = True  # False: the session's calibration failed, the figures are uncalibrated estimates
    calibration_note: str = ""
    # (call index, count after the action, limit) of each action that left the window at or over the
    # policy's own limit (Replay.unresolved): the policy could not bring the window under it.
    unresolved: list[tuple[int, int, int]] = field(default_factory=list)
    window: int = 0  # the model's window the overflow is counted against (the session's)
    rule_note: str = ""  # which version's rule the replay of the session's own harness followed

    @property
    def limit_notes(self) -> list[str]:
        """What the page says when the policy did not keep the window under its limit or the window."""
        notes = []
        if self.unresolved:
            c, after, limit = self.unresolved[0]
            more = f" (and after {len(self.unresolved) - 1} more)" if len(self.unresolved) > 1 else ""
            notes.append(
                f"cannot bring the window under its limit: after its action at call {c} the window still held "
                f"{after:,} tokens of its {limit:,} limit{more}"
            )
        if self.overflow_calls and self.name != BASELINE:
            over = max(self.totals, default=0) - self.window if self.window else 0
            by = f", by up to {over:,} tokens" if over > 0 else ""
            notes.append(
                f"goes past the model's window ({self.window:,}) at {self.overflow_calls} call"
                f"{'' if self.overflow_calls == 1 else 's'}{by}: the real agent would have failed or folded there"
            )
        return notes

    @property
    def folds(self) -> int:
        return self.by_kind.get("folds", 0)

    @property
    def actions_text(self) -> str:
        """"3 folds, 9 clips" (the kinds this policy took), or "no action"."""
        parts = [f"{n} {kind[:-1] if n == 1 else kind}" for kind, n in self.by_kind.items() if n]
        return ", ".join(parts) or "no action"

    @property
    def facts_at_risk(self) -> int:
        return sum(len(a.facts) for a in self.actions)

    @property
    def fire_points(self) -> list[tuple[int, int]]:
        return [(a.call_index, a.tokens_before) for a in self.actions]

    @property
    def folds_per_100_calls(self) -> float | None:
        return 100.0 * self.folds / self.calls if self.calls else None

    def as_dict(self) -> dict:
        return {
            "policy": self.name,
            "label": self.label,
            "open_loop": True,
            "calibrated": self.calibrated,
            "calibration_note": self.calibration_note,
            "overflow_calls": self.overflow_calls,
            "unresolved": [{"call_index": c, "tokens_after": t, "limit": lim} for c, t, lim in self.unresolved],
            "limit_notes": self.limit_notes,
            "rule": self.rule_note,
            "estimated_from_call": self.estimated_from,
            "calls": self.calls,
            "fires": self.fires,
            "actions_by_kind": dict(self.by_kind),
            "fire_points": [{"call_index": c, "tokens": t} for c, t in self.fire_points],
            "tokens_saved": self.saved_tokens if self.calibrated else None,
            "peak": self.peak,
            "red_zone_calls": self.red_zone_calls,
            "facts_at_risk": self.facts_at_risk,
            "cost_usd": self.cost,
            "actions": [
                {
                    "call_index": a.call_index,
                    "kind": a.kind,
                    "action": a.group,
                    "tokens_before": a.tokens_before,
                    "tokens_after": a.tokens_after,
                    "detail": a.detail,
                    "messages_dropped": a.dropped,
                    "messages_clipped": a.clipped,
                    "facts_at_risk": [{"kind": f.kind, "text": f.text, "position": f.position, "turn": f.turn} for f in a.facts],
                }
                for a in self.actions
            ],
        }


def resolve_names(requested: Iterable[str] | None) -> list[str]:
    """The policies to replay: the requested ones (unknown names raise UnknownPolicy), else all."""
    known = policy_names()
    wanted = [n for n in (requested or []) if n]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise UnknownPolicy(f"unknown polic{'ies' if len(unknown) > 1 else 'y'} {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
    return list(dict.fromkeys(wanted)) or known


def red_line(window: int) -> int:
    return int(window * CRITICAL_AT)


def replay_all(conv: Conversation, names: Iterable[str] | None = None, lab: LabSession | None = None) -> list[PolicyResult]:
    """Each named policy (all when none) replayed over the conversation, with facts at risk."""
    chosen = resolve_names(names)
    lab = load_session(conv) if lab is None else lab
    return [summarize(lab, replay_one(lab, n)) for n in chosen]


def replay_one(lab: LabSession, name: str) -> Replay:
    """One policy over the session; the session's own harness by the rule of its recorded version."""
    params = lab.own_params if name == lab.session.own_policy else {}
    return get_policy(name).replay(lab.session, **params)


def cached_replays(
    conv: Conversation, names: Iterable[str] | None = None, *, with_texts: bool = True
) -> tuple[LabSession | None, list[PolicyResult]]:
    """replay_all per conversation version (page_cache keeps the numbers of a replay; the facts'
    text is read again from the messages, so nothing masked later is served from memory)."""
    chosen = resolve_names(names)
    layout = segments.load(conv)
    version = page_cache.version(conv, layout)
    lab: LabSession | None = None
    out = []
    for name in chosen:
        def compute(name=name):
            nonlocal lab
            if lab is None:
                lab = load_session(conv)
            return _strip(summarize(lab, replay_one(lab, name)))

        kept = page_cache.figures(conv, layout, f"policylab:{name}", compute, version)
        out.append(kept)
    # Fact texts (and the actions' details) come from the messages, never from the cache.
    if with_texts and any(a.facts for r in out for a in r.actions):
        lab = load_session(conv) if lab is None else lab
        out = _with_fact_texts(out, lab)
    return lab, out


def _strip(result: PolicyResult) -> PolicyResult:
    """Numbers only for the cache: a fact keeps its kind, position and key digest, not its text."""
    return replace(
        result,
        actions=[
            replace(a, facts=[replace(f, text="") for f in a.facts]) for a in result.actions
        ],
    )


def _digest(key: str) -> int:
    return zlib.crc32(key.encode("utf-8", "surrogatepass"))


def _probe_input(lab: LabSession, mid: str, msg_by_id: dict[str, Msg]) -> dict:
    """The message as the fact probes read it; a clipped tool result with its whole original."""
    d = dict(lab.by_id[mid])
    m = msg_by_id.get(mid)
    blocks = d.get("blocks") or []
    if m is not None and m.original_text:
        blocks = [{"kind": "tool_result", "text": m.original_text}]
    d["blocks"] = blocks
    return d


def _with_fact_texts(results: list[PolicyResult], lab: LabSession) -> list[PolicyResult]:
    """The facts' texts again: extracted from the messages at the facts' positions only."""
    positions = sorted({f.position for r in results for a in r.actions for f in a.facts})
    msg_by_id = {m.id: m for m in lab.session.messages}
    text_of: dict[tuple[str, int, int], str] = {}
    for pos in positions:
        if str(pos) not in lab.by_id:
            continue
        for f in _message_facts(lab, str(pos), msg_by_id):
            text_of[(f.kind, pos, _digest(f.key))] = f.text
    return [
        replace(
            r,
            actions=[
                replace(a, facts=[replace(f, text=text_of.get((f.kind, f.position, f.digest), "(text no longer held)")) for f in a.facts])
                for a in r.actions
            ],
        )
        for r in results
    ]


def summarize(lab: LabSession, replay: Replay) -> PolicyResult:
    session = lab.session
    totals_by_call = {w.call_index: w.total_tokens for w in replay.windows}
    totals = [totals_by_call.get(c.index, 0) for c in session.calls]
    windows_by_call = {w.call_index: w for w in replay.windows}
    msg_by_id = {m.id: m for m in session.messages}
    calls_by_index = {c.index: c for c in session.calls}
    red = [red_line(c.window or session.window) for c in session.calls]
    red_calls = sum(1 for t, r in zip(totals, red, strict=True) if r and t >= r)

    # Facts at risk, per call: what the call's actions dropped or clipped, against what remains.
    actions: list[Action] = []
    events_by_call: dict[int, list] = {}
    for e in replay.events:
        events_by_call.setdefault(e.call_index, []).append(e)
    for call_index, events in sorted(events_by_call.items()):
        touched: list[str] = []
        for e in events:
            touched += [i for i in (*e.dropped_msg_ids, *e.clipped_msg_ids) if i in lab.by_id]
        at_risk_by_pos: dict[int, list[FactAtRisk]] = {}
        if touched:
            remaining = _remaining(lab, windows_by_call.get(call_index), msg_by_id)
            real = lab.real_summaries.get(call_index)
            if real and any(e.kind in FOLD_KINDS for e in events):
                remaining = core_facts.merge([remaining, core_facts.prepare(real)])
            for f in _facts_not_kept(lab, list(dict.fromkeys(touched)), remaining, msg_by_id):
                at_risk_by_pos.setdefault(f.position, []).append(FactAtRisk(f.kind, f.text, f.position, f.turn, _digest(f.key)))
        seen: set[int] = set()
        for e in events:
            ids = [i for i in (*e.dropped_msg_ids, *e.clipped_msg_ids) if i in lab.by_id]
            fs = []
            for mid in ids:
                pos = lab.by_id[mid]["position"]
                if pos not in seen:
                    seen.add(pos)
                    fs += at_risk_by_pos.get(pos, [])
            call = calls_by_index.get(call_index)
            actions.append(
                Action(
                    call_index=call_index, position=call.seq if call else None, kind=e.kind,
                    tokens_before=e.tokens_before, tokens_after=e.tokens_after, detail=e.detail,
                    dropped=len(e.dropped_msg_ids), clipped=len(e.clipped_msg_ids), facts=fs,
                    turn=(lab.by_id.get(str(call.seq)) or {}).get("turn") if call else None,
                )
            )
    return PolicyResult(
        name=replay.policy,
        label=replay.label,
        totals=totals,
        fires=replay.fires,
        actions=actions,
        peak=max(totals, default=0),
        saved_tokens=replay.saved_tokens,
        red_zone_calls=red_calls,
        calls=len(session.calls),
        params=dict(replay.params),
        cost=cost_of(lab, totals) if session.calibrated or replay.policy == BASELINE else None,
        by_kind=dict(replay.actions),
        overflow_calls=replay.overflow_calls,
        estimated_from=replay.estimated_from,
        calibrated=session.calibrated,
        calibration_note=session.calibration_note,
        unresolved=list(replay.unresolved),
        window=session.window,
        rule_note=lab.rule_note if replay.policy == session.own_policy else "",
    )


def _message_facts(lab: LabSession, mid: str, msg_by_id: dict[str, Msg]) -> list:
    """The facts of one message (extracted once per session: every policy's actions share them)."""
    found = lab.fact_cache.get(mid)
    if found is None:
        found = lab.fact_cache[mid] = core_facts.extract([_probe_input(lab, mid, msg_by_id)], lab.cwd)
    return found


def _facts_not_kept(lab: LabSession, mids: list[str], remaining, msg_by_id: dict[str, Msg]) -> list:
    """The facts of the messages an action touched (each once, first appearance) that the text
    left in the window (`remaining`, prepared by core/facts.py) does not state: the probes' own
    test of "kept"."""
    facts: dict[tuple[str, str], object] = {}
    for mid in mids:
        for f in _message_facts(lab, mid, msg_by_id):
            facts.setdefault((f.kind, f.key), f)
    if not facts:
        return []
    tails = core_facts.suffix_counts(f.key for f in facts.values() if f.kind == "path")
    # Salient facts only (tiers A and B, core/salience.py): the background tier is not at risk.
    return [f for f in facts.values() if f.tier != "C" and not core_facts.is_kept(f, remaining, lab.cwd, tails)]


def _remaining(lab: LabSession, window, msg_by_id: dict[str, Msg]):
    """The text left in a replayed window, prepared for the probes: each message whole while it
    is held in full, else the item's marker or preview. Each text is read once per session (every
    call and every policy share it) and the window's parts are merged, not read again."""
    if window is None:
        return core_facts.prepare("")
    parts = []
    cache = lab.prepared_cache
    for item in window.items:
        m = msg_by_id.get(item.msg_id or "")
        if item.state == FULL and m is not None:
            key, text = ("msg", m.id), m.text
        else:
            key = text = item.text_or_marker or ""
        prepared = cache.get(key)
        if prepared is None:
            prepared = cache[key] = core_facts.prepare(text)
        parts.append(prepared)
    return core_facts.merge(parts)


def cost_of(lab: LabSession, totals: Sequence[int]) -> float | None:
    """USD at list price of the calls with this policy's inputs: each call's input is the replayed
    window, priced with the recorded call's mix of uncached, cache-write and cache-read tokens
    (a model: a fold also breaks the cache, which this does not price); output as recorded.
    None when a price is unknown or no call was measured."""
    total = 0.0
    measured = False
    for call, use, tokens_in in zip(lab.session.calls, lab.usage, totals, strict=True):
        recorded = call.usage_input
        if not recorded:
            continue
        measured = True
        scale = tokens_in / recorded
        spec = model_specs.lookup(use["model"] or "")
        value = model_specs.cost(
            spec,
            input_uncached=round(use["input_uncached"] * scale),
            cache_write_5m=round(use["cache_write_5m"] * scale),
            cache_write_1h=round(use["cache_write_1h"] * scale),
            cache_read=round(use["cache_read"] * scale),
            output=use["output"],
        )
        if value is None:
            return None
        total += value
    return total if measured else None


def recorded_cost(lab: LabSession) -> float | None:
    return cost_of(lab, [c.usage_input for c in lab.session.calls])


__all__ = [
    "CLIPPED",
    "OPEN_LOOP_NOTE",
    "Clip",
    "LabSession",
    "PolicyResult",
    "UnknownPolicy",
    "cached_replays",
    "cost_of",
    "load_session",
    "recorded_cost",
    "replay_all",
    "resolve_names",
    "summarize",
]
