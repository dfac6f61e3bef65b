"""LangGraph / deepagents: the light entry of ``importers/langgraph/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from contextviewer.importers.formats import DATABASE, Entry
from contextviewer.importers.langgraph.tools import TOOLS
from contextviewer.importers.sqlite_db import SQLITE_MAGIC, columns as _columns, connect_read_only


def connect(path: Path) -> sqlite3.Connection:
    """The database, read-only (SqliteSaver sets WAL: see ``sqlite_db``)."""
    return connect_read_only(path)


_NEEDED = {
    "checkpoints": {"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint"},
    "writes": {"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "type", "value"},
}


def sniff(path: Path, head: bytes) -> float:
    """A SQLite file with LangGraph's ``checkpoints`` and ``writes`` tables."""
    if not head.startswith(SQLITE_MAGIC) or not path.is_file():
        return 0.0
    try:
        conn = connect(path)
        try:
            for table, needed in _NEEDED.items():
                if not needed <= _columns(conn, table):
                    return 0.0
        finally:
            conn.close()
    except sqlite3.Error:
        return 0.0
    return 0.9


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.langgraph.parser",
    name="langgraph",
    label="LangGraph / deepagents",
    storage=DATABASE,
    sniff=sniff,
    extensions=(".sqlite", ".sqlite3", ".db", ".sqlite-wal", ".sqlite-shm", ".db-wal", ".db-shm"),
    where=(
        "the SQLite file a LangGraph app (deepagents included) gives its SqliteSaver checkpointer, "
        "e.g. SqliteSaver.from_conn_string(\"checkpoints.sqlite\"): wherever the app opens it; "
        "import that file (one conversation per thread)"
    ),
)
