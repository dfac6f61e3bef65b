"""A fold's figures that only the calls around it give: the window after it (``tokens_after``) and
the cost of the summarizer's own call (``Fold.cost``), and which records of a compaction file are
the parent's own, replayed.

- ``tokens_after``: the measured input of the first model call after the fold (uncached input +
  cache write + cache read: the way ``tokens_before`` is measured; DESIGN.md, token accounting),
  when that call comes before the next fold: what the model was actually sent once the fold took
  effect. A format's own figure (Claude Code's ``postTokens``: its estimate of the summary alone)
  is not the window after, so it yields to the call (issue 33, checked against the requests the
  agents sent). A fold no call follows gets none (the page says so); a fold followed only by
  calls the log did not measure keeps the format's figure, if any. It is set again on every
  import, so an appended import fills it when the call arrives later.
- A compaction file may first replay the whole conversation the fold puts away (a format whose
  compaction sub-agent does: importers/ says which) (the parent's own records: same uuids, same message ids), then
  the summarizer's prompt and its one call. The replayed records are not stored in the compaction
  conversation (they are the parent's messages, shown there, in the archived segment): it holds the
  summarizer's prompt and answer only, so its calls, usage and tool calls are the summarizer's.
  ``parent_records`` says which records those are.
- The fold's summary cost is the summarizer's calls only: the compaction conversation's calls whose
  message id is none of the parent's calls (conversations imported before the replayed records
  were left out still hold them).
"""

from __future__ import annotations

from contextviewer.core.records import UsageRecord
from contextviewer.conversations.models import Conversation, ConversationKind, Fold, FoldOrigin
from contextviewer.ingest.prepare import PreparedMessage


def parent_records(parent: Conversation) -> tuple[set[str], set[str]]:
    """The uuids of the parent's messages and the message ids of its model calls."""
    uuids = set(parent.messages.exclude(uuid=None).values_list("uuid", flat=True))
    call_ids = set(parent.model_calls.exclude(api_message_id="").values_list("api_message_id", flat=True))
    return uuids, call_ids


def fill_tokens_after(conversation: Conversation) -> int:
    """Set ``tokens_after`` of the conversation's imported folds from the first model call after
    each (before the next fold): its measured input; None when no call follows; the format's own
    figure kept when only unmeasured calls follow. Returns how many folds changed."""
    folds = list(conversation.folds.counted().filter(origin=FoldOrigin.IMPORTED).order_by("position", "pk"))
    if not folds:
        return 0
    calls = list(
        conversation.model_calls.filter(position__gt=folds[0].position)
        .order_by("position", "pk")
        .values_list("position", "input_uncached", "cache_write", "cache_read")
    )
    changed = []
    for n, fold in enumerate(folds):
        stop = next((f.position for f in folds[n + 1:] if f.position > fold.position), None)
        after = [c for c in calls if c[0] > fold.position and (stop is None or c[0] <= stop)]
        measured = next((a + b + c for _p, a, b, c in after if a + b + c > 0), None)
        value = measured if measured is not None else (fold.tokens_after if after else None)
        if value != fold.tokens_after:
            fold.tokens_after = value
            changed.append(fold)
    if changed:
        Fold.objects.bulk_update(changed, ["tokens_after"])
    return len(changed)


def fill_tokens_before(conversation: Conversation) -> int:
    """Set ``tokens_before`` of the conversation's imported folds that lack it (the format records
    none) from the last measured model call before each, after the fold before it: the input the
    window held when the agent folded it. Returns how many were set."""
    folds = list(conversation.folds.counted().filter(origin=FoldOrigin.IMPORTED, tokens_before=None).order_by("position", "pk"))
    if not folds:
        return 0
    every = list(conversation.folds.counted().filter(origin=FoldOrigin.IMPORTED).values_list("position", flat=True))
    calls = list(
        conversation.model_calls.filter(position__lt=folds[-1].position)
        .order_by("position", "pk")
        .values_list("position", "input_uncached", "cache_write", "cache_read")
    )
    for fold in folds:
        since = max((p for p in every if p < fold.position), default=None)
        before = [a + b + c for p, a, b, c in calls if p < fold.position and (since is None or p > since) and a + b + c > 0]
        fold.tokens_before = before[-1] if before else None
    changed = [f for f in folds if f.tokens_before is not None]
    if changed:
        Fold.objects.bulk_update(changed, ["tokens_before"])
    return len(changed)


def summary_calls(child: Conversation, parent_call_ids: set[str]) -> list:
    """A compaction conversation's summarizer calls: those that are none of the parent's calls."""
    return [c for c in child.model_calls.order_by("position", "pk") if c.api_message_id not in parent_call_ids]


def compaction_children(parent: Conversation):
    return parent.children.filter(kind=ConversationKind.COMPACTION)


def replayed_record(record, replayed: tuple[set[str], set[str]]) -> bool:
    """A record of a compaction file that is its parent's own (a message or a call it replays)."""
    if isinstance(record, PreparedMessage):
        return record.uuid is not None and record.uuid in replayed[0]
    if isinstance(record, UsageRecord):
        return record.api_message_id in replayed[1] or (record.message_uuid or "") in replayed[0]
    return False


def attach_compaction_costs(parent: Conversation) -> None:
    """The compaction sub-agent's summarizer call is the cost of the fold it wrote (nearest in time):
    its calls that are not the parent's own (py)."""
    folds = list(parent.folds.filter(kind="compact", origin="imported"))
    if not folds:
        return
    parent_call_ids = parent_records(parent)[1]
    for child in compaction_children(parent):
        calls = summary_calls(child, parent_call_ids)
        if not calls:
            continue
        when = child.ended_at
        fold = min(
            folds,
            key=lambda f: abs((f.timestamp - when).total_seconds()) if f.timestamp and when else float("inf"),
        )
        cost = {
            "calls": len(calls),
            "input_uncached": sum(c.input_uncached for c in calls),
            "cache_write": sum(c.cache_write for c in calls),
            "cache_read": sum(c.cache_read for c in calls),
            "output": sum(c.output for c in calls),
            "model": calls[0].model,
            "conversation_id": child.pk,
        }
        if fold.cost != cost:
            fold.cost = cost
            fold.save(update_fields=["cost"])
