"""LangChain deepagents: FilesystemMiddleware offload of large tool results, optional
ContextEditing ClearToolUsesEdit, and the deepagents SummarizationMiddleware at 85 % keeping the
last 10 % (policy-lab.md §2.1, §2.2, §2.4, pseudo-algorithm §2.5; deepagents==0.7.32,
langchain==1.5.0).

The summarization decision uses LangChain's approximate counter (ceil(chars/4) + 3 per message)
plus the harness overhead (system prompt and tool schemas), scaled by the last reported usage
(clamped to 1.0-1.25); it also fires on the reported usage itself, on a request over the input
budget, and when the provider would refuse the window (the overflow path, §2.4 steps 4 and 10)."""

from __future__ import annotations

from typing import Any

from .common import (
    Meter,
    clip_event,
    finish,
    fold_event,
    folded_summary,
    lc_approx,
    merged,
    slot,
    snap_back_to_ai,
    steps,
    total,
    window_of,
)
from .model import ARGS_TRUNCATED, CLEARED, CLIPPED, EVICTED_TO_FILE, Event, Replay, Session

TOOL_TOKEN_LIMIT_BEFORE_EVICT = 20_000
NUM_CHARS_PER_TOKEN = 4
TOOLS_EXCLUDED_FROM_EVICTION = frozenset({"ls", "glob", "grep", "read_file", "edit_file", "write_file", "delete"})
PREVIEW_LINE_CHAR_LIMIT = 1_000
CLEARED_PLACEHOLDER = "[cleared]"
ARG_MAX_LEN, ARG_KEEP = 2_000, 20
ARG_TRUNCATED = "...(argument truncated)"
NO_PROFILE_TRIGGER, NO_PROFILE_KEEP_MESSAGES = 170_000, 6
USAGE_SCALING = (1.0, 1.25)  # count_tokens_approximately's use_usage_metadata_scaling clamp (§2.4)
OVERFLOW_CLIP_TOKENS = 5_000  # the overflow clip's threshold when keep is message-based (_overflow_clip.py)
READ_FILE_CLIP_CHARS = 4_000
READ_FILE_NOTICE = "\n[... read_file result clipped to free context; re-read with offset/limit ...]"
SUMMARY_WRAPPER = (
    "Your conversation has been summarized; the full history was saved to {path} should you need to refer back to it."
)


def preview(text: str) -> str:
    """`_create_content_preview`: ≤ 10 lines all; else first 5 + truncation line + last 5, each
    line clipped to 1,000 chars and numbered like `cat -n`."""
    lines = text.split("\n")

    def num(start: int, chunk: list[str]) -> list[str]:
        return [f"{i + start:6d}\t{ln[:PREVIEW_LINE_CHAR_LIMIT]}" for i, ln in enumerate(chunk, 1)]

    if len(lines) <= 10:
        return "\n".join(num(0, lines))
    return (
        "\n".join(num(0, lines[:5]))
        + f"\n... [{len(lines) - 10} lines truncated] ...\n"
        + "\n".join(num(len(lines) - 5, lines[-5:]))
    )


def evict_stub(tool_call_id: str, text: str, root: str = "/") -> tuple[str, str]:
    path = f"{root.rstrip('/')}/large_tool_results/{tool_call_id}"
    head = f"Tool result too large, the result of this tool call {tool_call_id} was saved in the filesystem at this path: {path}"
    advice = "You can read the result from the filesystem by using the read_file tool with offset and limit."
    return f"{head}\n{advice}\n\nHere is a preview of the result:\n{preview(text)}", head


def should_evict(tool_name: str | None, text: str, limit_tokens: int = TOOL_TOKEN_LIMIT_BEFORE_EVICT) -> bool:
    """§2.1: evicted when longer than limit × 4 chars (80,000), unless the tool is exempt."""
    return (tool_name or "") not in TOOLS_EXCLUDED_FROM_EVICTION and len(text) > limit_tokens * NUM_CHARS_PER_TOKEN


def lc_count(slots, overhead: int) -> int:
    return overhead + sum(lc_approx(len(s.text)) for s in slots)


def usage_factor(reported: int | None, approx: int | None) -> float:
    """LangChain's usage-metadata scaling: the last AI message's reported total tokens over the
    approximate count up to it, clamped to 1.0-1.25 (1.0 before any response)."""
    if not reported or not approx:
        return 1.0
    return min(USAGE_SCALING[1], max(USAGE_SCALING[0], reported / approx))


