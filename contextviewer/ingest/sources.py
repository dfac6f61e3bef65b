"""One file's import, the file reader's side: the format that claims it, its Source row (locked for
the file's one transaction), its hashes (sha256 of the whole and of the part read before), whether
it is unchanged, where to resume reading it, its parse (in the import's parsing process, child.py,
or here), and the FileReport. The records go to the row maker (row_maker.py), which has the row
writer write them.

Invariants kept here (DESIGN.md): re-importing the same file changes nothing (an unchanged file
is not read again); a grown file adds only its new lines (it is read from where the last import
stopped, when its beginning is the same); a bad line never stops an import (it is counted and
reported); a crash leaves the previous complete state (the whole file is one transaction).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction

from contextviewer.accounts.models import Project
from contextviewer.core.records import SessionInfo
from contextviewer.importers import formats
from contextviewer.importers.formats import Format, ParseInput
from contextviewer.importers.lines import open_stream
from contextviewer.conversations import changes
from contextviewer.conversations.models import Source, SourceStatus
from contextviewer.ingest import child
from contextviewer.ingest.reports import FileReport
from contextviewer.ingest.row_maker import RowMaker, Subagent

IMPORTER_VERSION = "2"
MAX_STORED_ERRORS = 1000
HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class FileOptions:
    """What one file's import is told besides its path: its Source's key and name where they are
    not its path (an upload: ``upload:<sha256>/<name>``), and, for a sub-agent's file, the
    conversation it belongs under (``Subagent``; None: the file is a session's own)."""

    display_name: str | None = None
    source_key: str | None = None
    subagent: Subagent | None = None

    def key(self, path: Path) -> str:
        return self.source_key or str(path.resolve())

    def name(self, path: Path) -> str:
        return self.display_name or str(path)


@dataclass(frozen=True)
class _File:
    """The file as this import found it: the format that reads it, and its hashes."""

    path: Path
    fmt: Format
    sha: str  # of the whole file (and its companions)
    prefix_sha: str | None  # of the part the last import read, where the file still has it
    size: int


@dataclass(frozen=True)
class _Read:
    """What reading the file said: its SessionInfo (how far it was read), its compression."""

    info: SessionInfo | None
    compression: str


def import_file(
    project: Project,
    path: str | os.PathLike,
    options: FileOptions | None = None,
    *,
    fmt: Format | None = None,
    progress: Callable[[int, str], None] | None = None,
) -> FileReport:
    """Import one file (or one folder or database that a format reads as a unit) in one
    transaction. Safe to call twice at once and to call again later. ``fmt``: the format that
    reads it (else the one that claims it; a path no format claims is refused, nothing stored)."""
    path = Path(path)
    options = options or FileOptions()
    report = FileReport(path=options.name(path), status="imported")
    fmt = fmt or formats.claim(path)
    if fmt is None:
        report.status = "refused"
        report.errors = [{"line": 0, "reason": formats.refusal(path)}]
        return report
    report.agent = fmt.name
    source = _source(project, path, fmt, options)
    with transaction.atomic():
        # The row lock (PostgreSQL) or the IMMEDIATE write lock (SQLite) serializes imports of one file.
        source = Source.objects.select_for_update().get(pk=source.pk)
        file = _hash(path, fmt, source)
        if file is None:
            report.status = "failed"
            report.errors = list(source.errors)
            return report
        if source.status == SourceStatus.IMPORTED and source.sha256 == file.sha and source.size == file.size:
            return _unchanged(report, source)
        start = _resume(source, file)
        maker = RowMaker(project, source, fmt, options.subagent)
        read = _read(file, maker, start, progress)
        new_errors = maker.errors
        _imported(source, file, read, new_errors)
        maker.finish(read.info)
    report.added_messages = maker.added_messages
    report.updated_messages = maker.updated_messages
    report.bad_lines = source.error_count
    report.errors = new_errors
    report.conversation_ids = [c.pk for c in maker.conversations()]
    if report.added_messages or report.updated_messages:
        # An open page of these conversations learns of it at once (viewer/live.py), once committed.
        ids = list(report.conversation_ids)
        transaction.on_commit(lambda: changes.signal(ids))
    return report


def _source(project: Project, path: Path, fmt: Format, options: FileOptions) -> Source:
    """The file's Source row, created at its first import."""
    key = options.key(path)
    try:
        source, _ = Source.objects.get_or_create(
            project=project, path=key, defaults={"name": options.display_name or path.name, "format": fmt.name}
        )
    except IntegrityError:  # created by a concurrent import of the same file
        source = Source.objects.get(project=project, path=key)
    return source


def _hash(path: Path, fmt: Format, source: Source) -> _File | None:
    """The file's hashes; None when it cannot be read (the source then says so, saved failed)."""
    try:
        sha, prefix_sha, size = _hash_file(path, source.bytes_consumed)
        companions = [p for p in fmt.companion_files(path) if p.is_file()]
        if companions:
            # A change beside the file (a SQLite -wal, a .meta.json) is a change of the source.
            sha = hashlib.sha256(
                (sha + "".join(_hash_file(p, 0)[0] for p in companions)).encode()
            ).hexdigest()
    except OSError as exc:
        source.status = SourceStatus.FAILED
        source.errors = [{"line": 0, "reason": f"cannot read the file: {exc.strerror or exc}"}]
        source.error_count = 1
        source.save()
        return None
    return _File(path, fmt, sha, prefix_sha, size)


def _unchanged(report: FileReport, source: Source) -> FileReport:
    report.status = "unchanged"
    report.bad_lines = source.error_count
    report.errors = list(source.errors)  # the file's known problems, said again
    report.conversation_ids = list(source.conversations.order_by("pk").values_list("pk", flat=True))
    return report


def _resume(source: Source, file: _File) -> tuple[int, int]:
    """Where to read the file from (byte offset, line): where the last import stopped, when the file
    only grew since; else its start (the source forgets what it said of the lines read again)."""
    if (
        source.bytes_consumed
        and file.fmt.storage == formats.LINES
        and source.format == file.fmt.name
        and not source.compression
        and file.size >= source.bytes_consumed
        and file.prefix_sha == source.prefix_sha256
    ):
        start_offset, start_line = source.bytes_consumed, source.lines_consumed
        # Lines after the resume point are read again, so what was said about them (a last
        # line cut mid-write: "incomplete") is said again only if it still holds.
        stale = [e for e in source.errors if (e.get("line") or 0) > start_line]
        if stale:
            source.errors = [e for e in source.errors if (e.get("line") or 0) <= start_line]
            source.error_count = max(0, source.error_count - len(stale))
        return start_offset, start_line
    if source.bytes_consumed:
        # Rewritten or shrunk: read it all again; uuid dedupe keeps what is already stored
        # (a format that rewrites records updates the stored messages that changed).
        source.errors, source.error_count = [], 0
    return 0, 0


def _read(file: _File, maker: RowMaker, start: tuple[int, int], progress) -> _Read:
    """Parse the file from ``start`` (byte offset, line) and hand its records to the row maker."""
    path, fmt = file.path, file.fmt
    start_offset, start_line = start
    stream, compression = None, ""
    if fmt.storage in (formats.LINES, formats.DOCUMENT) and not path.is_dir():  # a folder never gets a stream
        stream, compression = open_stream(path, max_decompressed_bytes=settings.MAX_DECOMPRESSED_BYTES)
    parsed = None  # the records from the import's parsing process
    try:
        if start_offset:
            stream.seek(start_offset)
        # the file's agent, as told (the row maker has read no record yet)
        parse_input = parse_of(path, maker.agent_id, maker.agent_type, stream, start_offset, start_line)
        parser = child.current() if settings.IMPORT_PROCESS_MIN_BYTES >= 0 else None
        if parser is not None and formats.get(fmt.name) is fmt:
            # In the import's parsing process: a crash of the parser fails this file only (child.py).
            records = parsed = parser.parse(fmt.name, parse_input)
            in_process = False
        else:  # a large file is parsed and tokenized in a forked process on the other core
            records = fmt.parse(parse_input)
            in_process = 0 <= settings.IMPORT_PROCESS_MIN_BYTES <= file.size - start_offset
        return _Read(maker.consume(records, progress=progress, in_process=in_process), compression)
    finally:
        if parsed is not None:
            parsed.close()  # a parse left in the middle ends here (its parsing process too)
        if stream is not None:
            stream.close()


def parse_of(path: Path, agent_id: str | None, agent_type: str | None, stream=None, start_offset: int = 0, start_line: int = 0) -> ParseInput:
    """What a file's parser is given (``_read``; files.py tells the import's parsing process the
    files it will read from their start, so that it asks for each ahead: child.expect)."""
    return ParseInput(
        path=path,
        stream=stream,
        start_offset=start_offset,
        start_line=start_line,
        agent_id=agent_id,
        agent_type=agent_type,
        max_line_bytes=settings.MAX_LINE_BYTES,
        max_decompressed_bytes=settings.MAX_DECOMPRESSED_BYTES,
    )


def _imported(source: Source, file: _File, read: _Read, new_errors: list[dict]) -> None:
    """Save the source as imported: its hashes, how far it was read, what was said of its lines."""
    source.compression = read.compression or ""
    source.format = file.fmt.name
    source.sha256 = file.sha
    source.size = file.size
    source.importer_version = IMPORTER_VERSION
    if read.info is not None:
        source.bytes_consumed = read.info.bytes_consumed
        source.lines_consumed = read.info.lines
        source.duplicate_count += read.info.duplicate_uuids
    if file.fmt.storage != formats.LINES:
        source.prefix_sha256 = ""
    elif source.bytes_consumed != file.size or read.compression:
        source.prefix_sha256 = prefix_hash(file.path, source.bytes_consumed, source.compression)
    else:
        source.prefix_sha256 = file.sha
    source.error_count += len(new_errors)
    source.errors = (list(source.errors) + new_errors)[:MAX_STORED_ERRORS]
    source.status = SourceStatus.IMPORTED
    source.save()


# -- hashes


def _hash_folder(path: Path) -> tuple[str, None, int]:
    """sha256 of a folder's files (names, sizes and contents), and their total size."""
    digest = hashlib.sha256()
    total = 0
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode("utf-8", "surrogateescape") + b"\0")
        with open(file, "rb") as fh:
            while chunk := fh.read(HASH_CHUNK):
                digest.update(chunk)
                total += len(chunk)
        digest.update(b"\0")
    return digest.hexdigest(), None, total


