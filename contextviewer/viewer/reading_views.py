"""Reading in place: a fold's whole summary, and a sub-agent's turns inside its parent's Task call.

Both answer an htmx request with a fragment and a plain request with a full page.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Max, Min
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from contextviewer.viewer import conversation_page
from contextviewer.conversations.models import Message
from contextviewer.accounts.permissions import get_conversation_for_user, get_fold_for_user
from contextviewer.viewer.views import cached_fragment


@login_required
@require_GET
@vary_on_headers("HX-Request")
def fold_summary(request: HttpRequest, pk: int, fold_id: int) -> HttpResponse:
    """The whole summary of one fold (the page shows its first SUMMARY_HEAD characters)."""
    conv = get_conversation_for_user(request, pk)
    fold = get_fold_for_user(request, conv, fold_id)
    if not fold.summary_text:
        raise Http404("No such fold summary")
    return cached_fragment(request, conv, f"fold_summary:{fold_id}", "viewer/_summary.html#summary-full",
                           "viewer/fold_summary.html", lambda: {"conv": conv, "fold": fold})


@login_required
@require_GET
@vary_on_headers("HX-Request")
def subagent_turns(request: HttpRequest, pk: int) -> HttpResponse:
    """The first turns of a sub-agent conversation, listed inside the Task call that started it."""
    conv = get_conversation_for_user(request, pk)

    def context() -> dict:
        span = Message.objects.filter(conversation=conv).aggregate(first=Min("position"), last=Max("position"))
        turns_page = None
        if span["first"] is not None:
            turns_page = conversation_page.turn_page(conv, 0, span["first"], span["last"])
        return {"conv": conv, "turns_page": turns_page}

    return cached_fragment(request, conv, "subagent_turns", "viewer/_subagent_turns.html",
                           "viewer/subagent_turns.html", context)
