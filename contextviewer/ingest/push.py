"""Pushed session files (push.py, a developer's machine): what the server holds of each, the bytes a
client sends (a whole new file, or what a growing one appended), and their import.

A client (PushClient: a client id its script generated once, and a host name) sends each file by
its path relative to the folder it pushes. The bytes are stored with the uploads
(MEDIA_ROOT/uploads/push/<project>/<client id>/<path>: the client's folders mirrored, so a
session's sub-agent and companion files lie beside it as on the developer's disk), and the held
size and sha256 of each file are kept (PushFile). A client appends at the held size, naming the
sha256 of the bytes it believes are held: a mismatch is refused (Conflict, 409) and the client
sends the whole file again (offset 0 replaces what is held). Sending a chunk twice stores it
once: a chunk the server already holds at that offset is answered as stored.

A request's body is written aside first and applied only when it arrived whole, so a dropped
connection leaves the held bytes as they were; a held file longer than its row says (a write cut
by a crash) is cut back to the held size before anything is appended.

What is new is imported as the watcher imports a file that grew (watch.import_target, then the
ordinary import job with a key per state of the file): the appended messages join the file's
conversation, never a second one."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from contextviewer.accounts.models import Project, PushClient
from contextviewer.conversations import upload_store
from contextviewer.conversations.models import Conversation
from contextviewer.conversations.uploads import UPLOAD_DIR, UnsafePath, relative_path
from contextviewer.ingest import folder_upload, imports as services
from contextviewer.ingest.models import PushFile
from contextviewer.ingest.sources import prefix_hash
from contextviewer.ingest.watch import import_target

PUSH_DIR = "push"  # under MEDIA_ROOT/uploads
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
CHUNK = 1 << 20
CLIENT_ID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")


class PushRefused(Exception):
    """The request cannot be taken: the message says why; ``status`` is the HTTP answer."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class Conflict(Exception):
    """The client's offset or hash is not what the server holds: it sends the whole file again."""

    def __init__(self, held: PushFile):
        super().__init__(
            f"the server holds {held.size} bytes of this file (sha256 {held.sha256}), not what the client "
            "believes: send the whole file again (offset 0)"
        )
        self.size = held.size
        self.sha256 = held.sha256


@dataclass
class Received:
    path: str  # relative, as stored
    size: int  # held now
    sha256: str
    stored: int  # bytes this request added (0: held already)
    job_id: int | None  # the import started for it


def client_key(project: Project, client_id: str) -> str:
    """The client's folder as a key of the upload store (relative to MEDIA_ROOT, ending in /)."""
    return f"{UPLOAD_DIR}/{PUSH_DIR}/{project.pk}/{client_id}/"


def client_root(project: Project, client_id: str) -> Path:
    return upload_store.local(client_key(project, client_id))


def stored_path(raw: str) -> str:
    """The client's relative path as stored (uploads.relative_path: no absolute path, no ``..``, its
    secrets masked); raises PushRefused."""
    try:
        return relative_path(raw)
    except UnsafePath as exc:
        raise PushRefused(f"{raw[:300]!r}: {exc}") from exc


def get_client(project: Project, user, client_id: str, hostname: str = "") -> PushClient:
    """The push client of this id in ``project`` (made at its first request); another user's
    client id is refused."""
    if not CLIENT_ID.match(client_id or ""):
        raise PushRefused("a client id is 8 to 64 letters, digits, '-' or '_' (push.py makes one and keeps it)")
    hostname = (hostname or "")[:200]
    try:
        client, _ = PushClient.objects.get_or_create(
            project=project, client_id=client_id, defaults={"user": user, "hostname": hostname}
        )
    except IntegrityError:  # made by a concurrent request
        client = PushClient.objects.get(project=project, client_id=client_id)
    if client.user_id != user.pk:
        raise PushRefused("this client id is another user's: push.py with a new --state makes a new one", status=403)
    if hostname and client.hostname != hostname:
        PushClient.objects.filter(pk=client.pk).update(hostname=hostname)
        client.hostname = hostname
    return client


def held(client: PushClient, raw_path: str) -> tuple[str, int, str]:
    """(stored path, size, sha256) of what the server holds of the file (0 and the empty hash: nothing)."""
    rel = stored_path(raw_path)
    row = PushFile.objects.filter(client=client, path=rel).first()
    if row is None:
        return rel, 0, EMPTY_SHA256
    if row.size:  # a client that lost its state asks first: what is held is imported (once per state)
        _import(client, client_root(client.project, client.client_id) / rel, row, client.user)
    refresh_counts(client)
    return rel, row.size, row.sha256


