"""A fold's archived segment on the review pages, read as the conversation page reads it: each turn
a conversations TurnView (turn_content.py: Markdown text, tool calls with their results and tool
views, ANSI output, "Load the rest" for long blocks), rendered by the conversation page's own
partial (viewer/conversation.html#turn-body). Never raw block JSON."""

from __future__ import annotations

from dataclasses import dataclass

from contextviewer.viewer import turn_content
from contextviewer.conversations.models import Fold
from contextviewer.review import probes as fact_probes

MESSAGE_LIMIT = 400  # messages of the segment shown; the conversation page has them all
CHAR_BUDGET = 200_000  # about this much text at most (blocks are clipped as on the conversation page)


@dataclass
class SegmentTurns:
    turns: list[dict]  # {"turn": int, "view": TurnView}
    shown: int  # messages shown
    total: int  # messages of the segment
    first_hidden_turn: int | None  # where the conversation page goes on, when some are not shown


def segment_turns(fold: Fold) -> SegmentTurns:
    messages = fact_probes.segment_messages(fold)
    budget, shown = CHAR_BUDGET, []
    for m in messages[:MESSAGE_LIMIT]:
        budget -= turn_content._weight(m)
        if budget < 0 and shown:
            break
        shown.append(m)
    per_message = [(m, turn_content._message_blocks(m)) for m in shown]
    # Tool calls sit with their results, as on the conversation page.
    calls = {b.tool_id: b for _, blocks in per_message for b in blocks if b.kind == "tool_call" and b.tool_id}
    turns: list[dict] = []
    for m, blocks in per_message:
        kept = []
        for b in blocks:
            if b.kind == "tool_result" and b.tool_id in calls and calls[b.tool_id].result is None:
                calls[b.tool_id].result = b
                calls[b.tool_id].result_tokens = m.tokens
                continue
            kept.append(b)
        if blocks and not kept:
            continue  # a message of results only: they show under their calls
        tokens = sorted(((k, v) for k, v in (m.tokens or {}).items() if v), key=lambda kv: -kv[1])
        if not turns or turns[-1]["turn"] != m.turn:
            turns.append({"turn": m.turn, "view": turn_content.TurnView(m.turn, [], None)})
        turns[-1]["view"].messages.append(turn_content.MessageView(m, kept, tokens))
    turn_content._tool_views(list(calls.values()))
    hidden = messages[len(shown)] if len(shown) < len(messages) else None
    return SegmentTurns(turns, len(shown), len(messages), hidden.turn if hidden is not None else None)
