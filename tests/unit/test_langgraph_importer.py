"""LangGraph / deepagents checkpointer databases: records read from a database that langgraph's
own SqliteSaver wrote (tests/langgraph_db.py: real graphs, scripted model), and from tables
written by hand (JSON-typed blobs, a broken blob) so the parser is tested without langgraph too."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import msgpack
import pytest

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.langgraph import parser as langgraph
from contextviewer.importers.formats import ParseInput


def parse(path: Path) -> list:
    return list(langgraph.parse(ParseInput(path=path)))


def sessions(records: list) -> dict[str, list]:
    """Records per session (each session's records end with its SessionInfo)."""
    out, current = {}, []
    for r in records:
        current.append(r)
        if isinstance(r, SessionInfo):
            out[r.external_id] = current
            current = []
    assert not current, "records after the last SessionInfo"
    return out


def main_messages(records: list) -> list[MessageRecord]:
    return [r for r in records if isinstance(r, MessageRecord) and r.agent_id is None]


@pytest.fixture(scope="module")
def lg():
    return pytest.importorskip("tests.langgraph_db")


@pytest.fixture(scope="module")
def db(lg, tmp_path_factory) -> Path:
    return lg.build(tmp_path_factory.mktemp("langgraph") / "checkpoints.sqlite")


@pytest.fixture(scope="module")
def records(db) -> list:
    return parse(db)


# -- detection -------------------------------------------------------------------------------------


def test_the_database_is_claimed_by_langgraph_and_other_sqlite_files_are_not(db, tmp_path):
    assert langgraph.sniff(db, formats.head_of(db)) == 0.9
    assert formats.claim(db).name == "langgraph"
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE checkpoints (id TEXT)")  # a name alone is not enough
    conn.execute("CREATE TABLE writes (id TEXT)")
    conn.commit()
    conn.close()
    assert langgraph.sniff(other, formats.head_of(other)) == 0.0
    text = tmp_path / "notes.txt"
    text.write_text("SQLite format 3 is not this")
    assert langgraph.sniff(text, formats.head_of(text)) == 0.0


def test_reading_never_writes_the_database_nor_leaves_files_beside_it(lg, tmp_path):
    db = lg.build(tmp_path / "fresh" / "checkpoints.sqlite")
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    files = sorted(p.name for p in db.parent.iterdir())
    langgraph.sniff(db, formats.head_of(db))
    parse(db)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in db.parent.iterdir()) == files  # no -wal/-shm left behind


# -- threads and messages --------------------------------------------------------------------------


def test_each_thread_is_one_session_in_the_order_threads_began(records):
    by_session = sessions(records)
    assert list(by_session) == ["alpha", "beta", "gamma", "delta"]
    for thread, recs in by_session.items():
        assert {r.session_id for r in recs if isinstance(r, MessageRecord)} == {thread}
    assert not [r for r in records if isinstance(r, BadLine)]


def test_messages_are_every_message_the_thread_ever_held_in_order(records, db, lg):
    by_session = sessions(records)
    for thread in ("alpha", "beta", "gamma", "delta"):
        ours = [m for m in main_messages(by_session[thread]) if m.subtype != "compact_boundary"]
        # langgraph's own reading of every checkpoint (its delta reconstruction included)
        expected = lg.history_ids(db, thread)
        assert len(expected) == lg.MAIN_MESSAGES[thread]
        # deepagents >= 0.4 keeps its summary in the event, not in the list: it comes in here
        assert [m.uuid for m in ours if not (thread == "gamma" and m.is_compact_summary)] == expected
        assert len({m.uuid for m in ours}) == len(ours)


def test_a_rewritten_list_is_a_fold_and_the_messages_it_removed_are_kept(records, lg):
    beta = sessions(records)["beta"]
    msgs = main_messages(beta)
    uuids = [m.uuid for m in msgs]
    folds = [r for r in beta if isinstance(r, FoldRecord)]
    assert len(folds) == 1
    fold = folds[0]
    assert fold.summary_text == lg.SUMMARY_BETA
    assert fold.summary_uuid == "beta-summary"
    # the list kept its last 2 messages: preserved, not archived
    assert fold.preserved_uuids == ["beta-ai-3", "tool-call-read-2"]
    marker = uuids.index(fold.boundary_uuid)
    assert msgs[marker].role == "system" and msgs[marker].subtype == "compact_boundary"
    # everything the list held before the rewrite comes before the marker, the summary right after
    assert uuids[marker - 1] == "tool-call-read-2" and uuids[marker + 1] == "beta-summary"
    assert msgs[marker + 1].is_compact_summary and msgs[marker + 1].role == "user"
    assert uuids[:3] == ["beta-h-1", "beta-ai-1", "tool-call-ls-1"]  # removed from the list, still here


