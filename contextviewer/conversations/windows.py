"""What did call N carry: ONE loader for the page, the API, `manage.py window` and the agents'
conformance check, so they cannot disagree. It reads the call, the folds the recorded calls saw and
the messages of the window, and hands them to the pure core (core/window.py).

Calls are numbered 1.. in position order, as on the curve. Each item is {role, kind, tool_id,
tool_name, text, tokens} (and `note` where the log cannot show it); tokens are this project's
estimate of the item's text (the call's measured input, when the log has it, is the call's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contextviewer.core import tokens, window as core_window
from contextviewer.conversations.models import Conversation, Message, ModelCall
from contextviewer.conversations.segments import curve_fold_spans, segment_folds, uuid_positions

_FIELDS = ("position", "role", "blocks", "flags", "is_compact_summary")


class NoSuchCall(LookupError):
    pass


@dataclass
class CallWindow:
    conversation_id: int
    call: int  # 1-based
    calls: int  # how many calls the conversation has
    position: int
    model: str
    measured: int | None  # the call's measured input (uncached + cache write + cache read), None: not in the log
    estimated: int  # the estimate the curve draws
    items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def item_tokens(self) -> int:
        return sum(i["tokens"] for i in self.items)

    def as_dict(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation_id,
            "call": self.call,
            "calls": self.calls,
            "position": self.position,
            "model": self.model,
            "measured_input": self.measured,
            "estimated_context": self.estimated,
            "items": self.items,
        }


def _calls(conv: Conversation):
    return ModelCall.objects.filter(conversation=conv).order_by("position", "id")


def resolve(conv: Conversation, n: int | str) -> tuple[int, int, ModelCall]:
    """(number, count, call) of call `n` (1-based, or "last"); NoSuchCall with a sentence otherwise."""
    count = _calls(conv).count()
    if not count:
        raise NoSuchCall("this conversation has no model call")
    if n == "last":
        number = count
    else:
        try:
            number = int(n)
        except (TypeError, ValueError):
            raise NoSuchCall(f"call must be a number from 1 to {count}, or last") from None
    if not 1 <= number <= count:
        raise NoSuchCall(f"call {number} does not exist: this conversation has {count} model call{'s' * (count != 1)} (1 to {count})")
    return number, count, _calls(conv)[number - 1]


def call_window(conv: Conversation, n: int | str) -> CallWindow:
    number, count, call = resolve(conv, n)
    items = _request_items(conv, call, number)
    if items is None:
        items = _position_items(conv, call)
    counts = tokens.count_texts([i["text"] for i in items])
    for item, t in zip(items, counts):
        item["tokens"] = t
    measured = call.input_uncached + call.cache_write + call.cache_read
    return CallWindow(conv.pk, number, count, call.position, call.model, measured or None, call.estimated_context, items)


def _position_items(conv: Conversation, call: ModelCall) -> list[dict[str, Any]]:
    """The window as the positions give it (core/window.py): the fold in effect, what it kept, what followed."""
    folds = [f for f in segment_folds(conv) if f.origin == "imported"]
    plan = core_window.plan(call.position, curve_fold_spans(conv))
    fold = folds[plan.fold_index] if plan.fold_index is not None and plan.fold_index < len(folds) else None
    if fold is not None and (fold.preserved or fold.summary_last):
        at = uuid_positions(conv, fold.preserved or [])
        plan = plan.listed([at[u] for u in fold.preserved or [] if u in at], summary_last=fold.summary_last)
    wanted = list(plan.head)
    rows = Message.objects.filter(conversation=conv)
    head = {r[0]: r for r in rows.filter(position__in=wanted).values_list(*_FIELDS)} if wanted else {}
    rest = rows.filter(position__lte=plan.end)
    if plan.start is not None:
        rest = rest.filter(position__gte=plan.start)
    ordered = [head[p] for p in wanted if p in head]
    ordered += [r for r in rest.exclude(position__in=wanted).order_by("position").values_list(*_FIELDS)]
    items: list[dict[str, Any]] = []
    if fold is not None and plan.summary_position is None:
        items.append(core_window.summary_item(fold.summary_text))
    for position, role, blocks, flags, is_summary in ordered:
        summary = is_summary or position == plan.summary_position
        if summary and not core_window.sent(role, flags):
            role = "user"
        if core_window.sent(role, flags):
            items.extend(core_window.message_items(role, blocks, summary=summary))
    return items


def _request_items(conv: Conversation, call: ModelCall, number: int) -> list[dict[str, Any]] | None:
    """The window as the log's own record of the request gives it (Claude Code 2.1.3xx: the call's
    first message holds `flags.request`, {"keep": n, "tail": entries}: n entries of the request of
    the call before it, then its own); None where the call has none (the positions tell then)."""
    own = Message.objects.filter(pk=call.message_id).values_list("flags", flat=True).first() if call.message_id else None
    if not (own or {}).get("request"):
        return None
    requests = [
        (flags or {}).get("request")
        for flags in _calls(conv)[:number].values_list("message__flags", flat=True)
    ]
    entries = core_window.sent_entries(requests)
    if entries is None:
        return None
    uuids = [u for e in entries for u in e.get("uuids") or ()]
    by_uuid: dict[str, tuple] = {}
    for i in range(0, len(uuids), 500):
        chunk = uuids[i : i + 500]
        for uuid, role, blocks, is_summary in Message.objects.filter(conversation=conv, uuid__in=chunk).values_list(
            "uuid", "role", "blocks", "is_compact_summary"
        ):
            by_uuid[uuid] = (role, blocks, is_summary)
    summaries = list(Message.objects.filter(conversation=conv, is_compact_summary=True).values_list("blocks", flat=True))
    texts = ["\n".join(b.get("text") or "" for b in blocks if isinstance(b, dict)) for blocks in summaries]
    return core_window.request_items(entries, by_uuid, texts)
