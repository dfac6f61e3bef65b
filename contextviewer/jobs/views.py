"""Jobs page and the self-polling job progress fragment."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from contextviewer.accounts.permissions import get_job_for_user

from contextviewer.jobs import kinds, queue as jobs
from contextviewer.jobs.models import Job


@login_required
def jobs_page(request: HttpRequest) -> HttpResponse:
    # A folder import's parts are on its page, not here (one row per import, as it was).
    rows = Job.objects.for_user(request.user).filter(parent__isnull=True).select_related("project")[:200]
    return render(request, "jobs/list.html", {"jobs": rows})


@login_required
@vary_on_headers("HX-Request")
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_job_for_user(request, job_id)
    progress, text = jobs.current_progress(job)
    context = {"job": job, "progress": progress, "progress_pct": int(progress * 100), "progress_text": text,
               "outcome": kinds.outcome(job), "duration": _duration(job), "parts": jobs.parts_summary(job),
               "lists_conversations": job.kind in kinds.LISTS_CONVERSATIONS}
    context["parts_note"] = _parts_note(context["parts"])
    template = "jobs/detail.html#progress" if request.htmx else "jobs/detail.html"
    return render(request, template, context)


# A job's parts by state, as its page names them (queue.parts_summary's keys), after those done.
PART_STATES = (("running", "running"), ("queued", "waiting"), ("failed", "failed"), ("cancelled", "cancelled"))


def _parts_note(parts: dict | None) -> str:
    """How a job's parts stand: "In 12 parts run by any worker: 9 done, 2 running, 1 waiting."."""
    if not parts:
        return ""
    states = [f"{parts['succeeded']} done"] + [f"{parts[key]} {label}" for key, label in PART_STATES if parts.get(key)]
    return f"In {parts['count']} parts run by any worker: {', '.join(states)}."


def _duration(job: Job) -> str | None:
    """How long it ran ("4.2 s", "3 min 5 s"), once it has finished."""
    if not (job.is_finished and job.started_at and job.finished_at):
        return None
    seconds = max(0.0, (job.finished_at - job.started_at).total_seconds())
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


@login_required
@require_POST
def job_cancel(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_job_for_user(request, job_id, "import", doing="cancel jobs")
    if not jobs.cancel(job):
        return HttpResponseBadRequest("This job has already ended.")
    return redirect("job_detail", job_id=job.pk)


@login_required
@require_POST
def job_retry(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_job_for_user(request, job_id, "import", doing="retry jobs")
    jobs.retry(job)
    return redirect("job_detail", job_id=job.pk)
