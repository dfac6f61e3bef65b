"""aider histories and opencode stores through ingest: conversations, model calls, folds and
sub-agents as stored, re-imports that add nothing, the conversation page, and exports that keep
every tool call."""

import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from contextviewer.builds import services as builds
from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation, ConversationKind, Message, ModelCall
from tests.unit.test_opencode_importer import write_database, write_storage

pytestmark = pytest.mark.django_db

AIDER = "aider/Aider-AI__aider__chat-history.md"
OPENCODE_STORES = ["jazzyalex__agent-sessions__storage_legacy", "jazzyalex__agent-sessions__storage_v2"]


def _exports_keep_every_tool_call(conv: Conversation) -> None:
    calls = [
        b for blocks in Message.objects.filter(conversation=conv).values_list("blocks", flat=True)
        for b in blocks if b.get("kind") == "tool_call"
    ]
    markdown = builds.export(conv, "markdown", view="full").content
    openai = json.loads(builds.export(conv, "openai", view="full").content)
    anthropic = json.loads(builds.export(conv, "anthropic", view="full").content)
    openai_calls = [c for m in openai["messages"] for c in m.get("tool_calls") or []]
    anthropic_calls = [
        b for m in anthropic["messages"] if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_use"
    ]
    assert len(openai_calls) == len(anthropic_calls) == len(calls), conv.external_id
    assert markdown.count("Tool call `") == len(calls)
    for call in calls:
        assert f"Tool call `{call['tool_name']}`" in markdown


def _page(client, user, conv) -> None:
    client.force_login(user)
    response = client.get(reverse("conversation", args=[conv.id]))
    assert response.status_code == 200


def test_the_aider_history_imports_a_conversation_per_session(project, user, client, fixtures_dir):
    path = fixtures_dir / AIDER
    text = path.read_text("utf-8")
    headers = len(re.findall(r"^# aider chat started at ", text, re.M))
    tokens_lines = len(re.findall(r"^> Tokens: ", text, re.M))
    preamble = 1 if text.split("# aider chat started at ", 1)[0].strip() else 0

    report = ingest.import_path(project, path)
    assert [f.status for f in report.files] == ["imported"] and report.files[0].agent == "aider"
    convs = Conversation.objects.filter(project=project, agent="aider")
    assert convs.count() == headers + preamble == 1134
    assert ModelCall.objects.filter(conversation__agent="aider").count() == tokens_lines == 839
    messages = Message.objects.filter(conversation__agent="aider").count()

    again = ingest.import_path(project, path)
    assert [f.status for f in again.files] == ["unchanged"]
    assert Message.objects.filter(conversation__agent="aider").count() == messages

    # the busiest session: its page renders and its exports take every message along
    conv = max(convs, key=lambda c: c.model_call_count)
    assert conv.model_call_count > 10 and conv.title
    _page(client, user, conv)
    _exports_keep_every_tool_call(conv)  # aider logs no tool calls: none are made up either
    markdown = builds.export(conv, "markdown", view="full").content
    first_user = conv.messages.filter(role="user").order_by("position").first()
    assert first_user.blocks[0]["text"].split("\n")[0] in markdown


def test_a_grown_aider_history_adds_only_the_new_messages(project, tmp_path):
    from tests.unit.test_aider_importer import HISTORY

    path = tmp_path / ".aider.chat.history.md"
    cut = HISTORY.index("> Applied edit")
    path.write_text(HISTORY[:cut])
    ingest.import_path(project, path)
    first = Conversation.objects.get(project=project, external_id=".aider.chat.history@2024-08-20 09:34:31")
    assert first.message_count == 8 and first.model_call_count == 1
    path.write_text(HISTORY)
    ingest.import_path(project, path)
    first.refresh_from_db()
    assert first.message_count == 8 + 5  # the same conversation goes on
    assert Conversation.objects.filter(project=project, agent="aider").count() == 2
    assert ModelCall.objects.filter(conversation__project=project).count() == 3


@pytest.mark.parametrize("name", OPENCODE_STORES)
def test_an_opencode_fixture_store_imports(project, user, client, fixtures_dir, name):
    root = fixtures_dir / "opencode" / name
    sessions = len(list((root / "session").rglob("*.json")))
    parts = [json.loads(p.read_text()) for p in (root / "part").rglob("*.json")]
    tool_parts = sum(1 for p in parts if p.get("type") == "tool")
    steps = sum(1 for p in parts if p.get("type") == "step-finish" and any((p.get("tokens") or {}).values()))

    report = ingest.import_path(project, root)
    assert [(f.status, f.agent) for f in report.files] == [("imported", "opencode")]
    convs = Conversation.objects.filter(project=project, agent="opencode")
    assert convs.count() == sessions
    assert ModelCall.objects.filter(conversation__in=convs).count() == steps
    count = Message.objects.filter(conversation__in=convs).count()
    again = ingest.import_path(project, root)
    assert [f.status for f in again.files] == ["unchanged"]
    assert Message.objects.filter(conversation__in=convs).count() == count
    assert sum(c.tool_call_count for c in convs) == tool_parts
    for conv in convs:
        _page(client, user, conv)
        _exports_keep_every_tool_call(conv)


def test_the_opencode_fixture_folder_imports_both_stores(project, fixtures_dir):
    report = ingest.import_path(project, fixtures_dir / "opencode")
    assert sorted(Path(f.path).name for f in report.files) == OPENCODE_STORES
    assert Conversation.objects.filter(project=project, agent="opencode").count() == 3


def test_an_opencode_store_with_a_sub_agent_and_a_fold(project, user, client, tmp_path):
    storage = write_storage(tmp_path / "storage")
    report = ingest.import_path(project, storage)
    assert not report.errors
    top = Conversation.objects.get(project=project, agent="opencode", external_id="ses_001")
    child = Conversation.objects.get(project=project, agent="opencode", external_id="ses_001/ses_002")
    assert child.parent_id == top.id and child.kind == ConversationKind.SUBAGENT
    assert child.parent_tool_use_id == "call_task" and child.agent_type == "explore"
    # two steps of msg_002; msg_004, the summary the compaction wrote, is the fold's cost, not a call
    assert (top.model_call_count, child.model_call_count, top.fold_count) == (2, 1, 1)
    fold = top.folds.get()
    assert fold.summary_message.uuid == "msg_004"
    assert (fold.cost["calls"], fold.cost["input_uncached"], fold.cost["output"]) == (1, 5, 200)
    assert fold.tokens_before == 50 + 13_000  # the last call's measured input: opencode records none
    assert top.title == "Fix the parser" and top.cwd == "/work/app"
    _page(client, user, top)
    _page(client, user, child)
    _exports_keep_every_tool_call(top)

    # the same sessions from opencode.db (newer opencode) land in the same conversations
    db = write_database(tmp_path / "opencode.db")
    before = Message.objects.filter(conversation__project=project).count()
    report = ingest.import_path(project, db)
    assert [(f.status, f.agent) for f in report.files] == [("imported", "opencode")]
    assert Message.objects.filter(conversation__project=project).count() == before
    assert Conversation.objects.filter(project=project, agent="opencode").count() == 2
