"""A Goose ``sessions.db`` written here with sqlite3, from the facts of Goose's own source (no Goose CLI
runs here): the tables and columns of ``crates/goose/src/session/session_manager.rs``'s schema 17
(``create_schema``), message content as ``conversation/message.rs`` serializes it (``type``-tagged
camelCase items, ``toolCall``/``toolResult`` as ``{status, value}``, metadata ``{userVisible,
agentVisible}``), a compaction as ``context_mgmt/mod.rs``'s ``compact_messages`` leaves it (the old
messages agent-invisible, the last prompt invisible, then an agent-only summary, an agent-only
continuation and the prompt again), a foreground sub-agent as ``save_foreground_delegation_message``
records it (``parent_delegation.parent_delegate_message_id``), and one ``usage_ledger`` row per call.

What is in it, counted by hand (the test modules state these):

- session ``20260301_1`` ("Fix the parser", /home/dev/proj): 15 messages, 6 model calls (messages
  2, 4, 6, 8, 13, 15; the last with no ledger row), 4 tool calls, one automatic compaction (ledger
  row ``is_compaction``), a sub-agent started by tool call ``tr3``;
- its sub-agent ``20260301_2``: 4 messages, 2 model calls, 1 tool call;
- session ``20260302_1`` ("Say hi"): 2 messages, 1 model call;
- a ``carried_forward`` ledger row (totals from before the ledger, not a call).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    cache_read_tokens INTEGER, cache_write_tokens INTEGER, accumulated_total_tokens INTEGER,
    accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER, accumulated_cache_read_tokens INTEGER,
    accumulated_cache_write_tokens INTEGER, accumulated_cost REAL, schedule_id TEXT, recipe_json TEXT,
    user_recipe_values_json TEXT, provider_name TEXT, model_config_json TEXT, goose_mode TEXT NOT NULL DEFAULT 'auto',
    archived_at TIMESTAMP, project_id TEXT, parent_session_id TEXT, parent_delegation TEXT
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT
);
CREATE TABLE usage_ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    created_timestamp INTEGER NOT NULL, model TEXT, input_tokens INTEGER, output_tokens INTEGER,
    total_tokens INTEGER, cache_read_tokens INTEGER, cache_write_tokens INTEGER, cost REAL, cost_source TEXT,
    is_compaction INTEGER DEFAULT 0
);
"""

MODEL = "claude-sonnet-4-5"
MAIN, CHILD, OTHER = "20260301_1", "20260301_2", "20260302_1"
SUMMARY = "Summary: notes.md was read, parser.py fixed (off-by-one), tests pass in the sub-agent."
CONTINUATION = ("The previous message is a summary of an earlier part of this session that no longer fits in your "
                "context. Continue the session.")
MANUAL = "The previous message is a summary of the session so far, produced at the user's request. Continue."

BOTH = {"userVisible": True, "agentVisible": True}
ARCHIVED = {"userVisible": True, "agentVisible": False}
INVISIBLE = {"userVisible": False, "agentVisible": False}
AGENT_ONLY = {"userVisible": False, "agentVisible": True}


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def request(call_id: str, name: str, arguments: dict) -> dict:
    return {"type": "toolRequest", "id": call_id, "toolCall": {"status": "success", "value": {"name": name, "arguments": arguments}}}


def response(call_id: str, out: str, is_error: bool = False) -> dict:
    return {"type": "toolResponse", "id": call_id,
            "toolResult": {"status": "success", "value": {"content": [text(out)], "isError": is_error}}}


def main_messages(manual: bool = False) -> list[tuple]:
    """(message_id, role, content, created, metadata) of the main session, as Goose leaves them after the
    compaction (an automatic one, or one asked by the user: then no prompt is set aside and copied)."""
    before = [
        ("msg_1", "user", [text("Read notes.md and fix the bug in parser.py")], 1_772_400_000),
        ("msg_2", "assistant", [text("I'll read the notes."), request("tr1", "developer__shell", {"command": "cat notes.md"})], 1_772_400_001),
        ("msg_3", "user", [response("tr1", "The parser drops the last line.")], 1_772_400_002),
        ("msg_4", "assistant", [request("tr2", "developer__text_editor", {"command": "str_replace", "path": "parser.py",
                                                                         "old_str": "lines[:-1]", "new_str": "lines"})], 1_772_400_003),
        ("msg_5", "user", [response("tr2", "The file parser.py has been edited.")], 1_772_400_004),
        ("msg_6", "assistant", [text("Fixed. A sub-agent runs the tests."),
                                request("tr3", "delegate", {"instructions": "Run the tests"})], 1_772_400_005),
        ("msg_7", "user", [response("tr3", "3 passed")], 1_772_400_010),
        ("msg_8", "assistant", [text("All tests pass.")], 1_772_400_011),
    ]
    out = [(mid, role, content, at, ARCHIVED) for mid, role, content, at in before]
    prompt = [text("Now update the README")]
    if not manual:
        out.append(("msg_9", "user", prompt, 1_772_400_019, INVISIBLE))
    out += [
        ("msg_10", "user", [text(SUMMARY)], 1_772_400_020, AGENT_ONLY),
        ("msg_11", "assistant", [text(MANUAL if manual else CONTINUATION)], 1_772_400_020, AGENT_ONLY),
        ("msg_12", "user", prompt, 1_772_400_020, BOTH),
        ("msg_13", "assistant", [request("tr4", "developer__text_editor", {"command": "write", "path": "README.md",
                                                                          "file_text": "# proj\n"})], 1_772_400_021, BOTH),
        ("msg_14", "user", [response("tr4", "permission denied", is_error=True)], 1_772_400_022, BOTH),
        ("msg_15", "assistant", [text("README.md could not be written.")], 1_772_400_023, BOTH),
    ]
    return out


