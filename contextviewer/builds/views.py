"""Curation pages: builds (select, preview, start the job) and exports; handoffs live here too.

Views check access (accounts/permissions.py: a refusal is a PermissionDenied, rendered by
refusals.py) and pick the template; the work is in services.py (and handoffs.py)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from contextviewer.accounts import permissions
from contextviewer.accounts.permissions import get_conversation_for_user
from contextviewer.core import build as core_build

from contextviewer.builds import services as builds
from contextviewer.jobs import idempotency
from contextviewer.conversations.models import Conversation
from contextviewer.builds.api import export_response
from contextviewer.builds import handoffs as handoff
from contextviewer.providers.base import ProviderError
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import Job


def _selection(data) -> tuple[list[str], list[str]]:
    """Turns and folds from checkboxes (repeated fields) or from text fields ('3,7-9')."""
    turns = [v for v in data.getlist("turns") if v.strip()]
    folds = [v for v in data.getlist("folds") if v.strip()]
    return ",".join(turns), ",".join(folds)


def _gauge_bars(gauge) -> list[dict]:
    if gauge is None:
        return []
    parts = gauge.bar()
    scale = max(gauge.window, sum(t for _, _, t in parts), 1)
    bars, x = [], 0.0
    for key, label, value in parts:
        width = 100.0 * value / scale
        bars.append({"key": key, "label": label, "tokens": value, "x": x, "width": width})
        x += width
    return bars


def _gist(m: dict) -> str:
    """The preview's line for a turn: its first message's text or, with none, what that message
    did (a tool call, its result, an image, a record of the agent's), as the turn headers say it."""
    blocks = [b for b in m.get("blocks") or [] if isinstance(b, dict)]
    text = next((b["text"] for b in blocks if b.get("kind") == "text" and str(b.get("text") or "").strip()), "")
    if text:
        return " ".join(text.split()).lstrip("#> ")[:140]
    for b in blocks:
        kind, line = b.get("kind"), " ".join(str(b.get("text") or "").split())[:100]
        label = {"thinking": "thinking", "tool_call": b.get("tool_name") or "tool", "tool_result": "result"}.get(kind)
        if kind == "other" and (b.get("raw_type") or line):
            label = b.get("raw_type") or "record"
        if kind == "image":
            return "[image]"
        if label and (line or kind != "thinking"):
            return f"{label}: {line}" if line else label
    role = m.get("role")
    what = f"a {role} message" if role in {"user", "assistant", "system", "tool"} else "a record"
    return what + (f" ({m['subtype']})" if m.get("subtype") else "") + ", no text"


def _preview_context(conv: Conversation, turns: str, folds: str, after_fold: str = "") -> dict:
    if not turns and not folds and not after_fold:
        return {"conv": conv, "empty": True}
    try:
        p = builds.preview(conv, turns, folds, after_fold or None)
    except core_build.BuildError as exc:
        return {"conv": conv, "error": str(exc)}
    firsts = []
    seen = set()
    for m in p.result.messages:
        if m["turn"] in seen:
            continue
        seen.add(m["turn"])
        firsts.append({"turn": m["turn"], "summary": bool(m.get("is_compact_summary")), "text": _gist(m)})
    used = p.gauge.used if p.gauge else sum(p.categories.values())
    return {
        "conv": conv,
        "preview": p,
        "turn_count": len(seen),
        "message_count": len(p.result.messages),
        "firsts": firsts[:40],
        "more_turns": max(0, len(firsts) - 40),
        "bars": _gauge_bars(p.gauge),
        "used": used,
        "used_pct": 100.0 * used / p.gauge.window if p.gauge and p.gauge.window else None,
    }


@login_required
@require_GET
def build_page(request: HttpRequest, pk: int) -> HttpResponse:
    """The build form without JavaScript: turn and fold numbers as text, a preview, export links."""
    conv = get_conversation_for_user(request, pk)
    turns, folds = _selection(request.GET)
    after = request.GET.get("after_fold", "").strip()
    context = _preview_context(conv, turns, folds, after)
    context.update(
        turns_text=request.GET.get("turns", ""),
        folds_text=request.GET.get("folds", ""),
        after_text=after,
        folds=builds.build_folds(conv),
        last_turn=conv.messages.order_by("-position").values_list("turn", flat=True).first(),
        continue_in=builds.continue_in_agent(conv),
    )
    return render(request, "builds/build.html", context, status=400 if context.get("error") else 200)


@login_required
@require_GET
def build_options(request: HttpRequest, pk: int) -> JsonResponse:
    """For the page's script: the turns each fold's summary stands for, as [first, last] ranges,
    and the turn that holds each fold's summary as a message (a turn it opens), if one does: that
    turn excludes the turns the fold put away, as a chosen summary does (core.build.validate)."""
    conv = get_conversation_for_user(request, pk)
    spans, infos = builds.turn_spans(conv), builds.fold_infos(conv)
    excl = core_build.exclusions(spans, infos)
    holders = {}
    for f in infos:
        if f.number in excl and f.summary_position is not None:
            turn = next((t.turn for t in spans if t.first <= f.summary_position <= t.last), None)
            if turn is not None:
                holders[str(f.number)] = turn
    out = {}
    for number, turns in excl.items():
        ranges: list[list[int]] = []
        for t in turns:
            if ranges and ranges[-1][1] == t - 1:
                ranges[-1][1] = t
            else:
                ranges.append([t, t])
        out[str(number)] = ranges
    return JsonResponse({"folds": out, "holders": holders})


@login_required
@require_GET
def build_preview(request: HttpRequest, pk: int) -> HttpResponse:
    conv = get_conversation_for_user(request, pk)
    turns, folds = _selection(request.GET)
    context = _preview_context(conv, turns, folds)
    return render(request, "builds/_build.html#preview", context)


@login_required
@require_POST
def build_create(request: HttpRequest, pk: int) -> HttpResponse:
    conv = get_conversation_for_user(request, pk, "edit", doing="build conversations")
    turns, folds = _selection(request.POST)
    after = request.POST.get("after_fold", "").strip()
    try:
        key = idempotency.check(request.POST.get("idempotency_key") or None)
        job = builds.start_build(conv, turns, folds, after_fold=after or None, user=request.user, idempotency_key=key)
    except (core_build.BuildError, idempotency.IdempotencyKeyTooLong) as exc:
        context = _preview_context(conv, "", "")
        context.update(error=str(exc), turns_text=turns, folds_text=folds, after_text=after, folds=builds.build_folds(conv))
        return render(request, "builds/build.html", context, status=400)
    return redirect("job_detail", job_id=job.pk)


@login_required
@require_GET
def export_download(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    conv = get_conversation_for_user(request, pk)
    if fmt not in builds.CONTENT_TYPES:
        raise Http404("No such export format")

    view = request.GET.get("view") or "loaded"
    if view not in builds.VIEWS:
        return HttpResponse(f"Unknown view {view[:40]!r}: use one of {', '.join(builds.VIEWS)}.", status=400,
                            content_type="text/plain; charset=utf-8")
    try:
        return export_response(builds.export(conv, fmt, actor=request, view=view))
    except builds.ExportRefused as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")


# Handoff and "fold at X %" (helper-4a) ------------------------------------------------------

def _handoff_context(request: HttpRequest, conv: Conversation, **extra) -> dict:
    return {**handoff.panel_context(conv, can_handoff=permissions.can(request, conv.project_id, "edit")), **extra}


@login_required
@require_POST
def handoff_start(request: HttpRequest, pk: int) -> HttpResponse:
    conv = get_conversation_for_user(request, pk, "edit", doing="fold conversations")
    provider = request.POST.get("provider") or None
    try:
        job, _ = handoff.start_handoff(conv, user=request.user, provider=provider)
    except ProviderError as exc:
        if request.htmx:
            return render(request, "builds/_handoff.html#handoff-status", _handoff_context(request, conv, error=str(exc)))
        from django.contrib import messages

        messages.error(request, str(exc))
        return redirect("conversation", pk=conv.pk)
    if request.htmx:
        return render(request, "builds/_handoff.html#handoff-status", _handoff_context(request, conv, job=job, **_progress(job)))
    return redirect("handoff_status", pk=conv.pk, job_id=job.pk)


def _progress(job) -> dict:
    progress, text = jobs.current_progress(job)
    return {"progress_pct": int(progress * 100), "progress_text": text}


@login_required
@require_GET
def handoff_status(request: HttpRequest, pk: int, job_id: int) -> HttpResponse:
    """The self-polling progress of a handoff; once its fold exists the page reloads to show it."""

    conv = get_conversation_for_user(request, pk)
    job = Job.objects.filter(project=conv.project, kind="handoff", pk=job_id, params__conversation_id=conv.pk).first()
    if job is None:
        raise Http404("No such handoff")
    if job.status == "succeeded" and request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = f"{conv_url(conv)}?folded={job.result.get('fold_id', '')}#segments"
        return response
    context = _handoff_context(request, conv, job=job, **_progress(job))
    if not request.htmx:  # without JavaScript: a page that refreshes itself until the job ends
        return render(request, "builds/handoff_job.html", context)
    return render(request, "builds/_handoff.html#handoff-status", context)


def conv_url(conv: Conversation) -> str:
    from django.urls import reverse

    return reverse("conversation", args=[conv.pk])


@login_required
@require_GET
def fold_preview(request: HttpRequest, pk: int) -> HttpResponse:
    """Where an automatic fold at X % would have fired along the measured curve (open loop)."""

    conv = get_conversation_for_user(request, pk)
    raw = (request.GET.get("at") or str(handoff.default_fold_percent(conv))).strip().rstrip("%").strip()
    context: dict = {"conv": conv, "at": raw}
    status = 200
    try:
        at = int(float(raw))
        if not 10 <= at <= 99:
            raise ValueError
    except ValueError:
        context["error"] = f"Enter a threshold between 10 and 99 % (got {raw[:20]!r})."
        status = 200 if request.htmx else 400
    else:
        context["preview"] = handoff.fold_preview(conv, at)
        context["at"] = at
    template = "builds/_fold_preview.html#fold-preview-result" if request.htmx else "builds/fold_preview.html"
    return render(request, template, context, status=status)
