"""The build preview lists each selected turn by its first message: its text or, with none, what
that message did (issue 22, item 3: no "(no text)" rows). Real sessions read through
CONTEXTVIEWER_FIXTURES."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from contextviewer.conversations.models import Conversation, Message
from contextviewer.ingest import files as ingest

pytestmark = pytest.mark.django_db


def _lines(client: Client, conv: Conversation) -> list[str]:
    turns = sorted(set(Message.objects.filter(conversation=conv).values_list("turn", flat=True)))[:40]
    page = client.get(f"/c/{conv.pk}/build/preview/", {"turns": [str(t) for t in turns]}).content.decode()
    assert 'role="alert"' not in page, page
    return [html.unescape(re.sub(r"<[^>]+>", "", li)).strip() for li in re.findall(r'<li value="\d+">(.*?)</li>', page, re.S)]


def _imported(project, path) -> list[Conversation]:
    report = ingest.import_path(project, path)
    return list(Conversation.objects.filter(pk__in=report.conversation_ids, kind="main"))


def test_turns_without_text_say_what_their_first_message_did(project, user, fixtures_dir):
    client = Client()
    client.force_login(user)
    # Claude Code: a session that opens with a system record (session_start).
    (cc,) = _imported(project, fixtures_dir / "claude-code" / "jazzyalex__agent-sessions__0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl")
    assert _lines(client, cc)[0] == "a system message (session_start), no text"
    # Codex: a turn that opens with an event record says which event and what it said.
    (codex,) = _imported(project, fixtures_dir / "codex" / "jazzyalex__agent-sessions__codex_050_legacy.jsonl")
    assert _lines(client, codex)[0].startswith("event_msg/turn.completed")
    # OpenHands: every turn of every fixture has a line, none of them "(no text)".
    for conv in _imported(project, fixtures_dir / "openhands"):
        lines = _lines(client, conv)
        assert lines and all(lines), (conv.external_id, lines)
        assert not any("(no text)" in line for line in lines), lines
