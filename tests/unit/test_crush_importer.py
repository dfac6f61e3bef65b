"""The Crush importer (``.crush/crush.db``, issue 20 item 5): a store written here with sqlite3
(tests/charm_db.py) and the real stores of ../shared/fixtures/crush.

Expected numbers come from tests/charm_db.py's plain sqlite3 count of a temporary copy, or from
SOURCES.md's independent counts (a standalone stdlib script on copies with the WAL applied), never
from the importer."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from contextviewer.conversations.models import Conversation, ConversationKind, Fold, ModelCall
from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.formats import ParseInput
from contextviewer.ingest import files as ingest
from tests.charm_db import AGENT_PROMPT, SUMMARY, count_store, write_store


def read(path: Path) -> list:
    fmt = formats.claim(path)
    assert fmt is not None and fmt.name == "crush", [(s, f.name) for s, f in formats.scores(path)]
    return list(fmt.parse(ParseInput(path=path)))


def of(records: list, kind: type) -> list:
    return [r for r in records if isinstance(r, kind)]


def summarize(records: list) -> dict:
    messages = [m for m in of(records, MessageRecord) if m.subtype != "compact_boundary"]
    blocks = [b for m in messages for b in m.blocks]
    return {
        "sessions": len(of(records, SessionInfo)) + len(of(records, AgentLink)),
        "children": len(of(records, AgentLink)),
        "roles": dict(Counter(m.role for m in messages)),
        "messages": len(messages),
        "tool_calls": sum(1 for b in blocks if b.kind == "tool_call"),
        "tool_results": sum(1 for b in blocks if b.kind == "tool_result"),
        "calls": len(of(records, UsageRecord)),
        "folds": len(of(records, FoldRecord)),
    }


def fingerprint(folder: Path) -> dict:
    """Every file of the folder by content; a `-shm` file by its size only. The `-shm` is SQLite's
    wal-index, the shared memory of a live WAL database, not data: every reader in place (the way
    to read a running app's store consistently) writes its read marks there, and the first reader
    after the writer left rebuilds it (seen on the real fixtures: a fresh copy's `-shm` changes at
    the first read, then no more). The database and its `-wal` must not change by a byte."""
    return {p.name: p.stat().st_size if p.name.endswith("-shm") else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir())}


@pytest.fixture
def store(tmp_path) -> Path:
    return write_store(tmp_path / "proj" / ".crush" / "crush.db")


def test_a_store_is_read_as_crush_with_every_message_call_result_and_its_sub_agent(store):
    expected = count_store(store)
    records = read(store)
    got = summarize(records)
    assert got["roles"] == expected["roles"] and got["messages"] == expected["messages"] == 11
    assert got["tool_calls"] == expected["tool_calls"] == 3
    assert got["tool_results"] == expected["tool_results"] == 3
    assert got["calls"] == expected["roles"]["assistant"]  # one model call per assistant message
    assert not of(records, BadLine)
    (info,) = of(records, SessionInfo)
    assert info.external_id == "s1" and info.title == "Fix the parser"
    assert info.cwd == str((store.parent.parent).resolve())
    assert info.models == ["claude-sonnet-4", "claude-haiku-4"]
    # The child agent session (id "<message>$$<call>") is a sub-agent linked to the agent call.
    (link,) = of(records, AgentLink)
    assert link.agent_id == "m4$$call-agent" and link.tool_use_id == "call-agent" and link.agent_type == "agent"
    assert link.description == AGENT_PROMPT
    child = [m for m in of(records, MessageRecord) if m.agent_id == link.agent_id]
    assert [m.uuid for m in child] == ["c1", "c2"] and all(m.agent_kind == "inline" for m in child)
    # Two results in one tool message, each answering its call; an error result stays an error.
    by_uuid = {m.uuid: m for m in of(records, MessageRecord)}
    assert [(b.tool_id, b.is_error) for b in by_uuid["m3"].blocks] == [("call-view", False), ("call-ls", True)]
    assert [b.kind for b in by_uuid["m2"].blocks] == ["thinking", "text", "tool_call", "tool_call"]
    assert by_uuid["m2"].blocks[2].tool_input == {"file_path": "parser.py"}


def test_usage_is_only_session_totals_so_each_call_is_unmeasured_and_the_totals_are_kept(store):
    records = read(store)
    calls = of(records, UsageRecord)
    assert all(c.input_uncached == c.output == c.cache_read == c.cache_write == 0 for c in calls)
    assistants = [m for m in of(records, MessageRecord) if m.role == "assistant"]
    # One call per assistant message; the summary's call stands at its fold's marker (its input is
    # the history the fold puts away).
    assert {c.message_uuid for c in calls} == {m.uuid for m in assistants} - {"m7"} | {"m7:boundary"}
    assert all(m.flags["usage_unmeasured"] for m in assistants)
    firsts = {m.agent_id: m for m in reversed(of(records, MessageRecord)) if m.role == "user"}
    assert firsts[None].flags["session_totals"] == {"prompt_tokens": 1200, "completion_tokens": 300, "cost": 0.05}
    assert firsts["m4$$call-agent"].flags["session_totals"]["prompt_tokens"] == 400


def test_the_summary_message_folds_and_a_canceled_turn_says_so(store):
    records = read(store)
    (fold,) = of(records, FoldRecord)
    messages = of(records, MessageRecord)
    uuids = [m.uuid for m in messages]
    assert fold.summary_uuid == "m7" and fold.summary_text == SUMMARY
    assert uuids.index(fold.boundary_uuid) == uuids.index("m7") - 1  # the marker closes what came before
    assert next(m for m in messages if m.uuid == "m7").is_compact_summary
    canceled = next(m for m in messages if m.uuid == "m9")
    assert canceled.flags["finish_reason"] == "canceled"
    assert any(b.kind == "other" and "canceled" in b.text and "Request canceled by the user" in b.text for b in canceled.blocks)


def test_reading_twice_gives_the_same_uuids_and_leaves_the_users_files_alone(store):
    fmt = formats.get("crush")
    before = fingerprint(store.parent)
    assert fmt.sniff(store, formats.head_of(store)) > 0 and fmt.sniff(store.with_name("crush.db-wal"), b"") > 0
    first = [m.uuid for m in of(fmt.parse(ParseInput(path=store)), MessageRecord)]
    assert first == [m.uuid for m in of(fmt.parse(ParseInput(path=store)), MessageRecord)]
    assert len(first) == len(set(first))
    assert fingerprint(store.parent) == before


def test_rows_only_in_the_wal_are_read(tmp_path):
    store = write_store(tmp_path / ".crush" / "crush.db", keep_wal=True)
    assert count_store(store, with_wal=False)["messages"] == 0  # the file alone has none
    got = summarize(read(store))
    assert got["messages"] == count_store(store)["messages"] == 11


def test_the_wal_and_shm_are_companions_of_the_database_not_files_to_refuse(tmp_path):
    store = write_store(tmp_path / ".crush" / "crush.db", keep_wal=True)
    store.with_name("crush.db-shm").write_bytes(b"\0" * 32768)
    found = formats.discover(tmp_path)
    assert [(s.format, s.main) for s in found.sessions] == [("crush", store)]
    assert found.skipped == []
    alone = formats.discover(store.with_name("crush.db-wal"))
    assert [(s.format, s.main) for s in alone.sessions] == [("crush", store)]


def test_other_sqlite_stores_are_not_claimed(tmp_path):
    path = tmp_path / "crush.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sessions (id TEXT)")
    conn.execute("CREATE TABLE messages (id TEXT, session_id TEXT, content TEXT)")  # no parts column
    conn.commit()
    conn.close()
    assert formats.claim(path) is None
    assert "SQLite" in formats.refusal(path)
    ts = tmp_path / "ts" / "opencode.db"  # the TypeScript opencode's tables
    ts.parent.mkdir()
    conn = sqlite3.connect(ts)
    for table in ("session", "message", "part"):
        conn.execute(f"CREATE TABLE {table} (id TEXT, session_id TEXT, message_id TEXT, data TEXT)")
    conn.commit()
    conn.close()
    assert [f.name for _, f in formats.scores(ts)] == ["opencode"]


def test_a_broken_row_is_a_bad_line_and_the_rest_is_read(tmp_path):
    broken = write_store(tmp_path / "b" / "crush.db")
    conn = sqlite3.connect(broken)
    conn.execute("UPDATE messages SET parts = '{not json' WHERE id = 'm6'")
    conn.commit()
    conn.close()
    records = read(broken)
    (bad,) = of(records, BadLine)
    assert "m6" in bad.reason and "not a JSON list" in bad.reason
    assert summarize(records)["messages"] == 11


def test_a_file_that_is_not_a_database_is_refused_with_a_reason(tmp_path):
    path = tmp_path / "crush.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    assert formats.claim(path) is None
    records = list(formats.get("crush").parse(ParseInput(path=path)))
    assert of(records, BadLine) and of(records, SessionInfo)


@pytest.fixture
def project(db):
    from contextviewer.accounts.services import get_or_create_project

    return get_or_create_project("Crush project")


@pytest.mark.django_db
def test_an_import_stores_the_conversation_its_sub_agent_calls_and_fold(project, store):
    report = ingest.import_path(project, store.parent)
    assert not report.refused and report.skipped == []
    assert {f.agent for f in report.files} == {"crush"}
    conv = Conversation.objects.get(project=project, external_id="s1", parent__isnull=True)
    assert conv.agent == "crush" and conv.fold_count == 1
    (child,) = conv.children.all()
    assert child.kind == ConversationKind.SUBAGENT
    assert ModelCall.objects.filter(conversation__in=[conv, child]).count() == 6
    assert Fold.objects.filter(conversation=conv).count() == 1
    again = ingest.import_path(project, store.parent)
    assert sum(f.added_messages for f in again.files) == 0


# -- the real stores ------------------------------------------------------------------------------

# SOURCES.md "Independent counts for the files added 2026-11-26" (a standalone stdlib script on
# copies with the WAL applied): sessions, child sessions, messages by role, tool calls/results,
# summaries, and what the file holds without its WAL.
SOURCES = {
    "AndresGaibor__cisco-auto__crush.db": dict(
        sessions=2, children=0, roles={"user": 11, "assistant": 224, "tool": 233}, tool_calls=233, tool_results=233, folds=1),
    "jbpratt__quay__crush.db": dict(
        sessions=3, children=1, roles={"user": 3, "assistant": 26, "tool": 24}, tool_calls=25, tool_results=24, folds=0,
        without_wal=46),
    "Exa-Networks__exabgp__crush.db": dict(
        sessions=1, children=0, roles={"user": 3, "assistant": 17, "tool": 14}, tool_calls=14, tool_results=14, folds=0,
        without_wal=None),
}


@pytest.mark.fixtures
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_a_real_store_matches_its_independent_counts(fixtures_dir, name):
    path = fixtures_dir / "crush" / name
    expected = SOURCES[name]
    before = fingerprint(path.parent)
    records = read(path)
    got = summarize(records)
    assert not of(records, BadLine)
    assert got["roles"] == expected["roles"] == count_store(path)["roles"]
    assert got["calls"] == expected["roles"]["assistant"]
    assert (got["sessions"], got["children"]) == (expected["sessions"], expected["children"])
    assert (got["tool_calls"], got["tool_results"]) == (expected["tool_calls"], expected["tool_results"])
    assert got["folds"] == expected["folds"]
    if "without_wal" in expected:  # what is read is the store with its WAL, not the file alone
        alone = count_store(path, with_wal=False)
        assert alone.get("messages") == expected["without_wal"]
        assert got["messages"] != alone.get("messages")
    assert fingerprint(path.parent) == before


@pytest.mark.fixtures
def test_the_real_summary_is_the_one_the_session_names(fixtures_dir):
    path = fixtures_dir / "crush" / "AndresGaibor__cisco-auto__crush.db"
    (fold,) = of(read(path), FoldRecord)
    (summary_id,) = count_store(path)["summary_ids"]
    assert fold.summary_uuid == summary_id and fold.summary_text


@pytest.mark.fixtures
@pytest.mark.parametrize(("folder", "name"), [("crush", "crush"), ("opencode-go", "opencode-go")])
def test_a_fixture_folder_is_one_source_per_database_with_nothing_refused(fixtures_dir, folder, name):
    found = formats.discover(fixtures_dir / folder)
    databases = sorted((fixtures_dir / folder).glob("*.db"))
    assert [(s.format, s.main) for s in found.sessions] == [(name, p) for p in databases]
    assert found.skipped == []  # the -wal and -shm files go with their database