def clear_tool_uses(slots, keep: int = 3, exclude: frozenset[str] = frozenset()):
    """ClearToolUsesEdit (§2.2), default clear_at_least=0: every ToolMessage but the last `keep`
    whose call is found in an earlier AIMessage becomes "[cleared]". Not persisted."""
    tools = [j for j, s in enumerate(slots) if s.msg and s.msg.role == "tool"]
    out = list(slots)
    for j in tools[: max(0, len(tools) - keep)]:
        s = out[j]
        if s.state == CLEARED or (s.msg.tool_name or "") in exclude:
            continue
        if any(o.msg and o.msg.role == "assistant" and set(o.msg.tool_call_ids) & set(s.msg.tool_call_ids) for o in out[:j]):
            out[j] = s.rewrite(CLEARED, CLEARED_PLACEHOLDER, CLEARED_PLACEHOLDER)
    return out


def keep_cut(slots, keep_tokens: int | None, keep_messages: int | None) -> int:
    """§2.3 cutoff: messages → len − n; tokens → earliest index whose suffix fits (binary search);
    then snap back to the AIMessage that issued the calls."""
    if keep_messages is not None:
        cut = len(slots) - keep_messages
    else:
        lo, hi = 0, len(slots)
        while lo < hi:
            mid = (lo + hi) // 2
            if sum(lc_approx(len(s.text)) for s in slots[mid:]) <= keep_tokens:
                hi = mid
            else:
                lo = mid + 1
        cut = lo
    return snap_back_to_ai(slots, cut) if cut > 0 else 0


