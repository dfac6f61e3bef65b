"""A refusal that says why: the 403 page (templates/403.html) with the reason, or the reason as text
for an htmx request (the fragment it swaps in). Django's own handler renders the same page for a
PermissionDenied, whose message is the reason."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def refuse(request: HttpRequest, reason: str, status: int = 403) -> HttpResponse:
    if getattr(request, "htmx", False):
        return HttpResponse(reason, status=status, content_type="text/plain; charset=utf-8")
    return render(request, "403.html", {"reason": reason}, status=status)
