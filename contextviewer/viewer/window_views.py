"""What one model call carried, as a page: the items of its window in the order sent (the one
loader, conversations/windows.py, as `manage.py window` and the API read it). A point of the curve
opens it; it links back to the call's turn and to the calls before and after."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from contextviewer.accounts.permissions import get_conversation_for_user
from contextviewer.conversations import windows
from contextviewer.conversations.models import ModelCall

TEXT_SHOWN = 4000  # characters of an item's text on the page; the API and `manage.py window` give all


@login_required
@require_GET
def call_window(request: HttpRequest, pk: int, call: str) -> HttpResponse:
    conv = get_conversation_for_user(request, pk)
    try:
        window = windows.call_window(conv, call)
    except windows.NoSuchCall as e:
        raise Http404(str(e)) from None
    turn = ModelCall.objects.filter(conversation=conv, position=window.position).values_list("message__turn", flat=True).first()
    items = [{**item, "shown": item["text"][:TEXT_SHOWN], "cut": max(0, len(item["text"]) - TEXT_SHOWN)} for item in window.items]
    kinds: dict[str, int] = {}
    for item in window.items:
        kinds[item["kind"]] = kinds.get(item["kind"], 0) + item["tokens"]
    return render(request, "viewer/call_window.html", {
        "conv": conv, "window": window, "items": items, "measured": f"{window.measured:,}" if window.measured else "", "turn": turn, "kinds": sorted(kinds.items(), key=lambda kv: -kv[1]),
        "previous": window.call - 1 if window.call > 1 else None, "next": window.call + 1 if window.call < window.calls else None,
    })
