"""opencode: the JSON storage folder and the SQLite opencode.db read into the same records;
steps as model calls, tool results (pruned ones flagged), compaction folds, sub-agent sessions.
A storage folder is written here (and the same data as a database); the two fixture storage
trees are checked against plain counting of their files."""

import json
import sqlite3
from pathlib import Path

import pytest

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.opencode import parser as opencode

T0 = 1_760_000_000_000

SESSIONS = [
    {"id": "ses_001", "version": "1.1.0", "projectID": "prj", "directory": "/work/app", "title": "Fix the parser",
     "time": {"created": T0, "updated": T0 + 60_000}},
    {"id": "ses_002", "version": "1.1.0", "projectID": "prj", "directory": "/work/app", "parentID": "ses_001",
     "title": "Find the tests (@explore subagent)", "time": {"created": T0 + 5_000, "updated": T0 + 9_000}},
]
TOKENS_1 = {"input": 900, "output": 40, "reasoning": 10, "cache": {"read": 12_000, "write": 300}}
TOKENS_2 = {"input": 50, "output": 70, "reasoning": 0, "cache": {"read": 13_000, "write": 0}}
MESSAGES = {
    "ses_001": [
        ({"id": "msg_001", "role": "user", "time": {"created": T0 + 1_000}, "agent": "build",
          "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4"}},
         [{"id": "prt_001", "type": "text", "text": "Fix the parser, run the tests"}]),
        ({"id": "msg_002", "role": "assistant", "parentID": "msg_001", "time": {"created": T0 + 2_000, "completed": T0 + 20_000},
          "modelID": "claude-sonnet-4", "providerID": "anthropic", "tokens": TOKENS_2, "cost": 0.01, "finish": "stop"},
         [{"id": "prt_002", "type": "step-start", "snapshot": "abc"},
          {"id": "prt_003", "type": "reasoning", "text": "Look for the tests first."},
          {"id": "prt_004", "type": "tool", "callID": "call_task", "tool": "task",
           "state": {"status": "completed", "input": {"description": "Find the tests", "prompt": "where are the tests?", "subagent_type": "explore"},
                     "output": "task_id: ses_002\n\n<task_result>\ntests/ holds them\n</task_result>",
                     "metadata": {"sessionId": "ses_002"}, "time": {"start": T0 + 3_000, "end": T0 + 10_000}}},
          {"id": "prt_005", "type": "step-finish", "reason": "tool-calls", "tokens": TOKENS_1, "cost": 0.005},
          {"id": "prt_006", "type": "step-start", "snapshot": "def"},
          {"id": "prt_007", "type": "text", "text": "Running them now."},
          {"id": "prt_008", "type": "tool", "callID": "call_bash", "tool": "bash",
           "state": {"status": "completed", "input": {"command": "pytest"}, "output": "3 passed",
                     "time": {"start": T0 + 11_000, "end": T0 + 12_000, "compacted": T0 + 40_000}}},
          {"id": "prt_009", "type": "tool", "callID": "call_edit", "tool": "edit",
           "state": {"status": "error", "input": {"filePath": "x.py"}, "error": "file not found",
                     "time": {"start": T0 + 12_000, "end": T0 + 12_500}}},
          {"id": "prt_010", "type": "patch", "hash": "f00", "files": ["/work/app/parser.py"]},
          {"id": "prt_011", "type": "step-finish", "reason": "stop", "tokens": TOKENS_2, "cost": 0.005}]),
        ({"id": "msg_003", "role": "user", "time": {"created": T0 + 30_000}},
         [{"id": "prt_012", "type": "compaction", "auto": True, "tail_start_id": "msg_001"}]),
        ({"id": "msg_004", "role": "assistant", "summary": True, "time": {"created": T0 + 31_000, "completed": T0 + 35_000},
          "modelID": "claude-sonnet-4", "tokens": {"input": 5, "output": 200, "reasoning": 0, "cache": {"read": 0, "write": 0}}},
         [{"id": "prt_013", "type": "text", "text": "Summary: the parser was fixed; 3 tests pass."}]),
        ({"id": "msg_005", "role": "user", "time": {"created": T0 + 50_000}},
         [{"id": "prt_014", "type": "text", "text": "thanks"}]),
    ],
    "ses_002": [
        ({"id": "msg_101", "role": "user", "time": {"created": T0 + 5_000}},
         [{"id": "prt_101", "type": "text", "text": "where are the tests?"}]),
        ({"id": "msg_102", "role": "assistant", "time": {"created": T0 + 6_000, "completed": T0 + 9_000}, "modelID": "claude-haiku-4",
          "tokens": {"input": 100, "output": 20, "reasoning": 0, "cache": {"read": 0, "write": 0}}},
         [{"id": "prt_102", "type": "text", "text": "tests/ holds them"}]),
    ],
}


