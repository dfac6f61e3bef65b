"""Live conversations: the page of a conversation whose file is still growing follows it.

The watcher (watch.py) marks the conversations of a growing file live (``Conversation.live_until``).
Their page carries a poll element (``_live_poll.html``) whose request this view holds while the
conversation is live and nothing is new (up to HOLD_SECONDS; the import's commit wakes it through
conversations/changes.py, so a new line is on the page as soon as it is imported; the element asks
again 250 ms after each answer). It asks for what came after what the page has: new turn headers (swapped in where the poll element is,
with the next poll element after them), the grown last turn's figures and messages, and the gauge
and curve (out-of-band swaps of the page's own partials). live.js adds what only the browser knows
to each poll: the last turn the page shows, whether the page shows the segment up to its end, and
the last message position of the last turn when that turn is open. A page that showed nothing
after the latest fold names no turn: it is sent the loaded segment's turns from its start.

Nothing changed: 204 (htmx keeps polling). No longer live: the poll element is swapped for a
dormant one (every 20 s, live_poll.DORMANT_EVERY), which gets 204 until the file grows again; then
the page is sent what came and follows the session again at the live pace. A page opened while
its conversation is idle starts with the dormant poll (live_poll.poll_state) when its file may grow.
The header's counts, the bar, the gauge, the curve, the loaded segment's turn range and the "Last
turn" link come with every answer that has something new, so they never tell different figures.
"""

from __future__ import annotations


from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from contextviewer.conversations import changes
from contextviewer.viewer import conversation_page, turn_content
from contextviewer.viewer.live_poll import PollState, last_position
from contextviewer.accounts.permissions import get_conversation_for_user
from contextviewer.viewer.views import _int

# How long a live page's request is held while nothing is new (then 204, and the page asks again).
HOLD_SECONDS = 20.0


@login_required
@require_GET
def conversation_live(request: HttpRequest, pk: int) -> HttpResponse:
    """What a live conversation's open page does not have yet (same access as the page)."""
    conv = get_conversation_for_user(request, pk)
    live = conv.is_live
    pos = _int(request.GET.get("pos"), -1)
    dormant = request.GET.get("dormant") == "1"
    since = changes.stamp(conv.pk)
    hi = last_position(conv)
    if hi == pos and live and not dormant and request.GET.get("hold") == "1":
        # A held request: answered as soon as an import commits something new (changes.signal).
        changes.wait(conv.pk, HOLD_SECONDS, lambda: last_position(conv) != pos, since=since)
        hi = last_position(conv)
    if hi != pos:
        # The row read after the messages: its counts and figures at least as new as what is sent
        # (an import that committed between the two reads is sent again by the next answer).
        conv.refresh_from_db()
        live = conv.is_live
    if hi == pos:
        if live or dormant:
            return HttpResponse(status=204)
        # No longer live: the badge goes, the poll slows down (it wakes when the file grows again).
        return render(request, "viewer/live.html", {"conv": conv, "live": False, "poll": _dormant(request, pos)})

    turn = _int(request.GET.get("turn"))
    append = request.GET.get("append") == "1"
    open_pos = _int(request.GET.get("open_pos"))
    page = conversation_page.conversation_page(conv)
    loaded = next((s for s in reversed(page.segments) if s.kind == "loaded"), None)
    turns_page = grown = grown_body = None
    if loaded is not None and turn is None and loaded.end >= loaded.start:
        # The page showed nothing after the latest fold (no turn to name): what came, from the start.
        found = conversation_page.turn_page(conv, loaded.index, loaded.start, loaded.end)
        if found.turns:
            found.earlier_from = found.later_from = None
            turns_page, append = found, True
    if loaded is not None and turn is not None:
        if append:
            found = conversation_page.turn_page(conv, loaded.index, loaded.start, loaded.end, from_turn=turn + 1)
            if found.turns:
                # The rest (past one page) comes with the next poll, after these.
                found.earlier_from = found.later_from = None
                turns_page = found
        same = conversation_page.turn_page(conv, loaded.index, loaded.start, loaded.end, from_turn=turn, to_turn=turn).turns
        grown = same[0] if same else None
        if grown is not None and open_pos is not None:
            body = turn_content.turn_view(conv, turn, from_position=open_pos + 1)
            grown_body = body if body.messages else None
    shown = turns_page.turns[-1].turn if turns_page else turn
    poll = PollState(conv.pk, hi, shown, append, len(page.folds))
    context = {
        "conv": conv,
        "page": page,
        "live": live,
        "loaded": loaded,
        "turns_page": turns_page,
        "grown": grown,
        "grown_body": grown_body,
        "poll": poll if live else PollState(conv.pk, hi, shown, append, len(page.folds), dormant=True),
        "fold_notice": len(page.folds) != _int(request.GET.get("folds"), len(page.folds)),
    }
    return render(request, "viewer/live.html", context)


def _dormant(request: HttpRequest, pos: int) -> PollState:
    """The slow poll of a page whose conversation is not live now, with what the page has."""
    return PollState(
        _int(request.resolver_match.kwargs.get("pk")) or 0, pos, _int(request.GET.get("turn")),
        request.GET.get("append") == "1", _int(request.GET.get("folds")) or 0, dormant=True,
    )
