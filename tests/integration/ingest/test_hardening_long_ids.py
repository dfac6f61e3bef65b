"""Session ids of any length import the same way on SQLite and PostgreSQL (issue 21): a stored key
within the column (a readable prefix and a hash of the whole id when it is longer), the same key
on every import (re-import adds nothing), and no LIKE pattern built from the id; sub-agents of a
long session still find their parent."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from contextviewer.conversations.models import EXTERNAL_ID_MAX, Conversation, Message, external_key
from contextviewer.ingest import files as ingest


def _session(session_id: str, agent_id: str | None = None) -> str:
    tag = "-sub" if agent_id else ""
    base = {"sessionId": session_id, "cwd": "/w", "version": "2.1.0", "timestamp": "2026-01-01T00:00:00.000Z"}
    if agent_id:
        base.update(isSidechain=True, agentId=agent_id)
    lines = [
        {**base, "type": "user", "uuid": f"u1{tag}", "parentUuid": None,
         "message": {"role": "user", "content": "list the files"}},
        {**base, "type": "assistant", "uuid": f"a1{tag}", "parentUuid": f"u1{tag}", "requestId": "req_1",
         "message": {"id": f"msg_1{tag}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "text", "text": "main.py util.py"}], "stop_reason": "end_turn",
                     "usage": {"input_tokens": 10, "output_tokens": 5}}},
    ]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


@pytest.mark.parametrize("length", [300, 60_000])
def test_a_long_session_id_imports_once_and_its_page_opens(project, user, tmp_path, length):
    session = ("s" + "0123456789abcdef" * (length // 16 + 1))[:length]
    path = tmp_path / "long.jsonl"
    path.write_text(_session(session), encoding="utf-8")

    report = ingest.import_file(project, path)
    assert not report.errors and report.bad_lines == 0, report.errors
    (conv,) = Conversation.objects.filter(project=project)
    assert conv.external_id == external_key(session) and len(conv.external_id) <= EXTERNAL_ID_MAX
    assert conv.external_id.startswith(session[:100])
    assert conv.messages.count() == 2
    assert Conversation.objects.by_reference(session).get() == conv  # the whole id finds it

    again = ingest.import_file(project, path)
    assert not again.errors
    assert Conversation.objects.filter(project=project).count() == 1 and Message.objects.count() == 2

    # the same session in a file of another name is the same conversation
    other = tmp_path / "copy.jsonl"
    other.write_text(_session(session), encoding="utf-8")
    assert not ingest.import_file(project, other).errors
    assert Conversation.objects.filter(project=project).count() == 1 and Message.objects.count() == 2

    client = Client()
    client.force_login(user)
    page = client.get(f"/c/{conv.pk}/")
    assert page.status_code == 200 and b"list the files" in page.content


def test_a_sub_agent_of_a_long_session_imported_first_is_adopted_by_its_parent(project, tmp_path):
    session = "p" * 400
    agent = "a" * 300
    sub = tmp_path / "sub.jsonl"
    sub.write_text(_session(session, agent_id=agent), encoding="utf-8")
    assert not ingest.import_file(project, sub).errors
    main = tmp_path / "main.jsonl"
    main.write_text(_session(session), encoding="utf-8")
    assert not ingest.import_file(project, main).errors
    parent = Conversation.objects.get(project=project, external_id=external_key(session))
    (child,) = Conversation.objects.filter(project=project).exclude(pk=parent.pk)
    assert child.parent_id == parent.pk and len(child.external_id) <= EXTERNAL_ID_MAX
    assert len(child.agent_id) <= EXTERNAL_ID_MAX


def test_external_key_keeps_ids_that_fit_and_hashes_the_rest():
    assert external_key("abc") == "abc"
    fits = "x" * EXTERNAL_ID_MAX
    assert external_key(fits) == fits
    long_a, long_b = "x" * 300, "x" * 299 + "y"
    assert len(external_key(long_a)) == EXTERNAL_ID_MAX and external_key(long_a) != external_key(long_b)
    assert external_key(long_a) == external_key("x" * 300) and external_key(long_a) != fits


def test_external_key_of_an_id_no_database_column_holds():
    key = external_key("a\x00b")
    assert "\x00" not in key and key.startswith("a\ufffdb~") and key != external_key("a\ufffdb")


def test_a_long_langgraph_thread_id_imports_once(project, tmp_path):
    """A thread's derived message ids (fold markers, id-less messages) hold the thread id: kept
    within the column too."""
    lg = pytest.importorskip("tests.langgraph_db")
    path = lg.build(tmp_path / "checkpoints.sqlite", threads=("beta",))
    thread = "t" * 300
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("UPDATE checkpoints SET thread_id = ?", (thread,))
    conn.execute("UPDATE writes SET thread_id = ?", (thread,))
    conn.commit()
    conn.close()
    report = ingest.import_path(project, path)
    assert not report.errors, report.errors
    conv = Conversation.objects.get(project=project, external_id=external_key(thread))
    count = conv.messages.count()
    assert conv.messages.filter(subtype="compact_boundary").exists() and conv.folds.exists()
    assert all(len(u or "") <= 255 for u in conv.messages.values_list("uuid", flat=True))
    assert not ingest.import_path(project, path).errors
    assert conv.messages.count() == count and Conversation.objects.filter(project=project).count() == 1
