"""Reading a SQLite store (pure, no Django), for the formats whose log is a database (efferent,
LangGraph checkpointers, opencode >= 1.2): opened read-only, never created, never written, and
leaving no ``-wal``/``-shm`` files beside the user's database."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

SQLITE_MAGIC = b"SQLite format 3\x00"


def connect_read_only(path: Path | str, *, row_factory: Any = None) -> sqlite3.Connection:
    """The database, read-only. A WAL database (header byte 18 is 2) with no ``-wal`` file beside
    it holds everything in the file itself: it is opened as immutable, because a read-only
    connection would otherwise leave empty ``-wal``/``-shm`` files beside it. With a ``-wal``
    file (the app is running) the WAL is read too. Where a read-only connection cannot read the
    file (a read-only folder): as an immutable file. Raises ``sqlite3.Error`` (an unreadable file:
    ``sqlite3.OperationalError`` saying why)."""
    path = Path(path).resolve()
    uri = path.as_uri()
    try:
        with open(path, "rb") as fh:
            header = fh.read(20)
    except OSError as exc:
        raise sqlite3.OperationalError(f"cannot read the file: {exc.strerror or exc}") from None
    if len(header) == 20 and header[18] == 2 and not path.with_name(path.name + "-wal").exists():
        conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True)
    else:
        conn = None
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error:
            if conn is not None:
                conn.close()
            conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True)
    if row_factory is not None:
        conn.row_factory = row_factory
    return conn


def tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
