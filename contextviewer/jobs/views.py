"""Jobs page and the self-polling job progress fragment."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from contextviewer.accounts.permissions import get_job_for_user

from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import Job


@login_required
def jobs_page(request: HttpRequest) -> HttpResponse:
    rows = Job.objects.for_user(request.user).select_related("project")[:200]
    return render(request, "jobs/list.html", {"jobs": rows})


@login_required
@vary_on_headers("HX-Request")
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_job_for_user(request, job_id)
    progress, text = jobs.current_progress(job)
    context = {"job": job, "progress": progress, "progress_pct": int(progress * 100), "progress_text": text}
    template = "jobs/detail.html#progress" if request.htmx else "jobs/detail.html"
    return render(request, template, context)


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
