"""Fact probes: the salient facts of each fold's archived segment and whether its summary keeps
them (DESIGN.md, Compaction review). Computed by a probes job after an import or a handoff (the
job kinds' follow-up, jobs/kinds.py FOLLOW_UPS: after_job), lazily on the pages, and read by the
judge, the queues and the dashboard.

The archived segment comes from the one segment loader (conversations/segments.py). Which folds
review probes is its own rule (review_folds): every fold that makes a segment, the alternative
summaries written here included (segments.segment_folds leaves those out: they are never in play,
but review probes and compares them).

What a probe reads (probed_messages): the archived segment's messages; for a handoff made here
(and its alternative summaries), whose summarizer read the previous fold's summary as text (it has
no message of its own), that summary first, so what it carried over is measured too. What it
stores beside the facts (tiers A and B): the background (tier C), and the continuation
(core/continuation.py): what the conversation did after the fold, up to the next fold that makes a
segment; a lost fact used again there is marked `used_after`.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from contextviewer.conversations import segments as loader
from contextviewer.conversations.models import Conversation, Fold, FoldKind, FoldOrigin, Message
from contextviewer.core import continuation as core_continuation
from contextviewer.core import facts as core_facts
from contextviewer.core import tokens as core_tokens
from contextviewer.core.window import ENCRYPTED
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import Job
from contextviewer.review.errors import ReviewError
from contextviewer.review.models import PROBE_VERSION, FactProbe


def review_folds(**filters):
    """The folds review probes, scores and compares: every fold that makes a segment, alternative
    summaries included (a microcompact has no summary and no segment)."""
    return Fold.objects.summaries().filter(**filters)


def segment_start(fold: Fold) -> int:
    """First position of the fold's archived segment, as the conversation page shows it (the one
    segment loader); a fold that makes no segment (a microcompact) starts and ends at itself."""
    segment = loader.archived_segment(fold)
    return segment.start if segment is not None else fold.position


def segment_messages(fold: Fold, layout: loader.SegmentLayout | None = None) -> list[Message]:
    """The messages of the fold's archived segment (none for a fold that makes no segment)."""
    if layout is None:
        segment = loader.archived_segment(fold)
    else:  # the same segment, from a layout loaded already
        in_play = _in_play(fold, layout) if loader.makes_segment(fold) else None
        segment = layout.archived_segment(in_play) if in_play is not None else None
    if segment is None:
        return []
    return list(
        Message.objects.filter(conversation_id=fold.conversation_id)
        .filter(loader.archived_q(segment))
        .defer("raw")
        .order_by("position")
    )


def _plain(m: Message) -> dict:
    return {
        "position": m.position, "turn": m.turn, "role": m.role, "blocks": m.blocks, "is_meta": m.is_meta,
        "is_compact_summary": m.is_compact_summary,  # the previous fold's summary is not user text
    }


def _in_play(fold: Fold, layout: loader.SegmentLayout) -> Fold | None:
    """The fold whose segment `fold` stands for: itself, or for an alternative summary the original."""
    if fold.kind == loader.ALTERNATIVE:
        return loader.original_of(fold, layout.folds)
    return next((f for f in layout.folds if f.pk == fold.pk), None)


def previous_summary(fold: Fold, layout: loader.SegmentLayout | None = None) -> Fold | None:
    """The fold before `fold` whose summary the summarizer of `fold` read as text: for a handoff
    made here (and its alternative summaries: same segment, same facts), the previous fold that
    makes a segment when its summary has no message (a handoff made here before it). An imported
    summary's message lies inside the archived segment already: it is read with the others."""
    layout = loader.load(fold.conversation) if layout is None else layout
    in_play = _in_play(fold, layout)
    if in_play is None or in_play.kind != FoldKind.HANDOFF or in_play.origin != FoldOrigin.GENERATED:
        return None
    before = [(f, span) for f, span in zip(layout.folds, layout.spans, strict=True) if f.position < in_play.position]
    if not before:
        return None
    previous, span = before[-1]
    if not previous.summary_text or span.summary_position is not None:
        return None
    return previous


def probed_messages(
    fold: Fold, layout: loader.SegmentLayout | None = None, messages: list[Message] | None = None
) -> tuple[list[dict], int]:
    """What the probe of `fold` reads, as plain dicts (core/facts.py), and its tokens: the
    previous summary when the fold's summarizer read it as text (previous_summary), then the
    archived segment's messages."""
    layout = loader.load(fold.conversation) if layout is None else layout
    messages = segment_messages(fold, layout) if messages is None else messages
    out = [_plain(m) for m in messages]
    tokens = sum(m.token_total for m in messages)
    previous = previous_summary(fold, layout)
    if previous is not None:
        head = messages[0] if messages else None
        out.insert(0, {
            # At the head of the segment: its facts link to the segment's first message.
            "position": head.position if head else fold.position, "turn": head.turn if head else 0,
            "role": "user", "blocks": [{"kind": "text", "text": previous.summary_text}], "is_meta": False,
            "is_compact_summary": True,
        })
        # A generated summary's tokens_after is its size; an imported fold's is the whole window after it.
        size = previous.tokens_after if previous.origin == FoldOrigin.GENERATED else None
        tokens += size or core_tokens.count_text(previous.summary_text)
    return out, tokens


