"""API operations for compaction review. Each picks its objects with accounts/permissions.py (request,
permission): 404 when the project is not readable by the request (a token sees its own project
only), 403 when it is readable but the role lacks the permission."""

from __future__ import annotations

from ninja import Router, Schema
from ninja.responses import Status

from contextviewer.accounts import permissions
from contextviewer.jobs.queue import current_progress

from contextviewer.review import blind as blind_text
from contextviewer.review import alternatives, dashboard as figures, judge, probes as fact_probes, queues as review_queues
from contextviewer.review.errors import ReviewError
from contextviewer.review.models import ReviewItem, ReviewQueue
from contextviewer.jobs import idempotency
from contextviewer.providers.base import ProviderError

router = Router(tags=["review"])


class ErrorOut(Schema):
    detail: str


class ProbeOut(Schema):
    fold_id: int
    retention: float | None
    per_kind: dict
    compression_ratio: float | None
    folded_tokens: int
    summary_tokens: int | None  # None: hidden (blind review), or the summary is encrypted
    summary_encrypted: bool | None = None  # the log keeps the summary encrypted (Codex's remote compaction): no size known; None: hidden
    facts: list[dict]
    lost: list[dict] = []  # tiers A and B lost: kind, text, turn, position, tier, used_after (as `manage.py probes --json`)
    named_by_pattern: list[dict] = []  # paths kept only because a glob or a folder the summary names covers them
    background: list[dict] = []  # tier C: kind, text, turn, position, tier, used_after, kept
    reread_after: list[str] = []  # paths read before the fold and read again after it
    anticipated: dict | None = None  # {"hits", "of"}: first actions after the fold touching what the summary names
    calls_before_first_edit: int | None = None
    hidden: bool = False  # blind review: retention and which facts were kept show once the score is in


class ReviewIn(Schema):
    scores: dict


class ReviewOut(Schema):
    id: int
    item_id: int
    fold_id: int
    scores: dict


class CommentIn(Schema):
    text: str
    turn: int | None = None
    fact: str = ""


class CommentOut(Schema):
    id: int
    fold_id: int
    turn: int | None
    fact: str
    text: str


class ReviewJobOut(Schema):
    id: int
    kind: str
    status: str
    progress: float


class ScoreConfigIn(Schema):
    fields: list[dict]


class QueueOut(Schema):
    id: int
    name: str
    filters: dict
    reviewers_per_item: int
    items: int
    mode: str = "single"
    blind: bool = False


def _check(request, project_id: int, permission: str):
    """None when allowed; else Http404 or PermissionDenied (accounts/permissions.py), which the API answers."""
    permissions.require(request, project_id, permission)
    return None


def _fold(request, fold_id: int, permission: str = "view"):
    return permissions.get_fold_for_user(request, None, fold_id, permission), None


BLIND_KEYS = ("kept", "how", "used_after")  # used_after is set on lost facts only


def _probe_out(probe, hidden: bool = False) -> dict:
    if hidden:  # the facts of the segment stay readable; what the summary kept (and what followed) does not,
        # nor its size and compression (they differ by summary: a size tells the one written again)
        return {
            "fold_id": probe.fold_id, "retention": None, "per_kind": {}, "compression_ratio": None,
            "folded_tokens": probe.folded_tokens, "summary_tokens": None,
            "facts": [{k: v for k, v in f.items() if k not in BLIND_KEYS} for f in probe.facts], "hidden": True,
        }
    row = fact_probes.probe_row(probe)
    return {
        "fold_id": probe.fold_id, "retention": probe.retention, "per_kind": probe.per_kind,
        "compression_ratio": probe.compression_ratio, "folded_tokens": probe.folded_tokens,
        "summary_tokens": None if probe.summary_encrypted else probe.summary_tokens, "summary_encrypted": probe.summary_encrypted,
        "facts": probe.facts, "lost": row["lost"], "named_by_pattern": row["named_by_pattern"], "background": row["background"],
        "reread_after": row["reread_after"], "anticipated": row["anticipated"],
        "calls_before_first_edit": row["calls_before_first_edit"],
    }


@router.get("/review/folds/{fold_id}/probe", response={200: ProbeOut, 403: ErrorOut, 404: ErrorOut})
def fold_probe(request, fold_id: int):
    """The fold's fact probe: retention per kind and overall, compression, every fact with its turn."""
    fold, refused = _fold(request, fold_id)
    if refused:
        return refused
    return Status(200, _probe_out(fact_probes.probe_for(fold), review_queues.hides_fold(request.user, fold)))


@router.get("/review/conversations/{conversation_id}/probes", response={200: list[dict], 404: ErrorOut})
def conversation_probes(request, conversation_id: int):
    """Per fold: retention per kind and overall, compression, summary tokens, lost facts with turns."""
    conv = permissions.get_conversation_for_user(request, conversation_id)
    blind = review_queues.blind_fold_ids(request.user, conv.pk)
    rows = fact_probes.probe_report(conv)
    for row in rows:
        if row["fold_id"] in blind:  # a blind item of this fold waits for the user's score
            row.update(origin=None, retention=None, per_kind={}, lost=[], named_by_pattern=[], background=[], reread_after=[], anticipated=None,
                       calls_before_first_edit=None, compression_ratio=None, summary_tokens=None, summary_encrypted=None, hidden=True)
    return Status(200, rows)


@router.get("/review/projects/{slug}/dashboard", response={200: dict, 404: ErrorOut})
def dashboard(request, slug: str, by: str = "agent"):
    project = permissions.get_project_for_user(request, slug)
    return Status(200, figures.dashboard([project], by))


