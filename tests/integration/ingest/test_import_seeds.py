"""The seed harnesses' stores through ingest: efferent's SQLite store (both schema lines) and
picoclaw's session folder, written by the unit tests' writers exactly as formats.md §10 describes.

Counts are stated here from the rows and lines those writers put down."""

import json
import sqlite3

import pytest
from django.test import Client
from django.urls import reverse

from contextviewer.builds import services as builds
from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation, Fold, Message, ModelCall
from tests.unit import test_efferent_importer as eff
from tests.unit import test_picoclaw_importer as pico

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _tool_call_ids(conv: Conversation) -> list[str]:
    return [
        b["tool_id"]
        for blocks in conv.messages.order_by("position").values_list("blocks", flat=True)
        for b in blocks
        if b.get("kind") == "tool_call"
    ]


def _exports_keep_every_tool_call(conv: Conversation) -> None:
    ids = _tool_call_ids(conv)
    assert ids, "the conversation has tool calls to keep"
    openai = json.loads(builds.export(conv, "openai", view="full").content)
    openai_calls = [c for m in openai["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert len(openai_calls) == len(ids)
    anthropic = json.loads(builds.export(conv, "anthropic", view="full").content)
    uses = [b for m in anthropic["messages"] if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use"]
    assert len(uses) == len(ids)
    markdown = builds.export(conv, "markdown", view="full").content
    assert markdown.count("Tool call `") == len(ids)


def _page_shows(user, conv: Conversation, text: str) -> None:
    response = _client(user).get(reverse("conversation", args=[conv.pk]))
    assert response.status_code == 200
    assert text in response.content.decode()


# -- efferent -----------------------------------------------------------------------------------


def test_efferent_current_line_store(project, user, tmp_path):
    path = eff.write_current_store(tmp_path / "smith.db")
    report = ingest.import_path(project, path)
    assert not report.refused, report.errors
    convs = {c.external_id: c for c in Conversation.objects.filter(project=project)}
    # c1 and its fork; c3 holds no message and is no conversation.
    assert set(convs) == {"c1", "c2"}
    assert {c.agent for c in convs.values()} == {"efferent"}
    c1 = convs["c1"]
    assert c1.title == "fix the parser" and c1.cwd == "/work/proj"
    # 12 readable message rows + 2 checkpoint markers; 2 bad rows reported.
    assert c1.message_count == 14 and c1.messages.filter(subtype="compact_boundary").count() == 2
    assert len([e for e in report.errors if e["line"]]) == 2
    assert c1.model_call_count == 4 and convs["c2"].model_call_count == 1
    call = ModelCall.objects.get(conversation=c1, api_message_id="c1:1")
    assert (call.input_uncached, call.cache_read, call.output) == (200, 1000, 80)
    folds = list(Fold.objects.filter(conversation=c1).order_by("position"))
    assert [f.summary_text for f in folds] == [eff.SUMMARY_1, eff.SUMMARY_2]
    assert [c1.messages.get(pk=f.boundary_id).uuid for f in folds] == ["c1:checkpoint:1", "c1:checkpoint:2"]
    clipped = c1.messages.get(uuid="c1:4")
    assert clipped.blocks[0]["text"] == eff.CLIPPED and clipped.flags["clipped"] is True

    _page_shows(user, c1, "1 failure in test_cli.py")  # the latest fold's summary, whole
    # The older fold is one line on the first page; opened, its summary is there whole.
    older = _client(user).get(reverse("segment_body", args=[c1.pk, 0]))
    assert older.status_code == 200 and "off-by-one fixed" in older.content.decode()
    _exports_keep_every_tool_call(c1)

    before = (Message.objects.count(), ModelCall.objects.count(), Fold.objects.count())
    again = ingest.import_path(project, path)
    assert not again.errors or all(e["line"] for e in again.errors)
    assert (Message.objects.count(), ModelCall.objects.count(), Fold.objects.count()) == before


def test_efferent_store_that_grew_adds_only_the_new_rows(project, tmp_path):
    path = eff.write_current_store(tmp_path / "smith.db")
    ingest.import_path(project, path)
    before = Message.objects.count()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO messages VALUES ('c1', 14, ?, ?)", (json.dumps({"role": "user", "content": "one more"}), eff.T0 + 20_000))
    conn.execute("INSERT INTO messages VALUES ('c3', 0, ?, ?)", (json.dumps({"role": "user", "content": "first words"}), eff.T0 + 21_000))
    conn.commit()
    conn.close()
    report = ingest.import_path(project, path)
    assert sum(f.added_messages for f in report.files) == 2
    assert Message.objects.count() == before + 2
    assert Conversation.objects.get(project=project, external_id="c3").message_count == 1
    assert Conversation.objects.get(project=project, external_id="c1").messages.filter(uuid="c1:14").exists()


def test_efferent_older_line_store_links_its_subagents(project, user, tmp_path):
    path = eff.write_older_store(tmp_path / "efferent.db")
    report = ingest.import_path(project, path)
    assert not report.refused
    main = Conversation.objects.get(project=project, external_id="conv-old")
    assert main.agent == "efferent" and main.parent_id is None
    # 6 rows + 1 checkpoint marker; 3 measured calls; 1 fold with its summary.
    assert main.message_count == 7 and main.model_call_count == 3
    assert list(main.folds.values_list("summary_text", flat=True)) == [eff.OLDER_SUMMARY]
    children = {c.agent_id: c for c in main.children.all()}
    assert set(children) == {"node-1", "node-2"}
    explorer = children["node-1"]
    assert explorer.external_id == "conv-old/node-1" and explorer.agent == "efferent"
    assert explorer.parent_tool_use_id == "call-a"  # the run_agent call whose result named node-1
    # 4 readable rows + the node row; its 1 measured call; the broken row reported.
    assert explorer.message_count == 5 and explorer.model_call_count == 1
    assert children["node-2"].message_count == 2 and children["node-2"].parent_tool_use_id == ""
    assert main.agent_links["node-1"]["tool_use_id"] == "call-a"
    assert len([e for e in report.errors if e["line"]]) == 1

    _page_shows(user, main, "Callers: a.ts, b.ts, c.ts.")
    _exports_keep_every_tool_call(main)
    _exports_keep_every_tool_call(explorer)

    before = (Message.objects.count(), ModelCall.objects.count(), Conversation.objects.count())
    ingest.import_path(project, path)
    assert (Message.objects.count(), ModelCall.objects.count(), Conversation.objects.count()) == before


# -- picoclaw -----------------------------------------------------------------------------------


def test_picoclaw_sessions_folder(project, user, tmp_path):
    sessions = pico.write_workspace(tmp_path)
    report = ingest.import_path(project, sessions)
    assert not report.refused, report.errors
    convs = {c.external_id: c for c in Conversation.objects.filter(project=project)}
    assert set(convs) == {pico.KEY, "agent:main:cli:default", "sk_v1_" + "ab" * 32}
    assert {c.agent for c in convs.values()} == {"picoclaw"}
    # picoclaw records no usage: its calls (one per assistant line) are stored with none, so no
    # call is measured and each conversation's peak is its largest estimate, marked as one.
    calls = ModelCall.objects.filter(conversation__project=project)
    assert calls.count() == Message.objects.filter(conversation__project=project, role="assistant").count() > 0
    assert all(c.context_size == 0 for c in calls)
    for conv in convs.values():
        estimates = [c.estimated_context for c in calls if c.conversation_id == conv.pk]
        assert conv.measured_calls == 0 and conv.spend_tokens == 0 and conv.usage_coverage == "none"
        assert conv.peak_estimated == bool(estimates) and conv.peak_context == max(estimates, default=0)

    main = convs[pico.KEY]
    # 15 JSON object lines + the fold marker; the 2 bad lines reported.
    assert main.message_count == 16
    assert len([e for e in report.errors if e["line"]]) == 2
    (fold,) = main.folds.all()
    assert fold.summary_text == pico.SUMMARY and fold.tokens_before is None
    marker = main.messages.get(pk=fold.boundary_id)
    assert marker.subtype == "compact_boundary" and marker.position == pico.SKIP
    assert main.messages.filter(position__lt=pico.SKIP).count() == pico.SKIP
    assert all(m.flags.get("skipped") for m in main.messages.filter(position__lt=pico.SKIP))
    assert all("estimated_tokens" in m.flags for m in main.messages.all())

    emergency = convs["agent:main:cli:default"]
    note = emergency.messages.get(subtype="emergency_compression")
    assert note.flags["emergency_compression"] is True and note.role == "system"

    _page_shows(user, main, "daily reminder; search worked")
    _exports_keep_every_tool_call(main)

    before = (Message.objects.count(), Fold.objects.count())
    again = ingest.import_path(project, sessions)
    assert sum(f.added_messages for f in again.files) == 0
    assert (Message.objects.count(), Fold.objects.count()) == before


def test_picoclaw_compacted_and_grown_file_adds_only_the_new_lines(project, tmp_path):
    sessions = pico.write_workspace(tmp_path)
    path = sessions / f"{pico.FILE_KEY}.jsonl"
    ingest.import_path(project, path)
    main = Conversation.objects.get(project=project, external_id=pico.KEY)
    before = main.messages.count()
    # picoclaw's Compact rewrites the file without the skipped (and corrupt) lines, then a turn is appended.
    kept = [item for item in pico.LINES[pico.SKIP:] if not isinstance(item, str)]
    new = [{"role": "user", "content": "and tomorrow?"}, {"role": "assistant", "content": "Rain.", "model_name": "gpt-4o-mini"}]
    pico.write_session(sessions, pico.FILE_KEY, kept + new, {**pico.META, "skip": 0, "count": len(kept) + 2})
    report = ingest.import_path(project, path)
    assert sum(f.added_messages for f in report.files) == 2
    main.refresh_from_db()
    assert main.messages.count() == before + 2 and main.folds.count() == 1


def test_a_picoclaw_meta_file_named_alone_is_refused_not_a_crash(project, tmp_path):
    sessions = pico.write_workspace(tmp_path)
    report = ingest.import_path(project, sessions / f"{pico.FILE_KEY}.meta.json")
    assert report.refused and report.errors
    assert not Conversation.objects.filter(project=project).exists()


@pytest.mark.django_db
def test_a_new_summary_in_the_meta_file_alone_is_read_on_the_next_import(tmp_path, project):
    """The session's .meta.json is part of it: changing only that file is a change of the source."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = folder / "chat-1.jsonl"
    lines = [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "second question"},
        {"role": "assistant", "content": "second answer"},
    ]
    path.write_text("".join(json.dumps(m) + "\n" for m in lines))
    meta = folder / "chat-1.meta.json"
    meta.write_text(json.dumps({"key": "chat-1", "summary": "", "skip": 0, "count": 4}))
    first = ingest.import_path(project, path)
    assert first.files[0].status == "imported"
    assert not Fold.objects.exists()
    meta.write_text(json.dumps({"key": "chat-1", "summary": "They asked two questions.", "skip": 2, "count": 4}))
    again = ingest.import_path(project, path)
    assert again.files[0].status == "imported"
    assert list(Fold.objects.values_list("summary_text", flat=True)) == ["They asked two questions."]
