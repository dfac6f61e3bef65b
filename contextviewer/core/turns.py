"""Turns: a user message plus everything that followed it, up to the next user message.

Pure functions over plain data (blocks as dicts with a "kind")."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any


def starts_turn(
    role: str, blocks: Iterable[dict], is_meta: bool = False, is_compact_summary: bool = False, queued: bool = False
) -> bool:
    """A turn starts at a user message a person (or a fold) wrote: text, not only tool results.

    A queued message (typed while the agent worked: flags["queued"]) opens no turn: the agent read
    it only later, so it stays in the turn where it was typed."""
    if role != "user" or queued:
        return False
    if is_compact_summary:
        return True
    if is_meta:
        return False
    kinds = {b.get("kind") for b in blocks}
    return bool(kinds & {"text", "image"}) and "tool_result" not in kinds


# A message as assign_turns and safe_cut_points take it:
# (role, blocks[, is_meta[, is_compact_summary[, queued]]]).
TurnInput = tuple[Any, ...]


def is_queued(flags: Any) -> bool:
    """Whether a message's flags (a dict, or its JSON text as the ingest service holds it) mark it
    queued: typed while the agent worked (Claude Code `queue-operation` enqueue)."""
    if isinstance(flags, str):
        return '"queued"' in flags and _queued_json(flags)
    return isinstance(flags, dict) and flags.get("queued") is True


def _queued_json(text: str) -> bool:
    try:
        flags = json.loads(text)
    except ValueError:
        return False
    return isinstance(flags, dict) and flags.get("queued") is True


def _unpack(message: TurnInput) -> tuple[str, Sequence[dict], bool, bool, bool]:
    role, blocks = message[0], message[1]
    is_meta = bool(message[2]) if len(message) > 2 else False
    is_compact_summary = bool(message[3]) if len(message) > 3 else False
    queued = bool(message[4]) if len(message) > 4 else False
    return role, blocks or (), is_meta, is_compact_summary, queued


def assign_turns(messages: Iterable[TurnInput], start_turn: int = 0, *, continuing: bool = False) -> Iterator[int]:
    """The turn index of each message, lazily, in order.

    Messages before the first turn-starting message belong to turn `start_turn`. In a fresh
    conversation (continuing=False) turn `start_turn` has no user message yet, so the first
    turn-starting message opens it too (a preamble of meta or system lines joins the first turn);
    each later one opens the next turn. When importing a grown file, pass the last stored turn as
    start_turn with continuing=True: that turn already has its user message, so the next
    turn-starting message opens start_turn + 1.
    """
    turn = start_turn
    opened = continuing
    for message in messages:
        if starts_turn(*_unpack(message)):
            if opened:
                turn += 1
            opened = True
        yield turn


def safe_cut_points(messages: Sequence[TurnInput]) -> list[int]:
    """Indexes i (into `messages`) where cutting just before message i is safe: message i starts a
    turn and no tool call before i has its result at or after i (never orphan a tool result).
    Tool calls and results are paired by tool_id; a call without a result blocks nothing."""
    messages = list(messages)
    call_at: dict[str, int] = {}
    # unsafe[i] > 0: some call before i has its result at or after i (difference array).
    diff = [0] * (len(messages) + 1)
    for i, message in enumerate(messages):
        for block in _unpack(message)[1]:
            tool_id = block.get("tool_id")
            if not tool_id:
                continue
            kind = block.get("kind")
            if kind == "tool_call":
                call_at.setdefault(tool_id, i)
            elif kind == "tool_result":
                j = call_at.get(tool_id)
                if j is not None and j < i:
                    diff[j + 1] += 1
                    diff[i + 1] -= 1
    cuts = []
    open_pairs = 0
    for i, message in enumerate(messages):
        open_pairs += diff[i]
        if open_pairs == 0 and starts_turn(*_unpack(message)):
            cuts.append(i)
    return cuts