def after_messages(fold: Fold, layout: loader.SegmentLayout | None = None) -> list[dict]:
    """The messages after the fold, up to the next fold that makes a segment (inclusive: the
    last message it puts away), as plain dicts; the fold's own summary message is not among them."""
    if not loader.makes_segment(fold):
        return []  # a microcompact stands in for nothing: nothing continues from it
    layout = loader.load(fold.conversation) if layout is None else layout
    in_play = _in_play(fold, layout) or fold
    later = [f.position for f in layout.folds if f.position > in_play.position]
    summary_at = {span.summary_position for f, span in zip(layout.folds, layout.spans, strict=True) if f.pk == in_play.pk}
    qs = Message.objects.filter(conversation_id=fold.conversation_id, position__gt=in_play.position)
    if later:
        qs = qs.filter(position__lte=min(later))
    qs = qs.exclude(position__in=[p for p in summary_at if p is not None])
    return [_plain(m) for m in qs.defer("raw").order_by("position")]


def _mark_used(facts: list[dict], used: set[str]) -> list[dict]:
    """A lost fact the conversation used again after the fold: `used_after`."""
    for f in facts:
        if not f.get("kept"):
            f["used_after"] = f.get("key") in used
    return facts


def compute_probe(fold: Fold) -> FactProbe:
    """Probe one fold (idempotent: one FactProbe per fold, replaced when recomputed)."""
    conv = fold.conversation
    layout = loader.load(conv)
    messages = segment_messages(fold, layout)
    probed, folded_tokens = probed_messages(fold, layout, messages)
    summary = fold.summary_text or ""
    encrypted = summary_encrypted(fold)
    report = core_facts.probe(
        probed,
        summary,
        cwd=conv.cwd,
        folded_tokens=folded_tokens,
        # An encrypted summary's text is not what the model read (Codex: the kept items, rendered):
        # its size is not known, so neither is the compression.
        summary_tokens=core_tokens.count_text(summary) if summary and not encrypted else 0,
    )
    after = after_messages(fold, layout)
    continuation = core_continuation.measure(probed, summary, after, report, cwd=conv.cwd) if after else None
    used = set(continuation.used_after) if continuation is not None else set()
    values = {
        "project_id": conv.project_id,
        "conversation_id": conv.pk,
        "version": PROBE_VERSION,
        "retention": report.retention,
        "per_kind": report.per_kind(),
        "compression_ratio": report.compression_ratio,
        "folded_tokens": report.folded_tokens,
        "summary_tokens": report.summary_tokens,
        "summary_encrypted": encrypted,
        # Tiers A and B, each with its tier (core/facts.py): what retention and the lost list count.
        "facts": _mark_used([f.as_dict() for f in report.facts], used),
        # Tier C: paths only seen in tool output, vendored trees, lookups; shown apart, hidden.
        "background": _mark_used([f.as_dict() for f in report.background], used),
        "continuation": continuation.as_dict() if continuation is not None else {},
        "segment_start": messages[0].position if messages else fold.position,
    }
    try:
        with transaction.atomic():
            probe, _ = FactProbe.objects.update_or_create(fold=fold, defaults=values)
    except IntegrityError:  # computed at the same moment elsewhere: same result
        probe = FactProbe.objects.get(fold=fold)
    return probe


def summary_encrypted(fold: Fold) -> bool:
    """Whether the log keeps the fold's summary encrypted (Codex's remote compaction: its summary
    message holds one block of raw_type "encrypted_summary", core/window.py ENCRYPTED). The fold's
    summary_text is then no summary the model wrote (Codex renders the items the fold kept)."""
    if fold.summary_message_id is None:
        return False
    blocks = Message.objects.filter(pk=fold.summary_message_id).values_list("blocks", flat=True).first() or []
    return any(isinstance(b, dict) and b.get("raw_type") == ENCRYPTED for b in blocks)


def probe_for(fold: Fold) -> FactProbe:
    """The fold's probe, computed now when missing or made by an older extractor."""
    probe = FactProbe.objects.filter(fold=fold).first()
    if probe is None or probe.version != PROBE_VERSION:
        probe = compute_probe(fold)
    return probe


