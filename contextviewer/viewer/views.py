"""The viewer: conversation index, conversation page, and the htmx fragments of the page.

Every URL works without JavaScript (a full page); with htmx it answers with a partial of the same
template (`page.html#partial`). Page data comes from index_page.py, conversation_page.py and
turn_content.py; views only check access and pick the template.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.cache import parse_etags
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from contextviewer.accounts import permissions
from contextviewer.accounts.permissions import get_conversation_for_user
from contextviewer.viewer import conversation_page, index_page, live_poll, panels, turn_content
from contextviewer.conversations import page_cache, search
from contextviewer.conversations.models import Conversation, Message


def _get_message(conv: Conversation, message_id: int, *, with_raw: bool = False) -> Message:
    qs = Message.objects.filter(conversation=conv, pk=message_id)
    if not with_raw:
        qs = qs.defer("raw")
    message = qs.first()
    if message is None:
        raise Http404("No such message")
    return message


# A fragment's answer: the browser keeps it (never a shared cache: private) and asks again each time
# with its ETag (no-cache), so an unchanged fragment costs a 304 (docs/security.md, "Caching").
FRAGMENT_CACHE_CONTROL = "private, no-cache"


def cached_fragment(
    request: HttpRequest, conv: Conversation, name: str, fragment: str, page: str, context: Callable[[], dict], *parts
) -> HttpResponse:
    """The fragment `name` of `conv` for an htmx request, rendered once per version of what it shows
    and kept (page_cache.content_version, the `fragments` cache); the full page for a plain request
    (rendered each time: it holds the reader's name and forms). The caller has checked access:
    nothing here is read before that. `context()` makes the template's context (and raises Http404
    for what does not exist); `parts`: whatever else the fragment depends on.

    The ETag names the fragment's version and the reader (one who lost access gets a 404 from the
    check before any 304); a request whose If-None-Match holds it gets a 304 and no body."""
    if not request.htmx:
        return render(request, page, context())
    query = sorted((k, v) for k, values in request.GET.lists() for v in values)
    key = page_cache.fragment_key(conv, page_cache.content_version(conv), name, fragment, query, *parts)
    etag = '"' + hashlib.sha256(f"{key}:{request.user.pk}".encode()).hexdigest()[:32] + '"'
    # Weak comparison (RFC 9110 13.1.2): GZipMiddleware weakens the ETag of what it compresses.
    if etag in {t.removeprefix("W/") for t in parse_etags(request.headers.get("If-None-Match", ""))}:
        response: HttpResponse = HttpResponseNotModified()
    else:
        html = page_cache.get_fragment(key)
        if html is None:
            html = render_to_string(fragment, context(), request)
            page_cache.keep_fragment(key, html)
        response = HttpResponse(html)
    response["ETag"] = etag
    response["Cache-Control"] = FRAGMENT_CACHE_CONTROL
    return response


def _query_without(request: HttpRequest, *names: str) -> str:
    """The request's query string without `names`, ending in "&" when not empty (for paging links)."""
    query = request.GET.copy()
    for name in names:
        query.pop(name, None)
    encoded = query.urlencode()
    return encoded + "&" if encoded else ""


