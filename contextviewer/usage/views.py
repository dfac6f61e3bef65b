"""The analytics page of a project: any member may read it, as every page of the project (a person
filter shows one member's sessions; the page shows nothing a member could not read elsewhere)."""

from __future__ import annotations

from datetime import date

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from contextviewer.accounts.permissions import get_membership_for_user
from contextviewer.usage import page, services


def _day(value: str, fallback: date) -> date:
    try:
        return date.fromisoformat(value) if value else fallback
    except ValueError:
        return fallback


def _query(request: HttpRequest, proj) -> tuple[page.Query, str]:
    first, last = page.default_range(proj)
    q = page.Query(since=_day(request.GET.get("since", ""), first), until=_day(request.GET.get("until", ""), last),
                   person=request.GET.get("person", "")[:150], agent=request.GET.get("agent", "")[:40],
                   timezone=request.GET.get("timezone", "")[:60])
    if q.since > q.until or (q.until - q.since).days > 366:
        return q, "Pick at most a year, the first day before the last."
    return q, ""


@login_required
@require_GET
def analytics(request: HttpRequest, project: str) -> HttpResponse:
    member = get_membership_for_user(request, project, "view")
    proj = member.project
    q, error = _query(request, proj)
    data = None
    if not error:
        try:
            data = page.build(proj, q)
        except services.BadQuery as exc:
            error = str(exc)
    people = sorted(proj.memberships.values_list("user__username", flat=True))
    return render(request, "usage/analytics.html", {"project": proj, "me": member, "q": q, "data": data, "error": error,
                                                    "people": people}, status=400 if error else 200)


@login_required
@require_GET
def tools(request: HttpRequest, project: str) -> HttpResponse:
    """The top tools card of the analytics page, loaded after the page (its query reads every
    message's blocks of the range: the page's first response does not wait for it)."""
    member = get_membership_for_user(request, project, "view")
    q, error = _query(request, member.project)
    top: list = []
    if not error:
        try:
            top = page.top_tools(member.project, q)
        except services.BadQuery as exc:
            error = str(exc)
    return render(request, "usage/_tools.html", {"top": top, "error": error}, status=400 if error else 200)
