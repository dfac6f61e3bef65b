"""Hermes Agent (NousResearch, PyPI ``hermes-agent``): the light entry of ``importers/hermes/parser.py``
(its name, label, where its logs are, the file endings it reads, and its sniff); see
``importers/formats.py``. Hermes keeps every session in one SQLite store, ``~/.hermes/state.db``
(``hermes_state.py``: ``DEFAULT_DB_PATH`` under ``HERMES_HOME``, ``~/.hermes`` by default)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from contextviewer.importers.charm.store import main_of
from contextviewer.importers.formats import DATABASE, Entry
from contextviewer.importers.hermes.tools import TOOLS
from contextviewer.importers.sqlite_db import SQLITE_MAGIC, columns, connect_read_only, tables

NAME = "hermes"
# Columns of Hermes's ``messages`` (hermes_state.py SCHEMA_SQL): OpenAI-shaped rows, tool calls as
# JSON, results by ``tool_call_id``; and of its ``sessions``: a lineage by ``parent_session_id``,
# the ``source`` (cli, subagent, a gateway's platform). No other store has both sets.
MESSAGE_COLUMNS = frozenset({"session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp"})
SESSION_COLUMNS = frozenset({"source", "parent_session_id", "started_at", "end_reason"})


def is_hermes_store(conn: sqlite3.Connection) -> bool:
    return {"sessions", "messages"} <= tables(conn) and MESSAGE_COLUMNS <= columns(conn, "messages") \
        and SESSION_COLUMNS <= columns(conn, "sessions")


_SEEN: dict[tuple, bool] = {}


def _stamp(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def sniff(path: Path, head: bytes) -> float:
    """A SQLite database (or its -wal/-shm) with Hermes's ``sessions`` and ``messages`` tables."""
    path = Path(path)
    main = main_of(path)
    if path.is_dir() or not main.is_file():
        return 0.0
    if main != path or not head:
        try:
            with open(main, "rb") as fh:
                head = fh.read(16)
        except OSError:
            return 0.0
    if not head.startswith(SQLITE_MAGIC):
        return 0.0
    key = (str(main), _stamp(main), _stamp(main.with_name(main.name + "-wal")))
    if key not in _SEEN:
        if len(_SEEN) > 256:
            _SEEN.clear()
        try:
            conn = connect_read_only(main)
            try:
                _SEEN[key] = is_hermes_store(conn)
            finally:
                conn.close()
        except (sqlite3.Error, OSError):
            _SEEN[key] = False
    return 0.9 if _SEEN.get(key) else 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.hermes.parser",
    name=NAME,
    label="Hermes Agent",
    storage=DATABASE,
    sniff=sniff,
    extensions=(".db", ".db-wal", ".db-shm"),
    where="~/.hermes/state.db (+ its -wal: one conversation per session lineage; delegate_task sub-agents under their parent)",
    locations=("~/.hermes",),
)
