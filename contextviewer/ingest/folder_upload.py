"""A folder upload: the Import page's folder picker, a dropped folder, several files chosen together,
or a ``.zip`` of a folder. Stored whole under MEDIA_ROOT/uploads/<sha256>/ with each file at its
path relative to the chosen folder (the browser's ``webkitRelativePath``, sent in the ``paths``
field beside ``files``), a zip unpacked where it lies, then imported as one folder, as
``manage.py import FOLDER`` does: a session's sub-agent files, meta files and a database's ``-wal``
are read together.

Nothing is written outside that folder: a path that is absolute, has ``..``, a NUL or control
character, or is too deep is refused (the other files are kept, and the job says which was
refused and why); a zip's links and unsafe member names are refused the same way, and a zip
whose contents are over the size or count limit (a zip bomb) is refused whole, before anything
of it is written past the limit.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from contextviewer.conversations import upload_store
from contextviewer.conversations.uploads import UPLOAD_DIR, UnsafePath, relative_path
from contextviewer.ingest import files as ingest

CHUNK = 1 << 20


# A write that found the disk (or the user's quota) full: the upload is refused whole, with 507.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
DISK_FULL_MESSAGE = (
    "The server's disk is full: the upload could not be written, and nothing of it was stored. "
    "Free space on the server (its data directory) and upload again."
)


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is a write that found no space left (OSError 28, or the quota's 122)."""
    return isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS


class UploadRefused(Exception):
    """Nothing of the upload can be stored: the message says why."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass
class Limits:
    max_bytes: int  # each file, and all of them together (the request's own cap)
    unzipped_bytes: int  # a zip's unpacked contents
    unzipped_files: int

    @classmethod
    def from_settings(cls, max_bytes: int | None = None) -> Limits:
        return cls(max_bytes or settings.MAX_UPLOAD_BYTES, settings.MAX_UNZIPPED_BYTES, settings.MAX_UNZIPPED_FILES)


def is_zip(name: str) -> bool:
    return name.lower().endswith(".zip")


def wants_folder(files: list, paths: list[str]) -> bool:
    """Whether an upload is stored as one folder: several files (chosen together, so a session's
    companion files sit beside it), a path with a folder in it, or a zip."""
    named = paths or [f.name for f in files]
    return len(files) > 1 or any("/" in p.replace("\\", "/").strip("/") for p in named) or any(is_zip(p) for p in named)


def pair(files: list, paths: list[str]) -> list[tuple[object, str]]:
    """Each uploaded file with the relative path it was sent with (its name where none was sent)."""
    if paths and len(paths) != len(files):
        raise UploadRefused(
            f"{len(paths)} paths were sent for {len(files)} files: send one 'paths' value per file, in the same order, or none"
        )
    return list(zip(files, paths or [f.name for f in files]))


def _shown(name: str) -> str:
    """A refused name as it can be printed (control characters and NUL as escapes)."""
    return name.encode("unicode_escape").decode("ascii")[:300] if any(ord(c) < 32 for c in name) else name[:300]


class _Tree:
    """The folder being written (a temporary folder beside the stored uploads)."""

    def __init__(self, root: Path, limits: Limits):
        self.root = root
        self.limits = limits
        self.files: dict[str, str] = {}  # relative path -> sha256 of the bytes
        self.dirs: set[str] = set()  # the folders they are in
        self.size = 0
        self.refused: list[dict] = []

    def refuse(self, path: str, reason: str) -> None:
        self.refused.append({"path": _shown(path), "line": 0, "reason": reason})

    def target(self, raw: str, rel: str) -> Path | None:
        """Where ``rel`` is written; None (refused) if it is there already or a file is in its way."""
        if rel in self.files:
            self.refuse(raw, "sent twice in the upload: the first copy is kept")
            return None
        parts = rel.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in self.files:
                self.refuse(raw, f"its folder {'/'.join(parts[:i])} is a file in the upload: not stored")
                return None
        if rel in self.dirs:
            self.refuse(raw, "a folder of that name is in the upload: not stored")
            return None
        target = self.root / rel
        if not target.resolve().is_relative_to(self.root.resolve()):  # belt and braces: relative_path forbids it
            self.refuse(raw, "a path that leaves the upload's folder: not stored")
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        self.dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
        return target

    def write(self, target: Path, rel: str, chunks, what: str, sent: bool = True) -> None:
        """Write ``chunks`` at ``target``; a file ``sent`` in the request counts against the upload's
        size limit (a zip's members against the zip's own, in the chunks they come in)."""
        digest = hashlib.sha256()
        size = 0
        # O_EXCL | O_NOFOLLOW: never through a link, never over a file already there.
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                size += len(chunk)
                self.size += len(chunk) if sent else 0
                if sent and (size > self.limits.max_bytes or self.size > self.limits.max_bytes):
                    raise UploadRefused(
                        f"{what}: the upload is larger than the {self.limits.max_bytes / 1e6:.0f} MB limit; "
                        "import it from disk with `python manage.py import PATH` instead",
                        status=413,
                    )
                digest.update(chunk)
                out.write(chunk)
        self.files[rel] = digest.hexdigest()


def store_folder(files: list, paths: list[str], max_bytes: int | None = None) -> dict:
    """Store the uploaded files at their relative paths (a zip unpacked where it lies) in the
    upload's own folder; return the job's descriptor of it. Raises UploadRefused when nothing can
    be stored (every path refused, the upload over the size limit); nothing is kept then."""
    limits = Limits.from_settings(max_bytes)
    parts = pair(files, paths)
    uploads = Path(settings.MEDIA_ROOT) / UPLOAD_DIR
    uploads.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=uploads, prefix=".folder-"))
    try:
        tree = _Tree(tmp, limits)
        for uploaded, raw in parts:
            try:
                rel = relative_path(raw)
            except UnsafePath as exc:
                tree.refuse(raw, str(exc))
                continue
            target = tree.target(raw, rel)
            if target is not None:
                tree.write(target, rel, uploaded.chunks(), raw)
        for rel in [r for r in tree.files if is_zip(r)]:
            _unpack(tree, rel)
        if not tree.files:
            reasons = "; ".join(f"{r['path']}: {r['reason']}" for r in tree.refused) or "no file was sent"
            raise UploadRefused(f"Nothing was stored: {reasons}")
        digest = hashlib.sha256()
        for rel, sha in sorted(tree.files.items()):
            digest.update(rel.encode("utf-8", "surrogateescape") + b"\0" + sha.encode() + b"\0")
        sha = digest.hexdigest()
        final = uploads / sha
        if final.exists():  # the same folder uploaded before: its stored copy is read again
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    upload_store.publish(f"{UPLOAD_DIR}/{sha}/")  # where a worker on another machine fetches it
    tops = {rel.split("/", 1)[0] for rel in tree.files}
    name = next(iter(tops)) if len(tops) == 1 else f"{len(tree.files)} files"
    return {
        "name": name[:500], "sha256": sha, "size": tree.size, "blob": f"{UPLOAD_DIR}/{sha}/", "folder": True,
        "files": len(tree.files), "refused": tree.refused,
    }


# -- a zip of a folder -----------------------------------------------------------------------


class _ZipRefused(Exception):
    pass


def _unpack(tree: _Tree, rel: str) -> None:
    """Replace the zip at ``rel`` with its contents (its members' paths under the zip's folder).
    A zip over the limits, or not readable, is refused whole: nothing of it stays."""
    path = tree.root / rel
    base = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
    written: list[str] = []
    try:
        with zipfile.ZipFile(path) as archive:
            members = [m for m in archive.infolist() if not m.is_dir()]
            if len(members) > tree.limits.unzipped_files:
                raise _ZipRefused(
                    f"a zip of {len(members)} files, over the {tree.limits.unzipped_files} a zip upload may hold: not unpacked; "
                    "unpack it and import the folder with `python manage.py import PATH`"
                )
            declared = sum(m.file_size for m in members)
            if declared > tree.limits.unzipped_bytes:
                raise _ZipRefused(_too_big(declared, tree.limits))
            unpacked = 0
            for member in members:
                shown = f"{rel}: {member.filename}"
                if stat.S_ISLNK(member.external_attr >> 16):
                    tree.refuse(shown, "a link in the zip: not followed")
                    continue
                if member.flag_bits & 0x1:
                    tree.refuse(shown, "an encrypted file in the zip: not unpacked")
                    continue
                try:
                    member_rel = relative_path(base + relative_path(member.filename))
                except UnsafePath as exc:
                    tree.refuse(shown, str(exc))
                    continue
                target = tree.target(shown, member_rel)
                if target is None:
                    continue
                with archive.open(member) as src:

                    def chunks(src=src):
                        nonlocal unpacked
                        while chunk := src.read(CHUNK):
                            unpacked += len(chunk)
                            if unpacked > tree.limits.unzipped_bytes:  # sizes the zip lied about
                                raise _ZipRefused(_too_big(unpacked, tree.limits, more=True))
                            yield chunk

                    written.append(member_rel)
                    tree.write(target, member_rel, chunks(), shown, sent=False)
    except (_ZipRefused, zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError) as exc:
        if disk_full(exc):  # not the zip's fault: the whole upload is refused (store_folder removes it)
            raise
        for member_rel in written:  # nothing of a refused zip stays
            tree.files.pop(member_rel, None)
            (tree.root / member_rel).unlink(missing_ok=True)
        reason = str(exc) if isinstance(exc, _ZipRefused) else f"not a readable zip archive ({exc}): not unpacked"
        tree.refuse(rel, reason)
    path.unlink(missing_ok=True)
    tree.files.pop(rel, None)


def _too_big(size: int, limits: Limits, more: bool = False) -> str:
    return (
        f"a zip whose files {'unpack to more than' if more else 'add up to'} {size / 1e6:.0f} MB, over the "
        f"{limits.unzipped_bytes / 1e6:.0f} MB a zip upload may unpack to: not unpacked; unpack it and import the folder "
        "with `python manage.py import PATH`"
    )


# -- the import --------------------------------------------------------------------------------


def import_folder(project, item: dict, progress=None) -> ingest.ImportReport:
    """Import a stored folder upload as one folder. Sources are keyed ``upload:<sha256>/<path>``
    and named by their path in the folder; the files refused when it was stored are the job's
    errors too. A folder nothing of which was read is not kept."""
    root, rel, names = naming(item)
    report = ingest.import_path(project, root, progress=progress, names=names)
    for entry in report.skipped:
        entry["path"] = rel(entry["path"])
    for entry in report.errors:
        if entry.get("path") == str(root):
            entry["path"] = item["name"]
    report.errors[:0] = [dict(r) for r in item.get("refused") or ()]
    if report.refused:
        shutil.rmtree(root, ignore_errors=True)  # nothing of it was read: not kept
        upload_store.remove(item["blob"])
    return report


def naming(item: dict):
    """A stored folder upload's root, its paths relative to the root, and each file's (source
    key, display name): ``upload:<sha256>/<path>`` and ``<path>`` (an import of one of its parts,
    imports.py, names its files the same way)."""
    root = Path(settings.MEDIA_ROOT) / item["blob"]
    sha = item["sha256"]

    def rel(path: Path | str) -> str:
        path = Path(path)
        for base in (root, root.resolve()):
            try:
                return path.relative_to(base).as_posix()
            except ValueError:
                continue
        return path.name

    def names(path: Path) -> tuple[str, str]:
        where = rel(path)
        return f"upload:{sha}/{where}", where

    return root, rel, names
