"""Reading files: the first piece of an import. Which files a path holds and what each is (discovery,
by format: importers/formats.py), refusing what no format reads, and each session's files imported
in turn, its main file first, then its sub-agent files linked to it; a file whose parser crashed
fails alone (child.py). One file's import (its Source, hashes, resume offset, parse, report) is
sources.py's; the records go on to the row maker (row_maker.py), which has the row writer
(row_writer.py) write them. imports.py plans and runs the import job over these entry points.

Entry points: ``import_path`` (a file or a folder), ``discover_path`` then ``import_groups`` (the
sessions found, as a job's parts do), ``import_file`` (one file), with an ImportReport or FileReport
(reports.py) of what happened.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import OperationalError

from contextviewer.accounts.models import Project
from contextviewer.importers import formats

from contextviewer.conversations.models import Conversation, ConversationKind, Source, SourceStatus, external_key
from contextviewer.ingest.fold_figures import attach_compaction_costs
from contextviewer.ingest import child
from contextviewer.ingest.reports import DiskFull, FileReport, ImportReport, disk_full, disk_full_message  # noqa: F401 - as callers name them (files.X)
from contextviewer.ingest.row_maker import Subagent, told_agent
from contextviewer.ingest.sources import FileOptions, import_file, parse_of

UNREAD = "not a format contextviewer reads"
MAX_DESCRIBED = 500  # files of a folder no format reads that are said what they looked like

Progress = Callable[[int, int, str], None]  # (bytes done, bytes total, what)


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
    done = _Done(progress, sum(group_size(g) for g in groups) or 1)
    _expect(project, groups, names)
    for group in groups:
        _import_session(project, group, report, done, names)
    if progress:
        progress(done.total, done.total, "done")
    return report


def _expect(project: Project, groups: list[formats.SessionFiles], names) -> None:
    """Tell the import's parsing process the files it will parse in turn (child.expect), so that it
    parses each while the writer stores the one before: those never imported into the project (a
    file imported before may be unchanged, or read from where the last import stopped)."""
    process = child.current()
    if process is None or settings.IMPORT_PROCESS_MIN_BYTES < 0:
        return
    planned = []
    for group in groups:
        if group.main is not None:
            planned.append((group.format, group.main, None))
        planned.extend((group.format, sub.path, Subagent(None, sub.agent_id, sub.agent_type)) for sub in group.subagents)
    keys = [names(path)[0] if names else None for _fmt, path, _sub in planned]
    keys = [key or FileOptions().key(path) for key, (_fmt, path, _sub) in zip(keys, planned)]
    known = set()
    for n in range(0, len(keys), 500):
        known.update(Source.objects.filter(project=project, path__in=keys[n:n + 500]).values_list("path", flat=True))
    process.expect([
        (fmt, parse_of(path, *told_agent(sub)))
        for key, (fmt, path, sub) in zip(keys, planned) if key not in known
    ])


class _Done:
    """The bytes of the import's files done so far, said to ``progress`` as a file is read."""

    def __init__(self, progress: Progress | None, total: int):
        self.progress, self.total, self.bytes = progress, total, 0

    def file(self, offset: int, what: str) -> None:
        if self.progress:
            self.progress(min(self.bytes + offset, self.total), self.total, what)


def _import_session(project: Project, group: formats.SessionFiles, report: ImportReport, done: _Done, names) -> None:
    """A session's main file, then its sub-agent files under the main file's conversation (or one
    imported before), then the compaction sub-agents' costs on its folds."""
    fmt = formats.get(group.format)
    current = group.main
    try:
        if group.main is not None:
            report.add(_import_one(project, group.main, fmt, None, names, done))
            parent = _main_conversation(report.files[-1])
            _note_read_with(report, fmt, group.main, names)
        else:  # sub-agent files named without their session's main file
            parent = Conversation.objects.filter(
                project=project, agent=fmt.name, external_id=external_key(group.session_id or "")
            ).first()
        for sub in group.subagents:
            current = sub.path
            kind = ConversationKind.COMPACTION if sub.is_compaction else ConversationKind.SUBAGENT
            report.add(_import_one(project, sub.path, fmt, Subagent(parent, sub.agent_id, sub.agent_type, kind), names, done))
            _note_read_with(report, fmt, sub.path, names)
        if parent is not None:
            attach_compaction_costs(parent)
    except OperationalError as exc:
        if not disk_full(exc):
            raise
        # This session's file was rolled back whole; the ones before it are committed.
        raise DiskFull(str(current), report) from exc


