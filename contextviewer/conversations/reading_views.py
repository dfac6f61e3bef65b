"""Reading in place: a fold's whole summary, and a sub-agent's turns inside its parent's Task call.

Both answer an htmx request with a fragment and a plain request with a full page.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Max, Min
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from contextviewer.conversations import pages
from contextviewer.conversations.models import Fold, Message
from contextviewer.conversations.views import _get_conversation_for_user, fragment_or_page


@login_required
@require_GET
@vary_on_headers("HX-Request")
def fold_summary(request: HttpRequest, pk: int, fold_id: int) -> HttpResponse:
    """The whole summary of one fold (the page shows its first SUMMARY_HEAD characters)."""
    conv = _get_conversation_for_user(request, pk)
    fold = Fold.objects.filter(conversation=conv, pk=fold_id).first()
    if fold is None or not fold.summary_text:
        raise Http404("No such fold summary")
    context = {"conv": conv, "fold": fold}
    return fragment_or_page(request, "conversations/_summary.html#summary-full", "conversations/fold_summary.html", context)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def subagent_turns(request: HttpRequest, pk: int) -> HttpResponse:
    """The first turns of a sub-agent conversation, listed inside the Task call that started it."""
    conv = _get_conversation_for_user(request, pk)
    span = Message.objects.filter(conversation=conv).aggregate(first=Min("position"), last=Max("position"))
    window = None
    if span["first"] is not None:
        window = pages.turn_window(conv, 0, span["first"], span["last"])
    context = {"conv": conv, "window": window}
    return fragment_or_page(request, "conversations/_subagent_turns.html", "conversations/subagent_turns.html", context)