def test_a_summarization_event_is_a_fold_with_its_cutoff_summary_and_offload_file(records, db, lg):
    gamma = sessions(records)["gamma"]
    msgs = main_messages(gamma)
    uuids = [m.uuid for m in msgs]
    (fold,) = [r for r in gamma if isinstance(r, FoldRecord)]
    assert fold.summary_text == lg.SUMMARY_GAMMA
    assert fold.metadata["cutoff_index"] == 3
    assert fold.metadata["file_path"] == "/conversation_history/gamma.md"
    assert fold.metadata["file_found"] == "beside the database"
    held = lg.history_ids(db, "gamma")
    # messages[cutoff:] at the time of the summarization stay loaded
    assert fold.preserved_uuids == held[3:5]
    marker = uuids.index(fold.boundary_uuid)
    assert uuids[:marker] == held[:5]  # the 5 messages held when it summarized
    assert uuids[marker + 1] == fold.summary_uuid and msgs[marker + 1].is_compact_summary
    assert uuids[marker + 2:] == held[5:]  # the reply made from the summary


def test_usage_is_one_model_call_per_ai_message_that_reports_it(records):
    usage = [r for r in records if isinstance(r, UsageRecord)]
    # scripts: alpha 2 (+2 in its sub-agent), beta 4, gamma 2 of 3 (one reports none), delta 2
    assert len(usage) == 2 + 2 + 4 + 2 + 2
    by_id = {u.api_message_id: u for u in usage}
    first = by_id["alpha-ai-1"]  # input 1200 = 50 uncached + 150 cache write + 1000 cache read
    assert (first.input_uncached, first.cache_write, first.cache_read, first.output) == (50, 150, 1000, 30)
    assert first.model == "claude-sonnet-4-5" and first.message_uuid == "alpha-ai-1"
    assert "gamma-ai-2" not in by_id
    assert by_id["sub-ai-1"].agent_id and by_id["sub-ai-1"].agent_id.startswith("tools:")


def test_every_tool_call_is_answered_by_its_result(records, lg):
    by_session = sessions(records)
    for thread, recs in by_session.items():
        msgs = [r for r in recs if isinstance(r, MessageRecord)]
        for agent in {m.agent_id for m in msgs}:
            calls = [b.tool_id for m in msgs if m.agent_id == agent for b in m.blocks if b.kind == "tool_call"]
            results = [b.tool_id for m in msgs if m.agent_id == agent for b in m.blocks if b.kind == "tool_result"]
            assert sorted(calls) == sorted(results), (thread, agent)
            expected = lg.TOOL_CALLS[thread] if agent is None else lg.SUB_TOOL_CALLS
            assert len(calls) == expected, (thread, agent)
    beta = main_messages(by_session["beta"])
    failed = [b for m in beta for b in m.blocks if b.kind == "tool_result" and b.tool_id == "call-fail-1"]
    assert failed[0].is_error and failed[0].text == "Error: no such file"


def test_a_sub_graph_namespace_is_an_inline_sub_agent_linked_to_its_task_call(records, db, lg):
    alpha = sessions(records)["alpha"]
    (ns,) = lg.namespaces(db, "alpha")
    sub = [r for r in alpha if isinstance(r, MessageRecord) and r.agent_id is not None]
    assert {m.agent_id for m in sub} == {ns} and {m.agent_kind for m in sub} == {"inline"}
    assert [m.uuid for m in sub] == lg.history_ids(db, "alpha", ns)
    assert len(sub) == lg.SUB_MESSAGES
    (link,) = [r for r in alpha if isinstance(r, AgentLink)]
    assert (link.agent_id, link.tool_use_id, link.agent_type, link.description) == (
        ns, "call-task-1", "general-purpose", "find the config file")


# -- damage ----------------------------------------------------------------------------------------