def _int(value: str | None, default: int | None = None) -> int | None:
    try:
        return int(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        return default


@login_required
@require_GET
@vary_on_headers("HX-Request")
def index(request: HttpRequest) -> HttpResponse:
    data = index_page.index_page(request.user, request.GET)
    hits = None
    if data.filters.q.strip():
        hits = search.hit_page(request.user, data.filters.q, request.GET.get("hits"), request.GET.get("order"))
    context = {"data": data, "hits": hits, "hits_query": _query_without(request, "hits", "order")}
    if request.htmx and request.htmx.target == "results":
        return render(request, "viewer/index.html#results", context)
    return render(request, "viewer/index.html", context)


@login_required
@require_GET
def conversation(request: HttpRequest, pk: int) -> HttpResponse:
    conv, member = permissions.get_conversation_and_membership(request, pk)  # the member: what the page offers
    found = search.in_conversation(request.user, conv.pk, request.GET.get("q"))
    focus = _int(request.GET.get("turn"))
    if focus is None and found and found.steps:
        focus = found.steps[0][1]  # a search opens at its first match
    page = conversation_page.conversation_page(conv, focus_turn=focus)
    can_delete = member.can("delete")  # the danger zone
    can_edit = member.can("edit")  # build and handoff
    summarized = [s.fold for s in page.segments if s.fold is not None and s.fold.summary_text]
    context = {
        "page": page, "conv": conv, "found": found,
        "can_edit": can_edit,
        "panels": panels.conversation_panels(request, conv, can_edit=can_edit),  # cards of the apps above
        "fold_panels": panels.fold_panels(request, summarized),
        # A live conversation's loaded segment polls for what grows (None when not live).
        "live_poll": next((live_poll.poll_state(page, s) for s in page.segments if s.kind == "loaded"), None),
        "can_delete": can_delete,
        "has_subagents": can_delete and conv.children.exists(),  # what deleting also removes
    }
    return render(request, "viewer/conversation.html", context)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def fold_list(request: HttpRequest, pk: int) -> HttpResponse:
    """Older archived segments, one line each (the conversation page lists the newest of them)."""
    conv = get_conversation_for_user(request, pk)

    def context() -> dict:
        older = conversation_page.fold_list(conv, before=_int(request.GET.get("before")))
        return {"conv": conv, "rows": older.rows, "hidden": older.hidden, "before": older.before,
                "folds": conversation_page.segment_folds(conv)}

    return cached_fragment(request, conv, "fold_list", "viewer/_fold_list.html", "viewer/fold_list.html", context)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def segment_body(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """An archived segment listed on one line, unfolded: its summary and its first turns."""
    conv = get_conversation_for_user(request, pk)

    def context() -> dict:
        segment = conversation_page.segment_by_index(conv, index)
        if segment is None or segment.kind != "archived":
            raise Http404("No such archived segment")
        turns_page = conversation_page.turn_page(conv, index, segment.start, segment.end)
        return {"conv": conv, "turns_page": turns_page, "segment": segment, "folds": conversation_page.segment_folds(conv)}

    return cached_fragment(request, conv, f"segment_body:{index}", "viewer/_fold_list.html#segment-body",
                           "viewer/segment.html", context)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def segment_turns(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """One page of turn headers of a segment (unfolding an archived segment, scrolling on)."""
    conv = get_conversation_for_user(request, pk)

    def context() -> dict:
        segment = conversation_page.segment_by_index(conv, index)
        if segment is None:
            raise Http404("No such segment")
        turns_page = conversation_page.turn_page(
            conv, index, segment.start, segment.end, _int(request.GET.get("from")), _int(request.GET.get("to"))
        )
        return {"conv": conv, "turns_page": turns_page, "segment": segment}

    return cached_fragment(request, conv, f"segment_turns:{index}", "viewer/conversation.html#turn-page",
                           "viewer/segment.html", context)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def turn(request: HttpRequest, pk: int, turn: int) -> HttpResponse:
    """The messages and blocks of one turn (expanding a turn header)."""
    conv = get_conversation_for_user(request, pk)

    def context() -> dict:
        view = turn_content.turn_view(conv, turn, from_position=_int(request.GET.get("from")))
        if not view.messages and request.GET.get("from") is None:
            raise Http404("No such turn")
        return {"conv": conv, "turn": view}

    return cached_fragment(request, conv, f"turn:{turn}", "viewer/conversation.html#turn-body",
                           "viewer/turn.html", context)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def block(request: HttpRequest, pk: int, message_id: int, index: int) -> HttpResponse:
    """The whole of a long block (its head and tail were shown)."""
    conv = get_conversation_for_user(request, pk)

    def context() -> dict:
        message = _get_message(conv, message_id)
        view = turn_content.full_block(message, index, with_tool=not request.htmx)  # the page: the tool view as in the turn
        if view is None:
            raise Http404("No such block")
        return {"conv": conv, "b": view, "message": message}

    return cached_fragment(request, conv, f"block:{message_id}:{index}", "viewer/conversation.html#block-content",
                           "viewer/block.html", context)


@login_required
@require_GET
def image(request: HttpRequest, pk: int, message_id: int, index: int) -> HttpResponse:
    """An image carried in a message (base64 in the raw line), served from here, never from afar."""
    conv = get_conversation_for_user(request, pk)
    message = _get_message(conv, message_id, with_raw=True)
    found = turn_content.image_data(message, index)
    if found is None:
        raise Http404("No such image")
    media_type, data = found
    response = HttpResponse(data, content_type=media_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Disposition"] = f'inline; filename="image-{message_id}-{index}"'
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, max-age=3600"
    return response
