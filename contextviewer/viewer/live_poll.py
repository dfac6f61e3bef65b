"""The poll element of a live conversation's page (_live_poll.html): what the page has, which the
next poll tells the server (live.py answers it). Prepared by the views, not by a template tag."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db.models import Max
from django.urls import reverse

from contextviewer.viewer import conversation_page
from contextviewer.conversations.models import Conversation, Message, Source

# While live the server holds each request until something is new (live.HOLD_SECONDS at most): the
# element asks again this soon after an answer (htmx drops a trigger while a request is out).
POLL_EVERY = "250ms"
# A page whose conversation stopped being live keeps asking, slowly: a file that grows again (the
# agent resumed the session) makes it live again, and the page follows it again.
DORMANT_EVERY = "20s"


@dataclass
class PollState:
    """What the page has, as the next poll tells it to the server."""

    conversation_id: int
    pos: int  # the last position the server sent
    turn: int | None  # the last turn header shown
    append: bool  # the page shows the loaded segment up to its end (no "more turns" left to load)
    folds: int
    dormant: bool = False  # not live now: asks every DORMANT_EVERY whether it is again

    @property
    def url(self) -> str:
        return reverse("conversation_live", args=[self.conversation_id])

    @property
    def vals(self) -> str:
        values = {"pos": self.pos, "append": int(self.append), "folds": self.folds}
        if self.turn is not None:
            values["turn"] = self.turn
        if self.dormant:
            values["dormant"] = 1
        else:
            values["hold"] = 1
        return json.dumps(values)

    @property
    def every(self) -> str:
        return DORMANT_EVERY if self.dormant else POLL_EVERY

    @property
    def every_text(self) -> str:
        return self.every.replace("s", " s")


def last_position(conv: Conversation) -> int:
    found = Message.objects.filter(conversation=conv).aggregate(hi=Max("position"))["hi"]
    return -1 if found is None else found


def may_grow(conv: Conversation) -> bool:
    """Whether the session's file can grow again: it was live once, or it is read from a file on
    disk (a watcher may be looking at it). An upload or a build never grows."""
    if conv.live_until is not None:
        return True
    path = Source.objects.filter(pk=conv.source_id).values_list("path", flat=True).first() if conv.source_id else None
    return bool(path) and not path.startswith("upload:")


def poll_state(page: conversation_page.ConversationPage, segment: conversation_page.SegmentView) -> PollState | None:
    """The poll of a page showing ``segment`` (the loaded one): every POLL_EVERY while the
    conversation is live; every DORMANT_EVERY while it is idle but its file may grow again (a page
    opened between two turns of the agent follows it when it goes on); None when it cannot grow."""
    conv = page.conversation
    live = conv.is_live
    if not live and not may_grow(conv):
        return None
    turns_page = segment.turns
    shown = turns_page.turns[-1].turn if turns_page and turns_page.turns else None
    return PollState(
        conversation_id=conv.pk,
        pos=last_position(conv),
        turn=shown,
        append=turns_page is not None and turns_page.later_from is None,
        folds=len(page.folds),
        dormant=not live,
    )
