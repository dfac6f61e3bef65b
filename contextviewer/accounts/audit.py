"""The audit log: who did what to which project, for security-relevant actions.

Call `record(request_or_user, project, action, target, **details)` from any app, e.g.
`audit.record(request, project, "provider.settings_changed", "openai", base_url=url)`.
Actions are dotted names: member.invited, member.role_changed, member.removed, token.created,
token.revoked, provider.settings_changed, conversation.deleted, export.created, ...
Never put secrets in details."""

from __future__ import annotations

import ipaddress
from typing import Any

from .models import AuditEvent, Project


def _actor_and_ip(request_or_user) -> tuple[Any, str | None]:
    if request_or_user is None:
        return None, None
    if hasattr(request_or_user, "META"):  # a request
        from .throttle import client_ip  # lazy: throttle loads auth's and admin's forms, which commands never need

        ip = client_ip(request_or_user) or None
        try:
            ipaddress.ip_address(ip or "")
        except ValueError:
            ip = request_or_user.META.get("REMOTE_ADDR") or None
        return getattr(request_or_user, "user", None), ip
    return request_or_user, None


def via(request_or_user) -> str:
    """How an audited action came in: "token" (an API call with a bearer token), "web" (a signed-in
    session: a page, or the API from the browser), "command" (no request: the command line)."""
    if request_or_user is None:
        return "command"
    if hasattr(request_or_user, "META"):
        from .auth import request_token  # lazy: auth loads ninja, which commands never need

        return "token" if request_token(request_or_user) is not None else "web"
    return "web"  # a plain user: a session


def record(request_or_user, project: Project | None, action: str, target: str = "", **details: Any) -> AuditEvent:
    actor, ip = _actor_and_ip(request_or_user)
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    return AuditEvent.objects.create(
        project=project,
        project_name=project.name if project is not None else "",
        actor=actor,
        actor_name=actor.get_username() if actor is not None else "",
        action=action[:60],
        target=str(target)[:300],
        details={k: v if isinstance(v, (str, int, float, bool, type(None), list, dict)) else str(v) for k, v in details.items()},
        ip=ip,
    )


def audit_read(request, project, what: str, target: str = "", **details) -> None:
    """A read through an API token leaves an audit event (a session's reads, like its pages, do not)."""
    if via(request) == "token":
        record(request, project, f"read.{what}", target, via="token", **details)
