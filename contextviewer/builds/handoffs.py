"""Handoff: fold the loaded view into a summary with the project's provider, as a job.

The job reads the loaded view (latest summary + preserved tail + active messages), renders it as
one flat transcript, asks the provider for the four sections and stores the answer as a new fold
at the current end of the conversation. The fold's key is the job's idempotency key: a retried or
twice-run job makes exactly one fold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone

from contextviewer.core import handoff as core
from contextviewer.core.policies import fire_points
from contextviewer.core.secrets import mask_text
from contextviewer.core.tokens import count_text
from contextviewer.importers import formats
from contextviewer.providers import services as providers
from contextviewer.providers.base import ProviderError
from contextviewer.providers.models import ProviderConfig

from contextviewer.jobs import queue as jobs
from contextviewer.conversations import segments
from contextviewer.display.panels import Panel
from contextviewer.conversations.models import Conversation, Fold, FoldOrigin, Message, ModelCall
from contextviewer.jobs.models import Job

MAX_SUMMARY_TOKENS = 4096


class NothingToFold(ProviderError):
    pass


@dataclass
class LoadedInput:
    entries: list[core.Entry]
    start: int  # first position of the loaded segment
    end: int  # last position (the new fold's position)
    latest_fold: Fold | None
    tokens_estimate: int  # estimated tokens of the loaded view
    tokens_measured: int | None  # the latest model call's measured context, when inside the view
    positions: list[int] = field(default_factory=list)  # the messages read (summary, preserved, active)


def loaded_input(conv: Conversation, loaded: segments.LoadedInput | None = None) -> LoadedInput:
    """The loaded view of a conversation as transcript entries, from the one segment loader (or
    `loaded`: the view an earlier fold's summarizer read, segments.loaded_input_at)."""
    loaded = segments.loaded_input(conv) if loaded is None else loaded
    if loaded.segment is None or loaded.last is None:
        raise NothingToFold("this conversation has no messages to fold")
    latest = loaded.fold

    entries: list[core.Entry] = []
    estimate = 0
    # The latest summary heads the view: its message is read with the others; a summary without a
    # message of its own (a handoff made here) is its text.
    if loaded.summary_text:
        entries.append(core.Entry("summary", loaded.summary_text))
        # A handoff's tokens_after is its summary's size; an imported fold's is the whole window
        # after it (ingest/fold_figures.py), harness included: not the summary's.
        generated = latest is not None and latest.origin == FoldOrigin.GENERATED
        estimate += (latest.tokens_after if generated else None) or count_text(loaded.summary_text)
    messages = []
    positions = []
    fields = ("position", "role", "blocks", "is_meta", "is_compact_summary", "token_total")
    for position, role, blocks, is_meta, is_summary, tokens in segments.loaded_messages(conv, loaded, *fields):
        messages.append((role, blocks, is_meta, is_summary))
        positions.append(position)
        estimate += tokens or 0
    entries += core.entries_from_messages(messages)

    # The agent's measured context is the loaded view's size only while the folds are the agent's
    # own: after a handoff made here, the recorded calls still carried the unfolded history.
    measured = None
    if latest is None or latest.origin == FoldOrigin.IMPORTED:
        call = ModelCall.objects.filter(
            conversation=conv, position__gte=loaded.segment.start, position__lte=loaded.last
        ).order_by("-position", "-id").first()
        if call is not None:
            measured = call.context_size + call.output
    return LoadedInput(entries, loaded.segment.start, loaded.last, latest, estimate, measured or None, positions)


def start_handoff(conv: Conversation, *, user=None, provider: str | None = None, idempotency_key: str | None = None, enqueue=True):
    """Check what can be checked now (a clear error beats a failed job), then create the job."""
    if provider:
        providers.get_provider(conv.project, provider)  # raises ProviderError with the reason
    last = Message.objects.filter(conversation=conv).order_by("-position").values_list("position", flat=True).first()
    if last is None:
        raise NothingToFold("this conversation has no messages to fold")
    latest = conv.folds.exclude(kind__in=segments.NO_SEGMENT_KINDS).order_by("-position").values_list("position", flat=True).first()
    if latest is not None and latest >= last:
        raise NothingToFold("nothing to fold: no message after the latest fold")
    params = {"conversation_id": conv.pk, "provider": provider or ""}
    return jobs.create_job(conv.project, "handoff", params, user=user, idempotency_key=idempotency_key, enqueue=enqueue)


def fold_result(fold: Fold) -> dict:
    return {
        "conversation_id": fold.conversation_id,
        "fold_id": fold.pk,
        "position": fold.position,
        "tokens_before": fold.tokens_before,
        "tokens_after": fold.tokens_after,
        "provider": (fold.cost or {}).get("provider"),
        "model": (fold.cost or {}).get("model"),
        "summary": fold.summary_text,
    }


def summarize_view(job: Job, conv: Conversation, view: LoadedInput, progress, *, storing: str):
    """Ask the job's provider for the four sections of the loaded view: (provider, summary, cost).

    The summary is validated and stored masked whatever answered (the provider masks too); the cost
    is the fold's cost record. `storing` is the progress line shown once the answer is in.
    """
    system, prompt = core.build_prompt(core.render_transcript(view.entries))
    provider = providers.get_provider(job.project, job.params.get("provider") or None)
    progress(0.2, f"asking {provider.name} for the summary")
    completion = providers.complete(
        provider,
        project=job.project,
        role="handoff",
        system=system,
        prompt=prompt,
        max_tokens=MAX_SUMMARY_TOKENS,
        job=job,
        conversation=conv,
        progress=progress,
    )
    progress(0.9, storing)
    try:
        sections = core.validate_sections(completion.text)
    except core.SummaryInvalid as exc:
        raise ProviderError(f"{provider.name}: {exc}") from exc
    summary = mask_text(core.format_sections(sections))
    cost = {
        "provider": provider.name,
        "model": completion.model,
        "calls": 1,
        "input_uncached": max(0, completion.input_tokens - completion.cache_read_tokens - completion.cache_write_tokens),
        "cache_read": completion.cache_read_tokens,
        "cache_write": completion.cache_write_tokens,
        "output": completion.output_tokens,
        "cost_usd": completion.cost_usd,
    }
    return provider, summary, cost


def run_handoff(job: Job, progress) -> dict:
    conv = Conversation.objects.select_related("project").get(pk=job.params["conversation_id"], project=job.project)
    existing = Fold.objects.filter(conversation=conv, key=job.idempotency_key).first()
    if existing is not None:  # a retried job whose fold was already written
        return fold_result(existing)
    progress(0.05, "reading the loaded view")
    view = loaded_input(conv)
    if view.latest_fold is not None and view.latest_fold.position >= view.end:
        raise NothingToFold("nothing to fold: no message after the latest fold")
    if not view.entries:
        raise NothingToFold("nothing to fold: the loaded view has no text, tool call or summary")
    provider, summary, cost = summarize_view(job, conv, view, progress, storing="storing the fold")
    try:
        with transaction.atomic():
            fold, _ = Fold.objects.get_or_create(
                conversation=conv,
                key=job.idempotency_key[:255],
                defaults={
                    "position": view.end,
                    "summary_text": summary,
                    "kind": "handoff",
                    "origin": FoldOrigin.GENERATED,
                    "trigger": f"handoff ({provider.name})"[:40],
                    "tokens_before": view.tokens_measured or view.tokens_estimate,
                    "tokens_after": count_text(summary),
                    "cost": cost,
                    "timestamp": timezone.now(),
                },
            )
            conv.refresh_fold_count()
    except IntegrityError:  # the same job, run twice at once: the other run wrote it
        fold = Fold.objects.get(conversation=conv, key=job.idempotency_key[:255])
    # The result names the conversation and the fold: once the job is finished, review probes the
    # new fold (jobs/kinds.py FOLLOW_UPS): did the new summary keep the facts it replaced?
    return fold_result(fold)


# "Fold at X %": where an automatic fold would have fired along the measured curve -------------

@dataclass
class FoldPreview:
    threshold_pct: int
    fires: list  # core.policies.FoldFire
    calls: int
    window: int | None
    svg_points: str  # "x,y x,y ..." of the curve, 0..600 x 0..80
    svg_fires: list[tuple[float, float]]
    threshold_y: float


def default_fold_percent(conv: Conversation) -> int:
    """Where the conversation's own harness folds, as a whole percent of its window (rounded
    down, so the preview fires no later than the harness would); 85 when it does not fold by
    tokens."""
    spec = segments.call_spec(conv, None)
    fraction = formats.harness(conv.agent, spec).auto_fold_fraction(spec)
    return min(99, max(10, int(fraction * 100))) if fraction else 85


def fold_preview(conv: Conversation, threshold_pct: int) -> FoldPreview:
    points = segments.call_points(conv)  # the curve's own points: same windows as the page
    fires = fire_points(points, threshold_pct / 100)
    width, height = 600.0, 80.0
    top = max([p.used for p in points] + [p.window or 0 for p in points] + [1])
    n = max(len(points) - 1, 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        return round(width * i / n, 1), round(height - height * v / top, 1)

    step = max(1, len(points) // 600)  # at most ~600 vertices
    svg = " ".join("%s,%s" % xy(i, p.used) for i, p in enumerate(points) if i % step == 0 or i == len(points) - 1)
    window = points[-1].window if points else None
    return FoldPreview(
        threshold_pct=threshold_pct,
        fires=fires,
        calls=len(points),
        window=window,
        svg_points=svg,
        svg_fires=[xy(f.index, f.used) for f in fires],
        threshold_y=xy(0, (window or top) * threshold_pct / 100)[1],
    )


def panel_context(conv: Conversation, *, can_handoff: bool) -> dict:
    """What the Handoff card of the conversation page shows (whether it is offered: the caller's role)."""
    configs = list(ProviderConfig.objects.filter(project=conv.project).exclude(provider="builtin"))
    return {
        "conv": conv,
        "can_handoff": can_handoff,
        "providers": ["builtin"] + [c.provider for c in configs],
        "default_provider": next((c.provider for c in configs if c.is_default), "builtin"),
        "spend": providers.conversation_spend(conv),
    }


def handoff_card(request, conv: Conversation, *, can_edit: bool) -> Panel:
    """The Handoff card of the conversation page (declared in BuildsConfig.conversation_panels)."""
    return Panel("builds/_handoff.html", panel_context(conv, can_handoff=can_edit))


def fold_preview_card(request, conv: Conversation, *, can_edit: bool) -> Panel:
    """The "Fold at X %" card; its threshold starts where the conversation's own harness folds."""
    return Panel("builds/_fold_preview.html", {"conv": conv, "at": default_fold_percent(conv)})
