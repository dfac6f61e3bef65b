"""Review pages: queues, the review screen, comments, pairwise votes, score settings, dashboard.

Who may do what (Membership.can): "view" reads everything of the project; "score" locks items,
submits reviews, comments and votes; "edit" creates queues, assigns reviewers and starts judges;
"settings" edits the score config. Non-members get 404 (a project's existence is not disclosed)."""

from __future__ import annotations

import csv
import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from contextviewer.accounts import permissions
from contextviewer.accounts.models import Membership, Project
from contextviewer.conversations.models import Fold, Message

from contextviewer.core import facts as core_facts
from contextviewer.review import alternatives, dashboard as figures, judge, probes as fact_probes, queues as review_queues, segment_view
from contextviewer.review.errors import ReviewError
from contextviewer.review.models import Comment, FactProbe, JudgeRun, PairwiseComparison, ReviewItem, ReviewQueue
from contextviewer.providers.base import ProviderError
from contextviewer.refusals import refuse
from contextviewer.jobs import idempotency



def _membership(request: HttpRequest, project: Project | int, permission: str) -> Membership:
    return permissions.require(request, project, permission)


def _project_for(request: HttpRequest, slug: str, permission: str = "view") -> tuple[Project, Membership]:
    member = permissions.get_membership_for_user(request, slug, permission)
    return member.project, member


def _get_fold_for_user(request: HttpRequest, fold_id: int, permission: str = "view") -> tuple[Fold, Membership]:
    return permissions.get_fold_and_membership(request, None, fold_id, permission)


def _get_queue_for_user(request: HttpRequest, queue_id: int, permission: str = "view") -> tuple[ReviewQueue, Membership]:
    queue = ReviewQueue.objects.select_related("project").filter(pk=queue_id).first()
    if queue is None:
        raise Http404("No such queue")
    return queue, _membership(request, queue.project_id, permission)


def _get_item_for_user(request: HttpRequest, item_id: int, permission: str = "view") -> tuple[ReviewItem, Membership]:
    item = ReviewItem.objects.select_related("queue", "queue__project", "fold", "fold__conversation").filter(pk=item_id).first()
    if item is None:
        raise Http404("No such item")
    return item, _membership(request, item.queue.project_id, permission)


@login_required
@require_GET
def review_home(request: HttpRequest) -> HttpResponse:
    member = Membership.objects.filter(user=request.user).select_related("project").order_by("project__name").first()
    if member is None:
        return render(request, "review/index.html", {"project": None, "member": None}, status=404)
    return redirect("review_index", project=member.project.slug)


@login_required
@require_GET
def review_index(request: HttpRequest, project: str) -> HttpResponse:
    proj, member = _project_for(request, project)
    queues = []
    for queue in ReviewQueue.objects.filter(project=proj).prefetch_related("reviewers"):
        items = list(queue.items.values_list("review_count", flat=True))
        done = sum(1 for c in items if c >= queue.reviewers_per_item)
        assigned = {r.pk for r in queue.reviewers.all()}
        can_review = member.can("score") and (not assigned or request.user.pk in assigned)
        queues.append({"queue": queue, "items": len(items), "done": done, "can_review": can_review})
    folds = Fold.objects.filter(conversation__project=proj).counted().count()  # as each conversation's fold_count
    recent = list(
        Fold.objects.filter(conversation__project=proj).select_related("conversation").order_by("-created_at", "-pk")[:50]
    )
    fold_rows = review_queues.latest_fold_rows(request.user, recent)
    agents = sorted(set(Fold.objects.filter(conversation__project=proj).values_list("conversation__agent", flat=True)))
    members = proj.memberships.select_related("user").order_by("user__username")
    return render(request, "review/index.html", {
        "project": proj, "member": member, "queues": queues, "fold_count": folds, "agents": agents,
        "members": members, "projects": Membership.objects.filter(user=request.user).select_related("project"),
        "can_edit": member.can("edit"), "fold_rows": fold_rows,
    })


