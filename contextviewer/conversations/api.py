"""API operations for imports and jobs. Every operation checks project membership."""

from __future__ import annotations

from django.conf import settings
from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import File, Form, Router, Schema
from ninja.files import UploadedFile
from ninja.responses import Status

from contextviewer.accounts.auth import allowed_projects
from contextviewer.api import api

from . import idempotency, jobs, services
from .models import Job

router = Router(tags=["imports"])


class JobOut(Schema):
    id: int
    kind: str
    status: str
    progress: float
    progress_text: str
    error: str
    attempts: int
    result: dict
    url: str
    poll: str


class ErrorOut(Schema):
    detail: str


def job_out(request, job: Job) -> dict:
    progress, text = jobs.current_progress(job)
    return {
        "id": job.pk,
        "kind": job.kind,
        "status": job.status,
        "progress": progress,
        "progress_text": text,
        "error": job.error,
        "attempts": job.attempts,
        "result": job.result,
        "url": request.build_absolute_uri(reverse("job_detail", args=[job.pk])),
        "poll": request.build_absolute_uri(f"/api/jobs/{job.pk}"),
    }


@router.post("/imports", response={202: JobOut, 400: ErrorOut, 403: ErrorOut, 413: ErrorOut})
def create_import(
    request,
    files: list[UploadedFile] = File(...),
    project: str | None = Form(None),
    idempotency_key: str | None = Form(None),
):
    """Upload one or more session files (multipart field `files`); answered with the job to poll."""
    projects = list(allowed_projects(request, "import").order_by("name"))
    if project:
        projects = [p for p in projects if p.slug == project]
    if not projects:
        return Status(403, {"detail": "You may not import into this project." if project else "You have no project to import into."})
    if not files:
        return Status(400, {"detail": "Send one or more files in the multipart field 'files'."})
    try:
        idempotency.check(idempotency_key)
    except idempotency.IdempotencyKeyTooLong as exc:
        return Status(400, {"detail": str(exc)})
    limit = settings.MAX_UPLOAD_BYTES
    try:
        stored = [services.store_upload(f, limit) for f in files]
    except services.UploadTooLarge as exc:
        return Status(413, {"detail": str(exc)})
    key = f"import:{request.user.pk}:{idempotency_key}" if idempotency_key else None
    job, _ = services.start_import(projects[0], uploads=stored, user=request.user, idempotency_key=key)
    return Status(202, job_out(request, job))


@router.get("/jobs/{job_id}", response={200: JobOut, 404: ErrorOut})
def get_job(request, job_id: int):
    job = get_object_or_404(Job.objects.filter(project__in=allowed_projects(request)), pk=job_id)
    return Status(200, job_out(request, job))


@router.post("/jobs/{job_id}/cancel", response={200: JobOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut})
def cancel_job(request, job_id: int):
    job = get_object_or_404(Job.objects.filter(project__in=allowed_projects(request)), pk=job_id)
    if not allowed_projects(request, "import").filter(pk=job.project_id).exists():
        return Status(403, {"detail": "Your role in this project may not cancel jobs."})
    if not jobs.cancel(job):
        return Status(409, {"detail": "This job has already ended."})
    job.refresh_from_db()
    return Status(200, job_out(request, job))


class DeletedOut(Schema):
    id: int
    external_id: str
    title: str
    conversations: int
    subagents: int
    messages: int
    search_entries: int
    sources_removed: int
    uploads_removed: int
    builds_kept: int


@router.delete(
    "/conversations/{conversation_id}", response={200: DeletedOut, 403: ErrorOut, 404: ErrorOut}, tags=["conversations"]
)
def delete_conversation(request, conversation_id: int):
    """Delete a conversation with its sub-agents, folds, probes, review items, search entries and
    unused upload (owners and admins; builds made from it keep their copy). Answers what went."""
    from .deletion import delete_conversation as delete, refusal
    from .models import Conversation

    conv = get_object_or_404(Conversation.objects.filter(project__in=allowed_projects(request)), pk=conversation_id)
    if not allowed_projects(request, "delete").filter(pk=conv.project_id).exists():
        return Status(403, {"detail": refusal(request.user, conv) or "Your role in this project may not delete conversations."})
    return Status(200, delete(conv, actor=request, via="api").as_dict())


api.add_router("/", router)
