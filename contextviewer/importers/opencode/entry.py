"""opencode: the light entry of ``importers/opencode/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``. Kilo, an opencode fork, writes the
same store (``kilo.db``): ``app_of`` tells the two apart, for both sniffs (``importers/kilo/entry.py``)."""

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


OPENCODE = "opencode"
KILO = "kilo"
# Tables only Kilo's database has (7.7: its agents' shared board).
KILO_TABLES = frozenset({"kilo_board", "kilo_board_message"})


def _kilo_named(path: Path) -> bool:
    """``kilo.db`` (and its copies), or a storage folder under a ``kilo`` data folder."""
    return path.name.lower().startswith(KILO) or any(part.lower() == KILO for part in path.parts[-4:-1])


def app_of(path: Path, head: bytes) -> str | None:
    """Which agent wrote this store: ``"opencode"``, ``"kilo"``, or None (not such a store): a
    storage folder (``session/`` and ``message/`` sub-folders), or a database with opencode's
    session, message and part tables (Kilo's has its own tables too, and its own file name)."""
    if path.is_dir():
        try:
            if (path / "session").is_dir() and (path / "message").is_dir():
                return KILO if _kilo_named(path) else OPENCODE
        except OSError:
            return None
        return None
    if not head.startswith(SQLITE_MAGIC):
        return None
    try:
        db = _connect(path)
        try:
            if not is_opencode_db(db):
                return None
            kilo = bool(KILO_TABLES & tables(db))
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return KILO if kilo or _kilo_named(path) else OPENCODE


def sniff(path: Path, head: bytes) -> float:
    """A storage folder (``session/`` and ``message/`` sub-folders), or an ``opencode.db``; not Kilo's."""
    return 0.9 if app_of(path, head) == OPENCODE else 0.0


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
