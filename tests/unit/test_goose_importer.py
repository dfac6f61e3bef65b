"""The Goose importer (``~/.local/share/goose/sessions/sessions.db``, issue 39). No Goose CLI installs
here from a registry (its releases are GitHub binaries; PyPI's ``goose-sdk`` has no session store), so
the store is written by tests/goose_store.py from the facts of Goose's own source.

Expected numbers are counted by hand from that module's rows (its docstring lists them), never taken
from the importer: a model call is a run of assistant messages; Goose's ``input_tokens`` counts the
cache reads and writes inside, so the uncached input is input - read - write."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.formats import ParseInput
from tests.goose_store import CHILD, LEGACY_ID, MAIN, MANUAL, OTHER, SUMMARY, write_legacy, write_store
from tests.importers import of


def read(path: Path) -> list:
    fmt = formats.claim(path)
    assert fmt is not None and fmt.name == "goose", [(s, f.name) for s, f in formats.scores(path)]
    return list(fmt.parse(ParseInput(path=path)))


def by_session(records: list) -> dict[str, list]:
    """The records of each top session (each ends with its SessionInfo)."""
    out, current = {}, []
    for r in records:
        current.append(r)
        if isinstance(r, SessionInfo):
            out[r.external_id] = current
            current = []
    return out


def test_a_store_is_claimed_by_goose_alone_and_found_in_its_folder(tmp_path):
    path = write_store(tmp_path / "goose" / "sessions" / "sessions.db")
    assert [f.name for _, f in formats.scores(path)] == ["goose"]
    found = formats.discover(tmp_path / "goose")
    assert [(s.format, s.main) for s in found.sessions] == [("goose", path)]
    assert "~/.local/share/goose/sessions" in formats.get("goose").locations


def test_sessions_messages_calls_tools_folds_and_the_sub_agent(tmp_path):
    sessions = by_session(read(write_store(tmp_path / "sessions.db")))
    assert set(sessions) == {MAIN, OTHER}  # the sub-agent session is no conversation of its own
    main = sessions[MAIN]
    messages = [m for m in of(main, MessageRecord) if m.subtype != "compact_boundary"]
    own = [m for m in messages if m.agent_id is None]
    child = [m for m in messages if m.agent_id == CHILD]
    # By hand: 15 messages in the main session, 4 in its sub-agent.
    assert (len(own), len(child)) == (15, 4)
    # user: msg_1, msg_9, msg_10 (the summary), msg_12; assistant: 2, 4, 6, 8, 11 (Goose's continuation),
    # 13, 15; tool (tool responses only): 3, 5, 7, 14.
    assert Counter(m.role for m in own) == {"user": 4, "assistant": 7, "tool": 4}
    calls = of(main, UsageRecord)
    # 6 calls of the main session (messages 2, 4, 6, 8, 13, 15), the compaction's, 2 of the sub-agent.
    assert len([c for c in calls if c.agent_id is None]) == 7
    assert [c.api_message_id for c in calls if c.agent_id == CHILD] == ["sub_2", "sub_4"]
    tools = [b.tool_name for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert tools == ["developer__shell", "developer__text_editor", "delegate", "developer__text_editor", "developer__shell"]
    results = {b.tool_id: b for m in messages for b in m.blocks if b.kind == "tool_result"}
    assert set(results) == {"tr1", "tr2", "tr3", "tr4", "st1"}
    assert results["tr4"].is_error and results["tr4"].text == "permission denied"
    [link] = of(main, AgentLink)
    assert (link.agent_id, link.tool_use_id) == (CHILD, "tr3")
    info = of(main, SessionInfo)[0]
    assert (info.title, info.cwd, info.models) == ("Fix the parser", "/home/dev/proj", ["claude-sonnet-4-5"])
    assert len(of(sessions[OTHER], MessageRecord)) == 2 and len(of(sessions[OTHER], UsageRecord)) == 1


def test_usage_is_the_ledger_row_of_each_call_with_the_cache_taken_out(tmp_path):
    main = by_session(read(write_store(tmp_path / "sessions.db")))[MAIN]
    calls = {c.api_message_id: c for c in of(main, UsageRecord)}
    # msg_4's row: input 1400 with 1000 read from the cache and 300 written to it -> 100 uncached.
    c = calls["msg_4"]
    assert (c.input_uncached, c.cache_read, c.cache_write, c.output) == (100, 1000, 300, 60)
    # msg_15 has no ledger row: a call of zero usage, flagged unmeasured (shown as estimated).
    assert (calls["msg_15"].input_uncached, calls["msg_15"].output) == (0, 0)
    last = next(m for m in of(main, MessageRecord) if m.uuid == "msg_15")
    assert last.flags.get("usage_unmeasured") is True
    # The carried-forward row (900 in, 90 out) is no call.
    assert 90 not in [c.output for c in calls.values()]


def test_a_compaction_is_a_fold_with_its_summary_and_the_summarizer_call_at_its_marker(tmp_path):
    main = by_session(read(write_store(tmp_path / "sessions.db")))[MAIN]
    [fold] = of(main, FoldRecord)
    records = of(main, MessageRecord)
    uuids = [m.uuid for m in records]
    assert (fold.kind, fold.trigger, fold.summary_uuid, fold.summary_text) == ("compact", "auto", "msg_10", SUMMARY)
    # The marker stands right before the summary; every message set aside by Goose comes before it.
    assert uuids.index(fold.boundary_uuid) == uuids.index("msg_10") - 1
    assert uuids.index("msg_9") < uuids.index(fold.boundary_uuid)
    summarizer = next(c for c in of(main, UsageRecord) if c.message_uuid == fold.boundary_uuid)
    assert (summarizer.input_uncached, summarizer.output) == (2100, 150)
    # Goose's own continuation text is no model call.
    continuation = next(m for m in records if m.uuid == "msg_11")
    assert continuation.api_message_id is None and continuation.flags.get("synthetic") is True


def test_a_compaction_asked_by_the_user_is_manual(tmp_path):
    main = by_session(read(write_store(tmp_path / "sessions.db", manual=True)))[MAIN]
    [fold] = of(main, FoldRecord)
    assert fold.trigger == "manual"


def test_a_message_that_cannot_be_read_is_said_and_the_rest_is_kept(tmp_path):
    path = write_store(tmp_path / "sessions.db")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE messages SET content_json = 'not json' WHERE message_id = 'hi_1'")
    conn.commit()
    conn.close()
    records = read(path)
    [bad] = of(records, BadLine)
    assert "Goose message hi_1" in bad.reason and "not a JSON list" in bad.reason
    assert len(of(by_session(records)[OTHER], MessageRecord)) == 2
    assert len([m for m in of(by_session(records)[MAIN], MessageRecord) if m.subtype != "compact_boundary"]) == 19


def test_another_sqlite_store_is_not_claimed_and_is_refused_naming_goose(tmp_path):
    path = tmp_path / "sessions.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, body TEXT)")
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY)")
    conn.commit()
    conn.close()
    assert "goose" not in [f.name for _, f in formats.scores(path)]
    records = list(formats.get("goose").parse(ParseInput(path=path)))
    [bad] = of(records, BadLine)
    assert bad.reason.startswith("not a Goose sessions.db")


def test_message_times_in_milliseconds_still_find_their_ledger_rows(tmp_path):
    # Goose tells seconds from milliseconds by magnitude (MILLISECOND_TIMESTAMP_THRESHOLD): a store
    # whose message times are in milliseconds reads the same calls and usage.
    path = write_store(tmp_path / "sessions.db")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE messages SET created_timestamp = created_timestamp * 1000")
    conn.commit()
    conn.close()
    main = by_session(read(path))[MAIN]
    calls = {c.api_message_id: c for c in of(main, UsageRecord)}
    assert (calls["msg_4"].input_uncached, calls["msg_4"].cache_read, calls["msg_4"].output) == (100, 1000, 60)
    assert [m.uuid for m in of(main, MessageRecord) if m.flags.get("usage_unmeasured")] == ["msg_15"]


def test_a_session_file_of_goose_before_its_store_is_read(tmp_path):
    path = write_legacy(tmp_path / "sessions")
    records = read(path)
    assert not of(records, BadLine)
    messages = of(records, MessageRecord)
    # By hand (tests/goose_store.py): 5 messages, calls at messages 2 and 4, one shell call answered.
    assert len(messages) == 5 and [m.role for m in messages] == ["user", "assistant", "tool", "assistant", "user"]
    calls = of(records, UsageRecord)
    assert len(calls) == 2 and all(c.input_uncached == c.output == 0 for c in calls)
    result = next(b for m in messages for b in m.blocks if b.kind == "tool_result")
    assert (result.tool_id, result.text) == ("t1", "README.md\napp.py")
    [info] = of(records, SessionInfo)
    assert (info.external_id, info.title, info.cwd) == (LEGACY_ID, "List the files", "/home/dev/old")


def test_session_files_beside_the_store_are_left_to_it(tmp_path):
    # Goose copies them into the store when it makes it (import_legacy), then writes only there.
    folder = tmp_path / "goose" / "sessions"
    store = write_store(folder / "sessions.db")
    write_legacy(folder)
    assert [s.main for s in formats.discover(tmp_path / "goose").sessions] == [store]


def test_a_broken_line_of_a_session_file_is_said_and_the_rest_kept(tmp_path):
    path = write_legacy(tmp_path)
    lines = path.read_text().splitlines()
    lines.insert(3, "{not json")
    path.write_text("\n".join(lines) + "\n")
    records = read(path)
    [bad] = of(records, BadLine)
    assert bad.line_no == 4 and "Goose session line 4" in bad.reason
    assert len(of(records, MessageRecord)) == 5


def test_a_second_compaction_keeps_the_first_fold(tmp_path):
    # As compact_messages leaves a store compacted twice: everything before hidden from the agent (the
    # first summary and continuation then hidden from both), then a new summary and continuation (a
    # compaction asked by the user: no prompt set aside).
    path = write_store(tmp_path / "sessions.db")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE messages SET metadata_json = ? WHERE session_id = ? AND message_id IN ('msg_10', 'msg_11')",
                 ('{"userVisible": false, "agentVisible": false}', MAIN))
    conn.execute("UPDATE messages SET metadata_json = ? WHERE session_id = ? AND message_id IN "
                 "('msg_12', 'msg_13', 'msg_14', 'msg_15')", ('{"userVisible": true, "agentVisible": false}', MAIN))
    for mid, role, text, meta in (("msg_16", "user", "Second summary", '{"userVisible": false, "agentVisible": true}'),
                                  ("msg_17", "assistant", MANUAL, '{"userVisible": false, "agentVisible": true}')):
        conn.execute("INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) "
                     "VALUES (?, ?, ?, ?, 1772400030, ?)", (mid, MAIN, role, json.dumps([{"type": "text", "text": text}]), meta))
    conn.commit()
    conn.close()
    folds = of(by_session(read(path))[MAIN], FoldRecord)
    assert [(f.summary_uuid, f.trigger) for f in folds] == [("msg_10", "auto"), ("msg_16", "manual")]
