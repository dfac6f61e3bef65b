"""The import job: started (``start_import``), planned (a folder worth several parts is split into
jobs of whole sessions, ``_plan``) and run (``run_import``, ``run_import_part``), each path or
upload handed to the file reader (files.py; folder_upload.py for a stored folder), whose reports
become the job's result (``import_result``). Also: store an upload, titles after a job.

The flow goes one way: this plans and runs the job, files.py reads each file and hands its records
to the row maker (row_maker.py), which has the row writer (row_writer.py) write them."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

from django.conf import settings
from django.db import OperationalError
from django.db.models import Count, Min

from contextviewer.accounts.models import Project
from contextviewer.core import tokens

from contextviewer.importers import formats
from contextviewer.ingest import child as ingest_child, files as ingest
from contextviewer.ingest import folder_upload
from contextviewer.ingest.reports import DiskFull, FileReport, ImportReport, disk_full, disk_full_message
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation, Fold, Source
from contextviewer.conversations import upload_store
from contextviewer.conversations.uploads import UPLOAD_DIR, safe_name, upload_name
from contextviewer.jobs.models import Job, JobStatus
from contextviewer.conversations import calibration
from contextviewer.ingest import titles


log = logging.getLogger(__name__)


class UploadTooLarge(Exception):
    pass


def store_upload(uploaded, max_bytes: int | None = None) -> dict:
    """Stream an uploaded file to MEDIA_ROOT/uploads/<sha256>/<name>; return its descriptor."""
    max_bytes = max_bytes or settings.MAX_UPLOAD_BYTES
    name = safe_name(uploaded.name)
    root = Path(settings.MEDIA_ROOT) / UPLOAD_DIR
    root.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in uploaded.chunks():
                size += len(chunk)
                if size > max_bytes:
                    raise UploadTooLarge(
                        f"{uploaded.name}: larger than the {max_bytes / 1e6:.0f} MB upload limit; "
                        "import it from disk with `python manage.py import PATH` instead"
                    )
                digest.update(chunk)
                out.write(chunk)
        sha = digest.hexdigest()
        final_dir = root / sha
        final_dir.mkdir(exist_ok=True)
        final = final_dir / name
        os.replace(tmp, final)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    blob = final.relative_to(settings.MEDIA_ROOT).as_posix()
    upload_store.publish(blob)  # where a worker on another machine fetches it
    return {"name": upload_name(uploaded.name), "sha256": sha, "size": size, "blob": blob}


def store_uploads(files: list, paths: list[str] | None = None, max_bytes: int | None = None) -> list[dict]:
    """Store an upload's files: each alone, or (several files, relative paths with folders, a zip)
    as one folder with its layout kept (folder_upload.py). Raises UploadTooLarge, or
    folder_upload.UploadRefused when nothing can be stored."""
    paths = list(paths or [])
    if folder_upload.wants_folder(files, paths):
        return [folder_upload.store_folder(files, paths, max_bytes)]
    return [store_upload(f, max_bytes) for f in files]


def _discard_upload(path: Path) -> None:
    """A refused upload is not kept: nothing of it is stored."""
    upload_store.remove(path.relative_to(settings.MEDIA_ROOT).as_posix())
    try:
        path.unlink()
        path.parent.rmdir()
    except OSError:
        pass


def start_import(project: Project, *, paths=(), uploads=(), stored=(), user=None, idempotency_key=None, enqueue=True):
    """``stored``: files kept in the upload store by the server itself (a push client's), each
    ``{"key": path under MEDIA_ROOT (a folder ends in /), "root": the folder its names are relative
    to, "name": what the job page calls it}``: read by any worker from the store, each file's Source
    keyed by where it lies in the store (``stored:<key>``), not by a machine's folder."""
    params = {"paths": [str(p) for p in paths], "uploads": list(uploads)}
    if stored:
        params["stored"] = [dict(item) for item in stored]
    if not enqueue:  # run by the caller's process (`import` without --queue, a watcher): in one piece, no parts sent to workers
        params["in_process"] = True
    return jobs.create_job(project, "import", params, user=user, idempotency_key=idempotency_key, enqueue=enqueue)


# A folder import is split into parts (jobs of kind "import_part", jobs.queue.start_parts) that
# any worker runs, the folder's job too: each part is a batch of whole sessions (a main file with
# its sub-agent files) that one worker takes about PART_SECONDS to import (estimated from its files'
# count and size), so that what a part costs by itself (its job row, claim, heartbeat, a parsing
# process) stays a few per cent of it. A folder of one part's worth is imported by its own job, as
# it always was. CONTEXTVIEWER_IMPORT_PART_SECONDS=0: never split.
def _part_seconds() -> float:
    try:
        return float(os.environ.get("CONTEXTVIEWER_IMPORT_PART_SECONDS") or 2.0)
    except ValueError:
        return 2.0


FILE_SECONDS = 0.06  # the estimate of a file's import: a fixed cost per file...
MB_SECONDS = 0.035  # ... and a cost per MB (README, Benchmarks: bench import)


def fetch_uploads(uploads) -> None:
    """Copy the uploads a job names from the shared store into this worker's MEDIA_ROOT
    (conversations/upload_store.py; nothing to do where MEDIA_ROOT is the store)."""
    for blob in dict.fromkeys(u["blob"] for u in uploads):
        try:
            upload_store.fetch(blob)
        except upload_store.StoreError as exc:
            raise jobs.JobRefused(f"The upload could not be read from the shared store: {exc}") from exc


def fetch_part(units) -> None:
    """What a part's units read, from the shared store into this worker's MEDIA_ROOT: each
    session's files (with what lies beside them) where the unit is a session of a folder upload, a
    whole upload otherwise; not the whole folder, most of which other workers import."""
    try:
        for unit in units:
            if "upload" not in unit:
                continue
            blob = unit["upload"]["blob"]
            group = unit.get("group")
            if not group or not blob.endswith("/"):
                upload_store.fetch(blob)
                continue
            for rel in [group.get("main"), *(s["path"] for s in group.get("subagents") or ())]:
                if rel and not Path(rel).is_absolute():
                    upload_store.fetch(blob + rel, companions=True)
    except upload_store.StoreError as exc:
        raise jobs.JobRefused(f"The upload could not be read from the shared store: {exc}") from exc


def run_import(job: Job, progress) -> dict:
    fetch_uploads(job.params.get("uploads") or ())
    # Every file of the job is parsed in one parsing process: a parser's crash fails that file only.
    with ingest_child.parsing():
        plan = _plan(job)
        if plan is None:  # a file, or a folder of one part's worth: this job imports it all
            return _run_import(job, progress)
        return _run_parts(job, plan, progress)


def run_import_part(job: Job, progress) -> dict:
    """One part of a folder import (``_plan``): its sessions, each with its sub-agent files; the
    result has the shape of an import's (import_result), the folder's job merges them."""
    fetch_part(job.params.get("units") or ())
    with ingest_child.parsing():
        tokens.preload_encoding()
        report = ImportReport()
        units = job.params.get("units") or []
        count = max(len(units), 1)
        for index, unit in enumerate(units):

            def step(done: int, total: int, what: str, index=index) -> None:
                progress((index + (done / total if total else 1)) / count, f"importing {what}")

            _guarded(lambda unit=unit, step=step: _import_unit(job.project, unit, report, step), _unit_name(unit), report)
        _calibrate(report)
        return import_result(report)


def _run_import(job: Job, progress) -> dict:
    tokens.preload_encoding()  # counted from the first records on
    project = job.project
    report = ImportReport()
    items = _items(job)
    count = max(len(items), 1)
    refused = 0
    for index, (kind, item) in enumerate(items):

        def step(done: int, total: int, what: str, index=index) -> None:
            progress((index + (done / total if total else 1)) / count, f"importing {what}")

        name = item if kind == "path" else item["name"]
        refused += _guarded(lambda kind=kind, item=item, step=step: _import_item(project, kind, item, report, step), name, report)
    if items and refused == len(items):
        # Nothing named is a session log any format reads: nothing was stored; say what it was.
        raise jobs.JobRefused("; ".join(e["reason"] for e in report.errors), import_result(report))
    # Fact probes and titles follow the finished job (jobs/kinds.py FOLLOW_UPS): its result lists
    # the conversations it touched, sub-agents included (import_result).
    _calibrate(report)
    return import_result(report)


def _items(job: Job) -> list[tuple[str, object]]:
    return ([("path", p) for p in job.params.get("paths", [])] + [("upload", u) for u in job.params.get("uploads", [])]
            + [("stored", s) for s in job.params.get("stored", [])])


def _calibrate(report: ImportReport) -> None:
    imported = Conversation.objects.filter(pk__in=report.conversation_ids)
    imported |= Conversation.objects.filter(parent_id__in=report.conversation_ids)  # sub-agents compact too
    calibration.after_import(imported.only("agent", "cli_version"))


def _guarded(fn, name: str, report: ImportReport) -> int:
    """``fn()``, a full disk said as the job's refusal with what was imported before it; any other
    unexpected error is that item's failure in the report (``failed_file``), and 1 (as a refused
    item: a job none of whose items was read says why, every reason at once)."""
    try:
        return fn()
    except OperationalError as exc:
        if not disk_full(exc):
            raise
        # The file being written was rolled back whole: say so, not the database's words.
        raise jobs.JobRefused(disk_full_message(name, report), import_result(report)) from exc
    except DiskFull as exc:  # inside a folder: what came before it is in exc.report
        report.merge(exc.report)
        raise jobs.JobRefused(disk_full_message(exc.path, report), import_result(report)) from exc
    except (jobs.JobRefused, jobs.JobCancelled):
        raise
    except Exception as exc:  # one file's unexpected error fails that file, not the job's other files
        log.exception("import of %s stopped on an unexpected error", name)
        report.add(failed_file(name, exc))
        return 1


def failed_file(name: str, exc: Exception) -> FileReport:
    """The report of a file whose import stopped on an error nothing else caught: said in words
    (the file's transaction was rolled back, the job goes on with its other files)."""
    what = f"{exc.__class__.__name__}: {str(exc)[:200]}" if str(exc) else exc.__class__.__name__
    error = {"line": 0, "reason": (f"the import stopped on an unexpected error while reading this ({what}): the file it "
                                   "was reading was rolled back whole, and the import went on with its other files")}
    return FileReport(path=str(name), status="failed", bad_lines=1, errors=[error])


def _import_item(project: Project, kind: str, item, report: ImportReport, step) -> int:
    """Import one thing a job names (a path, an upload, a stored file) into ``report``; 1 when no format read it."""
    if kind == "path":
        return _import_path(project, item, report, step)
    if kind == "stored":
        return _import_stored(project, item, report, step)
    if item.get("folder"):  # a folder upload (or a zip of one): read as one folder
        sub = folder_upload.import_folder(project, item, progress=step)
        report.merge(sub)
        return int(sub.refused)
    path = Path(settings.MEDIA_ROOT) / item["blob"]
    file_report = ingest.import_file_isolated(
        project,
        path,
        ingest.FileOptions(display_name=item["name"], source_key=f"upload:{item['sha256']}/{item['name']}"),
        progress=lambda offset, what, size=item["size"], step=step: step(offset, size or 1, what),
    )
    report.add(file_report)
    if file_report.status == "refused":
        _discard_upload(path)
        return 1
    return 0


def _import_unit(project: Project, unit: dict, report: ImportReport, step) -> int:
    """Import one unit of a part: a session found in a folder (``group``), or a whole path or upload."""
    if "group" not in unit:
        return _import_item(project, *(("path", unit["path"]) if "path" in unit else ("upload", unit["upload"])), report, step)
    root, _rel, names = folder_upload.naming(unit["upload"]) if "upload" in unit else (None, None, None)
    sub = ImportReport()
    try:
        ingest.import_groups(project, [group_from_json(unit["group"], root)], sub, step, names)  # DiskFull: exc.report is sub
    except DiskFull:
        raise
    except Exception:  # the files before the one that failed are stored: said with it (_guarded)
        report.merge(sub)
        raise
    report.merge(sub)
    return 0


def _unit_name(unit: dict) -> str:
    """What a unit is called on the job's page: its session's main file (else its first file)."""
    group = unit.get("group")
    if group:
        path = group.get("main") or (group.get("subagents") or [{}])[0].get("path") or ""
        if "upload" in unit:  # relative to the upload's folder (an absolute one from before: made so)
            return folder_upload.naming(unit["upload"])[1](path) if Path(path).is_absolute() else path
        return path
    return unit["path"] if "path" in unit else unit["upload"]["name"]


class _Plan:
    """A folder import split into parts: ``parts`` (each a list of units), and what was found
    beside them (files not read, folders no format reads) for the folder job's result."""

    def __init__(self) -> None:
        self.parts: list[list[dict]] = []
        self.weights: list[float] = []
        self.errors: list[dict] = []
        self.skipped: list[dict] = []


def _plan(job: Job) -> _Plan | None:
    """The parts of a job that imports a folder (or several), or None when it stays one job: a
    file, or everything of one part's worth (PART_SECONDS)."""
    limit = _part_seconds()
    items = _items(job)
    if limit <= 0 or job.params.get("in_process") or not any(_is_folder(kind, item) for kind, item in items):
        return None
    plan = _Plan()
    units: list[tuple[dict, float]] = []
    for kind, item in items:
        if not _is_folder(kind, item):
            size = item.get("size", 0) if kind != "path" else _file_size(item)
            units.append(({kind: item}, FILE_SECONDS + size / 1e6 * MB_SECONDS))
            continue
        rel = str
        if kind == "path":
            found, groups = ingest.discover_path(item)
            base = {"path": item}
        else:
            root, rel, _names = folder_upload.naming(item)
            found, groups = ingest.discover_path(root)
            for entry in found.skipped:
                entry["path"] = rel(entry["path"])
            for entry in found.errors:
                if entry.get("path") == str(root):
                    entry["path"] = item["name"]
            found.errors[:0] = [dict(r) for r in item.get("refused") or ()]
            base = {"upload": {k: v for k, v in item.items() if k != "refused"}}
            if found.refused:
                return None  # nothing of it is read: said (and the folder not kept) as before
        plan.errors.extend(found.errors)
        plan.skipped.extend(found.skipped)
        for group in groups:
            files = 1 + len(group.subagents)
            units.append(({**base, "group": group_to_json(group, rel)}, files * FILE_SECONDS + ingest.group_size(group) / 1e6 * MB_SECONDS))
    part: list[dict] = []
    cost = 0.0
    for unit, estimate in units:
        part.append(unit)
        cost += estimate
        if cost >= limit:
            plan.parts.append(part)
            plan.weights.append(cost)
            part, cost = [], 0.0
    if part:
        plan.parts.append(part)
        plan.weights.append(cost)
    return plan if len(plan.parts) > 1 else None


def _file_size(path: str) -> int:
    try:
        return Path(path).expanduser().stat().st_size
    except OSError:
        return 0


def _is_folder(kind: str, item) -> bool:
    if kind == "path":
        return Path(item).expanduser().is_dir()
    return bool(item.get("folder"))


def _run_parts(job: Job, plan: _Plan, progress) -> dict:
    """Import a folder in parts (``_plan``): any worker runs them, this job too; its page sums their
    progress, and its result merges theirs in the folder's order (conversations, files, errors,
    skipped) with one error per part that did not finish. Follow-ups (titles, fact probes) run once,
    on this job's result; the parts have none."""
    ids = jobs.start_parts(job, "import_part", [{"units": units} for units in plan.parts], plan.weights)
    parts = jobs.run_parts(job, ids, progress)
    result = {"conversations": [], "files": [], "errors": list(plan.errors), "skipped": list(plan.skipped), "read_with": []}
    seen: set[int] = set()
    unfinished = []
    for number, part in enumerate(parts, 1):
        done = part.result or {}
        for conv in done.get("conversations") or ():
            if conv.get("id") not in seen:
                seen.add(conv.get("id"))
                result["conversations"].append(conv)
        for key in ("files", "errors", "skipped", "read_with"):
            result[key].extend(done.get(key) or ())
        if part.status != JobStatus.SUCCEEDED:
            units = part.params.get("units") or []
            what = f"part {number} of {len(parts)} ({len(units)} session{'s' if len(units) != 1 else ''} from {_unit_name(units[0]) if units else '-'})"
            reason = part.error or part.status
            unfinished.append(f"{what}: {reason}")
            result["errors"].append({"path": _unit_name(units[0]) if units else "", "line": 0,
                                     "reason": f"{what} {part.status}: {reason}"})
    result["parts"] = len(parts)
    if unfinished:
        raise jobs.JobRefused(
            f"{len(unfinished)} of {len(parts)} parts of this import did not finish (Run again imports them; "
            f"the others are imported): " + "; ".join(unfinished[:5]) + (" ..." if len(unfinished) > 5 else ""),
            result,
        )
    return result


def _import_stored(project: Project, item: dict, report: ImportReport, step) -> int:
    """A file (or folder) the server keeps in the upload store, fetched into this worker's MEDIA_ROOT
    and read as a path whose files are named by their place in the store: the same Source on every
    worker, so a grown file's next import goes on where the last one stopped, whichever worker runs it."""
    try:
        path = upload_store.fetch(item["key"], companions=True)
    except upload_store.StoreError as exc:
        raise jobs.JobRefused(f"The file could not be read from the shared store: {exc}") from exc
    media, root = Path(settings.MEDIA_ROOT), upload_store.local(item.get("root") or item["key"])

    def names(p: Path) -> tuple[str, str]:
        p = Path(p)
        try:
            shown = p.relative_to(root).as_posix()
        except ValueError:
            shown = p.name
        return f"stored:{p.relative_to(media).as_posix()}", shown

    sub = ingest.import_path(project, path, progress=step, names=names)
    report.merge(sub)
    return int(sub.refused)


def _import_path(project: Project, path: str, report: ImportReport, step) -> int:
    """Import a file or folder into ``report``; 1 when nothing in it was read by any format."""
    sub = ingest.import_path(project, path, progress=step)
    report.merge(sub)
    return int(sub.refused)


def group_to_json(group: formats.SessionFiles, rel=str) -> dict:
    """A session found by discovery (files.discover_path) as a part's parameter; `rel` writes each
    path (an upload's: relative to its folder, which lies under each worker's own MEDIA_ROOT)."""
    return {
        "format": group.format,
        "main": rel(group.main) if group.main is not None else None,
        "session_id": group.session_id,
        "subagents": [
            {"path": rel(s.path), "agent_id": s.agent_id, "agent_type": s.agent_type, "is_compaction": s.is_compaction}
            for s in group.subagents
        ],
    }


def group_from_json(data: dict, base: Path | None = None) -> formats.SessionFiles:
    """`base`: the folder the paths are relative to (an absolute path stays as it is)."""
    where = (lambda p: base / p) if base is not None else Path
    return formats.SessionFiles(
        format=data["format"],
        main=where(data["main"]) if data.get("main") else None,
        session_id=data.get("session_id"),
        subagents=[
            formats.SubagentFile(where(s["path"]), s["agent_id"], s.get("agent_type"), bool(s.get("is_compaction")))
            for s in data.get("subagents") or ()
        ],
    )


def titles_after_job(job: Job, result: dict) -> None:
    """Follow-up of an import (jobs/kinds.py FOLLOW_UPS): titles for the new conversations (builtin,
    or the project's provider when one is set); titles.after_import keeps the top-level ones."""

    ids = [c["id"] for c in result.get("conversations") or () if isinstance(c, dict) and c.get("id")]
    titles.after_import(job.project, ids, user=job.created_by)


def import_result(report: ImportReport) -> dict:
    """The JSON shape of `import --json`, the API and the job page."""
    return {
        "conversations": _summaries(list(report.conversation_ids)),
        "files": [
            {"path": f.path, "agent": f.agent, "status": f.status, "added_messages": f.added_messages,
             "updated_messages": f.updated_messages, "bad_lines": f.bad_lines}
            for f in report.files
        ],
        "errors": report.errors,
        "skipped": report.skipped,
        "read_with": report.read_with,  # files read with a session's file (a -wal), not on their own
    }


def _summaries(ids: list[int]) -> list[dict]:
    """``conversation_summary`` of the conversations ``ids`` in pk order, each followed by its
    sub-agents (pk order) not listed before. A few queries for the whole list, not a few per
    conversation (a folder of 1,000 sessions: 1,250 conversations)."""
    top = list(Conversation.objects.filter(pk__in=ids).select_related("source", "parent").order_by("pk"))
    children: dict[int, list[Conversation]] = {}
    for c in Conversation.objects.filter(parent_id__in=[c.pk for c in top]).select_related("source", "parent").order_by("pk"):
        children.setdefault(c.parent_id, []).append(c)
    listed, seen = [], set()
    for conv in top:
        for c in [conv, *children.get(conv.pk, ())]:
            if c.pk not in seen:
                seen.add(c.pk)
                listed.append(c)
    pks = [c.pk for c in listed]
    counts = dict(Conversation.objects.filter(parent_id__in=pks).order_by().values_list("parent_id").annotate(n=Count("pk")))
    firsts = set(
        Conversation.objects.filter(source_id__in={c.source_id for c in listed if c.source_id})
        .order_by().values("source_id").annotate(first=Min("pk")).values_list("first", flat=True)
    )
    folds: dict[int, list[Fold]] = {}
    for f in Fold.objects.filter(conversation_id__in=pks).order_by("conversation_id", "position", "pk"):
        folds.setdefault(f.conversation_id, []).append(f)
    return [conversation_summary(c, counts.get(c.pk, 0), c.pk in firsts, folds.get(c.pk, ())) for c in listed]


def conversation_summary(c: Conversation, subagents: int | None = None, first_of_source: bool | None = None, folds=None) -> dict:
    """One conversation of ``import_result`` (what is not given is asked of the database)."""
    source: Source | None = c.source
    if subagents is None:
        subagents = c.children.count()
    if first_of_source is None:
        first_of_source = source is not None and source.conversations.order_by("pk").first() == c
    if folds is None:
        folds = c.folds.order_by("position")
    return {
        "id": c.pk,
        "external_id": c.external_id,
        "agent": c.agent,
        "parent_external_id": c.parent.external_id if c.parent_id else None,
        "kind": c.kind,
        "title": c.title,
        "messages": c.message_count,
        "model_calls": c.model_call_count,
        "tool_calls": c.tool_call_count,
        "subagents": subagents,
        # Bad lines belong to the file: count them once, on the conversation the file created first.
        "bad_lines": source.error_count if source and first_of_source else 0,
        "folds": [
            {"trigger": f.trigger, "tokens_before": f.tokens_before, "tokens_after": f.tokens_after, "cost": _fold_cost(f)}
            for f in folds
        ],
    }


def _fold_cost(fold) -> dict | None:
    """The summary call's tokens where the log has it (Fold.cost): input (uncached + cache write +
    cache read) and output; None where the log does not record the summarizer's call."""
    cost = fold.cost or {}
    if not cost or "output" not in cost:
        return None
    return {
        "input_tokens": sum(int(cost.get(k) or 0) for k in ("input_uncached", "cache_write", "cache_read")),
        "output_tokens": int(cost.get("output") or 0),
        "calls": cost.get("calls"),
        "model": cost.get("model") or None,
    }