def receive(client: PushClient, raw_path: str, offset: int, sha256: str, body, length: int, *, complete: bool = True,
            user=None) -> Received:
    """Store ``length`` bytes read from ``body`` (a file-like) at ``offset`` of the client's file:
    offset 0 is the whole file (what is held is replaced), any other offset appends to the held
    bytes, whose sha256 the client names. Raises PushRefused (413 over the upload cap) or Conflict;
    imports what is new (``complete``: the client sent all it has of the file for now)."""
    rel = stored_path(raw_path)
    limit = settings.MAX_UPLOAD_BYTES
    if length > limit:
        raise PushRefused(
            f"{length} bytes in one request, over the {limit / 1e6:.0f} MB upload limit "
            f"(CONTEXTVIEWER_MAX_UPLOAD_BYTES): send the file in parts of at most {limit} bytes", status=413)
    if offset < 0 or (offset and not SHA256.match(sha256 or "")):
        raise PushRefused("an append names the offset it starts at (the held size) and the sha256 of the held bytes")
    root = client_root(client.project, client.client_id)
    target = root / rel
    root.mkdir(parents=True, exist_ok=True)
    if not target.resolve().is_relative_to(root.resolve()):  # belt and braces: relative_path forbids it
        raise PushRefused(f"{rel}: a path that leaves the client's folder")
    try:
        incoming, digest = _write_aside(root, body, length)
    except OSError as exc:
        raise _refusal(exc, rel) from exc
    try:
        with transaction.atomic():
            row = _locked_row(client, rel)
            _repair(row, target)
            stored = _apply(row, target, incoming, digest, offset, sha256, length)
            now = timezone.now()
            PushClient.objects.filter(pk=client.pk).update(
                last_push_at=now, files_received=PushFile.objects.filter(client=client).count(),
                bytes_received=F("bytes_received") + stored,
            )
    except OSError as exc:
        raise _refusal(exc, rel) from exc
    finally:
        incoming.unlink(missing_ok=True)
    job_id = None
    if complete and row.size:  # also when held already: a server killed before it started the import
        job_id = _import(client, target, row, user or client.user)  # once per state of the file (its key)
    refresh_counts(client)
    return Received(rel, row.size, row.sha256, stored, job_id)


def _refusal(exc: OSError, rel: str) -> Exception:
    """A write that failed, said: a full disk (507, as an upload says it), a file or folder of the
    name in the way (400); anything else is the server's error."""
    if folder_upload.disk_full(exc):
        return PushRefused(folder_upload.DISK_FULL_MESSAGE, status=507)
    if isinstance(exc, (NotADirectoryError, IsADirectoryError, FileExistsError)):
        return PushRefused(f"{rel}: a file or folder of that name is in the way on the server (sent before as the other)")
    return exc


def _write_aside(root: Path, body, length: int) -> tuple[Path, str]:
    """The request's body in a file beside the client's files, and its sha256; a body that ends
    before ``length`` (the connection dropped) is refused and nothing of it kept."""
    aside = root.parent / ".incoming"
    aside.mkdir(parents=True, exist_ok=True)
    _forget_stale(aside)
    fd, tmp = tempfile.mkstemp(dir=aside, prefix=f"{root.name}-")
    digest = hashlib.sha256()
    got = 0
    try:
        with os.fdopen(fd, "wb") as out:
            while got < length:
                chunk = body.read(min(CHUNK, length - got))
                if not chunk:
                    break
                got += len(chunk)
                digest.update(chunk)
                out.write(chunk)
        if got != length:
            raise PushRefused(f"the request ended after {got} of its {length} bytes: nothing of it was stored")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp), digest.hexdigest()


STALE_SECONDS = 3600  # a body written aside this long ago was left by a server killed mid-request


def _forget_stale(aside: Path) -> None:
    cutoff = time.time() - STALE_SECONDS
    for entry in aside.iterdir():
        try:
            if entry.stat().st_mtime < cutoff:
                entry.unlink()
        except OSError:
            pass


def _locked_row(client: PushClient, rel: str) -> PushFile:
    try:
        with transaction.atomic():
            PushFile.objects.get_or_create(client=client, path=rel, defaults={"size": 0, "sha256": EMPTY_SHA256})
    except IntegrityError:  # made by a concurrent request
        pass
    return PushFile.objects.select_for_update().get(client=client, path=rel)


