"""Export responses build their headers only from safe tokens: control characters in a tool name,
the conversation's title or its external id never answer 500 (Django's BadHeaderError) and never
reach a header or the file name (issue 21), through the page link and the API."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from contextviewer.builds.api import content_disposition, header_value
from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest

CONTROLS = "\n\r\x00\x7f\t"
NASTY = f"a{CONTROLS}b é\u2028c"
UNSAFE_IN_HEADER = re.compile(r"[\x00-\x1f\x7f-\uffff]")


def _session(tool: str, title: str, session_id: str) -> str:
    base = {"sessionId": session_id, "cwd": "/w", "version": "2.1.0", "timestamp": "2026-01-01T00:00:00.000Z"}
    lines = [
        {**base, "type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "run it"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "requestId": "req_1",
         "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": {"x": 1}}],
                     "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}},
        {**base, "type": "user", "uuid": "u2", "parentUuid": "a1",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}},
        # a tool call without its result: the export notes name the tool
        {**base, "type": "assistant", "uuid": "a2", "parentUuid": "u2", "requestId": "req_2",
         "message": {"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "tool_use", "id": "toolu_2", "name": tool, "input": {}}],
                     "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 5}}},
        {"type": "custom-title", "customTitle": title, "sessionId": session_id},
    ]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


@pytest.fixture
def conv(project, tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(_session(f"Bash{CONTROLS}x", f"Title{CONTROLS}é", f"sess{CONTROLS}1"), encoding="utf-8")
    report = ingest.import_file(project, path)
    conv = Conversation.objects.get(pk=report.conversation_ids[0])
    assert any(c in conv.external_id for c in CONTROLS) or any(c in conv.title for c in CONTROLS)
    return conv


def _check(response) -> None:
    assert response.status_code == 200, response.content[:500]
    for name, value in response.headers.items():
        assert not UNSAFE_IN_HEADER.search(name + value), (name, value)
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith("attachment; filename=")


@pytest.mark.parametrize("fmt", ["claude-code", "markdown", "anthropic", "openai"])
def test_exports_with_control_characters_in_names_answer_200_with_safe_headers(conv, user, fmt):
    client = Client()
    client.force_login(user)
    _check(client.get(f"/c/{conv.pk}/export/{fmt}/"))
    _check(client.get(f"/api/conversations/{conv.pk}/export", {"format": fmt}))


def test_the_claude_code_export_notes_name_the_tool_without_its_control_characters(conv, user):
    client = Client()
    client.force_login(user)
    response = client.get(f"/api/conversations/{conv.pk}/export", {"format": "claude-code"})
    _check(response)
    notes = response.headers.get("X-Export-Notes", "")
    assert notes and "Bash" in notes


def test_header_values_and_file_names_keep_only_printable_ascii():
    assert header_value(NASTY) == "a%0A%0D%00%7F%09b %C3%A9%E2%80%A8c"
    plain = content_disposition("conversation-12.md")
    assert plain == 'attachment; filename="conversation-12.md"'
    odd = content_disposition(f'x"{CONTROLS}é;\\.md')
    assert not UNSAFE_IN_HEADER.search(odd)
    assert "filename*=UTF-8''x%22%0A%0D%00%7F%09%C3%A9%3B%5C.md" in odd
    ascii_part = odd.split(";")[1]
    assert '"' not in ascii_part.split("=", 1)[1].strip('"')
