"""ContextWindowManager (seed 003): a reference design with no upstream implementation; its
numbers are unverified (policy-lab.md §7). Zones by fill of (window − output reserve): green
< 50 %, yellow 50-75 % (evict items past their TTL), orange 75-90 % (evict by policy until back
under 75 %), red ≥ 90 % (progressive summarization: L1 clip long items head+tail, then L3 one
rolling summary of everything older than K turns). Zones are checked on provider tokens: the last
call's measured (or estimated) input plus the calibrated growth since it (common.Meter)."""

from __future__ import annotations

from typing import Any

from .common import Meter, finish, folded_summary, ids, merged, slot, steps, total, window_of
from .model import CLIPPED, Event, Replay, Session

ZONES = ((0.90, "red"), (0.75, "orange"), (0.50, "yellow"), (0.0, "green"))
TYPE_RANK = {"tool": 0, "assistant": 1, "user": 2, "system": 3}  # evicted first → last


def zone_of(fill: int, usable: int) -> str:
    f = fill / usable if usable else 0.0
    return next(name for bound, name in ZONES if f >= bound)


class CWM:
    name = "cwm"
    label = "ContextWindowManager zones 50/75/90 % (reference design, no upstream implementation)"
    wrapper_tokens = 20  # no harness text to measure: the default wrapper
    params: dict[str, Any] = {
        "output_reserve": 0,
        "eviction": "fifo",  # fifo | type
        "tool_ttl_turns": 10,
        "clip_tokens": 2_000,  # L1: items over this are clipped head+tail
        "keep_turns": 3,  # L3: summarize everything older than K turns
    }

    def replay(self, session: Session, **params: Any) -> Replay:
        p = merged(self.params, params)
        oh, hist, summary, windows, folds, turn = session.overhead_tokens, [], None, [], 0, 0
        meter = Meter(session, self.name)
        born: dict[str, int] = {}
        for call, new in steps(session):
            usable = max(1, window_of(session, call) - p["output_reserve"])
            events = []
            for m in new:
                turn += m.role == "user"
                born[m.id] = turn
                hist.append(slot(m))

            def fill():
                return total(([summary] if summary else []) + hist, oh)

            def pressure(raw: int | None = None) -> int:  # the fill in provider tokens (zones are of those)
                return meter.count(fill() if raw is None else raw)

            z = zone_of(pressure(), usable)
            if z in ("yellow", "orange", "red"):  # TTL eviction of old tool outputs
                old = [s for s in hist if s.msg and s.msg.role == "tool" and turn - born[s.msg.id] >= p["tool_ttl_turns"]]
                if old:
                    before = fill()
                    hist = [s for s in hist if s not in old]
                    events.append(Event(call.index, "evict", before, fill(), dropped_msg_ids=ids(old), detail="TTL expired"))
            if zone_of(pressure(), usable) in ("orange", "red"):  # evict by policy until < 75 %
                order = sorted(
                    range(len(hist)), key=lambda j: (TYPE_RANK.get(hist[j].role or "", 0), j) if p["eviction"] == "type" else j
                )
                gone, before = set(), fill()
                for j in order[:-1]:
                    if pressure(before - sum(hist[g].tokens for g in gone)) < 0.75 * usable:
                        break
                    if hist[j].role in ("tool", "assistant"):
                        gone.add(j)
                if gone:
                    dropped = [hist[j] for j in sorted(gone)]
                    hist = [s for j, s in enumerate(hist) if j not in gone]
                    events.append(
                        Event(
                            call.index, "evict", before, fill(), dropped_msg_ids=ids(dropped), detail=f"{p['eviction']} eviction"
                        )
                    )
            if zone_of(pressure(), usable) == "red":
                before, cap = fill(), p["clip_tokens"]
                hist = [
                    s.rewrite(CLIPPED, s.text[: cap * 2] + "\n[…]\n" + s.text[-cap:], "[L1 head+tail]")
                    if s.tokens > cap and s.msg and s.msg.role == "tool"
                    else s
                    for s in hist
                ]
                if fill() < before:
                    events.append(Event(call.index, "compress", before, fill(), detail="L1 head+tail"))
                if zone_of(pressure(), usable) == "red":
                    starts = [j for j, s in enumerate(hist) if s.msg and s.msg.role == "user"]
                    cut = starts[-p["keep_turns"]] if len(starts) >= p["keep_turns"] else 0
                    if cut > 0:
                        before = fill()
                        dropped, hist = hist[:cut], hist[cut:]
                        summary = folded_summary(session, self.wrapper_tokens, dropped, folds, None, "L3 rolling summary")
                        events.append(
                            Event(
                                call.index, "summarize", before, fill(), dropped_msg_ids=ids(dropped), detail="L3 rolling summary"
                            )
                        )
                        folds += 1
            win = ([summary] if summary else []) + hist
            windows.append(meter.freeze(call, win, oh, usable, events, zone_of=zone_of))
        return finish(self.name, self.label, session, windows, p)


POLICY = CWM()
