"""The efferent importer (formats.md §10.1): both schema lines of its SQLite store, written here
with sqlite3 exactly as the spec describes them (efferent publishes no sample databases).

Expected numbers come from the rows this module writes, counted with plain sqlite3 and json,
never from the importer's own helpers.
"""

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.efferent import parser as efferent
from contextviewer.importers.formats import ParseInput

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z in epoch ms, as efferent writes created_at
MODEL = "anthropic:claude-sonnet-4-5"
CLIPPED = (
    "src/store.ts:12: save(\n"
    "[…compaction: ~5200 tokens of this grep output omitted. 37 more matches in 9 files. "
    "To retrieve it, re-run grep with a narrower pattern.]\n"
    "src/store.ts:400: save("
)
SUMMARY_1 = "Goal: fix the failing parser test.\nDone: parser.py line 40 off-by-one fixed."
SUMMARY_2 = "Goal: fix the failing parser test; the suite now has 1 failure in test_cli.py."


def _usage(key: str, inp: int, out: int, cached: int, model: str | None = MODEL) -> dict:
    usage = {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out, "cacheReadTokens": cached}
    if model:
        usage["model"] = model
    return {"providerOptions": {key: usage}}


def _call(call_id: str, name: str, args: dict) -> dict:
    return {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": args}


def _result(call_id: str, name: str, output, **extra) -> dict:
    return {"type": "tool-result", "toolCallId": call_id, "toolName": name, "output": output, **extra}


# -- the current line: <cwd>/.efferent/smith.db --------------------------------------------------

CURRENT_MESSAGES = [  # conversation c1: (position, content as stored, created_at offset in seconds)
    (0, {"role": "user", "content": "Fix the failing test in parser.py"}, 0),
    (1, {"role": "assistant", "content": [
        {"type": "reasoning", "text": "Read the parser first."},
        {"type": "text", "text": "Reading parser.py."},
        _call("call-1", "read_file", {"path": "parser.py"}),
    ], **_usage("engine", 1200, 80, 1000)}, 1),
    (2, {"role": "tool", "content": [_result("call-1", "read_file", {"type": "text", "value": "def parse(s): ..."})]}, 2),
    (3, {"role": "assistant", "content": [_call("call-2", "grep", {"pattern": "save("})], **_usage("engine", 2500, 40, 1200)}, 3),
    (4, {"role": "tool", "content": [_result("call-2", "grep", CLIPPED)]}, 4),
    (5, {"role": "assistant", "content": [{"type": "text", "text": "Fixed the off-by-one."}], **_usage("engine", 3100, 25, 2500, None)}, 5),
    # checkpoint 1 at position 5, written at +6 s
    (6, {"role": "user", "content": "Now run the suite"}, 7),
    (7, {"role": "assistant", "content": [_call("call-3", "bash", {"command": "pytest -q"})], **_usage("engine", 1500, 30, 0)}, 8),
    (8, {"role": "tool", "content": [_result("call-3", "bash", {"type": "error-text", "value": "1 failed"}, isError=True)]}, 9),
    (9, {"role": "user", "content": "Steering: keep the public API unchanged."}, 10),
    # checkpoint 2 (a mid-run checkpointAt position 7), written at +11 s: 8 and 9 are its kept tail
    (10, {"role": "assistant", "content": [{"type": "text", "text": "Understood."}]}, 12),  # no usage recorded
    (11, "{not json", 13),
    (12, "[1, 2]", 14),
    (13, {"role": "critic", "content": "a role efferent may add later"}, 15),
]
CURRENT_CHECKPOINTS = [("c1", 5, SUMMARY_1, 6), ("c1", 7, SUMMARY_2, 11)]
FORK_MESSAGES = [(0, CURRENT_MESSAGES[0][1], 0), (1, CURRENT_MESSAGES[1][1], 1)]


def write_current_store(path: Path) -> Path:
    """A current-line store: conversation c1 (two checkpoints, clipped and failed tool results,
    bad rows), its fork c2 and an empty conversation c3."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(
        """
        CREATE TABLE conversations (id TEXT PRIMARY KEY, workspace_dir TEXT, title TEXT, created_at INTEGER NOT NULL);
        CREATE TABLE messages (conversation_id TEXT NOT NULL, position INTEGER NOT NULL, content TEXT NOT NULL,
                               created_at INTEGER NOT NULL, PRIMARY KEY (conversation_id, position));
        CREATE TABLE checkpoints (conversation_id TEXT NOT NULL, message_position INTEGER NOT NULL,
                                  summary TEXT NOT NULL, created_at INTEGER NOT NULL);
        PRAGMA user_version = 2;
        """
    )
    conn.executemany(
        "INSERT INTO conversations VALUES (?, ?, ?, ?)",
        [
            ("c1", "/work/proj", "fix the parser", T0),
            ("c2", "/work/proj", "fork: fix the parser", T0 + 60_000),
            ("c3", "/work/other", None, T0 + 120_000),
        ],
    )
    rows = [("c1", p, c if isinstance(c, str) else json.dumps(c), T0 + s * 1000) for p, c, s in CURRENT_MESSAGES]
    rows += [("c2", p, json.dumps(c), T0 + 60_000 + s * 1000) for p, c, s in FORK_MESSAGES]
    conn.executemany("INSERT INTO messages VALUES (?, ?, ?, ?)", rows)
    conn.executemany(
        "INSERT INTO checkpoints VALUES (?, ?, ?, ?)", [(c, p, s, T0 + t * 1000) for c, p, s, t in CURRENT_CHECKPOINTS]
    )
    conn.commit()
    conn.close()
    return path


# -- the older line: ~/.efferent/efferent.db ----------------------------------------------------

OLDER_MESSAGES = [  # conversation "conv-old": (id, position, role, content without its role)
    (101, 0, "user", {"content": "Refactor the store; find every caller of Store.save first"}),
    (102, 1, "assistant", {"content": [
        {"type": "text", "text": "Starting an explorer."},
        _call("call-a", "run_agent", {"task": "find callers of Store.save"}),
    ], **_usage("efferent", 900, 60, 0, None)}),
    (103, 2, "tool", {"content": [_result("call-a", "run_agent", {"type": "json", "value": {"nodeId": "node-1", "name": "explorer", "status": "done"}})]}),
    (104, 3, "assistant", {"content": [{"type": "text", "text": "3 callers; refactoring."}], **_usage("efferent", 1400, 90, 800, None)}),
    # checkpoint 1 at position 3
    (105, 4, "user", {"content": "continue"}),
    (106, 5, "assistant", {"content": [{"type": "text", "text": "Done."}], **_usage("efferent", 700, 10, 500, None)}),
]
NODE_MESSAGES = [  # context_messages: (id, node_id, position, role, content)
    (201, "node-1", 0, "user", {"content": "Find every caller of Store.save"}),  # the seed
    (202, "node-1", 1, "assistant", {"content": [_call("call-b", "grep", {"pattern": "Store.save"})], **_usage("efferent", 400, 20, 0, None)}),
    (203, "node-1", 2, "tool", {"content": [_result("call-b", "grep", "a.ts:1\nb.ts:2\nc.ts:3")]}),
    (204, "node-1", 3, "assistant", {"content": [{"type": "text", "text": "Found 3 call sites."}]}),
    (205, "node-1", 4, "assistant", "{broken"),
    (301, "node-2", 0, "user", {"content": "Try the alternative layout"}),
]
OLDER_SUMMARY = "Goal: refactor the store. Callers: a.ts, b.ts, c.ts."


def write_older_store(path: Path) -> Path:
    """An older-line store: one conversation with a checkpoint and a run_agent sub-agent (node-1,
    4 good rows and a broken one) and a branched node without a tool call (node-2)."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE conversations (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, workspace_dir TEXT,
                                    title TEXT, pending_prompt TEXT, model TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY, conversation_id TEXT NOT NULL, position INTEGER NOT NULL,
                               role TEXT NOT NULL, content TEXT NOT NULL, created_at INTEGER NOT NULL);
        CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, conversation_id TEXT NOT NULL, message_position INTEGER NOT NULL,
                                  summary TEXT NOT NULL, created_at INTEGER NOT NULL);
        CREATE TABLE context_nodes (id TEXT PRIMARY KEY, parent_id TEXT, root_conversation_id TEXT NOT NULL,
                                    edge_kind TEXT, seed TEXT, status TEXT, return_summary TEXT, files_changed TEXT,
                                    usage TEXT, title TEXT, kind TEXT, stop_reason TEXT, seed_message_count INTEGER,
                                    created_at INTEGER, ended_at INTEGER);
        CREATE TABLE context_messages (id INTEGER PRIMARY KEY, node_id TEXT NOT NULL, position INTEGER NOT NULL,
                                       role TEXT NOT NULL, content TEXT NOT NULL, created_at INTEGER NOT NULL);
        """
    )
    conn.execute(
        "INSERT INTO conversations VALUES (?, ?, ?, ?, ?, ?)",
        ("conv-old", T0, "/work/store", "refactor the store", None, "openai:gpt-5"),
    )
    conn.executemany(
        "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)",
        [(i, "conv-old", p, r, json.dumps(c), T0 + p * 1000) for i, p, r, c in OLDER_MESSAGES],
    )
    conn.execute("INSERT INTO checkpoints VALUES (1, 'conv-old', 3, ?, ?)", (OLDER_SUMMARY, T0 + 3500))
    conn.executemany(
        "INSERT INTO context_nodes VALUES (?, ?, 'conv-old', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            ("node-1", None, "spawned", json.dumps({"kind": "task", "prompt": "find callers"}), "done",
             "Found 3 call sites.", json.dumps([]), json.dumps({"inputTokens": 400, "outputTokens": 20, "cacheReadTokens": 0}),
             "explorer", "explore", json.dumps({"reason": "finished"}), 1, T0 + 1100, T0 + 1900),
            ("node-2", None, "branched", json.dumps({"kind": "selection"}), "running", None, None, None,
             "alternative", "branch", None, 1, T0 + 5100, None),
        ],
    )
    conn.executemany(
        "INSERT INTO context_messages VALUES (?, ?, ?, ?, ?, ?)",
        [(i, n, p, r, c if isinstance(c, str) else json.dumps(c), T0 + 1200 + p * 100) for i, n, p, r, c in NODE_MESSAGES],
    )
    conn.commit()
    conn.close()
    return path


def run(path: Path) -> list:
    return list(efferent.parse(ParseInput(path=path)))


def by_session(records: list) -> list[list]:
    sessions, current = [], []
    for record in records:
        current.append(record)
        if isinstance(record, SessionInfo):
            sessions.append(current)
            current = []
    assert current == [], "records after the last SessionInfo"
    return sessions


def _count_rows(path: Path, query: str, args=()) -> list:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


def _readable(content: str) -> dict | None:
    try:
        value = json.loads(content)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# -- the current line ---------------------------------------------------------------------------


def test_current_line_conversations_messages_checkpoints_and_usage(tmp_path):
    path = write_current_store(tmp_path / "smith.db")
    records = run(path)
    sessions = by_session(records)
    # One SessionInfo per conversation row: c1, c2, c3 (empty).
    assert [s[-1].external_id for s in sessions] == ["c1", "c2", "c3"]
    c1 = sessions[0]

    # Independent count: c1's rows whose content is a JSON object are messages; the rest are bad.
    rows = _count_rows(path, "SELECT position, content FROM messages WHERE conversation_id = 'c1' ORDER BY position")
    good = [(p, _readable(c)) for p, c in rows if _readable(c) is not None]
    assert len(rows) == 14 and len(good) == 12
    messages = [r for r in c1 if isinstance(r, MessageRecord)]
    markers = [m for m in messages if m.subtype == "compact_boundary"]
    assert len(markers) == 2  # one per checkpoint row
    assert len(messages) == 12 + 2
    assert [m.uuid for m in messages if m.subtype is None] == [f"c1:{p}" for p, _ in good]
    bad = [r for r in c1 if isinstance(r, BadLine)]
    assert len(bad) == 2 and "not valid JSON" in bad[0].reason and "a JSON array" in bad[1].reason

    # The markers sit right after the checkpoint's position.
    order = [m.uuid for m in messages]
    assert order.index(markers[0].uuid) == order.index("c1:5") + 1
    assert order.index(markers[1].uuid) == order.index("c1:7") + 1

    # Roles and blocks: reasoning -> thinking, tool-call/tool-result, an unknown role -> other.
    first_call = next(m for m in messages if m.uuid == "c1:1")
    assert [b.kind for b in first_call.blocks] == ["thinking", "text", "tool_call"]
    assert first_call.blocks[2].tool_input == {"path": "parser.py"}
    assert next(m for m in messages if m.uuid == "c1:13").role == "other"
    tool_calls = sum(1 for m in messages for b in m.blocks if b.kind == "tool_call")
    assert tool_calls == sum(1 for _, c in good for part in (c.get("content") if isinstance(c.get("content"), list) else []) if part["type"] == "tool-call") == 3
    failed = next(m for m in messages if m.uuid == "c1:8")
    assert failed.role == "tool" and failed.blocks[0].is_error and failed.blocks[0].text == "1 failed"

    # Clipped at append time: the marker text stays visible as stored, and the message says so.
    clipped = next(m for m in messages if m.uuid == "c1:4")
    assert clipped.blocks[0].text == CLIPPED
    assert clipped.flags["clipped"] is True and clipped.flags["clipped_tokens_omitted"] == 5200

    # Usage: one model call per assistant row with providerOptions.engine; input split as OpenAI's.
    with_usage = [c for _, c in good if c.get("role") == "assistant" and "providerOptions" in c]
    usage = [r for r in c1 if isinstance(r, UsageRecord)]
    assert len(usage) == len(with_usage) == 4
    first = usage[0]
    assert (first.input_uncached, first.cache_read, first.cache_write, first.output) == (200, 1000, 0, 80)
    assert first.model == "claude-sonnet-4-5" and first.message_uuid == "c1:1"
    assert next(m for m in messages if m.uuid == "c1:10").api_message_id == "c1:10"  # a call, but unmeasured
    assert not any(u.message_uuid == "c1:10" for u in usage)

    # Folds: summary text from the checkpoint row; the mid-run one keeps the tail written before it.
    folds = [r for r in c1 if isinstance(r, FoldRecord)]
    assert [f.summary_text for f in folds] == [SUMMARY_1, SUMMARY_2]
    assert [f.boundary_uuid for f in folds] == [m.uuid for m in markers]
    assert folds[0].preserved_uuids == [] and folds[1].preserved_uuids == ["c1:8", "c1:9"]
    assert folds[0].tokens_before == 3100 + 25  # the last measured call before position 5
    assert folds[1].tokens_before == 1500 + 30

    info = c1[-1]
    assert info.title == "fix the parser" and info.cwd == "/work/proj" and info.models == ["claude-sonnet-4-5"]
    assert info.started_at == datetime.fromtimestamp(T0 / 1000, tz=UTC)

    # The fork: two copied rows, its own uuids; the empty conversation: only its SessionInfo.
    assert [m.uuid for m in sessions[1] if isinstance(m, MessageRecord)] == ["c2:0", "c2:1"]
    assert sessions[1][-1].title == "fork: fix the parser"
    assert sessions[2] == [sessions[2][-1]]


def test_current_line_uuids_are_stable_across_reads(tmp_path):
    path = write_current_store(tmp_path / "smith.db")
    first = [(r.uuid, r.role) for r in run(path) if isinstance(r, MessageRecord)]
    second = [(r.uuid, r.role) for r in run(path) if isinstance(r, MessageRecord)]
    assert first == second and len(set(u for u, _ in first if u.startswith("c1"))) == 14


# -- the older line -----------------------------------------------------------------------------


def test_a_checkpoint_with_no_call_since_the_one_before_has_no_window_before_it(tmp_path):
    path = write_current_store(tmp_path / "smith.db")
    conn = sqlite3.connect(path)
    # A third checkpoint at position 9: after checkpoint 2 (position 7) come a tool result and a
    # user message, no model call. Its window before is unknown, not the 1,530 measured at 7.
    conn.execute("INSERT INTO checkpoints VALUES ('c1', 9, 'Third summary.', ?)", (T0 + 11_500,))
    conn.commit()
    conn.close()
    folds = [r for r in run(path) if isinstance(r, FoldRecord) and r.metadata["message_position"] in (5, 7, 9)]
    assert [(f.metadata["message_position"], f.tokens_before) for f in folds] == [(5, 3100 + 25), (7, 1500 + 30), (9, None)]


def test_older_line_roles_usage_checkpoint_and_subagents(tmp_path):
    path = write_older_store(tmp_path / "efferent.db")
    sessions = by_session(run(path))
    assert len(sessions) == 1
    records = sessions[0]
    messages = [r for r in records if isinstance(r, MessageRecord)]
    main = [m for m in messages if m.agent_id is None]
    # 6 message rows + 1 checkpoint marker; roles rebuilt from the role column.
    assert len(main) == len(OLDER_MESSAGES) + 1
    assert [m.uuid for m in main if m.subtype is None] == [f"message-{i}" for i, *_ in OLDER_MESSAGES]
    assert [m.role for m in main if m.subtype is None] == [r for _, _, r, _ in OLDER_MESSAGES]
    assert main[4].subtype == "compact_boundary"  # after position 3 (the 4th row)

    usage = [r for r in records if isinstance(r, UsageRecord)]
    rows = _count_rows(path, "SELECT content FROM messages WHERE role = 'assistant'")
    node_rows = _count_rows(path, "SELECT content FROM context_messages WHERE role = 'assistant'")
    measured = [c for (c,) in rows + node_rows if (_readable(c) or {}).get("providerOptions")]
    assert len(usage) == len(measured) == 4
    assert [(u.input_uncached, u.cache_read, u.output) for u in usage if u.agent_id is None] == [(900, 0, 60), (600, 800, 90), (200, 500, 10)]
    assert [u.agent_id for u in usage if u.agent_id] == ["node-1"]

    folds = [r for r in records if isinstance(r, FoldRecord)]
    assert len(folds) == 1 and folds[0].summary_text == OLDER_SUMMARY

    # Sub-agents: every context_messages row that reads, plus the node row, is an inline message.
    node_rows_all = _count_rows(path, "SELECT node_id, content FROM context_messages")
    readable = [n for n, c in node_rows_all if _readable(c) is not None]
    assert len(node_rows_all) == 6 and len(readable) == 5
    sub = [m for m in messages if m.agent_id]
    assert all(m.agent_kind == "inline" for m in sub)
    assert len([m for m in sub if m.agent_id == "node-1"]) == readable.count("node-1") + 1 == 5
    assert len([m for m in sub if m.agent_id == "node-2"]) == readable.count("node-2") + 1 == 2
    seed = [m for m in sub if m.flags.get("seed")]
    assert [m.uuid for m in seed] == ["context-message-201", "context-message-301"]
    node_message = next(m for m in sub if m.subtype == "agent_node" and m.agent_id == "node-1")
    assert "Found 3 call sites." in node_message.blocks[0].text
    assert node_message.flags["cumulative_usage"] == {"inputTokens": 400, "outputTokens": 20, "cacheReadTokens": 0}
    bad = [r for r in records if isinstance(r, BadLine)]
    assert len(bad) == 1 and "node node-1" in bad[0].reason and "not valid JSON" in bad[0].reason

    links = {link.agent_id: link for link in records if isinstance(link, AgentLink)}
    assert set(links) == {"node-1", "node-2"}
    assert links["node-1"].tool_use_id == "call-a"  # through the run_agent result's nodeId
    assert links["node-1"].agent_type == "explore" and links["node-1"].description == "explorer"
    assert links["node-2"].tool_use_id is None

    info = records[-1]
    assert info.external_id == "conv-old" and info.models == ["gpt-5"]  # the conversation's model column


# -- sniffing and bad input ----------------------------------------------------------------------


def test_sniff_claims_both_lines_and_nothing_else(tmp_path):
    current = write_current_store(tmp_path / "smith.db")
    older = write_older_store(tmp_path / "efferent.db")
    for path in (current, older):
        assert efferent.sniff(path, formats.head_of(path)) == 0.9
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE conversations (id TEXT)")
    conn.execute("CREATE TABLE messages (id TEXT, body TEXT)")
    conn.commit()
    conn.close()
    assert efferent.sniff(other, formats.head_of(other)) == 0
    text = tmp_path / "notes.jsonl"
    text.write_text('{"role": "user", "content": "hi"}\n')
    assert efferent.sniff(text, formats.head_of(text)) == 0


def test_sniff_opens_read_only_and_leaves_the_store_untouched(tmp_path):
    path = write_current_store(tmp_path / "smith.db")
    before = path.read_bytes()
    names = sorted(p.name for p in tmp_path.iterdir())
    efferent.sniff(path, formats.head_of(path))
    run(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == names


def test_a_broken_database_is_one_bad_line_and_no_crash(tmp_path):
    path = tmp_path / "smith.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    records = run(path)
    assert isinstance(records[0], BadLine) and records[0].line_no == 0
    assert isinstance(records[-1], SessionInfo)
    missing = tmp_path / "missing.db"
    records = run(missing)
    assert isinstance(records[0], BadLine) and not missing.exists()


def test_a_store_without_checkpoints_table_says_so(tmp_path):
    path = tmp_path / "smith.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE conversations (id TEXT)")
    conn.execute("CREATE TABLE messages (conversation_id TEXT, position INTEGER, content TEXT)")
    conn.commit()
    conn.close()
    records = run(path)
    assert "no checkpoints table" in records[0].reason


@pytest.mark.parametrize("name", ["smith.db", "efferent.db"])
def test_registered_format_claims_the_store(tmp_path, name):
    path = (write_current_store if name == "smith.db" else write_older_store)(tmp_path / name)
    fmt = formats.claim(path)
    assert fmt is not None and fmt.name == "efferent" and fmt.multi_session


def test_a_store_being_written_is_read_through_its_wal(tmp_path):
    path = write_current_store(tmp_path / "smith.db")
    writer = sqlite3.connect(path)  # efferent running: its latest rows are still in smith.db-wal
    try:
        writer.execute("INSERT INTO messages VALUES ('c3', 0, ?, ?)", (json.dumps({"role": "user", "content": "late"}), T0))
        writer.commit()
        assert (tmp_path / "smith.db-wal").exists()
        records = run(path)
    finally:
        writer.close()
    late = [r for r in records if isinstance(r, MessageRecord) and r.session_id == "c3"]
    assert [m.blocks[0].text for m in late] == ["late"]
