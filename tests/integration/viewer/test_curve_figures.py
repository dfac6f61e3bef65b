"""Issue 22, item 2: the curve card says how fast the context grows (tokens per turn over the last
five turns) and how many turns are left before 90 % of the window; the x-axis is labelled with
turns; the legend says what the estimated line is and how far below the measured one it runs.

The session is built so the figures can be worked out by hand: tests.sessions.SessionBuilder starts
at 12,000 tokens and each model call adds 900 (two calls a turn: 1,800 per turn). After turns 0-9
the last call holds 12,000 + 20 x 900 = 30,000 tokens. With the window set to 100,000, 90 % is
90,000: 60,000 to go at 1,800 a turn is 33.3, so 34 turns."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from contextviewer.conversations import page_cache
from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from tests.factories import make_project, make_user
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db


def _conversation(tmp_path, client, turns: int) -> Conversation:
    project = make_project()
    client.force_login(make_user(project=project))
    b = SessionBuilder()
    lines = [line for i in range(turns) for line in b.turn(i)]
    write_lines(tmp_path / "s.jsonl", lines)
    ingest.import_path(project, tmp_path / "s.jsonl")
    conv = Conversation.objects.get(project=project, parent=None)
    conv.window = 100_000
    conv.save(update_fields=["window"])
    page_cache.clear()
    return conv


def test_the_curve_says_its_growth_what_is_left_and_labels_its_axes(tmp_path, client):
    conv = _conversation(tmp_path, client, 10)
    html = client.get(reverse("conversation", args=[conv.pk])).content.decode()
    figures = html.split('id="curve-figures"', 1)[1].split("</p>", 1)[0]
    assert "+1.8k tokens per turn" in figures and "(last 5 turns)" in figures
    assert "about 34 turns until 90 % of the window" in figures
    labels = re.findall(r'<text class="x-label[^"]*" x="[\d.]+" y="[\d.]+">([^<]+)</text>', html)
    assert labels[0] == "turn 0" and labels[-1] == "turn 9" and 3 <= len(labels) <= 6
    legend = html.split('class="legend-line', 1)[1].split("</p>", 1)[0]
    assert "no system prompt or tool definitions" in legend
    assert re.search(r"here about \d+ % of the measured", legend)


def test_a_conversation_past_90_percent_says_so(tmp_path, client):
    conv = _conversation(tmp_path, client, 10)
    conv.window = 32_000  # 90 % is 28,800: the last call (30,000) is past it
    conv.save(update_fields=["window"])
    page_cache.clear()
    html = client.get(reverse("conversation", args=[conv.pk])).content.decode()
    assert "past 90 % of the window" in html.split('id="curve-figures"', 1)[1].split("</p>", 1)[0]