def _repair(row: PushFile, target: Path) -> None:
    """Bring the held file back to what its row says: cut a write a crash left half done; a held
    file gone from the disk holds nothing."""
    try:
        size = target.stat().st_size
    except FileNotFoundError:
        size = None
    if size is None:
        if row.size:
            row.size, row.sha256 = 0, EMPTY_SHA256
        return
    if size > row.size:
        with open(target, "r+b") as fh:
            fh.truncate(row.size)
    elif size < row.size:  # lost bytes: what is left is what is held
        row.size, row.sha256 = size, prefix_hash(target, size)


def _apply(row: PushFile, target: Path, incoming: Path, digest: str, offset: int, sha256: str, length: int) -> int:
    """Apply the written-aside body to the held file; the bytes added (0: held already)."""
    if offset == 0:
        if row.size == length and row.sha256 == digest:
            return 0  # the same whole file again
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(incoming, target)
        row.size, row.sha256 = length, digest
        row.save()
        upload_store.grew(_key(target), 0)  # every worker reads it from the shared store (the whole file)
        return length
    if offset == row.size and sha256 == row.sha256:
        with open(incoming, "rb") as src, open(target, "ab") as out:
            while chunk := src.read(CHUNK):
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        offset = row.size
        row.size += length
        row.sha256 = prefix_hash(target, row.size)
        row.save()
        upload_store.grew(_key(target), offset)  # the store takes the appended bytes (where it can)
        return length
    if offset + length == row.size and prefix_hash(target, offset) == sha256 and _same_tail(target, offset, incoming):
        return 0  # this chunk was stored already (its answer was lost): stored once
    raise Conflict(row)


def _same_tail(path: Path, offset: int, incoming: Path) -> bool:
    with open(path, "rb") as held_fh, open(incoming, "rb") as new_fh:
        held_fh.seek(offset)
        while True:
            a, b = held_fh.read(CHUNK), new_fh.read(CHUNK)
            if a != b:
                return False
            if not a:
                return True


def _key(path: Path) -> str:
    return path.relative_to(Path(settings.MEDIA_ROOT)).as_posix()


def _import(client: PushClient, file: Path, row: PushFile, user) -> int | None:
    """Import what is new in ``file`` as the watcher does (watch.import_target: the file, the session
    it is a companion of, or the folder a format reads as a unit), as an item of the upload store
    (imports.start_import ``stored``: any worker fetches it, and its Source is named by its place in
    the store, so the next import of the grown file goes on where this one stopped), one job per
    state of the file (its key: the same state is never imported twice); None when no format reads it."""
    root = client_root(client.project, client.client_id)
    target = import_target(file, [root])
    if target is None:
        return None
    key = _key(target) + ("/" if target.is_dir() else "")
    item = {"key": key, "root": client_key(client.project, client.client_id), "name": target.relative_to(root).as_posix()}
    idempotency = "push:" + hashlib.sha256(
        f"{client.project_id}\0{target}\0{file}\0{row.size}\0{row.sha256}".encode("utf-8", "surrogateescape")
    ).hexdigest()[:48]
    job, _ = services.start_import(client.project, stored=[item], user=user, idempotency_key=idempotency)
    return job.pk


def refresh_counts(client: PushClient) -> None:
    """The sessions imported from the client's files (top-level conversations) on its row."""
    prefix = "stored:" + client_key(client.project, client.client_id)
    sessions = Conversation.objects.filter(
        project_id=client.project_id, parent__isnull=True, source__path__startswith=prefix
    ).count()
    if sessions != client.sessions_received:
        PushClient.objects.filter(pk=client.pk).update(sessions_received=sessions)
        client.sessions_received = sessions


def counts_after_job(job, result: dict) -> None:
    """Follow-up of an import (jobs/kinds.py FOLLOW_UPS): the sessions of the push clients whose
    files it imported, counted again on their rows once the import is done."""
    prefix = f"{UPLOAD_DIR}/{PUSH_DIR}/{job.project_id}/"
    ids = {item["root"][len(prefix):].strip("/") for item in (job.params or {}).get("stored") or ()
           if str(item.get("root") or "").startswith(prefix)}
    for client in PushClient.objects.filter(project_id=job.project_id, client_id__in=ids).select_related("project"):
        refresh_counts(client)
