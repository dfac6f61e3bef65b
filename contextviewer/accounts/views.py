"""Project pages: the project list (switcher), members and invitations, API tokens, audit log.

Each view declares who may use it: `_project_for(request, slug, permission)` (permissions.py)
answers 404 to non-members (a project's existence is not disclosed) and 403 to members whose role
lacks the permission."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from . import audit, services
from .permissions import get_membership_for_user
from .models import ApiToken, AuditEvent, Invitation, Membership, Project, PushClient, Role, TokenScope


def _project_for(request: HttpRequest, slug: str, permission: str = "view") -> tuple[Project, Membership]:
    member = get_membership_for_user(request, slug, permission)
    return member.project, member


def _refused(request: HttpRequest, exc: Exception, to: str, **kwargs) -> HttpResponse:
    messages.error(request, str(exc))
    return redirect(to, **kwargs)


@login_required
@require_http_methods(["GET", "POST"])
def projects(request: HttpRequest) -> HttpResponse:
    """Every project the user belongs to (with their role), pending invitations, and a new-project form."""
    if request.method == "POST":
        try:
            project = services.create_project(request.POST.get("name", ""), request.user, request=request)
        except services.AccountError as exc:
            return _refused(request, exc, "projects")
        messages.info(request, f"Created {project.name}; you are its owner.")
        return redirect("project_members", project=project.slug)
    memberships = (
        Membership.objects.filter(user=request.user).select_related("project").order_by("project__name")
    )
    return render(request, "accounts/projects.html", {
        "memberships": memberships,
        "invitations": services.pending_invitations_for(request.user),
    })


def _get_invitation_for_user(request: HttpRequest, invitation_id: int) -> Invitation:
    invitation = Invitation.objects.select_related("project").filter(pk=invitation_id).first()
    if invitation is None or not invitation.is_for(request.user):
        raise Http404("No such invitation")
    return invitation


@login_required
@require_POST
def invitation_answer(request: HttpRequest, invitation_id: int, answer: str) -> HttpResponse:
    invitation = _get_invitation_for_user(request, invitation_id)
    if answer not in ("accept", "decline"):
        raise Http404("No such answer")
    try:
        services.answer_invitation(invitation, request.user, accept=answer == "accept", request=request)
    except services.AccountError as exc:
        return _refused(request, exc, "projects")
    if answer == "accept":
        messages.info(request, f"You joined {invitation.project.name} as {invitation.role}.")
    return redirect("projects")


@login_required
@require_GET
def members(request: HttpRequest, project: str) -> HttpResponse:
    proj, me = _project_for(request, project, "view")
    rows = proj.memberships.select_related("user").order_by("user__username")
    pending = proj.invitations.filter(status=Invitation.Status.PENDING).select_related("user", "invited_by")
    # Its members' push clients (push.py), so a laptop that stopped pushing is seen: owners and
    # admins see everyone's, the others their own.
    clients = PushClient.objects.filter(project=proj, user__memberships__project=proj).select_related("user")
    if not me.can("manage_members"):
        clients = clients.filter(user=request.user)
    return render(request, "accounts/members.html", {
        "project": proj, "me": me, "members": rows, "pending": pending,
        "can_manage": me.can("manage_members"), "roles": Role.choices,
        "owner_roles": me.role == Role.OWNER, "push_clients": clients.order_by("user__username", "hostname"),
    })


@login_required
@require_POST
def member_invite(request: HttpRequest, project: str) -> HttpResponse:
    proj, me = _project_for(request, project, "manage_members")
    role = request.POST.get("role", Role.MEMBER)
    if role == Role.OWNER and me.role != Role.OWNER:
        return _refused(request, services.AccountError("Only an owner can invite an owner."), "project_members", project=proj.slug)
    try:
        invitation = services.invite(proj, request.POST.get("who", ""), role, by=request.user, request=request)
    except services.AccountError as exc:
        return _refused(request, exc, "project_members", project=proj.slug)
    messages.info(request, f"Invited {invitation.invitee} as {invitation.role}. They accept it on their Projects page.")
    return redirect("project_members", project=proj.slug)


@login_required
@require_POST
def invitation_cancel(request: HttpRequest, project: str, invitation_id: int) -> HttpResponse:
    proj, _ = _project_for(request, project, "manage_members")
    invitation = proj.invitations.filter(pk=invitation_id).first()
    if invitation is None:
        raise Http404("No such invitation")
    try:
        services.cancel_invitation(invitation, by=request.user, request=request)
    except services.AccountError as exc:
        return _refused(request, exc, "project_members", project=proj.slug)
    return redirect("project_members", project=proj.slug)


def _get_member(proj: Project, membership_id: int) -> Membership:
    member = proj.memberships.select_related("user", "project").filter(pk=membership_id).first()
    if member is None:
        raise Http404("No such member")
    return member


@login_required
@require_POST
def member_role(request: HttpRequest, project: str, membership_id: int) -> HttpResponse:
    proj, _ = _project_for(request, project, "manage_members")
    member = _get_member(proj, membership_id)
    try:
        services.change_role(member, request.POST.get("role", ""), by=request.user, request=request)
    except services.AccountError as exc:
        return _refused(request, exc, "project_members", project=proj.slug)
    messages.info(request, f"{member.user.get_username()} is now {member.role}.")
    return redirect("project_members", project=proj.slug)


@login_required
@require_POST
def member_remove(request: HttpRequest, project: str, membership_id: int) -> HttpResponse:
    proj, _ = _project_for(request, project, "manage_members")
    member = _get_member(proj, membership_id)
    try:
        services.remove_member(member, by=request.user, request=request)
    except services.AccountError as exc:
        return _refused(request, exc, "project_members", project=proj.slug)
    messages.info(request, f"Removed {member.user.get_username()} from {proj.name}.")
    if member.user_id == request.user.pk:
        return redirect("projects")
    return redirect("project_members", project=proj.slug)


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest, project: str) -> HttpResponse:
    """The user's API tokens for this project; owners and admins also see and may revoke everyone's."""
    proj, me = _project_for(request, project, "view")
    created = None
    if request.method == "POST":
        try:
            row, secret = services.create_token(
                request.user, proj, request.POST.get("name", ""), request.POST.get("lifetime", "90"), request=request,
                scope=request.POST.get("scope", ""),
            )
        except services.AccountError as exc:
            return _refused(request, exc, "project_tokens", project=proj.slug)
        created = {"token": row, "secret": secret}
    rows = ApiToken.objects.filter(project=proj).select_related("user")
    if not me.can("manage_members"):
        rows = rows.filter(user=request.user)
    response = render(request, "accounts/tokens.html", {
        "project": proj, "me": me, "tokens": rows, "created": created,
        "lifetimes": [("30", "30 days"), ("90", "90 days"), ("365", "1 year"), ("never", "never expires")],
        "all_users": me.can("manage_members"), "scopes": TokenScope.choices,
    }, status=201 if created else 200)
    if created:
        # The secret is in this page only: never cache it.
        response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def token_revoke(request: HttpRequest, project: str, token_id: int) -> HttpResponse:
    proj, me = _project_for(request, project, "view")
    row = ApiToken.objects.filter(project=proj, pk=token_id).select_related("user", "project").first()
    if row is None or (row.user_id != request.user.pk and not me.can("manage_members")):
        raise Http404("No such token")
    services.revoke_token(row, by=request.user, request=request)
    messages.info(request, f"Revoked {row.name} ({row.prefix}…).")
    return redirect("project_tokens", project=proj.slug)


@login_required
@require_GET
def audit_log(request: HttpRequest, project: str) -> HttpResponse:
    proj, me = _project_for(request, project, "manage_members")
    audit.flush_spool()  # events spooled while an import held the database (audit.py)
    events = AuditEvent.objects.filter(project=proj).select_related("actor")
    action = request.GET.get("action", "").strip()[:60]
    if action:
        events = events.filter(action__startswith=action)
    page = Paginator(events, 100).get_page(request.GET.get("page"))
    return render(request, "accounts/audit.html", {"project": proj, "me": me, "page": page, "action": action})
