"""API authentication: a session (with CSRF on writes) or a project-scoped bearer token.

A request authenticated by token sees only the token's project, with the token owner's current
role there. Every API operation asks `allowed_projects(request, permission)` for the projects it
may read or write. A "push only" token (ApiToken.scope) is refused (403) by every operation but
the push client's (contextviewer/ingest/push_api.py, which authenticates with `push_token_auth`)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest
from ninja.security import HttpBearer

from . import tokens
from .models import ROLE_PERMISSIONS, ApiToken, Membership, Project, TokenScope

PUSH_ONLY_REFUSAL = "This token may only push session files (a push-only token): it is refused here."


class TokenAuth(HttpBearer):
    def __init__(self, *, push: bool = False):
        super().__init__()
        self.push = push  # the push client's operations: a push-only token is accepted too

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        api_token = tokens.check(token)
        if api_token is None:
            return None
        if api_token.scope == TokenScope.PUSH and not self.push:
            raise PermissionDenied(PUSH_ONLY_REFUSAL)
        request.user = api_token.user
        request.api_token = api_token
        return api_token


token_auth = TokenAuth()
push_token_auth = TokenAuth(push=True)


def roles_with(permission: str) -> list[str]:
    return [str(role) for role, perms in ROLE_PERMISSIONS.items() if permission in perms]


def request_token(request: HttpRequest) -> ApiToken | None:
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, ApiToken) else getattr(request, "api_token", None)


def allowed_projects(request: HttpRequest, permission: str = "view") -> QuerySet[Project]:
    """The projects this request may use for `permission`: the user's memberships with a role that
    grants it, narrowed to the token's project when the request came with a token."""
    user = request.user
    if not user.is_authenticated:
        return Project.objects.none()
    qs = Project.objects.filter(
        memberships__user=user, memberships__role__in=roles_with(permission)
    )
    token = request_token(request)
    if token is not None:
        qs = qs.filter(pk=token.project_id)
    return qs.distinct()


def membership_for(request: HttpRequest, project: Project) -> Membership | None:
    """The request's membership in `project` (None when a token is scoped to another project)."""
    token = request_token(request)
    if token is not None and token.project_id != project.pk:
        return None
    if not request.user.is_authenticated:
        return None
    return Membership.objects.filter(project=project, user=request.user).first()
