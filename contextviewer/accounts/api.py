"""API operations for projects, members, invitations and the audit log.

Tokens are created and revoked on the tokens page only (a session), so a leaked token cannot
mint more tokens."""

from __future__ import annotations

from datetime import datetime

from ninja import Router, Schema
from ninja.responses import Status


from . import audit, services
from .permissions import get_membership_for_user, get_project_for_user, membership, projects_for
from .models import AuditEvent, Membership, Project, Role

router = Router(tags=["projects"])


class ErrorOut(Schema):
    detail: str


class ProjectOut(Schema):
    slug: str
    name: str
    role: str


class MemberOut(Schema):
    id: int
    username: str
    role: str
    since: datetime


class InviteIn(Schema):
    who: str
    role: str = Role.MEMBER


class InvitationOut(Schema):
    id: int
    invitee: str
    role: str
    status: str


class RoleIn(Schema):
    role: str


class AuditOut(Schema):
    time: datetime
    actor: str
    action: str
    target: str
    details: dict


@router.get("/projects", response=list[ProjectOut])
def list_projects(request):
    """The projects this request can see (a token: only its own project)."""
    out = []
    for project in projects_for(request, "view"):
        member = membership(request, project)
        out.append({"slug": project.slug, "name": project.name, "role": member.role if member else ""})
    return out


@router.get("/projects/{project}/members", response={200: list[MemberOut], 404: ErrorOut})
def list_members(request, project: str):
    proj = get_project_for_user(request, project, "view")
    rows = Membership.objects.filter(project=proj).select_related("user").order_by("user__username")
    return [{"id": m.pk, "username": m.user.get_username(), "role": m.role, "since": m.created_at} for m in rows]


@router.post("/projects/{project}/invitations", response={201: InvitationOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut})
def invite(request, project: str, body: InviteIn):
    me = get_membership_for_user(request, project, "manage_members")
    proj = me.project
    if body.role == Role.OWNER and me.role != Role.OWNER:
        return Status(403, {"detail": "Only an owner can invite an owner."})
    try:
        inv = services.invite(proj, body.who, body.role, by=request.user, request=request)
    except services.AccountError as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, {"id": inv.pk, "invitee": inv.invitee, "role": inv.role, "status": inv.status})


def _member(proj: Project, membership_id: int) -> Membership | None:
    return Membership.objects.filter(project=proj, pk=membership_id).select_related("user", "project").first()


@router.patch("/projects/{project}/members/{membership_id}", response={200: MemberOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut})
def change_role(request, project: str, membership_id: int, body: RoleIn):
    proj = get_project_for_user(request, project, "manage_members")
    member = _member(proj, membership_id)
    if member is None:
        return Status(404, {"detail": "No such member."})
    try:
        services.change_role(member, body.role, by=request.user, request=request)
    except services.AccountError as exc:
        return Status(400, {"detail": str(exc)})
    return Status(200, {"id": member.pk, "username": member.user.get_username(), "role": member.role, "since": member.created_at})


@router.delete("/projects/{project}/members/{membership_id}", response={204: None, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut})
def remove_member(request, project: str, membership_id: int):
    proj = get_project_for_user(request, project, "manage_members")
    member = _member(proj, membership_id)
    if member is None:
        return Status(404, {"detail": "No such member."})
    try:
        services.remove_member(member, by=request.user, request=request)
    except services.AccountError as exc:
        return Status(400, {"detail": str(exc)})
    return Status(204, None)


@router.get("/projects/{project}/audit", response={200: list[AuditOut], 403: ErrorOut, 404: ErrorOut})
def audit_log(request, project: str, action: str = "", limit: int = 200):
    proj = get_project_for_user(request, project, "manage_members")
    audit.flush_spool()  # events spooled while an import held the database (audit.py)
    events = AuditEvent.objects.filter(project=proj)
    if action:
        events = events.filter(action__startswith=action[:60])
    return [
        {"time": e.created_at, "actor": e.actor_name, "action": e.action, "target": e.target, "details": e.details}
        for e in events[: max(1, min(limit, 1000))]
    ]
