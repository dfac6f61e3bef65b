"""API operations of the push client (push.py, push_client.py): what the server holds of a file, and
the bytes of a new file or of what a growing one appended (push.py's services). They accept a
"push only" token, which every other operation refuses (accounts/auth.py)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from ninja import Router, Schema
from ninja.responses import Status
from ninja.security import django_auth

from contextviewer.accounts.auth import push_token_auth
from contextviewer.accounts.models import Project
from contextviewer.accounts.permissions import projects_for
from contextviewer.ingest import push
from contextviewer.ingest.watch import auto_locations
from contextviewer.jobs.api import ErrorOut

router = Router(tags=["push"], auth=[push_token_auth, django_auth])


class PushFileOut(Schema):
    path: str  # as stored (relative to the client's pushed folders)
    size: int  # bytes held
    sha256: str  # of the bytes held
    stored: int = 0  # bytes this request added (0: held already)
    job: int | None = None  # the import job started for what is new


class PushConflictOut(Schema):
    detail: str
    size: int
    sha256: str


class PushConfigOut(Schema):
    project: str
    max_request_bytes: int
    locations: list[str]


def _project(request: HttpRequest, project: str | None) -> Project | None:
    projects = list(projects_for(request, "import"))
    if project:
        projects = [p for p in projects if p.slug == project]
    return projects[0] if projects else None


def _refused(project: str | None):
    return Status(403, {"detail": "You may not push into this project." if project else "You have no project to push into."})


@router.get("/push/config", response={200: PushConfigOut, 403: ErrorOut})
def push_config(request, project: str | None = None):
    """What push.py asks at start: the project it pushes into, the largest request the server takes
    (the upload cap) and each agent's default folders (`auto`, as `watch auto` finds them)."""
    proj = _project(request, project)
    if proj is None:
        return _refused(project)
    return {"project": proj.slug, "max_request_bytes": settings.MAX_UPLOAD_BYTES, "locations": auto_locations()}


@router.get("/push/files", response={200: PushFileOut, 400: ErrorOut, 403: ErrorOut})
def push_held(request, client: str, path: str, project: str | None = None, hostname: str = ""):
    """What the server holds of the client's file `path` (relative to its pushed folder): its size
    and the sha256 of those bytes (0 and the empty hash: nothing)."""
    proj = _project(request, project)
    if proj is None:
        return _refused(project)
    try:
        row = push.get_client(proj, request.user, client, hostname)
        rel, size, sha = push.held(row, path)
    except push.PushRefused as exc:
        return Status(exc.status, {"detail": str(exc)})
    return {"path": rel, "size": size, "sha256": sha}


@router.put("/push/files", response={200: PushFileOut, 400: ErrorOut, 403: ErrorOut, 409: PushConflictOut, 413: ErrorOut,
                                    507: ErrorOut})
def push_send(request, client: str, path: str, offset: int = 0, sha256: str = "", complete: bool = True,
              project: str | None = None, hostname: str = ""):
    """Send the bytes of the client's file `path` as the request's body (any content type): offset 0
    is the whole file (what is held is replaced), another offset appends to the held bytes, whose
    sha256 names what the client believes is held: anything else is refused with 409 and what is
    held (send the whole file again). Sending the same bytes twice stores them once. A body over the
    upload cap is refused with 413. What is new is imported (`complete=false`: more of the file
    follows, import after it)."""
    proj = _project(request, project)
    if proj is None:
        return _refused(project)
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return Status(400, {"detail": "a request body with its Content-Length"})
    try:
        row = push.get_client(proj, request.user, client, hostname)
        got = push.receive(row, path, offset, sha256, request, length, complete=complete, user=request.user)
    except push.PushRefused as exc:
        return Status(exc.status, {"detail": str(exc)})
    except push.Conflict as exc:
        return Status(409, {"detail": str(exc), "size": exc.size, "sha256": exc.sha256})
    return {"path": got.path, "size": got.size, "sha256": got.sha256, "stored": got.stored, "job": got.job_id}
