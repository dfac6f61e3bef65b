"""What an import says it did: one file's report (``FileReport``), an import's (``ImportReport``: its
files, conversations, errors and what it left unread), and a full disk said in words (``DiskFull``).

Part of reading files (files.py, sources.py): the file reader fills these; imports.py turns them
into a job's result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import OperationalError, connection


@dataclass
class FileReport:
    path: str
    status: str  # imported | unchanged | failed | refused (no format reads it)
    agent: str = ""  # the format that read it
    added_messages: int = 0
    updated_messages: int = 0  # stored messages whose record changed (formats that rewrite records)
    bad_lines: int = 0
    errors: list[dict] = field(default_factory=list)
    conversation_ids: list[int] = field(default_factory=list)


@dataclass
class ImportReport:
    files: list[FileReport] = field(default_factory=list)
    conversation_ids: list[int] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)  # {"path", "line", "reason"}
    # Files in a folder that were not read, each {"path", "reason"}: no format reads it, or it is a
    # link out of the chosen folder (formats.discover does not follow those).
    skipped: list[dict] = field(default_factory=list)
    # Files read with a session's file, not on their own (a SQLite -wal or -shm, a sub-agent's
    # .meta.json), each {"path", "reason"}: "read with opencode.db (its SQLite write-ahead log)".
    read_with: list[dict] = field(default_factory=list)
    refused: bool = False  # nothing named was read by any format: nothing was stored

    def add(self, report: FileReport) -> None:
        self.files.append(report)
        for cid in report.conversation_ids:
            if cid not in self.conversation_ids:
                self.conversation_ids.append(cid)
        for err in report.errors:
            self.errors.append({"path": report.path, **err})

    def merge(self, other: ImportReport) -> None:
        """Take in what another import (a path, a folder upload, a part's session) reported."""
        self.files.extend(other.files)
        self.errors.extend(other.errors)
        self.skipped.extend(other.skipped)
        self.read_with.extend(other.read_with)
        self.conversation_ids.extend(c for c in other.conversation_ids if c not in self.conversation_ids)


# What a database says when the disk under it is full: SQLite; PostgreSQL (a table's file cannot
# grow, or its log cannot be written).
DISK_FULL = ("database or disk is full", "could not extend file", "no space left on device")


def disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OperationalError) and any(s in str(exc).lower() for s in DISK_FULL)


class DiskFull(Exception):
    """The database's disk filled while ``path`` was imported: that file's transaction was rolled
    back whole. ``report`` says what the import did before it (files committed already)."""

    def __init__(self, path: str, report: ImportReport | None = None):
        self.path = path
        self.report = report or ImportReport()
        super().__init__(disk_full_message(path, self.report))


def disk_full_message(path: str, report: ImportReport) -> str:
    if connection.vendor == "sqlite":
        data = Path(settings.DATA_DIR)
        try:
            where = f"{data.relative_to(settings.BASE_DIR)}/"
        except ValueError:
            where = f"{data}/"
    else:
        where = "the PostgreSQL database" if connection.vendor == "postgresql" else f"the {connection.vendor} database"
    done = sum(1 for f in report.files if f.status == "imported")
    if not done:
        return f"the disk holding {where} is full; nothing was changed"
    return (
        f"the disk holding {where} is full; {path} and what follows it were not imported (nothing of "
        f"them was stored), the {done} file{'s' if done != 1 else ''} before it were"
    )