class DeepAgents:
    name = "deepagents"
    label = "deepagents: offload > 20k tok, summarize at 85 % keep 10 %"
    wrapper_tokens = 50  # the offload wrapper, before its path (policy-lab §8)
    default = True  # drawn on every conversation's lab page
    params: dict[str, Any] = {
        "profile": True,  # the model profile gives max_input_tokens (= the window); else 170k / 6 msgs
        "max_output": 0,
        "clear_tool_uses": False,  # ContextEditingMiddleware is not in the default deep agent
        "clear_trigger": 100_000,
        "clear_keep": 3,
    }

    def replay(self, session: Session, **params: Any) -> Replay:
        p = merged(self.params, params)
        oh, state, summary, cut_at, windows, folds = session.overhead_tokens, [], None, 0, [], 0
        meter, last_usage, last_lc = Meter(session, self.name), None, None
        for call, new in steps(session):
            max_in, events = window_of(session, call), []
            for m in new:
                s = slot(m)
                if m.role == "tool" and should_evict(m.tool_name, m.text):
                    stub, head = evict_stub((m.tool_call_ids or (m.id,))[0], m.text)
                    s = s.rewrite(EVICTED_TO_FILE, stub, head)
                    events.append(clip_event(call.index, "offload", m, s, head))
                state.append(s)
            if p["profile"]:
                trigger, keep_tokens, keep_messages = int(0.85 * max_in), int(0.10 * max_in), None
            else:
                trigger, keep_tokens, keep_messages = NO_PROFILE_TRIGGER, None, NO_PROFILE_KEEP_MESSAGES
            eff = ([summary] if summary else []) + state[cut_at:]
            if p["clear_tool_uses"] and sum(lc_approx(len(s.text)) for s in eff) > p["clear_trigger"]:
                before = total(eff, oh)
                eff = clear_tool_uses(eff, p["clear_keep"])
                if total(eff, oh) < before:
                    events.append(Event(call.index, "clear", before, total(eff, oh), detail=CLEARED_PLACEHOLDER))
            # The count (§2.4 step 2): LC's approximation scaled by the last AI message's reported
            # usage over the approximation up to it, clamped to 1.0-1.25; the trigger also fires on
            # that reported usage itself (usage_metadata.total_tokens ≥ the threshold).
            factor = usage_factor(last_usage, last_lc)
            count = round(lc_count(eff, oh) * factor)
            usage_fires = last_usage is not None and last_usage >= trigger
            if count >= trigger or usage_fires:
                eff = self._truncate_args(eff, keep_tokens, keep_messages, call.index, oh, events)
                count = round(lc_count(eff, oh) * factor)
            budget = int(0.95 * max_in) - p["max_output"] if p["profile"] else None
            over_budget = budget is not None and count > budget
            # The provider refuses a request over the window (HTTP 400/413 context errors): §2.4
            # step 4 falls through to summarize anyway, and step 10 clips the trailing tool batch.
            overflow = bool(max_in) and meter.count(total(eff, oh)) > max_in
            if count >= trigger or usage_fires or over_budget or overflow:
                cut = keep_cut(eff, keep_tokens, keep_messages)
                if cut > 0:
                    path = f"/conversation_history/{session.agent or 'session'}.md"
                    wrapper = SUMMARY_WRAPPER.format(path=path)
                    new_summary = folded_summary(session, self.wrapper_tokens, eff[:cut], folds, p["max_output"] or None, wrapper)
                    after = [new_summary, *eff[cut:]]
                    why = (
                        f"{count:,} ≥ {trigger:,} (LC approx ×{factor:.2f})" if count >= trigger
                        else f"reported usage {last_usage:,} ≥ {trigger:,}" if usage_fires
                        else f"{count:,} over the input budget {budget:,}" if over_budget
                        else f"context overflow: the window holds more than {max_in:,}"
                    )
                    if overflow and not (count >= trigger or usage_fires or over_budget):
                        after = self._clip_trailing_tools(after, keep_tokens, call.index, events)
                    events.append(fold_event(call.index, "summarize", eff, after, oh, eff[:cut], why, meter))
                    cut_at = (cut_at + cut - 1) if summary else cut
                    summary, folds = new_summary, folds + 1
                    eff = after
            w = meter.freeze(call, eff, oh, max_in, events)
            windows.append(w)
            last_usage = w.total_tokens + call.output
            last_lc = lc_count(eff, oh) + sum(lc_approx(len(m.text)) for m in new if m.role == "assistant" and m.call_index == call.index)
        return finish(self.name, self.label, session, windows, p)

    @staticmethod
    def _clip_trailing_tools(slots, keep_tokens, call_index, events):
        """§2.4 step 10 (overflow path only): the preserved tail's trailing ToolMessage batch is
        clipped, read_file results to 4,000 chars, others offloaded with the stub; the threshold
        is the keep budget in tokens (5,000 when keep is message-based)."""
        limit = keep_tokens or OVERFLOW_CLIP_TOKENS
        out = list(slots)
        j = len(out)
        while j > 0 and out[j - 1].msg is not None and out[j - 1].msg.role == "tool":
            j -= 1
        for k in range(j, len(out)):
            s = out[k]
            if lc_approx(len(s.text)) <= limit:
                continue
            m = s.msg
            if m.tool_name == "read_file":
                text = s.text[:READ_FILE_CLIP_CHARS] + READ_FILE_NOTICE
                out[k] = s.rewrite(CLIPPED, text, READ_FILE_NOTICE.strip())
            else:
                stub, head = evict_stub((m.tool_call_ids or (m.id,))[0], s.text)
                out[k] = s.rewrite(EVICTED_TO_FILE, stub, head)
            events.append(clip_event(call_index, "offload" if out[k].state == EVICTED_TO_FILE else "clip", m, out[k], "overflow clip"))
        return out

    @staticmethod
    def _truncate_args(eff, keep_tokens, keep_messages, call_index, oh, events):
        """§2.4 step 3: write_file/edit_file calls before the keep window get string arguments over
        2,000 chars cut to their first 20 chars + "...(argument truncated)". Not persisted."""
        keep_from = keep_cut(eff, keep_tokens, keep_messages) or len(eff)
        out, cut_ids = list(eff), []
        for j, s in enumerate(eff[:keep_from]):
            m = s.msg
            if m and m.role == "assistant" and m.tool_name in ("write_file", "edit_file") and len(s.text) > ARG_MAX_LEN:
                out[j] = s.rewrite(ARGS_TRUNCATED, s.text[:ARG_KEEP] + ARG_TRUNCATED, s.text[:ARG_KEEP] + ARG_TRUNCATED)
                cut_ids.append(m.id)
        if cut_ids:
            events.append(Event(call_index, "args_truncate", total(eff, oh), total(out, oh), clipped_msg_ids=tuple(cut_ids)))
        return out


POLICY = DeepAgents()
