"""API operations on jobs (poll, cancel) and the job schema every operation that starts a job answers with."""

from __future__ import annotations

from django.urls import reverse
from ninja import Router, Schema
from ninja.responses import Status

from contextviewer.accounts.permissions import get_job_for_user
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import Job

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


@router.get("/jobs/{job_id}", response={200: JobOut, 404: ErrorOut})
def get_job(request, job_id: int):
    job = get_job_for_user(request, job_id)
    return Status(200, job_out(request, job))


@router.post("/jobs/{job_id}/cancel", response={200: JobOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut})
def cancel_job(request, job_id: int):
    job = get_job_for_user(request, job_id, "import", doing="cancel jobs")
    if not jobs.cancel(job):
        return Status(409, {"detail": "This job has already ended."})
    job.refresh_from_db()
    return Status(200, job_out(request, job))