def _hash_file(path: Path, prefix_len: int) -> tuple[str, str | None, int]:
    """sha256 of the whole file and of its first prefix_len bytes, in one pass."""
    if path.is_dir():
        return _hash_folder(path)
    whole = hashlib.sha256()
    prefix_digest = None
    read = 0
    with open(path, "rb") as fh:
        while True:
            if prefix_digest is None and read == prefix_len:
                prefix_digest = whole.copy().hexdigest()
            want = HASH_CHUNK if prefix_digest is not None else min(HASH_CHUNK, prefix_len - read)
            chunk = fh.read(want)
            if not chunk:
                break
            whole.update(chunk)
            read += len(chunk)
    if prefix_digest is None and read == prefix_len:
        prefix_digest = whole.copy().hexdigest()
    return whole.hexdigest(), prefix_digest, read


def prefix_hash(path: Path, length: int, compression: str = "") -> str:
    """The sha256 of the first `length` bytes of the file (of its decompressed stream, with `compression`)."""
    digest = hashlib.sha256()
    if compression:
        stream, _ = open_stream(path, max_decompressed_bytes=settings.MAX_DECOMPRESSED_BYTES)
    else:
        stream = open(path, "rb")
    try:
        remaining = length
        while remaining > 0:
            chunk = stream.read(min(HASH_CHUNK, remaining))
            if not chunk:
                break
            digest.update(chunk)
            remaining -= len(chunk)
    finally:
        stream.close()
    return digest.hexdigest()