def test_a_corrupt_blob_is_a_bad_line_and_the_rest_still_imports(db, tmp_path):
    broken = tmp_path / "broken.sqlite"
    shutil.copy(db, broken)
    conn = sqlite3.connect(broken)
    (rowid, cid) = conn.execute(
        "SELECT rowid, checkpoint_id FROM checkpoints WHERE thread_id = 'beta' ORDER BY checkpoint_id LIMIT 1 OFFSET 4"
    ).fetchone()
    conn.execute("UPDATE checkpoints SET checkpoint = x'c1c1c1' WHERE rowid = ?", (rowid,))
    (wrow,) = conn.execute("SELECT rowid FROM writes WHERE thread_id = 'delta' AND channel = 'messages' LIMIT 1").fetchone()
    conn.execute("UPDATE writes SET value = x'c1' WHERE rowid = ?", (wrow,))
    conn.commit()
    conn.close()
    records = parse(broken)
    bad = [r for r in records if isinstance(r, BadLine)]
    assert any(cid in b.reason and "msgpack" in b.reason and b.line_no == rowid for b in bad)
    assert any("write" in b.reason and "delta" in b.reason for b in bad)
    by_session = sessions(records)
    assert list(by_session) == ["alpha", "beta", "gamma", "delta"]
    # the broken checkpoint's messages are in its children: nothing of beta is lost
    assert len([m for m in main_messages(by_session["beta"]) if m.subtype != "compact_boundary"]) == 10


def test_a_file_that_is_not_a_database_is_one_bad_line(tmp_path):
    path = tmp_path / "x.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    records = parse(path)
    assert records and all(isinstance(r, BadLine) and r.line_no == 0 for r in records)


# -- tables written by hand: JSON blobs, msgpack ext types, no langgraph needed ---------------------


def _ext(module: str, cls: str, dump: dict) -> msgpack.ExtType:
    return msgpack.ExtType(5, msgpack.packb([module, cls, dump, "model_validate_json"]))


def test_json_and_msgpack_blobs_written_by_hand_per_the_schema(tmp_path):
    path = tmp_path / "hand.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
          checkpoint_id TEXT NOT NULL, parent_checkpoint_id TEXT, type TEXT, checkpoint BLOB, metadata BLOB,
          PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id));
        CREATE TABLE writes (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
          checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL,
          type TEXT, value BLOB, PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx));
        """
    )
    human = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "HumanMessage"],
             "kwargs": {"content": "hello", "id": "j-h-1"}}
    ai_msg = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
              "kwargs": {"content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
                         "id": "j-ai-1", "tool_calls": [{"name": "ls", "args": {"path": "."}, "id": "t1"}],
                         "usage_metadata": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}}}
    old = {"v": 1, "ts": "2024-05-01T10:00:00+00:00", "id": "c1", "channel_values": {"messages": [human, ai_msg]}}
    conn.execute("INSERT INTO checkpoints VALUES ('old', '', 'c1', NULL, 'json', ?, ?)",
                 (json.dumps(old).encode(), b'{"source": "loop", "step": 1}'))
    tool = _ext("langchain_core.messages.tool", "ToolMessage",
                {"content": "a.txt", "type": "tool", "id": "j-t-1", "tool_call_id": "t1", "status": "success"})
    conn.execute("INSERT INTO writes VALUES ('old', '', 'c1', 'task-1', 0, 'messages', 'msgpack', ?)",
                 (msgpack.packb([tool]),))
    conn.commit()
    conn.close()
    records = parse(path)
    assert not [r for r in records if isinstance(r, BadLine)]
    msgs = [r for r in records if isinstance(r, MessageRecord)]
    assert [(m.uuid, m.role) for m in msgs] == [("j-h-1", "user"), ("j-ai-1", "assistant"), ("j-t-1", "tool")]
    # the Anthropic tool_use part and the tool_calls entry are one call, with the parsed args
    calls = [b for b in msgs[1].blocks if b.kind == "tool_call"]
    assert [(b.tool_id, b.tool_input) for b in calls] == [("t1", {"path": "."})]
    assert msgs[2].blocks[0].tool_id == "t1" and msgs[2].blocks[0].text == "a.txt"
    (usage,) = [r for r in records if isinstance(r, UsageRecord)]
    assert (usage.input_uncached, usage.output) == (10, 2)
    assert msgs[0].timestamp.year == 2024
