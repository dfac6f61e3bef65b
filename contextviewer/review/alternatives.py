"""Summarize a fold again: another summary of the same archived segment, for pairwise review.

The job reads what the fold's own summarizer read (the loaded view just before the fold:
segments.loaded_input_at), asks the chosen provider (the builtin one or a configured one) for the
handoff sections and stores the answer as a Fold of kind "alternative" at the same position. The
original stays in play: the page, the loaded view, builds and the curve never read an alternative
(segments.segment_folds leaves them out), while review probes it on the original's segment and
compares the two. The fold's key is the job's idempotency key: a job run twice makes one summary.
"""

from __future__ import annotations

import hashlib

from django.db import IntegrityError, transaction
from django.utils import timezone

from contextviewer.builds import handoffs as handoff
from contextviewer.jobs import queue as jobs
from contextviewer.conversations import segments
from contextviewer.conversations.models import Fold, FoldOrigin
from contextviewer.jobs.models import Job
from contextviewer.core.tokens import count_text
from contextviewer.providers import services as providers
from contextviewer.providers.base import ProviderError
from contextviewer.review.probes import compute_probe

KIND = "summarize_again"


class CannotSummarize(ProviderError):
    """A fold that cannot be summarized again; the message says why."""


def original(fold: Fold) -> Fold:
    """The fold in play for `fold` (itself unless it is an alternative summary)."""
    if fold.kind != segments.ALTERNATIVE:
        return fold
    found = segments.original_of(fold)
    if found is None:
        raise CannotSummarize("the fold this summary stands beside no longer exists")
    return found


def summaries(fold: Fold) -> list[Fold]:
    """Every summary of the fold's archived segment: the original first, then the alternatives."""
    fold = original(fold)
    others = Fold.objects.filter(conversation_id=fold.conversation_id, position=fold.position, kind=segments.ALTERNATIVE)
    return [fold, *others.order_by("pk")]


def blind_order(folds: list[Fold], user) -> list[Fold]:
    """The summaries in an order that does not tell the original (always first otherwise), the
    same for one user on every page and answer."""
    uid = getattr(user, "pk", 0)
    return sorted(folds, key=lambda f: hashlib.sha256(f"{uid}:{f.pk}".encode()).hexdigest())


def origin_label(fold: Fold) -> str:
    """Where a summary came from, in words: the recorded compaction, a handoff made here, or
    another summary written here (the builtin summarizer, or a provider and its model)."""
    cost = fold.cost or {}
    made_by = " ".join(v for v in (cost.get("provider"), cost.get("model")) if v) or "?"
    if fold.kind == segments.ALTERNATIVE:
        return "summarized again · builtin summarizer" if cost.get("provider") == "builtin" else f"summarized again · {made_by}"
    if fold.origin == FoldOrigin.IMPORTED:
        agent = fold.conversation.agent if fold.conversation_id else ""
        return f"recorded compaction ({agent})" if agent else "recorded compaction"
    return f"handoff · {made_by}"


def start(fold: Fold, *, user=None, provider: str | None = None, idempotency_key: str | None = None, enqueue=True) -> Job:
    """Check what can be checked now (a clear error beats a failed job), then create the job."""
    fold = original(fold)
    if not segments.makes_segment(fold):
        raise CannotSummarize("this fold clears tool results in place and has no segment to summarize")
    if segments.archived_segment(fold) is None:
        raise CannotSummarize("this fold puts no message away yet: nothing to summarize")
    if provider:
        providers.get_provider(fold.conversation.project, provider)  # raises ProviderError with the reason
    params = {"fold_id": fold.pk, "provider": provider or ""}
    job, _ = jobs.create_job(fold.conversation.project, KIND, params, user=user, idempotency_key=idempotency_key, enqueue=enqueue)
    return job


def result(alt: Fold) -> dict:
    return {
        "conversation_id": alt.conversation_id,
        "fold_id": alt.pk,
        "original_fold_id": (segments.original_of(alt) or alt).pk,
        "position": alt.position,
        "origin": origin_label(alt),
        "provider": (alt.cost or {}).get("provider"),
        "model": (alt.cost or {}).get("model"),
        "summary": alt.summary_text,
    }


def run(job: Job, progress) -> dict:
    fold = (
        Fold.objects.select_related("conversation", "conversation__project")
        .filter(pk=job.params.get("fold_id"), conversation__project=job.project)
        .first()
    )
    if fold is None:
        raise CannotSummarize("the fold no longer exists")
    conv = fold.conversation
    key = f"again:{job.idempotency_key}"[:255]
    existing = Fold.objects.filter(conversation=conv, key=key).first()
    if existing is not None:  # a retried job whose summary was already written
        return result(existing)
    progress(0.05, "reading what the fold's summarizer read")
    view = handoff.loaded_input(conv, segments.loaded_input_at(fold))
    if not view.entries:
        raise CannotSummarize("the fold's segment has no text, tool call or summary to summarize")
    provider, summary, cost = handoff.summarize_view(job, conv, view, progress, storing="storing the summary beside the original")
    try:
        with transaction.atomic():
            alt, _ = Fold.objects.get_or_create(
                conversation=conv,
                key=key,
                defaults={
                    "position": fold.position,
                    "summary_text": summary,
                    "kind": segments.ALTERNATIVE,
                    "origin": FoldOrigin.GENERATED,
                    "trigger": f"again ({provider.name})"[:40],
                    "tokens_before": fold.tokens_before or view.tokens_measured or view.tokens_estimate,
                    "tokens_after": count_text(summary),
                    "cost": cost,
                    "timestamp": timezone.now(),
                },
            )
    except IntegrityError:  # the same job, run twice at once: the other run wrote it
        alt = Fold.objects.get(conversation=conv, key=key)
    compute_probe(alt)  # its retention, on the original's segment, for the pairwise page
    return result(alt)
