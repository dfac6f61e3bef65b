"""A lone surrogate in a log (a "\\ud800" escape without its other half, here in a Codex function
call's name) is exported as U+FFFD: the Codex rollout, the page's link, the API and the export of
a conversation built from it answer 200 with well-formed UTF-8, not a 500 (issue 40, item 4)."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client

from contextviewer.builds import services as builds
from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import JobStatus

pytestmark = pytest.mark.django_db

SID = "0199aaaa-0000-7000-8000-0000000000d1"
NAME = "shell_\ud800x"  # a lone high surrogate


def _codex_with_a_surrogate(project, tmp_path) -> Conversation:
    rows = [
        {"timestamp": "2025-11-05T09:00:00.000Z", "type": "session_meta",
         "payload": {"id": SID, "timestamp": "2025-11-05T09:00:00.000Z", "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.50.0"}},
        {"timestamp": "2025-11-05T09:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the files \udc00 here."}]}},
        {"timestamp": "2025-11-05T09:00:02.000Z", "type": "response_item",
         "payload": {"type": "function_call", "name": NAME, "arguments": json.dumps({"command": ["ls"]}), "call_id": "call_1"}},
        {"timestamp": "2025-11-05T09:00:03.000Z", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "call_1", "output": "a.py\nb.py"}},
        {"timestamp": "2025-11-05T09:00:05.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Two files."}]}},
    ]
    path = tmp_path / f"rollout-2025-11-05T09-00-00-{SID}.jsonl"
    # json.dumps escapes the surrogate ("\ud800"): the file is valid UTF-8, as a real log is.
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ingest.import_path(project, path)
    conv = Conversation.objects.get(project=project, agent="codex")
    if connection.vendor != "sqlite":  # PostgreSQL's jsonb cannot hold one: what the importer stored stands
        return conv
    # Whatever the importer makes of the name, the stored call holds the surrogate (as older imports did).
    planted = 0
    for message in conv.messages.all():
        blocks = [dict(b, tool_name=NAME) if b.get("kind") == "tool_call" else b for b in message.blocks or []]
        if blocks != message.blocks:
            type(message).objects.filter(pk=message.pk).update(blocks=blocks)
            planted += 1
    assert planted == 1, "the stored call's name holds the surrogate"
    return conv


def _well_formed(body: bytes) -> str:
    text = body.decode("utf-8")  # strict: no surrogate escapes
    assert "\ufffd" in text, "the bad character is marked, not dropped"
    return text


def test_a_codex_export_with_a_lone_surrogate_is_served_on_the_page_the_api_and_a_builds_export(project, user, tmp_path):
    conv = _codex_with_a_surrogate(project, tmp_path)
    client = Client()
    client.force_login(user)

    page = client.get(f"/c/{conv.pk}/export/codex/", {"view": "full"})
    assert page.status_code == 200, page.content[:300]
    lines = [json.loads(line) for line in _well_formed(page.content).splitlines()]
    names = [line["payload"].get("name") for line in lines if line["payload"].get("type") == "function_call"]
    assert names == ["shell_\ufffdx"]

    api = client.get(f"/api/conversations/{conv.pk}/export", {"format": "codex", "view": "full"})
    assert api.status_code == 200 and _well_formed(api.content)
    for fmt in ("openai", "anthropic", "markdown"):
        other = client.get(f"/api/conversations/{conv.pk}/export", {"format": fmt, "view": "full"})
        assert other.status_code == 200, (fmt, other.content[:300])
        other.content.decode("utf-8")

    job = builds.start_build(conv, "0", "", user=user, enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    built = Conversation.objects.get(pk=done.result["conversation_id"])
    exported = client.get(f"/c/{built.pk}/export/codex/", {"view": "full"})
    assert exported.status_code == 200, exported.content[:300]
    _well_formed(exported.content)
