"""The upload page: session files, a folder or a zip of one into a project, answered with the
import job's page."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from contextviewer.accounts.permissions import projects_for
from contextviewer.importers import formats
from contextviewer.ingest import folder_upload
from contextviewer.ingest import imports as services
from contextviewer.refusals import refuse


def _context(projects) -> dict:
    return {
        "projects": projects,
        "max_upload_mb": settings.MAX_UPLOAD_BYTES // 1_000_000,
        "max_upload_bytes": settings.MAX_UPLOAD_BYTES,
        "max_files": settings.DATA_UPLOAD_MAX_NUMBER_FILES,
        "formats": [{"label": f.label, "where": f.where} for f in formats.registry()],
        "accept": ",".join(formats.upload_extensions()),
        "extensions": formats.upload_extensions(),
    }


@login_required
@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    projects = list(projects_for(request, "import"))
    context = _context(projects)
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
        context["error"] = "Choose session files, a folder or a .zip of one to import."
        return render(request, "ingest/upload.html", context, status=400)
    try:
        stored = services.store_uploads(files, request.POST.getlist("paths"))
    except services.UploadTooLarge as exc:
        context["error"] = str(exc)
        return render(request, "ingest/upload.html", context, status=413)
    except folder_upload.UploadRefused as exc:
        context["error"] = str(exc)
        return render(request, "ingest/upload.html", context, status=exc.status)
    except OSError as exc:
        if not folder_upload.disk_full(exc):
            raise
        context["error"] = folder_upload.DISK_FULL_MESSAGE
        return render(request, "ingest/upload.html", context, status=507)
    job, _ = services.start_import(project, uploads=stored, user=request.user)
    count = sum(s.get("files", 1) for s in stored)
    messages.info(request, f"Importing {count} file(s).")
    return redirect("job_detail", job_id=job.pk)
