"""Gemini CLI chats and message arrays through the ingest service: the fixture folders import
with the counts a person counts by reading them, re-importing adds nothing, the conversation page
renders, and the Markdown/OpenAI/Anthropic exports keep every tool call.

Expected numbers are computed here with plain ``json``, independently of the importers."""

import json
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from contextviewer.builds import services as builds
from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation, Message, ModelCall
from tests.importers import gemini_counts

pytestmark = pytest.mark.django_db


def _messages_counts(path: Path) -> tuple[int, int, int]:
    items = json.loads(path.read_text(encoding="utf-8"))
    usage = sum(1 for x in items if isinstance(x.get("kwargs", {}).get("usage_metadata"), dict))
    calls = {c["id"] for x in items for c in x.get("kwargs", {}).get("tool_calls", [])}
    return len(items), usage, len(calls)


FOLDERS = [("gemini-cli", "gemini", gemini_counts), ("langchain-messages", "messages", _messages_counts)]


def _tool_calls_in_exports(conv: Conversation) -> dict[str, list[str]]:
    out = {}
    md = builds.export(conv, "markdown").content
    out["markdown"] = md.count("Tool call `")
    doc = json.loads(builds.export(conv, "openai").content)
    out["openai"] = [c["id"] for m in doc["messages"] for c in m.get("tool_calls", [])]
    results = [m["tool_call_id"] for m in doc["messages"] if m["role"] == "tool"]
    assert results == out["openai"], "every OpenAI tool call is answered, in order"
    doc = json.loads(builds.export(conv, "anthropic").content)
    out["anthropic"] = [b["id"] for m in doc["messages"] for b in m["content"] if b["type"] == "tool_use"]
    answered = [b["tool_use_id"] for m in doc["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert answered == out["anthropic"]
    return out


@pytest.mark.fixtures
@pytest.mark.parametrize(("folder", "agent", "count"), FOLDERS, ids=[f[0] for f in FOLDERS])
def test_a_fixture_folder_imports_renders_and_exports_every_tool_call(project, user, fixtures_dir, folder, agent, count):
    files = sorted(p for p in (fixtures_dir / folder).iterdir() if p.is_file())
    expected = {p.name: count(p) for p in files}
    report = ingest.import_path(project, fixtures_dir / folder)
    assert not report.refused and not report.errors, report.errors
    conversations = Conversation.objects.filter(project=project)
    assert conversations.count() == len(files)
    assert set(conversations.values_list("agent", flat=True)) == {agent}

    client = Client()
    client.force_login(user)
    for conv in conversations:
        name = conv.source.name
        messages, calls, tool_calls = expected[name]
        assert conv.messages.count() == messages, name
        assert conv.model_calls.count() == calls, name
        assert conv.tool_call_count == tool_calls, name
        page = client.get(reverse("conversation", args=[conv.pk]))  # /c/<id>/
        assert page.status_code == 200, name
        exported = _tool_calls_in_exports(conv)
        stored = [b["tool_id"] for m in conv.messages.order_by("position") for b in m.blocks if b["kind"] == "tool_call"]
        assert exported["markdown"] == tool_calls, name
        assert exported["openai"] == stored and exported["anthropic"] == stored, name

    before = (Message.objects.count(), ModelCall.objects.count())
    again = ingest.import_path(project, fixtures_dir / folder)
    assert not again.errors
    assert (Message.objects.count(), ModelCall.objects.count()) == before
    assert Conversation.objects.filter(project=project).count() == len(files)


def test_a_rewritten_gemini_chat_imported_again_adds_only_what_is_new(project, tmp_path):
    """Synthetic (runs without ../shared): a JSONL chat that grows, with a rewind in between."""
    chats = tmp_path / "chats"
    chats.mkdir()
    path = chats / "session-2026-04-29T21-39-abcd1234.jsonl"
    head = [
        {"sessionId": "gem-grow", "projectHash": "h", "startTime": "2026-04-29T21:39:22Z"},
        {"id": "u1", "timestamp": "2026-04-29T21:39:30Z", "type": "user", "content": "list files"},
        {"id": "g1", "timestamp": "2026-04-29T21:39:31Z", "type": "gemini", "content": "", "model": "gemini-3-flash",
         "tokens": {"input": 100, "output": 5, "cached": 40, "thoughts": 2, "total": 107},
         "toolCalls": [{"id": "t1", "name": "ls", "args": {}, "status": "success",
                        "result": [{"functionResponse": {"id": "t1", "name": "ls", "response": {"output": "a b"}}}]}]},
    ]
    path.write_text("".join(json.dumps(o) + "\n" for o in head))
    first = ingest.import_path(project, tmp_path)
    conv = Conversation.objects.get(project=project, agent="gemini")
    assert conv.external_id == "gem-grow" and first.errors == []
    assert list(conv.messages.order_by("position").values_list("role", flat=True)) == ["user", "assistant", "tool"]
    call = conv.model_calls.get()
    assert (call.input_uncached, call.cache_read, call.output) == (60, 40, 7)

    tail = [
        {"id": "u2", "timestamp": "2026-04-29T21:40:00Z", "type": "user", "content": "and hidden ones"},
        {"$rewindTo": "u2"},
        {"id": "u3", "timestamp": "2026-04-29T21:40:10Z", "type": "user", "content": "never mind"},
    ]
    with path.open("a") as fh:
        fh.write("".join(json.dumps(o) + "\n" for o in tail))
    ingest.import_path(project, tmp_path)
    conv.refresh_from_db()
    rows = list(conv.messages.order_by("position").values_list("uuid", "flags"))
    assert [u for u, _ in rows] == ["u1", "g1", "g1/tool/t1", "u2", "u3"]
    assert rows[3][1].get("rewound") is True and not rows[4][1].get("rewound")
    assert conv.model_calls.count() == 1
