"""A record the log keeps with no text (Codex's `event_msg/turn.completed` of the 0.51 usage fixture,
`event_msg/error` of the rate-limit one) is one labelled line in its turn, "a record with no
text; its raw line is kept", not a labelled empty box (issue 22, item 3). Checked by hand: the three
fixtures below hold `{"kind": "other", "raw_type": ...}` blocks with no `text` key after import (71
such blocks across the Codex fixtures)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from contextviewer.conversations.models import Conversation, Message
from contextviewer.ingest import files as ingest

pytestmark = pytest.mark.django_db

FIXTURES = ("jazzyalex__agent-sessions__codex_051_usage.jsonl", "jazzyalex__agent-sessions__codex_053_rate_limit.jsonl")


@pytest.mark.parametrize("name", FIXTURES)
def test_a_record_without_text_is_one_labelled_line(project, user, fixtures_dir, name):
    report = ingest.import_path(project, fixtures_dir / "codex" / name)
    conv = Conversation.objects.get(pk__in=report.conversation_ids, kind="main")
    empty = [(m, i, b) for m in Message.objects.filter(conversation=conv).order_by("position")
             for i, b in enumerate(m.blocks or []) if b.get("kind") == "other" and not (b.get("text") or "").strip()]
    assert empty, "the fixture no longer has a record without text"
    message, index, block = empty[0]
    client = Client()
    client.force_login(user)
    page = client.get(f"/c/{conv.pk}/turns/{message.turn}/", HTTP_HX_REQUEST="true").content.decode()
    element = re.search(rf'<div class="block block-other[^"]*" id="b-{message.pk}-{index}">(.*?)</div>', page, re.S)
    assert element, page[:2000]
    assert block["raw_type"] in element.group(1)
    assert "a record with no text; its raw line is kept" in element.group(1)
    assert "<pre" not in element.group(1)  # no empty box
