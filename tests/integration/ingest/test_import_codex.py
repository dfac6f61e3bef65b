"""Codex CLI rollouts through the ingest service: the fixture folder imports as Codex conversations
with the counts stated in tests/unit/test_codex_importer.py, importing again adds nothing, a grown
rollout adds only its new lines, the conversation page shows the tool calls, and the Markdown,
OpenAI and Anthropic exports keep them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from contextviewer.builds import services as builds
from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation, Fold, Message, ModelCall
from tests.unit.test_codex_importer import FIXTURE_COUNTS, SID, two_turns, write

pytestmark = pytest.mark.django_db

# The real rollouts (the hand-made catalogue files reuse "[trimmed for fixture]" as every call id).
REAL = [name for name in FIXTURE_COUNTS if name.startswith(("Mai0313", "madshn"))]


def _calls_in_raw(path: Path) -> tuple[list[str], int]:
    """(names of every *_call item, how many have a later *_output with the same call_id), from the
    raw lines."""
    names, open_ids, answered = [], set(), 0
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        item = obj.get("payload") if obj.get("type") == "response_item" else None
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            continue
        if item["type"].endswith("_call"):
            names.append(item.get("name") or item["type"].removesuffix("_call"))
            if item.get("call_id"):
                open_ids.add(item["call_id"])
        elif item["type"].endswith("_output") and item.get("call_id") in open_ids:
            open_ids.discard(item["call_id"])
            answered += 1
    return names, answered


def _exports_keep_the_calls(conv: Conversation, calls: int, answered: int) -> None:
    """Every call with its result is in each export; the calls the log has no result for (a web
    search, an interrupted call) are left out and the export says how many. The whole record (the
    default export is what the agent loads: after a fold, less)."""
    markdown = builds.export(conv, "markdown", view="full")
    assert markdown.content.count("Tool call `") == answered
    if calls > answered:
        left_out = calls - answered
        assert f"{left_out} tool call{'s' if left_out != 1 else ''} without a result left out." in markdown.notes
    openai = json.loads(builds.export(conv, "openai", view="full").content)
    messages = openai["messages"] if isinstance(openai, dict) else openai
    assert sum(len(m.get("tool_calls") or []) for m in messages) == answered
    assert sum(1 for m in messages if m.get("role") == "tool") == answered
    anthropic = json.loads(builds.export(conv, "anthropic", view="full").content)
    uses = [b for m in anthropic["messages"] for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
    assert len(uses) == answered


def test_the_fixture_folder_imports_as_codex_conversations(project, fixtures_dir):
    folder = fixtures_dir / "codex"
    report = ingest.import_path(project, folder)
    assert not report.refused and report.skipped == []
    assert {f.agent for f in report.files} == {"codex"}
    assert all(f.bad_lines == 0 for f in report.files), [f.errors for f in report.files if f.errors]
    convs = Conversation.objects.filter(project=project)
    assert convs.count() == len(FIXTURE_COUNTS) and set(convs.values_list("agent", flat=True)) == {"codex"}
    by_file = {f.path: f.conversation_ids for f in report.files}
    for name, (messages, calls, tool_calls, _results, folds) in FIXTURE_COUNTS.items():
        (cid,) = by_file[str(folder / name)]
        conv = Conversation.objects.get(pk=cid)
        assert (conv.message_count, conv.model_call_count, conv.tool_call_count, conv.fold_count) == (
            messages, calls, tool_calls, folds), name
    remote = Conversation.objects.get(external_id="019c8a59-e9dd-71f0-9ae3-4079fe9726a9")
    assert remote.window == 258400 and remote.model_names == ["gpt-5.3-codex"] and remote.cli_version == "0.104.0-alpha.1"
    fold = Fold.objects.get(conversation=remote)
    assert fold.boundary.subtype == "compact_boundary" and len(fold.preserved) == 38
    assert Message.objects.filter(conversation=remote, uuid__in=fold.preserved, position__lt=fold.position).count() == 38
    tracker = Conversation.objects.get(external_id="01996135-afde-7911-97f0-d863511eca56")
    assert tracker.title.startswith("幫我檢查一下 go.mod")  # the typed request, not the IDE context around it

    totals = (Message.objects.count(), ModelCall.objects.count(), Fold.objects.count())
    again = ingest.import_path(project, folder)
    assert {f.status for f in again.files} == {"unchanged"}
    assert (Message.objects.count(), ModelCall.objects.count(), Fold.objects.count()) == totals


@pytest.mark.parametrize("name", REAL, ids=lambda n: n[:45])
def test_the_exports_of_a_real_rollout_keep_every_tool_call(project, fixtures_dir, name):
    path = fixtures_dir / "codex" / name
    report = ingest.import_path(project, path)
    conv = Conversation.objects.get(pk=report.conversation_ids[0])
    names, answered = _calls_in_raw(path)
    assert conv.tool_call_count == len(names)
    _exports_keep_the_calls(conv, len(names), answered)


def test_a_grown_rollout_adds_only_its_new_lines_and_the_page_shows_its_tool_calls(project, user, client, tmp_path):
    lines = two_turns()
    path = write(tmp_path / f"rollout-2026-02-23T12-00-00-{SID}.jsonl", lines[:13])
    first = ingest.import_path(project, path)
    conv = Conversation.objects.get(pk=first.conversation_ids[0])
    assert conv.agent == "codex" and conv.external_id == SID
    # 13 lines: meta (system prompt), 2 user items, reasoning, text, call, output; the rest is bookkeeping.
    assert (conv.message_count, conv.model_call_count, conv.tool_call_count) == (7, 1, 1)

    write(path, lines)
    grown = ingest.import_path(project, path)
    assert grown.conversation_ids == [conv.pk]
    assert grown.files[0].added_messages == 7  # apply_patch, web search, its output, reasoning, text, user, event
    conv.refresh_from_db()
    assert (conv.message_count, conv.model_call_count, conv.tool_call_count) == (14, 3, 3)
    assert list(ModelCall.objects.filter(conversation=conv).order_by("position").values_list("api_message_id", flat=True)) == [
        f"{SID}:call:1", f"{SID}:call:2", f"{SID}:call:3"]
    assert Message.objects.filter(conversation=conv).values("uuid").distinct().count() == 14
    assert ingest.import_path(project, path).files[0].status == "unchanged"

    client.login(username="alice", password="pw-alice-123")
    response = client.get(reverse("conversation", args=[conv.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Codex CLI" in html
    turns = "".join(client.get(reverse("turn", args=[conv.pk, t])).content.decode() for t in (0, 1, 2))
    assert 'class="tool-name" hx-disable>apply_patch<' in html + turns
    assert 'class="tool-name" hx-disable>shell<' in html + turns
    _exports_keep_the_calls(conv, 3, 2)  # the web search has no result in the log