CHILD_MESSAGES = [
    ("sub_1", "user", [text("Run the tests")], 1_772_400_006, BOTH),
    ("sub_2", "assistant", [request("st1", "developer__shell", {"command": "pytest -q"})], 1_772_400_007, BOTH),
    ("sub_3", "user", [response("st1", "3 passed in 0.2s")], 1_772_400_008, BOTH),
    ("sub_4", "assistant", [text("3 passed")], 1_772_400_009, BOTH),
]
OTHER_MESSAGES = [
    ("hi_1", "user", [text("hi")], 1_772_500_000, BOTH),
    ("hi_2", "assistant", [text("Hello!")], 1_772_500_001, BOTH),
]

# (session, created, input (cache inside), output, cache read, cache write, is_compaction, cost_source)
LEDGER = [
    (MAIN, 1_772_399_000, 900, 90, 0, 0, 0, "carried_forward"),
    (MAIN, 1_772_400_001, 1200, 50, 0, 1000, 0, "provider_reported"),
    (MAIN, 1_772_400_003, 1400, 60, 1000, 300, 0, "provider_reported"),
    (CHILD, 1_772_400_007, 800, 30, 0, 0, 0, "provider_reported"),
    (CHILD, 1_772_400_009, 900, 10, 0, 0, 0, "provider_reported"),
    (MAIN, 1_772_400_005, 1600, 70, 1300, 200, 0, "provider_reported"),
    (MAIN, 1_772_400_011, 1900, 20, 1500, 300, 0, "provider_reported"),
    (MAIN, 1_772_400_020, 2100, 150, 0, 0, 1, "provider_reported"),
    (MAIN, 1_772_400_021, 700, 40, 0, 600, 0, "provider_reported"),
    (OTHER, 1_772_500_001, 300, 5, 0, 0, 0, "provider_reported"),
]


def write_store(path: Path, *, manual: bool = False) -> Path:
    """The store at ``path`` (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO schema_version (version) VALUES (17)")
    config = json.dumps({"model_name": MODEL, "context_limit": 200000})
    conn.execute("INSERT INTO sessions (id, name, session_type, working_dir, created_at, updated_at, provider_name, "
                 "model_config_json) VALUES (?, ?, 'user', '/home/dev/proj', '2026-03-01 21:20:00', '2026-03-01 21:21:00', "
                 "'anthropic', ?)", (MAIN, "Fix the parser", config))
    delegation = json.dumps({"execution_mode": "foreground", "parent_delegate_message_id": "msg_6",
                             "result_delivered_to_parent": True})
    conn.execute("INSERT INTO sessions (id, name, session_type, working_dir, created_at, updated_at, provider_name, "
                 "model_config_json, parent_session_id, parent_delegation) VALUES (?, 'Run the tests', 'sub_agent', "
                 "'/home/dev/proj', '2026-03-01 21:20:06', '2026-03-01 21:20:09', 'anthropic', ?, ?, ?)",
                 (CHILD, config, MAIN, delegation))
    conn.execute("INSERT INTO sessions (id, name, session_type, working_dir, created_at, updated_at, provider_name, "
                 "model_config_json) VALUES (?, 'Say hi', 'user', '/home/dev', '2026-03-03 01:06:40', "
                 "'2026-03-03 01:06:41', 'anthropic', ?)", (OTHER, config))
    for session, messages in ((MAIN, main_messages(manual)), (CHILD, CHILD_MESSAGES), (OTHER, OTHER_MESSAGES)):
        for mid, role, content, at, meta in messages:
            conn.execute("INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, "
                         "metadata_json) VALUES (?, ?, ?, ?, ?, ?)", (mid, session, role, json.dumps(content), at, json.dumps(meta)))
    for session, at, inp, out, read, write, compaction, source in LEDGER:
        conn.execute("INSERT INTO usage_ledger (session_id, created_timestamp, model, input_tokens, output_tokens, "
                     "total_tokens, cache_read_tokens, cache_write_tokens, cost_source, is_compaction) VALUES "
                     "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (session, at, MODEL, inp, out, inp + out, read, write, source, compaction))
    conn.commit()
    conn.close()
    return path


# A session file of Goose before its SQLite store (storage.rs: ``sessions/<yyyymmdd_hhmmss>.jsonl``, a
# SessionMetadata line then one Message per line; a tool response's value was then its content list).
# By hand: 5 messages, 2 model calls (messages 2 and 4), 1 tool call.
LEGACY_ID = "20250301_101500"
LEGACY_META = {"working_dir": "/home/dev/old", "description": "List the files", "schedule_id": None, "message_count": 5,
               "total_tokens": 1300, "input_tokens": 1200, "output_tokens": 100, "accumulated_total_tokens": 2100,
               "accumulated_input_tokens": 1950, "accumulated_output_tokens": 150}
LEGACY_MESSAGES = [
    {"role": "user", "created": 1_740_824_100, "content": [text("List the files")]},
    {"role": "assistant", "created": 1_740_824_101, "content": [request("t1", "developer__shell", {"command": "ls"})]},
    {"role": "user", "created": 1_740_824_102, "content": [{"type": "toolResponse", "id": "t1", "toolResult": {
        "status": "success", "value": [text("README.md\napp.py")]}}]},
    {"role": "assistant", "created": 1_740_824_103, "content": [text("Two files: README.md and app.py.")]},
    {"role": "user", "created": 1_740_824_110, "content": [text("Thanks")]},
]


def write_legacy(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{LEGACY_ID}.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [LEGACY_META, *LEGACY_MESSAGES]) + "\n")
    return path
