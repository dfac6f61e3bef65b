"""Fact probes: the salient facts of each fold's archived segment and whether its summary keeps
them (DESIGN.md, Compaction review). Computed by a probes job after an import or a handoff (the
job kinds' follow-up, jobs/kinds.py FOLLOW_UPS: after_job), lazily on the pages, and read by the
judge, the queues and the dashboard.

The archived segment comes from the one segment loader (conversations/segments.py). Which folds
review probes is its own rule (review_folds): every fold that makes a segment, the alternative
summaries written here included (segments.segment_folds leaves those out: they are never in play,
but review probes and compares them).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from contextviewer.conversations import segments as loader
from contextviewer.conversations.models import Conversation, Fold, Message
from contextviewer.core import facts as core_facts
from contextviewer.core import tokens as core_tokens
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


def segment_messages(fold: Fold) -> list[Message]:
    """The messages of the fold's archived segment (none for a fold that makes no segment)."""
    segment = loader.archived_segment(fold)
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


def compute_probe(fold: Fold) -> FactProbe:
    """Probe one fold (idempotent: one FactProbe per fold, replaced when recomputed)."""
    conv = fold.conversation
    messages = segment_messages(fold)
    summary = fold.summary_text or ""
    report = core_facts.probe(
        [_plain(m) for m in messages],
        summary,
        cwd=conv.cwd,
        folded_tokens=sum(m.token_total for m in messages),
        summary_tokens=core_tokens.count_text(summary) if summary else 0,
    )
    values = {
        "project_id": conv.project_id,
        "conversation_id": conv.pk,
        "version": PROBE_VERSION,
        "retention": report.retention,
        "per_kind": report.per_kind(),
        "compression_ratio": report.compression_ratio,
        "folded_tokens": report.folded_tokens,
        "summary_tokens": report.summary_tokens,
        # Tiers A and B, each with its tier (core/facts.py); tier C (background: paths only seen in
        # tool output, vendored trees, lookups) is not stored: the lost list is what matters.
        "facts": [f.as_dict() for f in report.facts],
        "segment_start": messages[0].position if messages else fold.position,
    }
    try:
        with transaction.atomic():
            probe, _ = FactProbe.objects.update_or_create(fold=fold, defaults=values)
    except IntegrityError:  # computed at the same moment elsewhere: same result
        probe = FactProbe.objects.get(fold=fold)
    return probe


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


def probe_report(conv: Conversation) -> list[dict]:
    """Per fold: retention per kind and overall, compression, summary tokens, lost facts with turns."""
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
                "facts": len(probe.facts),
                "lost": [
                    {"kind": f["kind"], "text": f["text"], "turn": f["turn"], "position": f["position"]}
                    for f in probe.lost_facts
                ],
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