def _note_read_with(report: ImportReport, fmt, path: Path, names) -> None:
    """The files read with ``path`` (its -wal, its .meta.json), when it was read."""
    if report.files[-1].status in ("imported", "unchanged"):
        report.read_with.extend(read_with(fmt, path, names))


def _import_one(project: Project, path: Path, fmt, subagent: Subagent | None, names, done: _Done) -> FileReport:
    """One file of a session, named by ``names`` (source key, display name) where given."""
    key, name = names(path) if names else (None, None)
    file_report = import_file_isolated(project, path, FileOptions(name, key, subagent), fmt=fmt, progress=done.file)
    done.bytes += _size(path)
    return file_report


def group_size(group: formats.SessionFiles) -> int:
    """Bytes of a session's files (main and sub-agents)."""
    return sum(_size(f) for f in _group_files(group))


def import_file_isolated(
    project: Project,
    path: str | os.PathLike,
    options: FileOptions | None = None,
    *,
    fmt: formats.Format | None = None,
    progress: Callable[[int, str], None] | None = None,
) -> FileReport:
    """``import_file``, with a crash of the file's parser (child.py) said as that file's failure."""
    options = options or FileOptions()
    try:
        return import_file(project, path, options, fmt=fmt, progress=progress)
    except child.ImporterCrashed as exc:
        path = Path(path)
        name = options.name(path)
        error = {"line": exc.line, "reason": f"{exc.message(name)}; the import went on with its other files"}
        Source.objects.filter(project=project, path=options.key(path)).update(
            status=SourceStatus.FAILED, errors=[error], error_count=1
        )
        return FileReport(path=name, status="failed", agent=fmt.name if fmt else "", bad_lines=1, errors=[error])


def skipped_files(found: formats.Discovery) -> list[dict]:
    """What an import of a folder leaves unread, each {"path", "reason"}: what the file looked like
    (as a file named alone is refused), or the link not followed (``manage.py formats`` says the
    same for a folder). A file read with a session's file (a -wal) is not among them."""
    beside = companions_read(found)
    unread = [p for p, _ in found.skipped if p not in beside]
    # Each description reads the file's head: the first MAX_DESCRIBED are described (the job page
    # lists 200), the rest of a folder of thousands of other files just said unread.
    skipped = [{"path": str(p), "reason": unread_reason(p) if i < MAX_DESCRIBED else UNREAD} for i, p in enumerate(unread)]
    return skipped + [{"path": str(p), "reason": reason} for p, reason in found.not_followed]


def unread_reason(path: Path) -> str:
    """Why a file of a folder is not read: what it looks like (``formats.describe``), as said of a
    file named alone, without the list of formats."""
    looked_like = formats.describe(path)
    if looked_like == "the file is empty":
        return "the file is empty: nothing to import"
    if looked_like == formats.ZIP_REFUSAL or looked_like.startswith(formats.WAL_ALONE):  # it says what to do
        return looked_like
    return f"{looked_like}: {UNREAD}"


def companions_read(found: formats.Discovery) -> dict[Path, Path]:
    """Files read with a session's file (a sub-agent's .meta.json, a SQLite -wal or -shm), by the
    file they go with: not skipped, though no format reads them alone."""
    beside: dict[Path, Path] = {}
    for group in found.sessions:
        fmt = formats.get(group.format)
        for path in _group_files(group):
            for companion, _what in companions_of(fmt, path):
                beside.setdefault(companion, path)
    return beside


def companions_of(fmt: formats.Format | None, path: Path) -> list[tuple[Path, str]]:
    """The files beside ``path`` read with it, each with what it is ("" where the name says it):
    the format's companions, and a SQLite database's -wal, -shm and -journal."""
    found: dict[Path, str] = {c: "" for c in (fmt.companion_files(path) if fmt is not None else []) if c.is_file()}
    found.update(formats.sqlite_beside(path))
    return list(found.items())


def read_with(fmt: formats.Format | None, path: Path, names=None) -> list[dict]:
    """The report's entries of the files read with ``path`` ({"path", "reason"}: "read with
    opencode.db (its SQLite write-ahead log)"), named as ``names`` names the files."""
    def shown(p: Path) -> str:
        return names(p)[1] if names else str(p)

    return [{"path": shown(c), "reason": f"read with {path.name}" + (f" ({what})" if what else "")}
            for c, what in companions_of(fmt, path)]


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
