"""A Hermes Agent ``state.db`` written here with sqlite3, from the facts of Hermes Agent 0.19.0's own
source and of a store its CLI wrote here (ops/drivers/hermes.py): the tables and the columns the
importer reads of ``hermes_state.py``'s ``SCHEMA_SQL`` (sessions, messages, session_model_usage),
OpenAI-shaped rows (``tool_calls`` a JSON list of ``{id, type, function: {name, arguments}}``, a
tool row's ``tool_call_id`` and ``tool_name``), an in-place compaction as ``archive_and_compact``
leaves it (the old rows ``active = 0, compacted = 1``, then the compacted list written again, each
row a microsecond after the one before: the protected head copied, the summary (a user message
starting with ``SUMMARY_PREFIX``), the protected tail copied), a rotation as its legacy path leaves
it (run here with ``compression.in_place: false``: the session ended with ``end_reason =
'compression'`` and holding the summarizer's totals, a child session holding the compacted list), and a ``delegate_task`` sub-agent as a child session of ``source = 'subagent'``.

What is in it, counted by hand (the test modules state these):

- session ``A`` ("Fix the parser", /home/dev/proj): rows 1-7 put away by the compaction (3 model
  calls: 2, 4, 6; 3 tool calls), the compacted list 8-13 (8, 9, 10 copy 1, 2, 3; 11 the summary;
  12, 13 copy 6, 7), then 14 (a call: delegate_task), 19 (its result), 20 (a call: the answer). So
  11 messages (1-7, 11, 14, 19, 20), 5 model calls, 4 tool calls, one fold; the call after it (14)
  carried 1, 2, 3, 11, 6, 7 in that order;
- its sub-agent ``B`` (rows 15-18): 4 messages, 2 model calls, 1 tool call, started by ``c4``;
- session ``C`` ("Tidy", ended by a compression) and its continuation ``D``: rows 21-27 (calls 22,
  24, 26; tool calls r1, r2), D's compacted list 28-33 (28, 29, 30 copy 21, 22, 23; 31 the summary;
  32, 33 copy 26, 27) and 34 (a call): one conversation of 9 messages, 4 model calls, 2 tool calls,
  one fold.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, model_config TEXT, system_prompt TEXT,
    parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0, reasoning_tokens INTEGER DEFAULT 0,
    cwd TEXT, title TEXT, api_call_count INTEGER DEFAULT 0,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
    content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, effect_disposition TEXT, timestamp REAL NOT NULL,
    token_count INTEGER, finish_reason TEXT, reasoning TEXT, reasoning_content TEXT, reasoning_details TEXT,
    observed INTEGER DEFAULT 0, active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0,
    api_content TEXT
);
CREATE TABLE session_model_usage (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, model TEXT NOT NULL,
    billing_provider TEXT NOT NULL DEFAULT '', billing_base_url TEXT NOT NULL DEFAULT '',
    billing_mode TEXT NOT NULL DEFAULT '', task TEXT NOT NULL DEFAULT '', api_call_count INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0, cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, model, billing_provider, billing_base_url, billing_mode, task)
);
"""

MODEL = "anthropic/claude-sonnet-4"
A, B, C, D = "20260301_100000_aaaaaa", "20260301_100011_bbbbbb", "20260302_090000_cccccc", "20260302_090100_dddddd"
PREFIX = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below."
SUMMARY_A = f"{PREFIX}\nparser.py was read, patched (off-by-one) and pytest run."
SUMMARY_C = f"{PREFIX}\nfoo is used three times; two were renamed."
T_A, T_C = 1772359200.0, 1772445600.0  # 2026-03-01 10:00 and 2026-03-02 10:00 UTC
# the compaction's summarizer, in session_model_usage (task 'compression'): input counts the cache read inside
COMPRESSION = {"api_call_count": 1, "input_tokens": 3000, "cache_read_tokens": 1000, "output_tokens": 400}
# a rotation's summarizer: on the session it ended (as Hermes 0.19.0 wrote it here, compression.in_place: false)
COMPRESSION_C = {"api_call_count": 1, "input_tokens": 1800, "cache_read_tokens": 0, "output_tokens": 250}


