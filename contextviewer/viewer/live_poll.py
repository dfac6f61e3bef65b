"""The poll element of a live conversation's page (_live_poll.html): what the page has, which the
next poll tells the server (live.py answers it). Prepared by the views, not by a template tag."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db.models import Max
from django.urls import reverse

from contextviewer.viewer import conversation_page
from contextviewer.conversations.models import Conversation, Message

POLL_EVERY = "2s"
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
        return json.dumps(values)

    @property
    def every(self) -> str:
        return DORMANT_EVERY if self.dormant else POLL_EVERY


def last_position(conv: Conversation) -> int:
    found = Message.objects.filter(conversation=conv).aggregate(hi=Max("position"))["hi"]
    return -1 if found is None else found


def poll_state(page: conversation_page.ConversationPage, segment: conversation_page.SegmentView) -> PollState | None:
    """The poll of a page showing ``segment`` (the loaded one), or None when it is not live."""
    conv = page.conversation
    if not conv.is_live:
        return None
    turns_page = segment.turns
    shown = turns_page.turns[-1].turn if turns_page and turns_page.turns else None
    return PollState(
        conversation_id=conv.pk,
        pos=last_position(conv),
        turn=shown,
        append=turns_page is not None and turns_page.later_from is None,
        folds=len(page.folds),
    )