@login_required
@require_POST
def queue_create(request: HttpRequest, project: str) -> HttpResponse:
    proj, _ = _project_for(request, project, "edit")
    try:
        filters = review_queues.parse_filters(request.POST)
        per_item = request.POST.get("reviewers_per_item") or "1"
        if not per_item.isdigit():
            raise ReviewError("Reviewers per item: from 1 to 20.")
        queue = review_queues.create_queue(
            proj, request.POST.get("name", ""), filters, reviewers_per_item=int(per_item),
            reviewers=request.POST.getlist("reviewers"), user=request.user,
            mode=request.POST.get("mode") or "single", blind=request.POST.get("blind") in {"on", "1", "yes", "true"},
        )
    except ReviewError as exc:
        messages.error(request, str(exc))
        return redirect("review_index", project=proj.slug)
    what = "pairs of summaries" if queue.mode == "pairwise" else "folds"
    messages.info(request, f"Queue {queue.name} holds {queue.items.count()} {what}.")
    return redirect("review_queue", queue_id=queue.pk)


@login_required
@require_http_methods(["GET", "POST"])
def queue_detail(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue, member = _get_queue_for_user(request, queue_id, "view")
    if request.method == "POST":  # assign reviewers
        _membership(request, queue.project_id, "edit")
        ids = queue.project.memberships.filter(user_id__in=request.POST.getlist("reviewers")).values_list("user_id", flat=True)
        queue.reviewers.set(list(ids))
        messages.info(request, "Reviewers saved.")
        return redirect("review_queue", queue_id=queue.pk)
    items = list(queue.items.select_related("fold", "fold__conversation", "locked_by"))
    probes = {p.fold_id: p for p in FactProbe.objects.filter(fold__in=[i.fold_id for i in items])}
    for i in [i for i in items if i.fold_id not in probes][:50]:  # the probes job covers the rest
        probes[i.fold_id] = fact_probes.probe_for(i.fold)
    # A blind queue shows an item's retention only to those who have scored it.
    can_review = member.can("score") and review_queues.can_review_in(queue, request.user)
    # Another blind queue may hold the same fold; this one counts for those who review in it.
    blind = review_queues.blind_fold_ids(request.user, queue=queue if can_review else None)
    rows = [{"item": i, "probe": probes.get(i.fold_id), "hidden": i.fold_id in blind} for i in items]
    return render(request, "review/queue.html", {
        "queue": queue, "member": member, "rows": rows,
        "members": queue.project.memberships.select_related("user").order_by("user__username"),
        "assigned": set(queue.reviewers.values_list("pk", flat=True)),
        "can_review": can_review,
        "can_edit": member.can("edit"),
    })


@login_required
@require_GET
def queue_next(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue, _ = _get_queue_for_user(request, queue_id, "score")
    if not review_queues.can_review_in(queue, request.user):
        raise PermissionDenied("You are not assigned to this queue.")
    after = None
    if request.GET.get("after", "").isdigit():
        after = queue.items.filter(pk=int(request.GET["after"])).first()
    item = review_queues.next_item(queue, request.user, after=after)
    if item is None:
        messages.info(request, f"Nothing left for you in {queue.name}. Thank you!")
        return redirect("review_queue", queue_id=queue.pk)
    return redirect("review_item", item_id=item.pk)


def _fold_context(request: HttpRequest, fold: Fold, member: Membership) -> dict:
    probe = fact_probes.probe_for(fold)
    segment = segment_view.segment_turns(fold)
    comments = list(Comment.objects.filter(fold=fold).select_related("author"))
    by_fact: dict[str, list] = {}
    for c in comments:
        if c.fact:
            by_fact.setdefault(c.fact, []).append(c)
    at = _message_ids(fold, [*probe.facts, *probe.background])
    facts = [
        dict(f, anchor=f"{f['kind']}:{f['key']}", comments=by_fact.get(f"{f['kind']}:{f['key']}", []), message_id=at.get(f["position"]))
        for f in probe.facts
    ]
    facts.sort(key=lambda f: (f["kept"], f["position"]))  # lost first
    background = sorted(
        (dict(f, message_id=at.get(f["position"])) for f in probe.background), key=lambda f: (f["kept"], f["position"])
    )
    kinds = [
        {"kind": k, **(probe.per_kind.get(k) or {}), "baseline": core_facts.BASELINE.get(k)}
        for k in core_facts.KINDS
        if (probe.per_kind.get(k) or {}).get("total")
    ]
    return {
        "fold": fold, "conv": fold.conversation, "member": member, "probe": probe, "facts": facts, "kinds": kinds,
        "after": _after_fold(probe, facts, background), "background": background,
        "turns": segment.turns, "segment": segment, "comments": comments,
        "turn_comments": [c for c in comments if c.turn is not None and not c.fact],
        "judge_runs": JudgeRun.objects.filter(fold=fold)[:5],
        "pairs": review_queues.pair_candidates(fold),
        "can_score": member.can("score"), "can_edit": member.can("edit"),
        "judge_why_not": _judge_refusal(fold.conversation.project) if member.can("edit") else "",
    }


def _message_ids(fold: Fold, facts: list[dict]) -> dict[int, int]:
    """Position -> message id of the messages the facts came from: a fact links to its message on
    the conversation page (`?turn=<turn>#m-<message id>`, the page's id scheme, as search's links)."""
    positions = {f["position"] for f in facts}
    if not positions:
        return {}
    return dict(Message.objects.filter(conversation_id=fold.conversation_id, position__in=positions).values_list("position", "id"))


def _after_fold(probe: FactProbe, facts: list[dict], background: list[dict]) -> dict:
    """What the fold page leads with: the lost facts the conversation needed again after the fold,
    the paths it read again, and the continuation's figures (None when nothing followed the fold)."""
    followed = fact_probes.continuation_of(probe)
    found = [*facts, *background]
    by_path = {}
    for f in found:
        if f["kind"] == "path":
            by_path.setdefault(f["key"], f)
            by_path.setdefault(f["text"], f)
    reread = [{"path": p, "fact": by_path.get(p)} for p in followed["reread_after"]]
    return {
        "measured": bool(probe.continuation),
        "needed": [f for f in found if not f["kept"] and f.get("used_after")],
        "reread": reread,
        "calls_before_first_edit": followed["calls_before_first_edit"],
        "anticipated": followed["anticipated"],
        "after_messages": followed["after_messages"],
    }


def _judge_refusal(project: Project) -> str:
    """Why the judge cannot run for this project ("" when it can): it needs a provider that reads."""

    try:
        judge.project_provider(project)
    except ReviewError as exc:
        return str(exc)
    except ProviderError as exc:  # a broken provider setting: say so rather than offer a failing job
        return f"The project's provider cannot be used: {exc}"
    return ""


def _blind_note(item: ReviewItem | None, pending: list) -> str:
    """What a blind page says it hides, and until when: this item's score, or the other summaries'."""
    if item is not None and item in pending:
        until = "your score is in"
    else:
        until = f"you score the other summar{pluralize(len(pending), 'y,ies')} of this segment"
    return f"blind review: where this summary came from and how much it kept show once {until}"


@login_required
@require_GET
def fold_review(request: HttpRequest, fold_id: int) -> HttpResponse:
    fold, member = _get_fold_for_user(request, fold_id)
    context = _fold_context(request, fold, member)
    context["origin"] = alternatives.origin_label(fold)
    # A blind item of this segment awaits the user's score (not the owner's queue: see _blind_items).
    context["pending"] = review_queues.pending_blind_items(request.user, fold)
    context["hide"] = bool(context["pending"])
    context["blind_note"] = _blind_note(None, context["pending"])
    context["summaries"] = None if context["hide"] else review_queues.summaries_panel(request.user, fold)
    return render(request, "review/item.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def review_item(request: HttpRequest, item_id: int) -> HttpResponse:
    item, member = _get_item_for_user(request, item_id)
    queue = item.queue
    may_score = member.can("score") and review_queues.can_review_in(queue, request.user)
    mine = item.reviews.filter(reviewer=request.user).first()
    error = None
    if request.method == "POST":
        if not may_score:
            raise PermissionDenied("You may not score in this queue.")
        try:
            review_queues.submit_review(item, request.user, request.POST)
        except ReviewError as exc:
            error = str(exc)
        else:
            messages.info(request, "Review saved.")
            return redirect(reverse("review_queue_next", args=[queue.pk]) + f"?after={item.pk}")
    locked_by_other = False
    if may_score and mine is None:
        locked_by_other = not review_queues.lock_item(item, request.user)
    prev, nxt = review_queues.neighbours(item)
    config = review_queues.score_config(queue.project)
    posted = request.POST if error else {}
    score_fields = [
        dict(f, options=list(range(f["min"], f["max"] + 1)) if f["type"] == "scale" else [], value=posted.get(f["key"], ""))
        for f in config.fields
    ]
    context = _fold_context(request, item.fold, member)
    # Blind: hidden while this item or another of the same segment waits for the user's score. Inside
    # the queue for those who review in it; one who only reads the queue (its owner) sees everything.
    pending = review_queues.pending_blind_items(request.user, item.fold, queue=queue if may_score else None)
    context.update({
        "item": item, "queue": queue, "prev": prev, "next": nxt, "mine": mine, "error": error,
        "score_fields": score_fields,
        "others": [
            {"review": r, "scores": review_queues.score_rows(config, r.scores)}
            for r in review_queues.visible_reviews(item, request.user)
        ],
        "locked_by_other": locked_by_other, "may_submit": may_score and mine is None and not locked_by_other,
        "pending": pending, "hide": bool(pending), "blind_note": _blind_note(item, pending),
    })
    if item.is_pair:
        context.update({
            "a": item.fold, "b": item.fold_b, "probe_a": context["probe"], "probe_b": fact_probes.probe_for(item.fold_b),
            "origin_a": alternatives.origin_label(item.fold), "origin_b": alternatives.origin_label(item.fold_b),
            "posted_choice": request.POST.get("choice", "") if error else "",
        })
        return render(request, "review/pair_item.html", context, status=400 if error else 200)
    context["origin"] = alternatives.origin_label(item.fold)
    context["summaries"] = None if context["hide"] else review_queues.summaries_panel(request.user, item.fold)
    return render(request, "review/item.html", context, status=400 if error else 200)


@login_required
@require_POST
def comment_add(request: HttpRequest, fold_id: int) -> HttpResponse:
    fold, _ = _get_fold_for_user(request, fold_id, "score")
    try:
        review_queues.add_comment(fold, request.user, request.POST.get("text", ""), turn=request.POST.get("turn"), fact=request.POST.get("fact", ""))
    except ReviewError as exc:
        messages.error(request, str(exc))
    back = request.POST.get("next", "")
    if back.startswith("/review/") and "//" not in back:
        return redirect(back)
    return redirect("review_fold", fold_id=fold.pk)


@login_required
@require_POST
def judge_start(request: HttpRequest, fold_id: int) -> HttpResponse:
    fold, _ = _get_fold_for_user(request, fold_id, "edit")
    try:
        judge.project_provider(fold.conversation.project)  # no job that can only fail
    except ReviewError as exc:
        return refuse(request, f"The judge cannot run: {exc}", status=409)
    job = judge.start_judge(fold, user=request.user)
    messages.info(request, "The judge is running.")
    return redirect("job_detail", job.pk)


@login_required
@require_POST
def summarize_again(request: HttpRequest, fold_id: int) -> HttpResponse:
    """Write another summary of the fold with the chosen provider (the job page follows it)."""

    fold, _ = _get_fold_for_user(request, fold_id, "edit")
    try:
        key = idempotency.check(request.POST.get("idempotency_key") or None)
        job = alternatives.start(
            fold, user=request.user, provider=request.POST.get("provider") or None,
            idempotency_key=f"again:{fold.pk}:{request.user.pk}:{key}" if key else None,
        )
    except (ProviderError, idempotency.IdempotencyKeyTooLong) as exc:
        messages.error(request, f"Cannot summarize this fold again: {exc}")
        back = request.POST.get("next", "")
        if back.startswith("/") and "//" not in back:
            return redirect(back)
        return redirect("review_fold", fold_id=fold.pk)
    messages.info(request, "Summarizing the fold again: the new summary appears beside the original.")
    return redirect("job_detail", job.pk)


@login_required
@require_http_methods(["GET", "POST"])
def pairwise(request: HttpRequest, fold_id: int, other_id: int) -> HttpResponse:
    fold_a, member = _get_fold_for_user(request, fold_id)
    fold_b, _ = _get_fold_for_user(request, other_id)
    if fold_a.conversation_id != fold_b.conversation_id or fold_a.position != fold_b.position or fold_a.pk == fold_b.pk:
        raise Http404("These two summaries do not stand for the same segment.")
    error = None
    if request.method == "POST":
        _membership(request, fold_a.conversation.project_id, "score")
        try:
            review_queues.record_pairwise(fold_a, fold_b, request.user, request.POST.get("choice", ""), request.POST.get("comment", ""))
        except ReviewError as exc:
            error = str(exc)
        else:
            messages.info(request, "Vote saved.")
            return redirect("review_pairwise", fold_id=fold_a.pk, other_id=fold_b.pk)
    mine = PairwiseComparison.objects.filter(fold_a=fold_a, fold_b=fold_b, reviewer=request.user).first()
    votes = list(PairwiseComparison.objects.filter(fold_a=fold_a, fold_b=fold_b)) if mine else []
    pending = review_queues.pending_blind_items(request.user, fold_a)
    segment = segment_view.segment_turns(fold_a)
    return render(request, "review/pairwise.html", {
        "a": fold_a, "b": fold_b, "probe_a": fact_probes.probe_for(fold_a), "probe_b": fact_probes.probe_for(fold_b),
        "origin_a": alternatives.origin_label(fold_a), "origin_b": alternatives.origin_label(fold_b),
        "conv": fold_a.conversation, "member": member, "mine": mine, "votes": votes, "error": error,
        "turns": segment.turns, "segment": segment, "can_score": member.can("score"),
        "pending": pending, "hide": bool(pending),
    }, status=400 if error else 200)


@login_required
@require_http_methods(["GET", "POST"])
def score_settings(request: HttpRequest, project: str) -> HttpResponse:
    proj, member = _project_for(request, project)
    if request.method == "POST":
        _membership(request, proj, "settings")  # before anything is read or written
    config = review_queues.score_config(proj)
    error, raw = None, json.dumps(config.fields, indent=2)
    if request.method == "POST":
        raw = request.POST.get("fields", "")
        try:
            review_queues.save_score_config(proj, raw, request=request)
        except ReviewError as exc:
            error = str(exc)
        else:
            messages.info(request, "Score settings saved.")
            return redirect("review_settings", project=proj.slug)
    return render(request, "review/settings.html", {
        "project": proj, "member": member, "config": config, "raw": raw, "error": error,
        "can_edit": member.can("settings"),
    }, status=400 if error else 200)


@login_required
@require_GET
def dashboard(request: HttpRequest, project: str) -> HttpResponse:
    proj, member = _project_for(request, project)
    data = figures.dashboard([proj], request.GET.get("by", "agent"))
    fmt = request.GET.get("format", "")
    if fmt in {"csv", "json"}:
        review_queues._audit(request, proj, "export.created", "review dashboard", format=fmt, by=data["group"])
    if fmt == "json":
        response = JsonResponse({"project": proj.slug, **data})
        response["Content-Disposition"] = f'attachment; filename="review-{proj.slug}-{data["group"]}.json"'
        return response
    if fmt == "csv":
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="review-{proj.slug}-{data["group"]}.csv"'
        writer = csv.writer(response)
        for row in figures.dashboard_csv_rows(data):
            writer.writerow(_csv_safe(v) for v in row)
        return response
    return render(request, "review/dashboard.html", {"project": proj, "member": member, "data": data})


def _csv_safe(value):
    """Group names come from logs: keep a spreadsheet from reading them as formulas."""
    if isinstance(value, str) and value[:1] in {"=", "+", "-", "@", "\t", "\r"}:
        return "'" + value
    return value
