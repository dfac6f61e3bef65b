"""Importing a LangGraph / deepagents checkpointer database: one conversation per thread, its
sub-agent, folds and model calls; re-imports; the page and the exports."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from contextviewer.ingest import files as ingest
from contextviewer.builds.services import export
from contextviewer.conversations.models import Conversation, ConversationKind, Fold, Message, ModelCall


@pytest.fixture
def lg():
    return pytest.importorskip("tests.langgraph_db")


@pytest.fixture
def database(lg, tmp_path):
    return lg.build(tmp_path / "agent" / "checkpoints.sqlite")


def _mains(project):
    return {c.external_id: c for c in Conversation.objects.filter(project=project, agent="langgraph", parent=None)}


def test_one_conversation_per_thread_with_its_sub_agent_folds_and_calls(project, database, lg):
    report = ingest.import_path(project, database.parent)  # the folder: the offload .md beside it is not a session
    assert not report.refused and not report.errors
    mains = _mains(project)
    assert sorted(mains) == ["alpha", "beta", "delta", "gamma"]
    for thread, conv in mains.items():
        markers = conv.messages.filter(subtype="compact_boundary").count()
        event_summary = 1 if thread == "gamma" else 0
        assert conv.messages.count() == lg.MAIN_MESSAGES[thread] + markers + event_summary
    (sub,) = Conversation.objects.filter(project=project, agent="langgraph", parent=mains["alpha"])
    assert sub.kind == ConversationKind.SUBAGENT and sub.parent_tool_use_id == "call-task-1"
    assert sub.messages.count() == lg.SUB_MESSAGES
    # folds: beta rewrote its list, gamma recorded an event; both with their summaries
    beta_fold = Fold.objects.get(conversation=mains["beta"])
    assert beta_fold.summary_text == lg.SUMMARY_BETA and beta_fold.summary_message.uuid == "beta-summary"
    assert beta_fold.boundary.subtype == "compact_boundary" and beta_fold.position == beta_fold.boundary.position
    gamma_fold = Fold.objects.get(conversation=mains["gamma"])
    assert gamma_fold.summary_text == lg.SUMMARY_GAMMA and len(gamma_fold.preserved) == 2
    assert not Fold.objects.filter(conversation__in=[mains["alpha"], mains["delta"], sub]).exists()
    # model calls: one per AI message that reports usage (the scripts' counts)
    counts = {t: ModelCall.objects.filter(conversation=c).count() for t, c in mains.items()}
    assert counts == {"alpha": 2, "beta": 4, "gamma": 2, "delta": 2}
    assert ModelCall.objects.filter(conversation=sub).count() == 2
    call = ModelCall.objects.get(conversation=mains["alpha"], api_message_id="alpha-ai-1")
    assert (call.input_uncached, call.cache_write, call.cache_read, call.output) == (50, 150, 1000, 30)


def test_reimport_adds_nothing_and_a_grown_database_adds_only_its_new_messages(project, database, lg):
    first = ingest.import_path(project, database)
    total = Message.objects.filter(conversation__agent="langgraph").count()
    again = ingest.import_path(project, database)
    assert sum(f.added_messages for f in again.files) == 0
    assert Message.objects.filter(conversation__agent="langgraph").count() == total
    new = lg.add_turn(database, "alpha")
    grown = ingest.import_path(project, database)
    assert sum(f.added_messages for f in grown.files) == new
    assert Message.objects.filter(conversation__agent="langgraph").count() == total + new
    alpha = _mains(project)["alpha"]
    last = list(alpha.messages.order_by("-position")[:2])
    assert [m.uuid for m in reversed(last)] == ["alpha-h-late", "alpha-ai-late"]
    assert ModelCall.objects.filter(conversation=alpha).count() == 3
    assert sorted(grown.conversation_ids) == sorted(first.conversation_ids)
    assert Fold.objects.filter(conversation__agent="langgraph").count() == 2


def test_the_conversation_page_renders_for_the_owner(project, user, database):
    ingest.import_path(project, database)
    client = Client()
    client.force_login(user)
    for conv in Conversation.objects.filter(project=project, agent="langgraph"):
        assert client.get(f"/c/{conv.pk}/").status_code == 200


@pytest.mark.parametrize("fmt", ["markdown", "openai", "anthropic"])
def test_exports_keep_every_tool_call(project, database, fmt):
    ingest.import_path(project, database)
    for conv in Conversation.objects.filter(project=project, agent="langgraph"):
        ids = [b["tool_id"] for m in conv.messages.all() for b in m.blocks if b.get("kind") == "tool_call"]
        assert ids, conv.external_id
        content = export(conv, fmt, view="full").content
        if fmt == "markdown":
            for m in conv.messages.all():
                for b in m.blocks:
                    if b.get("kind") == "tool_call":
                        assert b["tool_name"] in content
            continue
        doc = json.loads(content)
        messages = doc["messages"] if isinstance(doc, dict) else doc
        found = []
        for m in messages:
            for call in m.get("tool_calls") or []:
                found.append(call["id"])
            if isinstance(m.get("content"), list):
                found += [p["id"] for p in m["content"] if isinstance(p, dict) and p.get("type") == "tool_use"]
        assert sorted(found) == sorted(ids), (conv.external_id, fmt)