def call(cid: str, name: str, args: dict) -> str:
    return json.dumps([{"id": cid, "call_id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}])


def _rows() -> list[tuple]:
    """(id, session, role, content, tool_calls, tool_call_id, tool_name, timestamp, active, compacted)."""
    r1 = (A, "user", "Fix the off-by-one in parser.py", None, None, None)
    r2 = (A, "assistant", "", call("c1", "read_file", {"path": "parser.py"}), None, None)
    r3 = (A, "tool", '{"content": "1|def parse(xs):\\n2|    return xs[1:]"}', None, "c1", "read_file")
    r4 = (A, "assistant", "", call("c2", "patch", {"mode": "replace", "path": "parser.py", "old_string": "xs[1:]",
                                                      "new_string": "xs[0:]"}), None, None)
    r5 = (A, "tool", '{"success": true}', None, "c2", "patch")
    r6 = (A, "assistant", "", call("c3", "terminal", {"command": "pytest -q"}), None, None)
    r7 = (A, "tool", '{"output": "12 passed", "exit_code": 0}', None, "c3", "terminal")
    c21 = (C, "user", "Rename foo to bar", None, None, None)
    c22 = (C, "assistant", "", call("r1", "search_files", {"pattern": "foo"}), None, None)
    c23 = (C, "tool", '{"matches": 3}', None, "r1", "search_files")
    c24 = (C, "assistant", "Found 3 uses.", None, None, None)
    c25 = (C, "user", "Rename them", None, None, None)
    c26 = (C, "assistant", "", call("r2", "patch", {"mode": "patch", "patch": "*** Begin Patch"}), None, None)
    c27 = (C, "tool", '{"success": true}', None, "r2", "patch")

    def copy(row, session, at):
        return (session, *row[1:], at)

    def list_at(t0, rows):  # one write: a microsecond apart
        return [(*row, t0 + k * 1e-6) for k, row in enumerate(rows)]

    archived = [(*row, T_A + k) for k, row in enumerate((r1, r2, r3, r4, r5, r6, r7))]
    listed_a = list_at(T_A + 7, [r1, r2, r3, (A, "user", SUMMARY_A, None, None, None), r6, r7])
    rows = [(*row, 0, 1) for row in archived] + [(*row, 1, 0) for row in listed_a]
    rows += [(*row, 1, 0) for row in (
        (A, "assistant", "", call("c4", "delegate_task", {"goal": "check the tests"}), None, None, T_A + 10),
        (B, "user", "check the tests", None, None, None, T_A + 11.5),
        (B, "assistant", "", call("s1", "terminal", {"command": "pytest -q"}), None, None, T_A + 12),
        (B, "tool", '{"output": "12 passed", "exit_code": 0}', None, "s1", "terminal", T_A + 13),
        (B, "assistant", "All 12 tests pass.", None, None, None, T_A + 14),
        (A, "tool", '{"results": [{"status": "completed", "summary": "All 12 tests pass."}]}', None, "c4", "delegate_task", T_A + 15),
        (A, "assistant", "Fixed; the tests pass.", None, None, None, T_A + 16),
    )]
    rows += [(*row, T_C + k, 1, 0) for k, row in enumerate((c21, c22, c23, c24, c25, c26, c27))]
    listed_d = list_at(T_C + 7, [copy(c21, D, 0), copy(c22, D, 0), copy(c23, D, 0), (D, "user", SUMMARY_C, None, None, None),
                                copy(c26, D, 0), copy(c27, D, 0)])
    rows += [(*row[:6], row[-1], 1, 0) for row in listed_d]
    rows.append((D, "assistant", "Renamed.", None, None, None, T_C + 10, 1, 0))
    return [(n, *row) for n, row in enumerate(rows, 1)]


def write_store(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    sessions = [
        (A, "cli", MODEL, None, T_A, T_A + 16.5, "agent_close", "/home/dev/proj", "Fix the parser", 6, 5200, 90),
        (B, "subagent", MODEL, A, T_A + 11, T_A + 14.5, "agent_close", None, None, 2, 1800, 30),
        (C, "cli", MODEL, None, T_C, T_C + 6.5, "compression", "/home/dev/tidy", "Tidy", 3, 2500, 40),
        (D, "cli", MODEL, C, T_C + 6.6, T_C + 10.5, "agent_close", "/home/dev/tidy", "Tidy #2", 1, 900, 5),
    ]
    conn.executemany("INSERT INTO sessions (id, source, model, parent_session_id, started_at, ended_at, end_reason, cwd, title,"
                     " api_call_count, input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", sessions)
    conn.executemany("INSERT INTO messages (id, session_id, role, content, tool_calls, tool_call_id, tool_name, timestamp,"
                     " active, compacted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", _rows())
    conn.execute("INSERT INTO session_model_usage (session_id, model, task, api_call_count, input_tokens, output_tokens)"
                 " VALUES (?, ?, '', 6, 5200, 90)", (A, MODEL))
    for sid, usage in ((A, COMPRESSION), (C, COMPRESSION_C)):
        conn.execute("INSERT INTO session_model_usage (session_id, model, task, api_call_count, input_tokens,"
                     " cache_read_tokens, output_tokens) VALUES (?, ?, 'compression', ?, ?, ?, ?)",
                     (sid, MODEL, *(usage[k] for k in ("api_call_count", "input_tokens", "cache_read_tokens", "output_tokens"))))
    conn.commit()
    conn.close()
    return path
