"""Issue 22, item 3: Claude Code writes one response as several records (one line per content
block, the same message id, the first often a bare "\\n\\n" text): the turn shows them as one
assistant message with all its blocks, not as empty "ASSISTANT · 1 tok" rows; every record keeps
its anchor (search and links jump to it)."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from contextviewer.conversations.models import Conversation, Message
from contextviewer.ingest import files as ingest
from tests.factories import make_project, make_user
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db


def test_the_records_of_one_response_show_as_one_message(tmp_path, client):
    b = SessionBuilder()
    lines = [b.user("Run the tests and read the config")]
    # One response: "\n\n", a text, then two tool calls, each its own line (as Claude Code writes it).
    reply = b.assistant("I will run them.", tool=("Bash", {"command": "pytest -q"}))
    first = json.loads(reply[0])
    blank = dict(first, uuid=first["uuid"][:-4] + "beef", message=dict(first["message"], content=[{"type": "text", "text": "\n\n"}]))
    blank["parentUuid"], first["parentUuid"] = first["parentUuid"], blank["uuid"]
    lines += [json.dumps(blank), json.dumps(first), reply[1], b.tool_result("3 passed")]
    lines += b.assistant("All three pass.")
    project = make_project()
    client.force_login(make_user(project=project))
    write_lines(tmp_path / "s.jsonl", lines)
    ingest.import_path(project, tmp_path / "s.jsonl")
    conv = Conversation.objects.get(project=project, parent=None)
    response = list(Message.objects.filter(conversation=conv, api_message_id="msg_000001").order_by("position"))
    assert len(response) == 3  # three records stored, as the log has them

    html = client.get(reverse("turn", args=[conv.pk, 0]), HTTP_HX_REQUEST="true").content.decode()
    views = re.findall(r'<div class="message role-(\w+)[^"]*" id="m-(\d+)"', html)
    assert [role for role, _ in views] == ["user", "assistant", "assistant"]  # was user + 3 + 1 rows
    one = html.split(f'id="m-{response[0].id}"', 1)[1].split('<div class="message role-', 1)[0]
    assert "I will run them." in one and "pytest -q" in one and "3 passed" in one
    assert "(3 records)" in one
    for record in response[1:]:
        assert f'id="m-{record.id}"' in one  # each record's anchor is still on the page
    assert "nothing to show" not in html


def test_a_turn_without_text_says_what_it_did(tmp_path, client):
    """Issue 22, item 3: a turn whose first message has no text says what the turn did."""
    b = SessionBuilder()
    lines = [b.user("Start")]
    lines += b.assistant("Working.")
    first = json.loads(lines[-1])
    first["message"]["content"] = [{"type": "tool_use", "id": "toolu_x", "name": "Bash", "input": {"command": "ls"}}]
    lines[-1] = json.dumps(first)
    lines.append(b.tool_result("a.py"))
    project = make_project()
    client.force_login(make_user(project=project))
    write_lines(tmp_path / "s.jsonl", lines)
    ingest.import_path(project, tmp_path / "s.jsonl")
    conv = Conversation.objects.get(project=project, parent=None)
    Message.objects.filter(conversation=conv, role="user", position=0).update(blocks=[])  # a first message with no text
    html = client.get(reverse("conversation", args=[conv.pk])).content.decode()
    assert "(no text)" not in html
    assert re.search(r'class="turn-first"[^>]*><span class="muted">1 tool call, no text</span>', html)
