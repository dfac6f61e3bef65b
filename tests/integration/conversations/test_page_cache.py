"""The conversation page's gauge, curve and spend are kept per conversation version
(conversations/page_cache.py): a model call or a message stored after a first visit shows on the
next one, and a kept page shows the same figures as one computed afresh."""

from __future__ import annotations

import html
import re

import pytest

from contextviewer.conversations import page_cache
from contextviewer.conversations.models import Message, ModelCall
from tests.factories import MODEL, build_conversation

pytestmark = pytest.mark.django_db


def figures(client, conv) -> dict:
    """What a reader sees of the three kept figures: the curve's call count and points, the gauge's
    line and the spend."""
    page = client.get(f"/c/{conv.pk}/")
    assert page.status_code == 200
    text = page.content.decode()
    calls = re.search(r"· (\d+) calls?\b", text)
    points = re.search(r'data-points="([^"]*)"', text)
    gauge = re.search(r'<p class="gauge-figures">(.*?)</p>', text, re.S)
    spend = re.search(r"spend ([^<]*)</span>", text)
    assert calls and points and gauge and spend, text[:2000]
    return {
        "calls": int(calls.group(1)),
        "points": html.unescape(points.group(1)),
        "gauge": " ".join(re.sub(r"<[^>]+>", " ", gauge.group(1)).split()),
        "spend": " ".join(spend.group(1).split()),
    }


def test_a_new_model_call_shows_on_the_next_visit_and_kept_figures_match_fresh_ones(client, user, project):
    page_cache.clear()
    conv = build_conversation(project, turns=6, fold_at=10**9).conversation
    client.force_login(user)
    calls_stored = ModelCall.objects.filter(conversation=conv).count()
    first = figures(client, conv)
    assert first["calls"] == calls_stored
    assert figures(client, conv) == first  # the second visit reads the kept figures

    # A later call (a grown session) with a far larger context than any before it.
    last = Message.objects.filter(conversation=conv).order_by("-position").first()
    ModelCall.objects.create(
        conversation=conv, message=last, position=last.position, api_message_id="msg_late", model=MODEL,
        input_uncached=3, cache_write=1_000, cache_read=150_000, output=500,
    )
    after = figures(client, conv)
    assert after["calls"] == calls_stored + 1
    assert after["gauge"] != first["gauge"]  # the gauge is at the latest call now
    assert after["points"] != first["points"]

    page_cache.clear()  # computed afresh: the same figures
    assert figures(client, conv) == after
