"""Goose (block/goose): the light entry of ``importers/goose/parser.py`` (its name, label, where its logs
are, the file endings it reads, and its sniff); see ``importers/formats.py``. Goose keeps every session in
one SQLite store, ``~/.local/share/goose/sessions/sessions.db`` (``SessionStorage``: its data folder's
``sessions/`` + ``sessions.db``, in ``crates/goose/src/session/session_manager.rs``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from contextviewer.importers.charm.store import main_of
from contextviewer.importers.formats import DATABASE, Entry
from contextviewer.importers.goose.tools import TOOLS
from contextviewer.importers.sqlite_db import SQLITE_MAGIC, columns, connect_read_only, tables

NAME = "goose"
# The columns Goose's ``messages`` table has had since its first SQLite schema (its message content is
# one JSON list, ``content_json``; its time ``created_timestamp``, Unix seconds): no other store has both.
MESSAGE_COLUMNS = frozenset({"session_id", "role", "content_json", "created_timestamp"})


def is_goose_store(conn: sqlite3.Connection) -> bool:
    return {"sessions", "messages"} <= tables(conn) and MESSAGE_COLUMNS <= columns(conn, "messages") \
        and "working_dir" in columns(conn, "sessions")


_SEEN: dict[tuple, bool] = {}


def _stamp(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _other_store(path: Path) -> bool:
    """Whether the file alone (its WAL left out, nothing written) already has tables, none of them
    ``messages``: another app's database, told without copying it and its WAL."""
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
    return bool(found) and "messages" not in found


# The keys of its SessionMetadata (storage.rs): ``description`` and ``message_count`` always, the others
# as versions added them.
LEGACY_KEYS = (b'"description"', b'"message_count"', b'"working_dir"', b'"schedule_id"', b'"total_tokens"',
               b'"accumulated_total_tokens"')


def is_legacy_session(path: Path, head: bytes) -> bool:
    """A session file of Goose before its SQLite store (``sessions/<yyyymmdd_hhmmss>.jsonl``): a first
    line of ``SessionMetadata`` (two of its keys at least: one key spelt otherwise still tells it), then
    messages."""
    if path.suffix != ".jsonl" or not head.lstrip().startswith(b"{"):
        return False
    first = head.split(b"\n", 1)[0]
    return sum(key in first for key in LEGACY_KEYS) >= 2 and b'"role"' not in first and b'"content"' not in first


def sniff(path: Path, head: bytes) -> float:
    """A SQLite database (or its -wal/-shm) with Goose's ``sessions`` and ``messages`` tables; a session
    file of Goose before it had one (``is_legacy_session``)."""
    path = Path(path)
    if path.is_file() and is_legacy_session(path, head):
        return 0.9
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
        if _other_store(main):
            _SEEN[key] = False
            return 0.0
        try:
            conn = connect_read_only(main)
            try:
                _SEEN[key] = is_goose_store(conn)
            finally:
                conn.close()
        except (sqlite3.Error, OSError):
            _SEEN[key] = False
    return 0.9 if _SEEN.get(key) else 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.goose.parser",
    name=NAME,
    label="Goose",
    storage=DATABASE,
    sniff=sniff,
    extensions=(".db", ".db-wal", ".db-shm", ".jsonl"),
    where="~/.local/share/goose/sessions/sessions.db (+ its -wal: one conversation per session; sub-agent sessions under their parent);"
          " before it, one <session>.jsonl per session in that folder",
    locations=("~/.local/share/goose/sessions",),
)
