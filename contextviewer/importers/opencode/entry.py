"""opencode: the light entry of ``importers/opencode/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from contextviewer.importers.formats import Entry, FOLDER
from contextviewer.importers.opencode.tools import TOOLS
from contextviewer.importers.sqlite_db import SQLITE_MAGIC, columns as _columns, connect_read_only, tables


def is_opencode_db(db: sqlite3.Connection) -> bool:
    if not {"session", "message", "part"} <= tables(db):
        return False
    return {"id", "session_id", "data"} <= _columns(db, "message") and {"id", "message_id", "data"} <= _columns(db, "part")


def _connect(path: Path) -> sqlite3.Connection:
    return connect_read_only(path, row_factory=sqlite3.Row)


def sniff(path: Path, head: bytes) -> float:
    """A storage folder (``session/`` and ``message/`` sub-folders), or an ``opencode.db``."""
    if path.is_dir():
        try:
            if (path / "session").is_dir() and (path / "message").is_dir():
                return 0.9
        except OSError:
            return 0.0
        return 0.0
    if not head.startswith(SQLITE_MAGIC):
        return 0.0
    try:
        db = _connect(path)
        try:
            ok = is_opencode_db(db)
        finally:
            db.close()
    except sqlite3.Error:
        return 0.0
    return 0.9 if ok else 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.opencode.parser",
    name="opencode",
    label="opencode",
    storage=FOLDER,
    sniff=sniff,
    extensions=(".json", ".db", ".db-wal", ".db-shm"),
    where="~/.local/share/opencode/storage/{session,message,part}/ (opencode ≤ 1.1) or ~/.local/share/opencode/opencode.db (≥ 1.2)",
    locations=("~/.local/share/opencode",),
)
