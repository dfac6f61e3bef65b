"""The ingest service's file side: which files to read, refusing what no format reads, and each
file imported in one transaction under a lock, with an ImportReport of what happened.

The records a format reads go to the row writer (writer.py: dedupe, positions, turns, token
counts, masking, folds, sub-agent links, the index's figures); the importers stay pure.

Invariants kept here (DESIGN.md): re-importing the same file changes nothing (an unchanged file
is not read again); a grown file adds only its new lines (it is read from where the last import
stopped, when its beginning is the same); a bad line never stops an import (it is counted and
reported); a crash leaves the previous complete state (the whole file is one transaction).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, transaction

from contextviewer.accounts.models import Project
from contextviewer.importers import formats
from contextviewer.importers.formats import Format, ParseInput
from contextviewer.importers.lines import open_stream

from contextviewer.conversations.models import Conversation, ConversationKind, Message, Source, SourceStatus, external_key
from contextviewer.ingest.fold_figures import attach_compaction_costs
from contextviewer.ingest.writer import Writer
from contextviewer.ingest import remask
from contextviewer.ingest import child

IMPORTER_VERSION = "2"
MAX_STORED_ERRORS = 1000
HASH_CHUNK = 1 << 20

UNREAD = "not a format contextviewer reads"

Progress = Callable[[int, int, str], None]  # (bytes done, bytes total, what)


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
    refused: bool = False  # nothing named was read by any format: nothing was stored

    def add(self, report: FileReport) -> None:
        self.files.append(report)
        for cid in report.conversation_ids:
            if cid not in self.conversation_ids:
                self.conversation_ids.append(cid)
        for err in report.errors:
            self.errors.append({"path": report.path, **err})


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


# ---------------------------------------------------------------------------------------------
# Entry points


def import_path(
    project: Project, path: str | os.PathLike, progress: Progress | None = None, names: Callable[[Path], tuple[str, str]] | None = None
) -> ImportReport:
    """``_import_path``, every file parsed in the import's parsing process (child.py): a crash of a
    parser fails that file only, and the import goes on with the next."""
    with child.parsing():
        return _import_path(project, path, progress, names)


def _import_path(
    project: Project, path: str | os.PathLike, progress: Progress | None = None, names: Callable[[Path], tuple[str, str]] | None = None
) -> ImportReport:
    """Import a session file or a folder of them (recursively), sub-agent files included, in
    whichever format each is (importers/formats.py decides). What no format reads is refused
    before anything is stored. ``names``: each file's (source key, display name) where they are
    not its path (a stored folder upload: folder_upload.py)."""
    report, groups = discover_path(path)
    if groups:
        import_groups(project, groups, report, progress, names)
    return report


def discover_path(path: str | os.PathLike) -> tuple[ImportReport, list[formats.SessionFiles]]:
    """The sessions under ``path`` (each a main file with its sub-agent files, kept together),
    and a report holding what is not read (``skipped``), or why nothing is (``refused``)."""
    report = ImportReport()
    path = Path(path).expanduser()
    if not path.exists():
        report.errors.append({"path": str(path), "line": 0, "reason": "no such file or folder"})
        return report, []
    found = formats.discover(path)
    groups = found.sessions
    report.skipped = skipped_files(found)
    if not groups:
        report.refused = True
        report.errors.append({"path": str(path), "line": 0, "reason": refusal_of(path, found)})
    return report, groups


def import_groups(
    project: Project,
    groups: list[formats.SessionFiles],
    report: ImportReport,
    progress: Progress | None = None,
    names: Callable[[Path], tuple[str, str]] | None = None,
) -> ImportReport:
    """Import sessions found by ``discover_path`` into ``report``, a session's main file first,
    then its sub-agent files (linked to it). Raises DiskFull (with what was done before)."""
    named = (lambda p: dict(zip(("source_key", "display_name"), names(p)))) if names else (lambda p: {})
    total = sum(group_size(g) for g in groups) or 1
    done = 0

    def file_progress(offset: int, what: str) -> None:
        if progress:
            progress(min(done + offset, total), total, what)

    for group in groups:
        try:
            fmt = formats.get(group.format)
            current = group.main
            if group.main is not None:
                main_report = import_file_isolated(project, group.main, fmt=fmt, progress=file_progress, **named(group.main))
                report.add(main_report)
                done += _size(group.main)
                parent = _main_conversation(main_report)
            else:  # sub-agent files named without their session's main file
                parent = Conversation.objects.filter(
                    project=project, agent=fmt.name, external_id=external_key(group.session_id or "")
                ).first()
            for sub in group.subagents:
                current = sub.path
                sub_report = import_file_isolated(
                    project,
                    sub.path,
                    fmt=fmt,
                    parent=parent,
                    agent_id=sub.agent_id,
                    agent_type=sub.agent_type,
                    kind=ConversationKind.COMPACTION if sub.is_compaction else ConversationKind.SUBAGENT,
                    progress=file_progress,
                    **named(sub.path),
                )
                report.add(sub_report)
                done += _size(sub.path)
            if parent is not None:
                attach_compaction_costs(parent)
        except OperationalError as exc:
            if not disk_full(exc):
                raise
            # This group's file was rolled back whole; the ones before it are committed.
            raise DiskFull(str(current), report) from exc
    if progress:
        progress(total, total, "done")
    return report


def group_size(group: formats.SessionFiles) -> int:
    """Bytes of a session's files (main and sub-agents)."""
    return sum(_size(f) for f in _group_files(group))


