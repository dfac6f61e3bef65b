"""Which of Crush and Go-era opencode a SQLite store is (the sniff of both formats), light: the rest of
``importers/charm/db.py`` (the reader) is imported when one of them claims a store."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from contextviewer.importers.sqlite_db import SQLITE_MAGIC, columns, connect_read_only, tables


CRUSH = "crush"
OPENCODE_GO = "opencode-go"
COMPANION_SUFFIXES = ("-wal", "-shm")


@contextmanager
def opened(path: Path) -> Iterator[sqlite3.Connection]:
    """The store with its WAL applied, never touching the user's files (sqlite_db.connect_read_only:
    with a ``-wal`` beside it, a checkpointed copy of the file and its ``-wal``, whatever the ``-shm``)."""
    conn = connect_read_only(Path(path), row_factory=sqlite3.Row)
    try:
        yield conn
    finally:
        conn.close()


def kind_of(conn: sqlite3.Connection, name: str) -> str | None:
    """``crush``, ``opencode-go`` or None: sessions and messages tables with ``messages.parts``;
    Crush's ``provider`` column (or the name ``crush.db``) says Crush."""
    found = tables(conn)
    if not {"sessions", "messages"} <= found:
        return None
    message_columns = columns(conn, "messages")
    if not {"id", "session_id", "role", "parts"} <= message_columns or "id" not in columns(conn, "sessions"):
        return None
    if "provider" in message_columns or "is_summary_message" in message_columns or name.endswith("crush.db"):
        return CRUSH
    return OPENCODE_GO


_KINDS: dict[tuple, str | None] = {}


def _stamp(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def main_of(path: Path) -> Path:
    """The database a ``-wal``/``-shm`` file belongs to (the path itself otherwise)."""
    for suffix in COMPANION_SUFFIXES:
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            return path.with_name(path.name[: -len(suffix)])
    return path


def classify(path: Path, head: bytes | None = None) -> str | None:
    """Which of the two formats a database (or its ``-wal``/``-shm``) is; None when neither."""
    path = Path(path)
    main = main_of(path)
    if main != path:
        if not main.is_file():
            return None
        head = None
    if path.is_dir() or not main.is_file():
        return None
    if head is None:
        try:
            with open(main, "rb") as fh:
                head = fh.read(16)
        except OSError:
            return None
    if not head.startswith(SQLITE_MAGIC):
        return None
    key = (str(main), _stamp(main), _stamp(main.with_name(main.name + "-wal")))
    if key in _KINDS:
        return _KINDS[key]
    kind = None
    try:
        if _other_store(main):
            raise sqlite3.DatabaseError("another store")
        with opened(main) as conn:
            kind = kind_of(conn, main.name.lower())
    except (sqlite3.Error, OSError):
        kind = None
    if len(_KINDS) > 256:
        _KINDS.clear()
    _KINDS[key] = kind
    return kind


def _other_store(path: Path) -> bool:
    """Whether the file alone (its WAL left out, nothing written) already has tables, none of them
    ``sessions``: another app's database, told without copying it and its WAL."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return False
    try:
        found = tables(conn)
    except sqlite3.Error:
        return False
    finally:
        conn.close()
    return bool(found) and "sessions" not in found


def sniffer(name: str):
    def sniff(path: Path, head: bytes) -> float:
        return 0.9 if classify(path, head if main_of(Path(path)) == Path(path) else None) == name else 0.0

    return sniff
