"""Where every worker finds an upload: the shared upload store (CONTEXTVIEWER_UPLOAD_STORE).

The process that receives an upload (the web server, a push) writes it under its own
MEDIA_ROOT/uploads/<sha256>/... (uploads.py) and then publishes it; a worker, on this machine or
another one, fetches what its job names into ITS OWN MEDIA_ROOT before reading it. Each process
keeps its own data folder; MEDIA_ROOT is then a local copy, and the store is what they share:

- ``files`` (the default): MEDIA_ROOT is the store: one machine, or a disk every machine mounts.
  Publishing and fetching do nothing.
- ``database``: the bytes in the database (StoredUpload rows, in chunks of CHUNK bytes), which every
  worker reaches already: nothing more to run.
- ``s3``: an S3-compatible bucket through django-storages (CONTEXTVIEWER_S3_BUCKET,
  CONTEXTVIEWER_S3_ENDPOINT_URL, CONTEXTVIEWER_S3_REGION; the credentials as boto3 reads them,
  AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).

A key is a path relative to MEDIA_ROOT: a file (``uploads/<sha>/<name>``) or, ending in ``/``, a
folder upload whose every file is published or fetched. Content is addressed by its sha256, so a
local copy of the right size is the right copy: fetched once per machine and process data folder.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Length

from contextviewer.conversations.models import StoredUpload, StoredUploadChunk

CHUNK = 4 * 1024 * 1024
STORES = ("files", "database", "s3")


class StoreError(Exception):
    """The shared store could not give or take an upload: the message says which and why."""


def kind() -> str:
    return settings.UPLOAD_STORE


def local(key: str) -> Path:
    return Path(settings.MEDIA_ROOT) / key


def publish(key: str) -> None:
    """Put what is at MEDIA_ROOT/key (a file, or a folder when key ends in /) into the shared store."""
    if kind() == "files":
        return
    for name, path in _local_files(key):
        _backend().put(name, path)


def grew(key: str, offset: int) -> None:
    """MEDIA_ROOT/key grew from `offset` bytes (a push client's appended bytes, the bytes before
    checked by their sha256): the store takes the new bytes only where it can (the database: new
    chunks), else the whole file again."""
    if kind() == "files":
        return
    backend = _backend()
    path = local(key)
    if hasattr(backend, "append") and backend.size(key) == offset:
        backend.append(key, path, offset)
    else:
        backend.put(key, path, force=True)


def fetch(key: str, companions: bool = False) -> Path:
    """The local path of an upload (a file, or a folder when key ends in /), copied from the shared
    store first where this process's MEDIA_ROOT lacks it or holds another size. `companions`: with a
    file, also what lies beside it under its name (``opencode.db-wal``, ``<session>/subagents/...``),
    which its format reads with it."""
    path = local(key)
    if kind() == "files":
        return path
    backend = _backend()
    if key.endswith("/"):
        listed = backend.list(key)
    else:
        listed = [(key, backend.size(key))]
        if companions:
            listed += [(k, n) for k, n in backend.list(key.rsplit(".", 1)[0] if "." in key.rsplit("/", 1)[-1] else key)
                       if k != key and n is not None]
    for name, size in listed:
        if size is None:
            raise StoreError(f"{key}: not in the shared upload store ({kind()}): it was removed, or never published")
        target = local(name)
        have = target.stat().st_size if target.is_file() else None
        if have == size:
            continue
        if have and have < size and hasattr(backend, "get_from") and backend.get_from(name, have, target):
            continue  # a grown file: only what it appended (the store's copy grows only by appends)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".fetch-")
        try:
            with os.fdopen(fd, "wb") as out:
                backend.get(name, out)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return path


def remove(key: str) -> None:
    """Remove an upload (a file, or a folder when key ends in /) from the shared store."""
    if kind() != "files":
        _backend().delete(key)


def _local_files(key: str) -> list[tuple[str, Path]]:
    path = local(key)
    if not key.endswith("/"):
        return [(key, path)]
    root = Path(settings.MEDIA_ROOT)
    return [(p.relative_to(root).as_posix(), p) for p in sorted(path.rglob("*")) if p.is_file() and not p.name.startswith(".fetch-")]


def _backend():
    if kind() == "database":
        return _Database()
    if kind() == "s3":
        return _S3()
    raise StoreError(f"CONTEXTVIEWER_UPLOAD_STORE={kind()!r}: one of {', '.join(STORES)}")


class _Database:
    """StoredUpload rows: one per file, its bytes in StoredUploadChunk rows."""

    def put(self, key: str, path: Path, force: bool = False) -> None:
        size = path.stat().st_size
        if not force and StoredUpload.objects.filter(key=key, size=size).exists():
            return  # the same bytes (an upload's key names their sha256): stored once
        with transaction.atomic():
            StoredUpload.objects.filter(key=key).delete()
            row = StoredUpload.objects.create(key=key, size=size)
            with open(path, "rb") as f:
                for index, data in enumerate(iter(lambda: f.read(CHUNK), b"")):
                    StoredUploadChunk.objects.create(upload=row, index=index, data=data)

    def append(self, key: str, path: Path, offset: int) -> None:
        """The bytes of `path` from `offset` on, as chunks after the stored ones."""
        with transaction.atomic():
            row = StoredUpload.objects.select_for_update().get(key=key)
            if row.size != offset:  # another request grew it meanwhile: the whole file again
                transaction.set_rollback(True)
                return self.put(key, path, force=True)
            index = (row.chunks.order_by("-index").values_list("index", flat=True).first() or 0) + 1
            size = offset
            with open(path, "rb") as f:
                f.seek(offset)
                for data in iter(lambda: f.read(CHUNK), b""):
                    StoredUploadChunk.objects.create(upload=row, index=index, data=data)
                    index += 1
                    size += len(data)
            StoredUpload.objects.filter(pk=row.pk).update(size=size)

    def get_from(self, key: str, offset: int, target: Path) -> bool:
        """Append to `target` (holding the first `offset` bytes) the chunks after them; False when
        `offset` is not where a chunk starts (then the caller fetches the whole file)."""
        start, rest, boundary = 0, [], False
        for pk, length in StoredUploadChunk.objects.filter(upload__key=key).order_by("index").annotate(n=Length("data")).values_list("pk", "n"):
            boundary = boundary or start == offset
            if start >= offset:
                rest.append(pk)
            start += length
        if not boundary:
            return False
        with open(target, "r+b") as out:
            out.seek(offset)
            if out.tell() != offset:
                return False
            for pk in rest:
                out.write(bytes(StoredUploadChunk.objects.values_list("data", flat=True).get(pk=pk)))
            out.truncate()
        return True

    def size(self, key: str) -> int | None:
        return StoredUpload.objects.filter(key=key).values_list("size", flat=True).first()

    def list(self, prefix: str) -> list[tuple[str, int]]:
        rows = list(StoredUpload.objects.filter(key__startswith=prefix).order_by("key").values_list("key", "size"))
        return rows or [(prefix, None)]

    def get(self, key: str, out) -> None:
        ids = StoredUploadChunk.objects.filter(upload__key=key).order_by("index").values_list("pk", flat=True)
        for pk in list(ids):  # one chunk in memory at a time
            out.write(bytes(StoredUploadChunk.objects.values_list("data", flat=True).get(pk=pk)))

    def delete(self, key: str) -> None:
        rows = StoredUpload.objects.filter(key__startswith=key) if key.endswith("/") else StoredUpload.objects.filter(key=key)
        rows.delete()


class _S3:
    """An S3-compatible bucket through django-storages' S3Storage (boto3)."""

    def __init__(self):
        from storages.backends.s3 import S3Storage  # lazy: boto3 loads only where the s3 store is chosen

        if not settings.UPLOAD_S3["bucket_name"]:
            raise StoreError("CONTEXTVIEWER_UPLOAD_STORE=s3 needs CONTEXTVIEWER_S3_BUCKET")
        self.storage = S3Storage(**{k: v for k, v in settings.UPLOAD_S3.items() if v}, file_overwrite=True)

    def _errors(self):
        from botocore.exceptions import BotoCoreError, ClientError  # lazy: as above

        return (BotoCoreError, ClientError)

    def put(self, key: str, path: Path, force: bool = False) -> None:
        try:
            if not force and self.size(key) == path.stat().st_size:
                return
            with open(path, "rb") as f:
                self.storage.bucket.upload_fileobj(f, self.storage._normalize_name(key))
        except self._errors() as exc:
            raise StoreError(f"{key}: the S3 store refused it ({exc})") from exc

    def size(self, key: str) -> int | None:
        try:
            return self.storage.bucket.Object(self.storage._normalize_name(key)).content_length
        except self._errors():
            return None

    def list(self, prefix: str) -> list[tuple[str, int]]:
        base = self.storage._normalize_name(prefix)
        strip = len(base) - len(prefix)
        try:
            found = [(o.key[strip:], o.size) for o in self.storage.bucket.objects.filter(Prefix=base)]
        except self._errors() as exc:
            raise StoreError(f"{prefix}: the S3 store could not list it ({exc})") from exc
        return sorted(found) or [(prefix, None)]

    def get(self, key: str, out) -> None:
        try:
            self.storage.bucket.download_fileobj(self.storage._normalize_name(key), out)
        except self._errors() as exc:
            raise StoreError(f"{key}: the S3 store could not give it ({exc})") from exc

    def delete(self, key: str) -> None:
        try:
            if key.endswith("/"):
                self.storage.bucket.objects.filter(Prefix=self.storage._normalize_name(key)).delete()
            else:
                self.storage.bucket.Object(self.storage._normalize_name(key)).delete()
        except self._errors() as exc:
            raise StoreError(f"{key}: the S3 store could not remove it ({exc})") from exc