def group_to_json(group: formats.SessionFiles) -> dict:
    """A session found by discovery as a job's parameter (imports.py: one part of a folder)."""
    return {
        "format": group.format,
        "main": str(group.main) if group.main is not None else None,
        "session_id": group.session_id,
        "subagents": [
            {"path": str(s.path), "agent_id": s.agent_id, "agent_type": s.agent_type, "is_compaction": s.is_compaction}
            for s in group.subagents
        ],
    }


def group_from_json(data: dict) -> formats.SessionFiles:
    return formats.SessionFiles(
        format=data["format"],
        main=Path(data["main"]) if data.get("main") else None,
        session_id=data.get("session_id"),
        subagents=[
            formats.SubagentFile(Path(s["path"]), s["agent_id"], s.get("agent_type"), bool(s.get("is_compaction")))
            for s in data.get("subagents") or ()
        ],
    )


def import_file_isolated(project: Project, path: str | os.PathLike, **kwargs) -> FileReport:
    """``import_file``, with a crash of the file's parser (child.py) said as that file's failure."""
    try:
        return import_file(project, path, **kwargs)
    except child.ImporterCrashed as exc:
        path = Path(path)
        name = kwargs.get("display_name") or str(path)
        error = {"line": exc.line, "reason": f"{exc.message(name)}; the import went on with its other files"}
        Source.objects.filter(project=project, path=kwargs.get("source_key") or str(path.resolve())).update(
            status=SourceStatus.FAILED, errors=[error], error_count=1
        )
        fmt = kwargs.get("fmt")
        return FileReport(path=name, status="failed", agent=fmt.name if fmt else "", bad_lines=1, errors=[error])


def skipped_files(found: formats.Discovery) -> list[dict]:
    """What an import of a folder leaves unread, each {"path", "reason"} (``manage.py formats`` says
    the same for a folder)."""
    read_beside = companions_read(found)
    skipped = [{"path": str(p), "reason": UNREAD} for p, _ in found.skipped if p not in read_beside]
    return skipped + [{"path": str(p), "reason": reason} for p, reason in found.not_followed]


def companions_read(found: formats.Discovery) -> dict[Path, Path]:
    """Files read with a session's file (a sub-agent's .meta.json, a SQLite -wal), by the file they
    go with: not skipped, though no format reads them alone."""
    beside: dict[Path, Path] = {}
    for group in found.sessions:
        fmt = formats.get(group.format)
        for path in _group_files(group):
            for companion in fmt.companion_files(path) if fmt is not None else []:
                beside.setdefault(companion, path)
    return beside


def refusal_of(path: Path, found: formats.Discovery) -> str:
    """Why nothing under ``path`` is imported (``found`` holds no session)."""
    if path.is_file() or not found.skipped:
        looked_like = found.skipped[0][1] if found.skipped and found.skipped[0][1] else None
        return formats.refusal(path, looked_like)
    shown = ", ".join(f"{p.name} ({formats.describe(p)})" for p, _ in found.skipped[:3])
    more = f" and {len(found.skipped) - 3} more" if len(found.skipped) > 3 else ""
    return f"no session log in this folder: {shown}{more} are not a format contextviewer reads ({formats.labels()})"


def _group_files(group) -> list[Path]:
    return [p for p in (group.main, *[s.path for s in group.subagents]) if p is not None]


def _size(path: Path) -> int:
    try:
        if path.is_dir():
            return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        return path.stat().st_size
    except OSError:
        return 0


def _main_conversation(report: FileReport) -> Conversation | None:
    if not report.conversation_ids:
        return None
    return Conversation.objects.filter(pk=report.conversation_ids[0]).first()


# ---------------------------------------------------------------------------------------------
# One file


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


def _prefix_hash(path: Path, length: int, compression: str) -> str:
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