def enqueue_probes(conversation: Conversation, *, user=None) -> Job | None:
    """Start a probes job for a conversation with folds (after an import or a handoff).

    The key names the folds present, so the same set of folds is probed once."""
    folds = list(review_folds(conversation=conversation).order_by("pk").values_list("pk", flat=True))
    if not folds:
        return None
    key = f"probes:{conversation.pk}:{len(folds)}:{folds[-1]}"
    job, _ = jobs.create_job(
        conversation.project, "probes", {"conversation_id": conversation.pk}, user=user, idempotency_key=key
    )
    return job


def run_probes(job: Job, progress) -> dict:
    conv = Conversation.objects.filter(pk=job.params.get("conversation_id"), project=job.project).first()
    if conv is None:
        raise ReviewError("The conversation no longer exists.")
    folds = list(review_folds(conversation=conv).select_related("conversation").order_by("position", "pk"))
    out = []
    for i, fold in enumerate(folds):
        progress(i / max(len(folds), 1), f"probing fold {i + 1} of {len(folds)}")
        probe = compute_probe(fold)
        out.append({"fold_id": fold.pk, "retention": probe.retention, "facts": len(probe.facts)})
    return {"conversation_id": conv.pk, "folds": out}


def _fact_row(f: dict) -> dict:
    return {
        "kind": f["kind"], "text": f["text"], "turn": f["turn"], "position": f["position"],
        "tier": f.get("tier", "B"), "used_after": bool(f.get("used_after")),
    }


def continuation_of(probe: FactProbe) -> dict:
    """The continuation's figures as the command and the API give them (None: nothing followed)."""
    c = probe.continuation or {}
    anticipated = c.get("anticipated")
    return {
        "reread_after": list(c.get("reread_after") or []),
        "anticipated": {"hits": anticipated[0], "of": anticipated[1]} if anticipated else None,
        "calls_before_first_edit": c.get("calls_before_first_edit"),
        "after_messages": c.get("after_messages", 0),
    }


def probe_row(probe: FactProbe) -> dict:
    """The lost facts (tiers A and B, each marked when used again after the fold), the paths kept
    only as named by a pattern (a glob or a folder of the summary), the background
    (tier C) and what followed the fold (re-read paths, anticipated actions, calls before the
    first edit), as the command and the API give them."""
    return {
        "lost": [_fact_row(f) for f in probe.lost_facts],
        # Kept only because a glob or a folder the summary names covers them (core/pathmatch.py).
        "named_by_pattern": [_fact_row(f) for f in probe.facts if f.get("how") == "pattern"],
        "background": [dict(_fact_row(f), kept=bool(f.get("kept"))) for f in probe.background],
        **continuation_of(probe),
    }


def probe_report(conv: Conversation) -> list[dict]:
    """Per fold: retention per kind and overall, compression, summary tokens, lost facts with turns,
    the background and the continuation (probe_row)."""
    rows = []
    for fold in review_folds(conversation=conv).select_related("conversation").order_by("position", "pk"):
        probe = probe_for(fold)
        rows.append(
            {
                "fold_id": fold.pk,
                "position": fold.position,
                "origin": fold.origin,
                "retention": probe.retention,
                "per_kind": probe.per_kind,
                "compression_ratio": probe.compression_ratio,
                "folded_tokens": probe.folded_tokens,
                "summary_tokens": probe.summary_tokens,
                "summary_encrypted": probe.summary_encrypted,
                "facts": len(probe.facts),
                **probe_row(probe),
            }
        )
    return rows


def segment_turns(fold: Fold) -> set[int]:
    """The turns of the fold's archived segment (none for a fold that makes no segment)."""
    segment = loader.archived_segment(fold)
    if segment is None:
        return set()
    return set(
        Message.objects.filter(conversation_id=fold.conversation_id)
        .filter(loader.archived_q(segment))
        .values_list("turn", flat=True)
        .distinct()
    )


def after_job(job: Job, result: dict) -> None:
    """Follow-up of an import and of a handoff (jobs/kinds.py FOLLOW_UPS): probe every
    conversation the job touched that now has folds: did each summary keep the facts it replaced?

    The job's result names the conversations: an import's lists them with their sub-agents
    (``conversations``), a handoff's names its one (``conversation_id``). One probes job per set
    of folds (enqueue_probes' key), so a retried job queues nothing new."""
    ids = [c["id"] for c in result.get("conversations") or () if isinstance(c, dict) and c.get("id")]
    if result.get("conversation_id"):
        ids.append(result["conversation_id"])
    if not ids:
        return
    for conv in Conversation.objects.filter(pk__in=ids, project_id=job.project_id, fold_count__gt=0):
        enqueue_probes(conv, user=job.created_by)