@router.get("/review/projects/{slug}/queues", response={200: list[QueueOut], 404: ErrorOut})
def queues(request, slug: str):
    project = permissions.get_project_for_user(request, slug)
    return Status(200, [
        {"id": q.pk, "name": q.name, "filters": q.filters, "reviewers_per_item": q.reviewers_per_item, "items": q.items.count(),
         "mode": q.mode, "blind": q.blind}
        for q in ReviewQueue.objects.filter(project=project)
    ])


@router.post("/review/items/{item_id}/reviews", response={201: ReviewOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut})
def submit_review(request, item_id: int, payload: ReviewIn):
    item = ReviewItem.objects.select_related("queue", "fold").filter(pk=item_id).first()
    if item is None:
        return Status(404, {"detail": "Not found."})
    refused = _check(request, item.queue.project_id, "score")
    if refused:
        return refused
    if not review_queues.can_review_in(item.queue, request.user):
        return Status(403, {"detail": "You are not assigned to this queue."})
    try:
        review = review_queues.submit_review(item, request.user, payload.scores)
    except ReviewError as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, {"id": review.pk, "item_id": item.pk, "fold_id": item.fold_id, "scores": review.scores})


@router.post("/review/folds/{fold_id}/comments", response={201: CommentOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut})
def add_comment(request, fold_id: int, payload: CommentIn):
    fold, refused = _fold(request, fold_id, "score")
    if refused:
        return refused
    try:
        c = review_queues.add_comment(fold, request.user, payload.text, turn=payload.turn, fact=payload.fact)
    except ReviewError as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, {"id": c.pk, "fold_id": fold.pk, "turn": c.turn, "fact": c.fact, "text": c.text})


@router.post("/review/folds/{fold_id}/judge", response={202: ReviewJobOut, 403: ErrorOut, 404: ErrorOut})
def start_judge(request, fold_id: int):
    """Judge the fold with the project's provider: answered with the job to poll (/api/jobs/{id})."""
    fold, refused = _fold(request, fold_id, "edit")
    if refused:
        return refused
    job = judge.start_judge(fold, user=request.user)
    progress, _ = current_progress(job)
    return Status(202, {"id": job.pk, "kind": job.kind, "status": job.status, "progress": progress})


class SummarizeAgainIn(Schema):
    provider: str | None = None  # builtin | a configured provider; default: the project's
    idempotency_key: str | None = None


class SummaryOut(Schema):
    fold_id: int
    kind: str
    origin: str
    position: int
    summary: str
    retention: float | None
    hidden: bool = False  # blind review: kind, origin and retention show once the score is in


@router.post(
    "/review/folds/{fold_id}/summarize-again",
    response={202: ReviewJobOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut},
)
def summarize_again(request, fold_id: int, payload: SummarizeAgainIn):
    """Write another summary of the fold's archived segment with `provider` (the original stays in
    play): answered with the job to poll (/api/jobs/{id}); its result names the new summary."""

    fold, refused = _fold(request, fold_id, "edit")
    if refused:
        return refused
    try:
        idempotency.check(payload.idempotency_key)
        key = f"again:{fold.pk}:{request.user.pk}:{payload.idempotency_key}" if payload.idempotency_key else None
        job = alternatives.start(fold, user=request.user, provider=payload.provider or None, idempotency_key=key)
    except (ProviderError, idempotency.IdempotencyKeyTooLong) as exc:
        return Status(400, {"detail": str(exc)})
    progress, _ = current_progress(job)
    return Status(202, {"id": job.pk, "kind": job.kind, "status": job.status, "progress": progress})


@router.get("/review/folds/{fold_id}/summaries", response={200: list[SummaryOut], 403: ErrorOut, 404: ErrorOut})
def fold_summaries(request, fold_id: int):
    """Every summary of the fold's archived segment (the original first), with its origin."""
    fold, refused = _fold(request, fold_id)
    if refused:
        return refused
    found = alternatives.summaries(fold)
    blind = review_queues.blind_fold_ids(request.user, fold.conversation_id) & {f.pk for f in found}
    if blind:  # a blind item of this segment waits for the user's score: nothing tells the original
        return Status(200, [
            {"fold_id": f.pk, "kind": "", "origin": "", "position": f.position, "summary": blind_text.disguise(f.summary_text),
             "retention": None, "hidden": True}
            for f in alternatives.blind_order(found, request.user)
        ])
    return Status(200, [
        {"fold_id": f.pk, "kind": f.kind, "origin": alternatives.origin_label(f), "position": f.position,
         "summary": f.summary_text, "retention": fact_probes.probe_for(f).retention}
        for f in found
    ])


@router.get("/review/projects/{slug}/score-config", response={200: list[dict], 404: ErrorOut})
def get_score_config(request, slug: str):
    project = permissions.get_project_for_user(request, slug)
    return Status(200, review_queues.score_config(project).fields)


@router.put("/review/projects/{slug}/score-config", response={200: list[dict], 400: ErrorOut, 403: ErrorOut, 404: ErrorOut})
def put_score_config(request, slug: str, payload: ScoreConfigIn):
    project = permissions.get_project_for_user(request, slug)
    refused = _check(request, project.pk, "settings")
    if refused:
        return refused
    try:
        config = review_queues.save_score_config(project, payload.fields, request=request)
    except ReviewError as exc:
        return Status(400, {"detail": str(exc)})
    return Status(200, config.fields)
