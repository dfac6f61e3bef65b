"""The upload page: session files into a project, answered with the import job's page."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from contextviewer.accounts.permissions import projects_for
from contextviewer.ingest import imports as services
from contextviewer.refusals import refuse


@login_required
@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    projects = list(projects_for(request, "import"))
    context = {"projects": projects, "max_upload_mb": settings.MAX_UPLOAD_BYTES // 1_000_000}
    if not projects:
        return refuse(request, "Import is not offered: your role in your projects may view conversations but not import them.")
    if request.method == "GET":
        return render(request, "ingest/upload.html", context)
    wanted = request.POST.get("project")
    project = next((p for p in projects if p.slug == wanted), None) if wanted else projects[0]
    if project is None:
        context["error"] = "You may not import into that project."
        return render(request, "ingest/upload.html", context, status=403)
    files = request.FILES.getlist("files")
    if not files:
        context["error"] = "Choose one or more session files (.jsonl or .jsonl.gz) to import."
        return render(request, "ingest/upload.html", context, status=400)
    try:
        stored = [services.store_upload(f) for f in files]
    except services.UploadTooLarge as exc:
        context["error"] = str(exc)
        return render(request, "ingest/upload.html", context, status=413)
    job, _ = services.start_import(project, uploads=stored, user=request.user)
    messages.info(request, f"Importing {len(stored)} file(s).")
    return redirect("job_detail", job_id=job.pk)
