"""Reading a user's SQLite store (pure, no Django), for the formats whose log is a database (Crush,
Go-era opencode, opencode >= 1.2, Kilo, efferent, LangGraph checkpointers): never created, never
written, and nothing written beside it. A running agent shares its ``-shm`` (SQLite's wal-index)
with every reader, and a reader in place writes its marks there: so a store with a ``-wal`` beside
it is never opened in place. It is read from a private copy of the file and its ``-wal`` (the WAL
checkpointed into the copy); a store with no ``-wal`` is opened read-only (``mode=ro``; a WAL-mode
file as ``immutable``, which takes no lock and writes nothing)."""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any

SQLITE_MAGIC = b"SQLite format 3\x00"
COPY_ATTEMPTS = 5  # a copy the app wrote into while it was made is made again


def connect_read_only(path: Path | str, *, row_factory: Any = None) -> sqlite3.Connection:
    """The database, read, nothing written beside it (see the module). With a ``-wal`` file (the
    app is running, or left it) a checkpointed copy of both is read: SQLite opens any database with
    a ``-wal`` beside it in WAL mode, whatever its header says. A WAL database (header byte 18 is 2)
    with no ``-wal`` holds everything in the file itself: opened immutable. Else read-only; where
    that cannot read the file (a hot journal in a read-only folder): immutable. Raises
    ``sqlite3.Error`` (an unreadable file: ``sqlite3.OperationalError`` saying why)."""
    path = Path(path).resolve()
    try:
        with open(path, "rb") as fh:
            header = fh.read(20)
    except OSError as exc:
        raise sqlite3.OperationalError(f"cannot read the file: {exc.strerror or exc}") from None
    wal = path.with_name(path.name + "-wal")
    if wal.exists():
        conn = merged_copy(path, wal) if _stamp(wal)[1] > 0 else _immutable(path)
    elif len(header) == 20 and header[18] == 2:
        conn = _immutable(path)
    else:
        conn = None
        try:
            conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error:
            if conn is not None:
                conn.close()
            conn = _immutable(path)
    if row_factory is not None:
        conn.row_factory = row_factory
    return conn


def _immutable(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)


def _stamp(path: Path) -> tuple:
    try:
        st = path.stat()
    except OSError as exc:
        raise sqlite3.OperationalError(f"cannot read the file: {exc.strerror or exc}") from None
    return st.st_ino, st.st_size, st.st_mtime_ns


class _Copies:
    """The last checkpointed copy this process made (sniffing a store asks several formats in turn,
    then one reads it): kept in a private folder while the store's file and ``-wal`` are unchanged,
    removed when another copy replaces it and at exit."""

    def __init__(self):
        self.lock = threading.Lock()
        self.folder: Path | None = None
        self.key: tuple | None = None
        self.owner = 0  # the process that made the folder (a forked child forgets it, never removes it)

    def connect(self, path: Path, wal: Path) -> sqlite3.Connection:
        """An immutable connection to the copy of ``path`` and ``wal`` (made now if they changed)."""
        with self.lock:
            key = (str(path), _stamp(path), _stamp(wal))
            copy = self.folder / "store.db" if self.folder is not None and self.owner == os.getpid() else None
            if key != self.key or copy is None or not copy.is_file():
                self.clear()
                self.folder, self.owner = Path(tempfile.mkdtemp(prefix="cv-sqlite-")), os.getpid()
                copy = self.folder / "store.db"
                self.key = _checkpointed_copy(path, wal, copy)
            conn = _immutable(copy)  # open before another thread can replace the copy
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    def clear(self) -> None:
        if self.folder is not None and self.owner == os.getpid():
            shutil.rmtree(self.folder, ignore_errors=True)
        self.folder, self.key = None, None


_COPIES = _Copies()
atexit.register(_COPIES.clear)


def _checkpointed_copy(path: Path, wal: Path, copy: Path) -> tuple:
    """Copy the file and its ``-wal`` (never its ``-shm``) to ``copy``, and checkpoint the WAL into
    it. A copy during which the app wrote either file is made again (a checkpoint between the two
    would pair an old file with a new WAL). Returns the stamp of what was copied."""
    copy_wal = copy.with_name(copy.name + "-wal")
    key = None
    for _ in range(COPY_ATTEMPTS):
        key = (str(path), _stamp(path), _stamp(wal))
        try:
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, copy_wal)
        except OSError as exc:
            raise sqlite3.OperationalError(f"cannot read the file: {exc.strerror or exc}") from None
        if (str(path), _stamp(path), _stamp(wal)) == key:
            break
    merge = sqlite3.connect(copy)
    try:
        merge.execute("PRAGMA journal_mode=DELETE")  # checkpoints the WAL into the copy
    finally:
        merge.close()
    for leftover in (copy_wal, copy.with_name(copy.name + "-shm")):
        leftover.unlink(missing_ok=True)
    return key


def merged_copy(path: Path, wal: Path) -> sqlite3.Connection:
    """A database and its WAL, read from a checkpointed private copy of both (whatever the
    ``-shm``: it is neither read nor written), opened immutable."""
    return _COPIES.connect(Path(path).resolve(), Path(wal).resolve())


def tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
