"""A refusal that says why: the 403 page (templates/403.html) with the reason, or the reason as text
for an htmx request (the fragment it swaps in). A PermissionDenied raised anywhere (the permission
helpers in accounts/permissions.py raise it) is answered the same way by `permission_denied`, the
project's handler403 (urls.py), with its message as the reason."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def refuse(request: HttpRequest, reason: str, status: int = 403) -> HttpResponse:
    if getattr(request, "htmx", False):
        return HttpResponse(reason, status=status, content_type="text/plain; charset=utf-8")
    return render(request, "403.html", {"reason": reason}, status=status)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler403: a PermissionDenied answered as refuse() answers (its message is the reason)."""
    reason = str(exception or "") or "Your role in this project does not allow this."
    return refuse(request, reason)