def write_storage(root: Path) -> Path:
    for ses in SESSIONS:
        path = root / "session" / ses["projectID"] / f"{ses['id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(ses))
    for sid, messages in MESSAGES.items():
        for info, parts in messages:
            path = root / "message" / sid / f"{info['id']}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({**info, "sessionID": sid}))
            for part in parts:
                ppath = root / "part" / info["id"] / f"{part['id']}.json"
                ppath.parent.mkdir(parents=True, exist_ok=True)
                ppath.write_text(json.dumps({**part, "sessionID": sid, "messageID": info["id"]}))
    return root


def write_database(path: Path) -> Path:
    """opencode >= 1.2's tables (formats.md 6.2): ids in columns, the rest in `data`."""
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT);
        CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL,
            directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, summary_additions INTEGER,
            time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, time_compacting INTEGER, revert TEXT);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
            time_updated INTEGER NOT NULL, data TEXT NOT NULL);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
            time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
        CREATE TABLE todo (session_id TEXT, content TEXT, status TEXT, priority TEXT, position INTEGER);
        """
    )
    for ses in SESSIONS:
        db.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (ses["id"], ses["projectID"], ses.get("parentID"), ses["id"], ses["directory"], ses["title"], ses["version"],
             ses["time"]["created"], ses["time"]["updated"]),
        )
    for sid, messages in MESSAGES.items():
        for info, parts in messages:
            data = {k: v for k, v in info.items() if k != "id"}
            db.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                       (info["id"], sid, info["time"]["created"], info["time"]["created"], json.dumps(data)))
            for part in parts:
                pdata = {k: v for k, v in part.items() if k != "id"}
                db.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                           (part["id"], info["id"], sid, info["time"]["created"], info["time"]["created"], json.dumps(pdata)))
    db.commit()
    db.close()
    return path


@pytest.fixture
def storage(tmp_path) -> Path:
    return write_storage(tmp_path / "storage")


def _of(records, kind):
    return [r for r in records if isinstance(r, kind)]


def test_a_storage_folder_reads_as_one_conversation_with_its_sub_agent(storage):
    records = list(opencode.parse(storage))
    assert not _of(records, BadLine)
    infos = _of(records, SessionInfo)
    assert len(infos) == 1  # the sub-agent session is a child of its parent, not a top conversation
    info = infos[0]
    assert (info.external_id, info.title, info.cwd, info.cli_version) == ("ses_001", "Fix the parser", "/work/app", "1.1.0")
    assert info.models == ["claude-sonnet-4", "claude-haiku-4"]
    messages = _of(records, MessageRecord)
    main = [m for m in messages if m.agent_id is None]
    assert [(m.role, m.uuid) for m in main] == [
        ("user", "msg_001"),
        ("assistant", "msg_002"),  # step 1: thinking + the task call
        ("tool", "prt_004:result"),
        ("assistant", "msg_002:step2"),  # step 2: text, two tool calls, the patch
        ("tool", "prt_008:result"),
        ("tool", "prt_009:result"),
        ("user", "msg_003"),  # the compaction request
        ("system", "prt_012:boundary"),
        ("assistant", "msg_004"),  # the summary
        ("user", "msg_005"),
    ]
    step1, step2 = main[1], main[3]
    assert [b.kind for b in step1.blocks] == ["thinking", "tool_call"]
    assert [(b.kind, b.tool_name) for b in step2.blocks] == [("text", None), ("tool_call", "bash"), ("tool_call", "edit"), ("other", None)]
    assert step2.blocks[3].raw_type == "patch"
    pruned, failed = main[4], main[5]
    assert pruned.blocks[0].text == "3 passed" and pruned.flags["compacted"] is True
    assert failed.blocks[0].is_error and failed.blocks[0].text == "file not found"
    assert main[8].is_compact_summary
    child = [m for m in messages if m.agent_id == "ses_002"]
    assert [m.uuid for m in child] == ["msg_101", "msg_102"]
    assert all(m.agent_kind == "inline" for m in child)


def test_steps_are_model_calls_and_compaction_is_a_fold(storage):
    records = list(opencode.parse(storage))
    calls = _of(records, UsageRecord)
    assert [(c.api_message_id, c.message_uuid, c.agent_id) for c in calls] == [
        ("msg_002:step1", "msg_002", None),
        ("msg_002:step2", "msg_002:step2", None),
        # msg_004, the summary the compaction wrote, is the compaction call: the fold's cost, not a call
        ("msg_102", "msg_102", "ses_002"),  # no step-finish: the message's own tokens
    ]
    first = calls[0]
    assert (first.input_uncached, first.cache_write, first.cache_read, first.output) == (900, 300, 12_000, 40 + 10)
    assert first.context_size == 900 + 300 + 12_000
    (fold,) = _of(records, FoldRecord)
    assert fold.boundary_uuid == "prt_012:boundary" and fold.trigger == "auto"
    assert fold.summary_uuid == "msg_004" and fold.summary_text.startswith("Summary: the parser was fixed")
    assert fold.cost == {"calls": 1, "input_uncached": 5, "cache_write": 0, "cache_read": 0, "output": 200, "model": "claude-sonnet-4"}
    # opencode records no figure before a fold: the last call's measured input (msg_002's second step)
    assert fold.tokens_before == 50 + 13_000
    # tail_start_id: the messages from msg_001 up to the compaction request were kept verbatim
    assert fold.preserved_uuids == ["msg_001", "msg_002", "prt_004:result", "msg_002:step2", "prt_008:result", "prt_009:result"]
    (link,) = _of(records, AgentLink)
    assert (link.agent_id, link.tool_use_id, link.agent_type, link.description) == ("ses_002", "call_task", "explore", "Find the tests")


def test_the_database_gives_the_same_records_as_the_folder(storage, tmp_path):
    db = write_database(tmp_path / "opencode.db")

    def shape(records):
        return [
            (type(r).__name__, getattr(r, "uuid", None), getattr(r, "role", None), getattr(r, "agent_id", None),
             [(b.kind, b.text, b.tool_id) for b in getattr(r, "blocks", [])])
            for r in records
            if not isinstance(r, SessionInfo)
        ]

    from_folder = list(opencode.parse(storage))
    from_db = list(opencode.parse(db))
    assert not _of(from_db, BadLine)
    assert shape(from_db) == shape(from_folder)
    assert [(c.api_message_id, c.input_uncached, c.output) for c in _of(from_db, UsageRecord)] == [
        (c.api_message_id, c.input_uncached, c.output) for c in _of(from_folder, UsageRecord)
    ]
    assert _of(from_db, SessionInfo)[0].title == "Fix the parser"


def test_an_unreadable_file_is_reported_and_the_rest_imports(storage):
    (storage / "part" / "msg_005" / "prt_bad.json").write_text("{not json")
    (storage / "message" / "ses_001" / "msg_zzz.json").write_text("[1, 2]")
    records = list(opencode.parse(storage))
    reasons = [r.reason for r in _of(records, BadLine)]
    assert any("part/msg_005/prt_bad.json could not be read as JSON" in r for r in reasons)
    assert any("message/ses_001/msg_zzz.json is not a JSON object" in r for r in reasons)
    assert len(_of(records, MessageRecord)) == 12


def test_a_session_whose_parent_is_missing_is_a_conversation_of_its_own(storage):
    (storage / "session" / "prj" / "ses_001.json").unlink()
    for path in (storage / "message" / "ses_001").iterdir():
        path.unlink()
    (storage / "message" / "ses_001").rmdir()
    records = list(opencode.parse(storage))
    assert [i.external_id for i in _of(records, SessionInfo)] == ["ses_002"]
    assert all(m.agent_id is None for m in _of(records, MessageRecord))


def test_sniff(storage, tmp_path):
    assert opencode.sniff(storage, b"") == 0.9
    assert formats.claim(storage).name == "opencode"
    db = write_database(tmp_path / "opencode.db")
    assert opencode.sniff(db, db.read_bytes()[:4096]) == 0.9
    assert formats.claim(db).name == "opencode"
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE message (id TEXT, body TEXT)").connection.commit()
    assert opencode.sniff(other, other.read_bytes()[:4096]) == 0.0
    assert opencode.sniff(storage / "session", b"") == 0.0
    part = storage / "part" / "msg_001" / "prt_001.json"
    assert opencode.sniff(part, part.read_bytes()) == 0.0
    # a folder holding storage folders: each is found whole
    found = formats.discover(tmp_path)
    assert sorted(s.main.name for s in found.sessions if s.format == "opencode") == ["opencode.db", "storage"]


def test_a_file_that_is_no_database_is_reported(tmp_path):
    path = tmp_path / "opencode.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    records = list(opencode.parse(path))
    assert _of(records, BadLine) and "not an opencode database" in _of(records, BadLine)[0].reason


# -- the fixture storage trees --------------------------------------------------------------------

STORES = ["jazzyalex__agent-sessions__storage_legacy", "jazzyalex__agent-sessions__storage_v2"]


def count_independently(root: Path) -> dict:
    parts = [json.loads(p.read_text()) for p in (root / "part").rglob("*.json")]
    sessions = list((root / "session").rglob("*.json"))
    tokens = [p.get("tokens") or {} for p in parts if p.get("type") == "step-finish"]
    return {
        "sessions": len(sessions),
        "opencode_messages": len(list((root / "message").rglob("*.json"))),
        "tool_calls": sum(1 for p in parts if p.get("type") == "tool"),
        "calls": sum(1 for t in tokens if any(t.values())),
        "folds": sum(1 for p in parts if p.get("type") == "compaction"),
    }


@pytest.mark.parametrize("name", STORES)
def test_the_fixture_stores_against_plain_counting(fixtures_dir, name):
    root = fixtures_dir / "opencode" / name
    expected = count_independently(root)
    stated = {
        STORES[0]: {"sessions": 1, "opencode_messages": 2, "tool_calls": 1, "calls": 0, "folds": 0},
        STORES[1]: {"sessions": 2, "opencode_messages": 6, "tool_calls": 2, "calls": 1, "folds": 1},
    }[name]
    assert expected == stated
    records = list(opencode.parse(root))
    assert not _of(records, BadLine)
    messages = _of(records, MessageRecord)
    assert len(_of(records, SessionInfo)) == expected["sessions"]
    # every opencode message is a record under its own id
    assert len({m.uuid for m in messages if ":" not in m.uuid}) == expected["opencode_messages"]
    calls = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    results = [b for m in messages for b in m.blocks if b.kind == "tool_result"]
    assert len(calls) == len(results) == expected["tool_calls"]
    assert len(_of(records, UsageRecord)) == expected["calls"]
    assert len(_of(records, FoldRecord)) == expected["folds"]


def test_the_fixture_folder_finds_both_stores_whole(fixtures_dir):
    found = formats.discover(fixtures_dir / "opencode")
    assert sorted(s.main.name for s in found.sessions) == STORES
    assert {s.format for s in found.sessions} == {"opencode"}
    assert not found.skipped
