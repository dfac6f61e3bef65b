"""What a finished job made, for its job page (jobs/kinds.py ``OUTCOMES`` names these by dotted
path, so the jobs app imports nothing of the apps above it).

An outcome is a dict the job page renders the same way for every kind: a heading, figures
(label, value), an optional summary (sanitized HTML from the conversation's Markdown renderer)
and links (label, url); ``gone`` says what was made and is no longer there. Read from the job's
result and the rows it names, never from the job's parameters alone.
"""

from __future__ import annotations

from django.urls import reverse

from contextviewer.display import rendering
from contextviewer.conversations.models import Conversation, Fold, FoldOrigin
from contextviewer.review.models import FactProbe

SUMMARY_SHOWN = 4_000  # characters of the summary on the job page; the rest behind "Open the full summary"


def _tokens(n: int | None) -> str:
    return f"{n:,}" if isinstance(n, int) else "not measured yet (no model call after it)"


def fold_outcome(job) -> dict | None:
    """A handoff or "summarize again": the fold with its summary and its fact probe."""
    result = job.result or {}
    if not result.get("fold_id"):
        return None
    fold = Fold.objects.filter(pk=result["fold_id"], conversation__project=job.project).select_related("conversation").first()
    if fold is None:
        return {"heading": "The fold", "gone": "The fold this job made no longer exists (its conversation was deleted or re-imported)."}
    conv = fold.conversation
    summary = fold.summary_text or ""
    cost = fold.cost or {}
    figures = [
        ("Conversation", conv.title or conv.external_id),
        ("Folds messages up to", f"#{fold.position}"),
        ("Tokens before", _tokens(fold.tokens_before)),
        # A fold made here has no model call after it yet: its figure is the summary, counted.
        ("Summary size (estimated)", _tokens(fold.tokens_after)) if fold.origin == FoldOrigin.GENERATED
        else ("Tokens after (first call after it)", _tokens(fold.tokens_after)),
        ("Summarizer", str(cost.get("provider") or result.get("provider") or "builtin")),
    ]
    if cost.get("input_tokens") is not None or cost.get("output_tokens") is not None:
        figures.append(("Summary call", f"{int(cost.get('input_tokens') or 0):,} in, {int(cost.get('output_tokens') or 0):,} out"))
    probe = FactProbe.objects.filter(fold=fold).first()
    if probe is None:
        figures.append(("Fact probe", "queued: it runs after the fold (reload to see it)"))
    elif probe.retention is None:
        figures.append(("Fact probe", "no salient facts in the folded segment"))
    else:
        kept = sum(1 for f in probe.facts or [] if f.get("kept"))
        figures.append(("Fact probe", f"kept {kept} of {len(probe.facts or [])} salient facts ({probe.retention:.0%})"))
    links = [
        ("Open the conversation at this fold", f"{reverse('conversation', args=[conv.pk])}?folded={fold.pk}"),
        ("Review this fold (probes, compare)", reverse("review_fold", args=[fold.pk])),
    ]
    if len(summary) > SUMMARY_SHOWN:
        links.insert(1, ("Open the full summary", reverse("fold_summary", args=[conv.pk, fold.pk])))
    return {
        "heading": "The fold it made",
        "figures": figures,
        "summary": rendering.markdown_html(summary[:SUMMARY_SHOWN] + ("…" if len(summary) > SUMMARY_SHOWN else "")),
        "links": links,
    }


def conversation_outcome(job) -> dict | None:
    """A title, probes or judge job: the conversation (and fold) it worked on."""
    result = job.result or {}
    conv_id = result.get("conversation_id") or (job.params or {}).get("conversation_id")
    if not conv_id:
        return None
    conv = Conversation.objects.filter(pk=conv_id, project=job.project).first()
    if conv is None:
        return {"heading": "The conversation", "gone": "The conversation this job worked on no longer exists."}
    links = [("Open the conversation", reverse("conversation", args=[conv.pk]))]
    fold_id = result.get("fold_id") or (job.params or {}).get("fold_id")
    if fold_id and Fold.objects.filter(pk=fold_id, conversation=conv).exists():
        links.append(("Review the fold", reverse("review_fold", args=[fold_id])))
    return {"heading": "The conversation", "figures": [("Conversation", conv.title or conv.external_id)], "links": links}
