"""Turns: a user message plus everything that followed it, up to the next user message.

Pure functions over plain data (blocks as dicts with a "kind")."""

from __future__ import annotations

from collections.abc import Iterable


def starts_turn(role: str, blocks: Iterable[dict], is_meta: bool = False, is_compact_summary: bool = False) -> bool:
    """A turn starts at a user message a person (or a fold) wrote: text, not only tool results."""
    if role != "user":
        return False
    if is_compact_summary:
        return True
    if is_meta:
        return False
    kinds = {b.get("kind") for b in blocks}
    return bool(kinds & {"text", "image"}) and "tool_result" not in kinds
