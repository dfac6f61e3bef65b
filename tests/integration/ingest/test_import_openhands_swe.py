"""OpenHands and SWE-agent sessions through ingest: the fixture folders and a v1 conversation folder
import as conversations of their agent, with the counts a person would count, re-importing adds
nothing, the conversation page renders for its owner, and the exports keep the tool calls."""

import json
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from contextviewer.builds import services as builds
from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation, ModelCall
from contextviewer.importers import formats
from tests.unit.test_openhands_importer import count_independently as count_openhands
from tests.unit.test_openhands_importer import write_v1
from tests.unit.test_swe_agent_importer import count_independently as count_swe_agent

pytestmark = pytest.mark.django_db


def added(report) -> int:
    return sum(f.added_messages for f in report.files)


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _tool_calls(conv: Conversation) -> list[dict]:
    return [b for m in conv.messages.order_by("position") for b in m.blocks if b.get("kind") == "tool_call"]


def _answered(conv: Conversation) -> list[dict]:
    """The tool calls whose result is in the conversation (what an API export can carry)."""
    answered = {b.get("tool_id") for m in conv.messages.all() for b in m.blocks if b.get("kind") == "tool_result"}
    return [b for b in _tool_calls(conv) if b.get("tool_id") in answered]


def check_exports(conv: Conversation) -> None:
    """Every tool call of these logs has its result, and every export keeps every one."""
    calls = _tool_calls(conv)
    answered = _answered(conv)
    assert answered == calls
    md = builds.export(conv, "markdown", view="full")
    assert md.content.count("Tool call `") == len(answered)
    for b in answered:
        assert f"Tool call `{b['tool_name']}`" in md.content
    openai_doc = json.loads(builds.export(conv, "openai", view="full").content)
    openai_calls = [c for m in openai_doc["messages"] for c in m.get("tool_calls") or []]
    assert len(openai_calls) == len(answered)
    assert sum(1 for m in openai_doc["messages"] if m["role"] == "tool") == len(answered)
    anthropic_doc = json.loads(builds.export(conv, "anthropic", view="full").content)
    uses = [b for m in anthropic_doc["messages"] if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use"]
    assert len(uses) == len(answered)
    assert not [n for n in md.notes if "tool call" in n]


def check_reimport_and_page(project, user, path: Path, conversations: list[Conversation]) -> None:
    again = ingest.import_path(project, path)
    assert added(again) == 0
    client = _client(user)
    for conv in conversations:
        r = client.get(reverse("conversation", args=[conv.pk]))
        assert r.status_code == 200
        assert formats.label(conv.agent).encode() in r.content


@pytest.mark.fixtures
def test_the_openhands_fixture_folder(project, user, fixtures_dir):
    folder = fixtures_dir / "openhands"
    report = ingest.import_path(project, folder)
    assert not report.errors and not report.refused
    convs = list(Conversation.objects.filter(project=project).order_by("pk"))
    assert len(convs) == 3 and {c.agent for c in convs} == {"openhands"}
    by_source = {Path(c.source.path).name: c for c in convs}
    for name, conv in by_source.items():
        events, calls, results, model_calls = count_openhands(folder / name)
        assert conv.messages.count() == events
        assert conv.tool_call_count == calls == len(_tool_calls(conv))
        assert sum(1 for m in conv.messages.all() if m.role == "tool") == results
        assert ModelCall.objects.filter(conversation=conv).count() == model_calls
        check_exports(conv)
    check_reimport_and_page(project, user, folder, convs)


@pytest.mark.fixtures
def test_the_swe_agent_fixture_folder(project, user, fixtures_dir):
    folder = fixtures_dir / "swe-agent"
    report = ingest.import_path(project, folder)
    assert not report.errors and not report.refused
    convs = list(Conversation.objects.filter(project=project).order_by("pk"))
    assert len(convs) == 2 and {c.agent for c in convs} == {"swe-agent"}
    for conv in convs:
        messages, calls, results, steps = count_swe_agent(Path(conv.source.path))
        assert conv.messages.count() == messages
        assert conv.tool_call_count == calls
        assert sum(1 for m in conv.messages.all() if m.role == "tool") == results
        model_calls = ModelCall.objects.filter(conversation=conv)
        # One call per step, none measured: their usage is zero and their messages say so.
        assert model_calls.count() == steps
        assert all(c.input_uncached == c.output == c.cache_read == c.cache_write == 0 for c in model_calls)
        assert all(c.message.flags.get("usage_unmeasured") for c in model_calls)
        check_exports(conv)
    check_reimport_and_page(project, user, folder, convs)


def test_a_v1_conversation_folder(project, user, tmp_path):
    folder = write_v1(tmp_path / "conversations" / "conv-123")
    report = ingest.import_path(project, tmp_path / "conversations")
    assert not report.refused
    [conv] = Conversation.objects.filter(project=project)
    assert conv.agent == "openhands" and conv.external_id == "conv-123"
    # 7 readable event files (one broken: reported) + the tool list + the fold's summary.
    assert conv.messages.count() == 7 + 1 + 1
    assert [e["line"] for e in report.errors] == [8]
    assert conv.tool_call_count == 1
    assert ModelCall.objects.filter(conversation=conv).count() == 2
    [fold] = conv.folds.all()
    assert fold.summary_text == "Tests ran: 1 failed."
    assert conv.cwd == "/repo"
    check_exports(conv)
    # Importing the folder itself finds the same conversation and adds nothing.
    again = ingest.import_path(project, folder)
    assert added(again) == 0
    assert Conversation.objects.filter(project=project).count() == 1
    check_reimport_and_page(project, user, folder, [conv])


def test_a_grown_v0_trajectory_adds_only_the_new_events(project, tmp_path):
    from tests.unit.test_openhands_importer import v0_events

    events = [e for e in v0_events() if isinstance(e, dict)]
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(events[:4]))
    first = ingest.import_path(project, path)
    assert added(first) == 4 + 1  # the system event writes its tool list too
    path.write_text(json.dumps(events))
    grown = ingest.import_path(project, path)
    assert added(grown) == len(events) + 1 + 1 - 5  # + the fold's summary
    [conv] = Conversation.objects.filter(project=project)
    assert conv.messages.count() == len(events) + 2
    assert conv.folds.count() == 1