def import_file(
    project: Project,
    path: str | os.PathLike,
    *,
    fmt: Format | None = None,
    display_name: str | None = None,
    source_key: str | None = None,
    parent: Conversation | None = None,
    agent_id: str | None = None,
    agent_type: str | None = None,
    kind: str = ConversationKind.MAIN,
    progress: Callable[[int, str], None] | None = None,
) -> FileReport:
    """Import one file (or one folder or database that a format reads as a unit) in one
    transaction. Safe to call twice at once and to call again later. ``fmt``: the format that
    reads it (else the one that claims it; a path no format claims is refused, nothing stored)."""
    path = Path(path)
    key = source_key or str(path.resolve())
    report = FileReport(path=display_name or str(path), status="imported")
    fmt = fmt or formats.claim(path)
    if fmt is None:
        report.status = "refused"
        report.errors = [{"line": 0, "reason": formats.refusal(path)}]
        return report
    report.agent = fmt.name
    try:
        source, _ = Source.objects.get_or_create(
            project=project, path=key, defaults={"name": display_name or path.name, "format": fmt.name}
        )
    except IntegrityError:  # created by a concurrent import of the same file
        source = Source.objects.get(project=project, path=key)

    with transaction.atomic():
        # The row lock (PostgreSQL) or the IMMEDIATE write lock (SQLite) serializes imports of one file.
        source = Source.objects.select_for_update().get(pk=source.pk)
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
            report.status = "failed"
            report.errors = list(source.errors)
            return report

        if source.status == SourceStatus.IMPORTED and source.sha256 == sha and source.size == size:
            report.status = "unchanged"
            report.bad_lines = source.error_count
            report.errors = list(source.errors)  # the file's known problems, said again
            report.conversation_ids = list(
                source.conversations.order_by("pk").values_list("pk", flat=True)
            )
            return report

        start_offset, start_line = 0, 0
        if (
            source.bytes_consumed
            and fmt.storage == formats.LINES
            and source.format == fmt.name
            and not source.compression
            and size >= source.bytes_consumed
            and prefix_sha == source.prefix_sha256
        ):
            start_offset, start_line = source.bytes_consumed, source.lines_consumed
            # Lines after the resume point are read again, so what was said about them (a last
            # line cut mid-write: "incomplete") is said again only if it still holds.
            stale = [e for e in source.errors if (e.get("line") or 0) > start_line]
            if stale:
                source.errors = [e for e in source.errors if (e.get("line") or 0) <= start_line]
                source.error_count = max(0, source.error_count - len(stale))
        elif source.bytes_consumed:
            # Rewritten or shrunk: read it all again; uuid dedupe keeps what is already stored
            # (a format that rewrites records updates the stored messages that changed).
            source.errors, source.error_count = [], 0

        writer = Writer(project, source, fmt, parent=parent, agent_id=agent_id, agent_type=agent_type, kind=kind)
        last_message = Message.objects.order_by("-pk").values_list("pk", flat=True).first()  # masking by value
        stream, compression = None, ""
        if fmt.storage in (formats.LINES, formats.DOCUMENT) and not path.is_dir():  # a folder never gets a stream
            stream, compression = open_stream(path, max_decompressed_bytes=settings.MAX_DECOMPRESSED_BYTES)
        parsed = None  # the records from the import's parsing process
        try:
            if start_offset:
                stream.seek(start_offset)
            parse_input = ParseInput(
                path=path,
                stream=stream,
                start_offset=start_offset,
                start_line=start_line,
                agent_id=agent_id,
                agent_type=agent_type,
                max_line_bytes=settings.MAX_LINE_BYTES,
                max_decompressed_bytes=settings.MAX_DECOMPRESSED_BYTES,
            )
            parser = child.current() if settings.IMPORT_PROCESS_MIN_BYTES >= 0 else None
            if parser is not None and formats.get(fmt.name) is fmt:
                # In the import's parsing process: a crash of the parser fails this file only (child.py).
                records = parsed = parser.parse(fmt.name, parse_input)
                in_process = False
            else:  # a large file is parsed and tokenized in a forked process on the other core
                records = fmt.parse(parse_input)
                in_process = 0 <= settings.IMPORT_PROCESS_MIN_BYTES <= size - start_offset
            info = writer.consume(records, progress=progress, in_process=in_process)
        finally:
            if parsed is not None:
                parsed.close()  # a parse left in the middle ends here (its parsing process too)
            if stream is not None:
                stream.close()

        new_errors = writer.errors
        source.compression = compression or ""
        source.format = fmt.name
        source.sha256 = sha
        source.size = size
        source.importer_version = IMPORTER_VERSION
        if info is not None:
            source.bytes_consumed = info.bytes_consumed
            source.lines_consumed = info.lines
            source.duplicate_count += info.duplicate_uuids
        if fmt.storage != formats.LINES:
            source.prefix_sha256 = ""
        elif source.bytes_consumed != size or compression:
            source.prefix_sha256 = _prefix_hash(path, source.bytes_consumed, source.compression)
        else:
            source.prefix_sha256 = sha
        source.error_count += len(new_errors)
        source.errors = (list(source.errors) + new_errors)[:MAX_STORED_ERRORS]
        source.status = SourceStatus.IMPORTED
        source.save()
        writer.finish_session(info)
        # A secret found once is masked wherever it stands in the conversations' trees (remask.py).
        remask.mask_by_value([c.pk for c in writer.conversations()], writer.secret_values, since=last_message)

    report.added_messages = writer.added_messages
    report.updated_messages = writer.updated_messages
    report.bad_lines = source.error_count
    report.errors = new_errors
    report.conversation_ids = [c.pk for c in writer.conversations()]
    return report
