"""efferent: the light entry of ``importers/efferent/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from contextviewer.importers.formats import DATABASE, Entry
from contextviewer.importers.sqlite_db import SQLITE_MAGIC, columns as _columns, connect_read_only, tables as _tables


REQUIRED_TABLES = frozenset({"conversations", "messages", "checkpoints"})


def _connect(path: Path) -> sqlite3.Connection:
    """The database, read-only (never created, never written; see ``sqlite_db``): with a ``-wal``
    file present, efferent may be writing, and the WAL is read too."""
    return connect_read_only(path, row_factory=sqlite3.Row)


def sniff(path: Path, head: bytes) -> float:
    """An SQLite database with efferent's tables (conversations, messages with a position,
    checkpoints)."""
    if not head.startswith(SQLITE_MAGIC) or not path.is_file():
        return 0.0
    try:
        conn = _connect(path)
        try:
            tables = _tables(conn)
            if not REQUIRED_TABLES <= tables:
                return 0.0
            columns = _columns(conn, "messages")
            checkpoint_columns = _columns(conn, "checkpoints")
        finally:
            conn.close()
    except sqlite3.Error:
        return 0.0
    if not {"conversation_id", "position", "content"} <= columns:
        return 0.0
    if not {"conversation_id", "message_position", "summary"} <= checkpoint_columns:
        return 0.0
    return 0.9


ENTRY = Entry(
    module="contextviewer.importers.efferent.parser",
    name="efferent",
    label="efferent",
    storage=DATABASE,
    sniff=sniff,
    extensions=(".db", ".db-wal", ".db-shm"),
    where="<workspace>/.efferent/smith.db (also math.db, canvas.db); older versions ~/.efferent/efferent.db",
    locations=("~/.efferent",),
)
