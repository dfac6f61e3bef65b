"""Reading a SQLite store (pure, no Django), for the formats whose log is a database (efferent,
LangGraph checkpointers, opencode >= 1.2): opened read-only, never created, never written, and
leaving no ``-wal``/``-shm`` files beside the user's database. Only where a live WAL database has
both (its app is running, or left them) is it read in place, as any reader reads it: the reader's
marks go into the ``-shm`` (SQLite's wal-index, shared memory rebuilt by the first reader after
the writer left), never into the database or its ``-wal``."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
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
    wal, shm = path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")
    if wal.exists() and not (shm.exists() and os.access(shm, os.W_OK)):
        # In place, SQLite would create a -shm beside it, or (a read-only -shm) fall back to
        # reading the file without its WAL: a copy keeps the user's folder as it is and reads all.
        conn = merged_copy(path, wal)
    elif len(header) == 20 and header[18] == 2 and not wal.exists():
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


def merged_copy(path: Path, wal: Path) -> sqlite3.Connection:
    """A database and its WAL with no -shm beside them: a temporary copy of both, checkpointed,
    opened immutable and removed from disk at once (the open connection keeps reading it)."""
    with tempfile.TemporaryDirectory(prefix="cv-sqlite-") as tmp:
        copy = Path(tmp) / "store.db"
        try:
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, Path(tmp) / "store.db-wal")
        except OSError as exc:
            raise sqlite3.OperationalError(f"cannot read the file: {exc.strerror or exc}") from None
        merge = sqlite3.connect(copy)
        try:
            merge.execute("PRAGMA journal_mode=DELETE")  # checkpoints the WAL into the copy
        finally:
            merge.close()
        conn = sqlite3.connect(f"{copy.as_uri()}?mode=ro&immutable=1", uri=True)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return conn


def tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
