"""Projects and memberships: the writes shared by the run command, views and tests."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from . import audit, tokens
from .models import DEFAULT_PROJECT_SLUG, ApiToken, Invitation, Membership, Project, Role, TokenScope  # noqa: F401


def get_or_create_project(name: str, owner=None) -> Project:
    from django.utils.text import slugify

    slug = slugify(name)[:100] or DEFAULT_PROJECT_SLUG
    with transaction.atomic():
        project, _ = Project.objects.get_or_create(slug=slug, defaults={"name": name})
        if owner is not None:
            Membership.objects.get_or_create(project=project, user=owner, defaults={"role": Role.OWNER})
    return project


def default_project(owner=None) -> Project:
    return get_or_create_project("Default", owner=owner)


def ensure_admin(username: str = "admin") -> tuple[object, str | None]:
    """Create the first admin account once; return (user, password) with the password only when new."""
    import secrets

    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is not None:
        return user, None
    password = secrets.token_urlsafe(12)
    user = User.objects.create_superuser(username=username, email="", password=password)
    get_or_create_project("Default", owner=user)
    return user, password


def membership(user, project) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, project=project).first()


# --- members, invitations, tokens (each write leaves an audit event) --------------------------

TOKEN_LIFETIMES = {"30": 30, "90": 90, "365": 365, "never": None}


class AccountError(ValueError):
    """A refused change, with a message for the person who asked for it."""


def _role(value: str) -> str:
    if value not in Role.values:
        raise AccountError(f"Unknown role {value!r}: choose one of {', '.join(Role.values)}.")
    return value


def create_project(name: str, owner, request=None) -> Project:
    from django.utils.text import slugify

    name = (name or "").strip()
    if not name:
        raise AccountError("Give the project a name.")
    slug = slugify(name)[:90]
    if not slug:
        raise AccountError("The project name needs at least one letter or digit.")
    base, n = slug, 1
    while Project.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    with transaction.atomic():
        project = Project.objects.create(name=name[:200], slug=slug)
        Membership.objects.create(project=project, user=owner, role=Role.OWNER)
        audit.record(request or owner, project, "project.created", project.slug)
    return project


def invite(project: Project, who: str, role: str, *, by, request=None) -> Invitation:
    """Invite an existing user by username, or anyone by email address (they accept after signing in
    with an account that has that address)."""
    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email

    who = (who or "").strip()
    role = _role(role)
    if not who:
        raise AccountError("Enter a username or an email address.")
    User = get_user_model()
    user, email = None, ""
    if "@" in who:
        try:
            validate_email(who)
        except ValidationError:
            raise AccountError(f"{who!r} is not a valid email address.") from None
        email = who.lower()
        if Membership.objects.filter(project=project, user__email__iexact=email).exists():
            raise AccountError(f"A member of {project.name} already has the address {email}.")
        pending = project.invitations.filter(status=Invitation.Status.PENDING, email__iexact=email)
    else:
        user = User.objects.filter(username=who).first()
        if user is None:
            raise AccountError(f"There is no user named {who!r}. Invite them by email address instead.")
        if Membership.objects.filter(project=project, user=user).exists():
            raise AccountError(f"{who} is already a member of {project.name}.")
        pending = project.invitations.filter(status=Invitation.Status.PENDING, user=user)
    if pending.exists():
        raise AccountError(f"{who} already has a pending invitation to {project.name}.")
    with transaction.atomic():
        invitation = Invitation.objects.create(project=project, user=user, email=email, role=role, invited_by=by)
        audit.record(request or by, project, "member.invited", invitation.invitee, role=role)
    return invitation


def pending_invitations_for(user):
    qs = Invitation.objects.filter(status=Invitation.Status.PENDING).select_related("project", "invited_by")
    if user.email:
        return qs.filter(Q(user=user) | Q(user__isnull=True, email__iexact=user.email))
    return qs.filter(user=user)


def answer_invitation(invitation: Invitation, user, accept: bool, request=None) -> Membership | None:
    if invitation.status != Invitation.Status.PENDING:
        raise AccountError("This invitation has already been answered or cancelled.")
    if not invitation.is_for(user):
        raise AccountError("This invitation is for someone else.")
    with transaction.atomic():
        invitation.status = Invitation.Status.ACCEPTED if accept else Invitation.Status.DECLINED
        invitation.answered_at = timezone.now()
        invitation.save(update_fields=["status", "answered_at"])
        member = None
        if accept:
            member, _ = Membership.objects.get_or_create(
                project=invitation.project, user=user, defaults={"role": invitation.role}
            )
        audit.record(
            request or user, invitation.project, "member.joined" if accept else "member.declined",
            user.get_username(), role=invitation.role,
        )
    return member


def cancel_invitation(invitation: Invitation, *, by, request=None) -> None:
    if invitation.status != Invitation.Status.PENDING:
        raise AccountError("This invitation has already been answered or cancelled.")
    with transaction.atomic():
        invitation.status = Invitation.Status.CANCELLED
        invitation.answered_at = timezone.now()
        invitation.save(update_fields=["status", "answered_at"])
        audit.record(request or by, invitation.project, "member.invitation_cancelled", invitation.invitee)


def _owner_count(project: Project) -> int:
    return Membership.objects.filter(project=project, role=Role.OWNER).count()


def change_role(member: Membership, role: str, *, by, request=None) -> Membership:
    role = _role(role)
    old = member.role
    if old == role:
        return member
    with transaction.atomic():
        # Lock the project's owner rows so two managers cannot demote the last two owners at once.
        list(Membership.objects.select_for_update().filter(project=member.project, role=Role.OWNER))
        by_member = Membership.objects.filter(project=member.project, user=by).first()
        if Role.OWNER in (old, role) and (by_member is None or by_member.role != Role.OWNER):
            raise AccountError("Only an owner can make someone an owner or change an owner's role.")
        if old == Role.OWNER and _owner_count(member.project) <= 1:
            raise AccountError("A project needs at least one owner: make someone else owner first.")
        member.role = role
        member.save(update_fields=["role"])
        audit.record(request or by, member.project, "member.role_changed", member.user.get_username(), old=old, new=role)
    return member


def remove_member(member: Membership, *, by, request=None) -> None:
    with transaction.atomic():
        list(Membership.objects.select_for_update().filter(project=member.project, role=Role.OWNER))
        by_member = Membership.objects.filter(project=member.project, user=by).first()
        if member.role == Role.OWNER and (by_member is None or by_member.role != Role.OWNER):
            raise AccountError("Only an owner can remove an owner.")
        if member.role == Role.OWNER and _owner_count(member.project) <= 1:
            raise AccountError("You cannot remove the last owner of a project.")
        username = member.user.get_username()
        # The removed user's tokens for this project stop working with the membership; revoke them too.
        now = timezone.now()
        ApiToken.objects.filter(project=member.project, user=member.user, revoked_at__isnull=True).update(revoked_at=now)
        member.delete()
        audit.record(request or by, member.project, "member.removed", username, role=member.role)


def create_token(user, project: Project, name: str, lifetime: str = "90", request=None, scope: str = "") -> tuple[ApiToken, str]:
    """Create a token; return (row, secret). The secret is not stored and cannot be shown again.
    ``scope``: "" (the API, with the user's role) or "push" (push.py only: ApiToken.scope)."""
    name = (name or "").strip()
    scope = scope or ""
    if scope not in TokenScope.values:
        raise AccountError(f"Unknown token scope {scope!r}: the API, or push only.")
    if not name:
        raise AccountError("Give the token a name (what will use it?).")
    if lifetime not in TOKEN_LIFETIMES:
        raise AccountError(f"Unknown lifetime {lifetime!r}: choose 30, 90 or 365 days, or never.")
    if not Membership.objects.filter(project=project, user=user).exists():
        raise AccountError("You are not a member of this project.")
    days = TOKEN_LIFETIMES[lifetime]
    secret, prefix = tokens.new_secret()
    with transaction.atomic():
        row = ApiToken.objects.create(
            user=user, project=project, name=name[:100], prefix=prefix, token_hash=tokens.hash_token(secret),
            expires_at=timezone.now() + timedelta(days=days) if days else None, scope=scope,
        )
        audit.record(request or user, project, "token.created", f"{row.name} ({prefix})", expires=row.expires_at.strftime("%Y-%m-%d") if row.expires_at else "never",
                     **({"scope": "push only"} if scope else {}))
    return row, secret


def revoke_token(token: ApiToken, *, by, request=None) -> None:
    if token.revoked_at is not None:
        return
    with transaction.atomic():
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit.record(request or by, token.project, "token.revoked", f"{token.name} ({token.prefix})", owner=token.user.get_username())
