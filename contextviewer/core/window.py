"""What one model call carried: the items of its window, in the order the request sent them.

The window of a call at position c is the loaded view at that moment (core/segments.py): the
latest fold put away before c (fold.position < c) stands in for everything up to its position, so
the call carried, in order,
1. that fold's summary (its summary message, or the summary text the log keeps elsewhere);
2. the messages the fold preserved, in the order the log lists them, wherever they lie in the file
   (Claude Code writes the new prompt and the kept tail BEFORE its compact_boundary, yet sends them
   after the summary: compactMetadata.preservedSegment; Codex 0.171 sends its replacement_history
   as listed, then the encrypted summary: Fold.summary_last);
3. every other message after the fold's position and before c, in position order.
Only messages sent to the model count: roles user, assistant and tool, not a queued line (typed
while the agent worked: delivered later as a line of its own, if at all). Pure: positions, roles
and blocks in, items out; the store's loader is conversations/windows.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from contextviewer.core.segments import FoldSpan

SENT_ROLES = ("user", "assistant", "tool")
ITEM_KINDS = ("text", "tool_call", "tool_result", "summary", "thinking", "image", "other")
ENCRYPTED_NOTE = "the log keeps this summary encrypted: its text cannot be shown"
# A summary block the importer could not read: the log keeps it encrypted (Codex's remote compaction).
ENCRYPTED = "encrypted_summary"
MISSING_SUMMARY_NOTE = "the log does not keep this summary's text"


@dataclass(frozen=True, slots=True)
class WindowPlan:
    """Which positions call c carried, in the order sent."""

    fold_index: int | None  # index into the folds given, of the fold in effect; None: no fold yet
    summary_position: int | None  # the summary, when it is a message
    head: tuple[int, ...]  # sent first, in this order: the summary and the preserved messages
    start: int | None  # then every other position in start .. end (inclusive)
    end: int

    @property
    def preserved(self) -> tuple[int, ...]:
        return tuple(p for p in self.head if p != self.summary_position)

    def positions(self, present: Sequence[int]) -> list[int]:
        """The plan applied to the positions that exist (sorted): the head first."""
        exists, taken = set(present), set(self.head)
        lo = self.start if self.start is not None else min(present, default=0)
        return [p for p in self.head if p in exists] + [p for p in present if lo <= p <= self.end and p not in taken]

    def listed(self, order: Sequence[int], summary_last: bool = False) -> WindowPlan:
        """The plan with the preserved messages in the order the log lists them (Codex's
        replacement_history), not in position order; the summary heads them, or sits where the list
        names it (Gemini CLI), or follows them when the log says so (`summary_last`: Codex 0.171
        sends the kept messages, then the summary)."""
        if self.fold_index is None:
            return self
        if self.summary_position in order and not summary_last:
            # The log lists the summary among what it kept (Gemini CLI: [context, summary, "Got it", kept ...]).
            return replace(self, head=tuple(dict.fromkeys(p for p in order if p <= self.end)))
        kept = tuple(dict.fromkeys(p for p in order if p <= self.end and p != self.summary_position))
        if self.summary_position is None:
            return replace(self, head=kept)
        head = (*kept, self.summary_position) if summary_last else (self.summary_position, *kept)
        return replace(self, head=head)


def plan(call_position: int, folds: Sequence[FoldSpan]) -> WindowPlan:
    """The positions call `call_position` carried, given the folds the recorded calls saw (the
    agent's own), in any order; preserved messages in position order (`WindowPlan.listed` puts them
    in the log's order)."""
    before = [(i, f) for i, f in enumerate(folds) if f.position < call_position]
    if not before:
        return WindowPlan(None, None, (), None, call_position - 1)
    i, fold = max(before, key=lambda item: (item[1].position, item[0]))
    summary = fold.summary_position if fold.summary_position is not None and fold.summary_position < call_position else None
    preserved = tuple(p for p in sorted(set(fold.preserved_positions)) if p < call_position and p != summary)
    head = (summary, *preserved) if summary is not None else preserved
    return WindowPlan(i, summary, head, fold.position + 1, call_position - 1)


def sent(role: str, flags: dict | None) -> bool:
    return role in SENT_ROLES and (flags or {}).get("queued") is not True


def _tool_input_text(block: dict) -> str:
    if block.get("text"):
        return block["text"]
    value = block.get("tool_input")
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def message_items(role: str, blocks: Sequence[dict], *, summary: bool = False) -> list[dict[str, Any]]:
    """A sent message as window items, one per block: kind, role (a tool result is the tool's),
    tool id and name, text. A summary message's text blocks are one "summary" item each."""
    out = []
    for b in blocks or ():
        if not isinstance(b, dict):
            continue
        kind = b.get("kind") or "other"
        if kind not in ITEM_KINDS:
            kind = "other"
        if summary and (kind == "text" or b.get("raw_type") == ENCRYPTED):
            if b.get("raw_type") == ENCRYPTED or not b.get("text"):
                out.append(summary_item("", encrypted=b.get("raw_type") == ENCRYPTED))
                continue
            kind = "summary"
        item_role = "tool" if kind == "tool_result" else role
        text = _tool_input_text(b) if kind == "tool_call" else (b.get("text") or "")
        out.append({"role": item_role, "kind": kind, "tool_id": b.get("tool_id"), "tool_name": b.get("tool_name"), "text": text, "note": None})
    return out


def summary_item(text: str, encrypted: bool = False) -> dict[str, Any]:
    """A fold's summary kept outside the messages (or not kept: the note says why)."""
    item: dict[str, Any] = {"role": "user", "kind": "summary", "tool_id": None, "tool_name": None, "text": text or "", "note": None}
    if encrypted:
        item["note"] = ENCRYPTED_NOTE
    elif not text:
        item["note"] = MISSING_SUMMARY_NOTE
    return item


# --- what the log's record of a request says it carried (Claude Code 2.1.3xx) -------------------

HASH_ONLY_NOTE = "the log names this message by its hash only: what it held is not recorded"


def sent_entries(requests: Sequence[dict | None]) -> list[dict] | None:
    """The entries the last request carried, from each call's `flags.request` in call order (None
    for a call without one): each request keeps `keep` entries of the one before it that has a
    request, then adds its `tail`. None when the last call has no request, or when its request
    cannot be rebuilt (it keeps entries no earlier request gave)."""
    if not requests or not isinstance(requests[-1], dict):
        return None
    given: list[dict] | None = []
    for request in requests:
        if not isinstance(request, dict):
            continue
        keep, tail = request.get("keep"), request.get("tail")
        if not isinstance(keep, int) or not isinstance(tail, list) or (keep and (given is None or keep > len(given))):
            given = None
            continue
        given = (given or [])[:keep] + [e for e in tail if isinstance(e, dict)]
    return given


def content_items(role: str, content: Any) -> list[dict[str, Any]]:
    """A message as sent (Anthropic Messages content: a string or blocks) as window items."""
    if isinstance(content, str):
        return [_item(role, "text", content)]
    out = []
    for b in content if isinstance(content, list) else []:
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "text":
            out.append(_item(role, "text", b.get("text") or ""))
        elif kind == "tool_use":
            out.append(_item(role, "tool_call", json.dumps(b.get("input"), ensure_ascii=False), b.get("id"), b.get("name")))
        elif kind == "tool_result":
            inner = b.get("content")
            text = inner if isinstance(inner, str) else "\n".join(
                p.get("text") or "" for p in inner or [] if isinstance(p, dict) and p.get("type") == "text")
            out.append(_item("tool", "tool_result", text, b.get("tool_use_id")))
        elif kind in ("thinking", "redacted_thinking"):
            out.append(_item(role, "thinking", b.get("thinking") or ""))
        elif kind == "image":
            out.append(_item(role, "image", ""))
        else:
            out.append(_item(role, "other", json.dumps(b, ensure_ascii=False)[:2000]))
    return out


def _item(role: str, kind: str, text: str, tool_id: str | None = None, tool_name: str | None = None) -> dict[str, Any]:
    return {"role": role, "kind": kind, "tool_id": tool_id, "tool_name": tool_name, "text": text, "note": None}


def _is_summary(text: str, summaries: Sequence[str]) -> bool:
    head = " ".join(text.split())[:SUMMARY_PROBE]
    return len(head) >= SUMMARY_PROBE // 2 and any(head in s for s in summaries)


SUMMARY_PROBE = 200  # characters of a message as sent looked for in the fold summaries


def request_items(entries: Sequence[dict], messages: dict[str, tuple], summaries: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Window items of a request's entries: a message as sent (`role`, `content`), the transcript
    lines it came from (`uuids`: `messages` maps each to (role, blocks, is summary)), or a hash the
    log does not resolve (an item that says so). A text sent that begins as one of `summaries` (the
    conversation's fold summaries, whitespace folded) is that summary."""
    folded = [" ".join(s.split()) for s in summaries if s]
    out: list[dict[str, Any]] = []
    for entry in entries:
        if "content" in entry and isinstance(entry.get("role"), str):
            for item in content_items(entry["role"], entry["content"]):
                if item["kind"] == "text" and folded and _is_summary(item["text"], folded):
                    item["kind"] = "summary"
                out.append(item)
        elif entry.get("uuids"):
            for uuid in entry["uuids"]:
                if uuid in messages:
                    role, blocks, is_summary = messages[uuid]
                    out.extend(message_items("user" if is_summary else role, blocks, summary=bool(is_summary)))
        else:
            out.append({**_item("user", "other", ""), "note": HASH_ONLY_NOTE})
    return out
