"""The permission helpers: "the X this caller may use for `permission`", for pages and the API alike.

Every helper takes the caller as the request: a page's request carries a session user; an API
request may carry a bearer token, which narrows what it sees to the token's project (auth.py). A
plain user is accepted too (a shell, a test): it is treated as a session.

Each helper answers the object, or raises:
- ``Http404`` when the object does not exist or the caller may not see it (a non-member, or a token
  of another project: a project's existence is not disclosed);
- ``PermissionDenied`` when the caller sees it but its role may not do `permission`; the message
  says why ("Your role (viewer) in Demo may not import conversations.").

Pages let Django render a PermissionDenied as the refusal page (``contextviewer.refusals``: the
403 page with the reason, or the reason alone for htmx); the API answers ``{"detail": reason}``
with 403 (the handlers in ``contextviewer/api.py``).

accounts sits below conversations and jobs in the stack of apps, so this module never imports their
modules: it looks their models up by name through the app registry, as a ForeignKey string
("conversations.Conversation") does.
"""

from __future__ import annotations

from django.apps import apps
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from .auth import allowed_projects, request_token
from .models import Membership, Project

# What a refusal says each permission is for ("Your role (viewer) in Demo may not <this>.").
DOING: dict[str, str] = {
    "view": "see this",
    "import": "import conversations",
    "edit": "build, fold, queue or judge",
    "score": "score reviews",
    "settings": "change the project's settings",
    "delete": "delete conversations",
    "manage_members": "manage members",
}


def _is_request(caller) -> bool:
    return hasattr(caller, "user") and hasattr(caller, "method")


def _user_and_token(caller):
    """(user, token or None) of a request, or of a plain user (a session)."""
    if _is_request(caller):
        return caller.user, request_token(caller)
    return caller, None


class _Session:
    """A plain user, as the request allowed_projects() takes (a session: no token)."""

    def __init__(self, user):
        self.user = user


def membership(caller, project: Project | int) -> Membership | None:
    """The caller's membership in `project` (None: not a member, signed out, or a token of another project)."""
    user, token = _user_and_token(caller)
    project_id = project if isinstance(project, int) else project.pk
    if not getattr(user, "is_authenticated", False):
        return None
    if token is not None and token.project_id != project_id:
        return None
    return Membership.objects.select_related("project").filter(user=user, project_id=project_id).first()


def refusal(member: Membership, permission: str, doing: str | None = None) -> str:
    return f"Your role ({member.role}) in {member.project.name} may not {doing or DOING.get(permission, permission)}."


def require(caller, project: Project | int, permission: str = "view", *, doing: str | None = None,
            not_found: str = "Not found.") -> Membership:
    """The caller's membership in `project` when its role allows `permission`; else Http404 (not a
    member) or PermissionDenied (the role may not; `doing` words what it may not do)."""
    member = membership(caller, project)
    if member is None:
        raise Http404(not_found)
    if not member.can(permission):
        raise PermissionDenied(refusal(member, permission, doing))
    return member


def can(caller, project: Project | int | None, permission: str) -> bool:
    """Whether the caller may do `permission` in `project` (for the can_* flags views pass to templates)."""
    if project is None:
        return False
    member = membership(caller, project)
    return bool(member and member.can(permission))


def projects_for(caller, permission: str = "view") -> QuerySet[Project]:
    """The projects where the caller's role allows `permission` (a token: its own project at most), by name."""
    return allowed_projects(caller if _is_request(caller) else _Session(caller), permission).order_by("name")


def get_membership_for_user(caller, pk_or_slug: int | str, permission: str = "view", *,
                            doing: str | None = None) -> Membership:
    """The caller's membership in the project named by pk (an int) or slug (a str), with its
    .project, when its role allows `permission` (for pages that show or offer by role)."""
    lookup = {"pk": pk_or_slug} if isinstance(pk_or_slug, int) else {"slug": pk_or_slug}
    project = Project.objects.filter(**lookup).first()
    if project is None:
        raise Http404("No such project.")
    return require(caller, project, permission, doing=doing, not_found="No such project.")


def get_project_for_user(caller, pk_or_slug: int | str, permission: str = "view", *, doing: str | None = None) -> Project:
    """The project named by pk or slug, when the caller's role there allows `permission`."""
    return get_membership_for_user(caller, pk_or_slug, permission, doing=doing).project


def get_conversation_and_membership(caller, pk: int, permission: str = "view", *, doing: str | None = None):
    """(conversation with its project and parent, the caller's membership), when the caller's role in
    its project allows `permission`: for a page that also offers by role (one membership query)."""
    Conversation = apps.get_model("conversations", "Conversation")
    conv = Conversation.objects.select_related("project", "parent").filter(pk=pk).first()
    if conv is None:
        raise Http404("No such conversation.")
    return conv, require(caller, conv.project_id, permission, doing=doing, not_found="No such conversation.")


def get_conversation_for_user(caller, pk: int, permission: str = "view", *, doing: str | None = None):
    """The conversation (with its project and parent), when the caller's role in its project allows `permission`."""
    return get_conversation_and_membership(caller, pk, permission, doing=doing)[0]


def get_fold_and_membership(caller, conversation_or_pk, fold_id: int, permission: str = "view", *, doing: str | None = None):
    """(fold with its conversation and project, the caller's membership), when the caller's role in
    its project allows `permission`. With a conversation (or its pk), only a fold of that
    conversation is found; with None, any fold."""
    Fold = apps.get_model("conversations", "Fold")
    qs = Fold.objects.select_related("conversation", "conversation__project").filter(pk=fold_id)
    if conversation_or_pk is not None:
        qs = qs.filter(conversation_id=getattr(conversation_or_pk, "pk", conversation_or_pk))
    fold = qs.first()
    if fold is None:
        raise Http404("No such fold.")
    return fold, require(caller, fold.conversation.project_id, permission, doing=doing, not_found="No such fold.")


def get_fold_for_user(caller, conversation_or_pk, fold_id: int, permission: str = "view", *, doing: str | None = None):
    """The fold (with its conversation and project), when the caller's role in its project allows `permission`."""
    return get_fold_and_membership(caller, conversation_or_pk, fold_id, permission, doing=doing)[0]


def get_job_for_user(caller, job_id: int, permission: str = "view", *, doing: str | None = None):
    """The job (with its project), when the caller's role in its project allows `permission`."""
    Job = apps.get_model("jobs", "Job")
    job = Job.objects.select_related("project").filter(pk=job_id).first()
    if job is None:
        raise Http404("No such job.")
    require(caller, job.project_id, permission, doing=doing, not_found="No such job.")
    return job
