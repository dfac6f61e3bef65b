"""A full disk at upload (issue 40, item 4): the upload page and the API say what happened (the
disk is full, nothing was stored, free space and upload again) with 507, not a bare "Server Error
(500)"; nothing of the upload stays, no job starts, and the same upload works once there is space."""

from __future__ import annotations

import errno
import io
import os
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from contextviewer.jobs.models import Job
from tests.sessions import session_lines, write_lines
from tests.module_worlds import project_and_user

pytestmark = pytest.mark.django_db

_module_world, project, user = project_and_user()


@pytest.fixture
def media(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"


class _FullDisk:
    """A file opened for writing on a full disk: its first write fails with OSError 28."""

    def __init__(self, real):
        self.real = real

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.real.close()

    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.fixture
def full_disk(monkeypatch):
    """The disk fills up: every file opened for writing fails, or (``full_disk.after = 1``) every
    one after the first (a zip stored, then its members unpacked)."""
    real_fdopen = os.fdopen
    opened = []

    def fdopen(fd, *args, **kwargs):
        opened.append(fd)
        real = real_fdopen(fd, *args, **kwargs)
        return real if len(opened) <= monkeypatch.after else _FullDisk(real)

    monkeypatch.after = 0
    monkeypatch.setattr(os, "fdopen", fdopen)
    return monkeypatch


def _session(tmp_path) -> bytes:
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(2))
    return path.read_bytes()


def _uploads(tmp_path) -> dict[str, tuple[list, list[str] | None]]:
    data = _session(tmp_path)
    return {
        "one file": ([("a.jsonl", data)], None),
        "a folder": ([("proj/a.jsonl", data), ("proj/b.jsonl", data)], ["proj/a.jsonl", "proj/b.jsonl"]),
        "a zip": ([("proj.zip", _zip({"proj/a.jsonl": data, "proj/b.jsonl": data}))], None),
    }


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for name, body in files.items():
            archive.writestr(name, body)
    return buf.getvalue()


def _data(parts, paths, **extra) -> dict:
    data = {"files": [SimpleUploadedFile(name.rsplit("/", 1)[-1], body) for name, body in parts], **extra}
    if paths is not None:
        data["paths"] = paths
    return data


def _stored(media: Path) -> list[Path]:
    return [p for p in (media / "uploads").rglob("*") if p.is_file()] if (media / "uploads").exists() else []


@pytest.mark.parametrize("what", ["one file", "a folder"])
def test_a_full_disk_at_a_web_upload_says_so_on_the_upload_page(what, project, user, media, tmp_path, full_disk):
    client = Client()
    client.force_login(user)
    parts, paths = _uploads(tmp_path)[what]
    page = client.post("/import/", _data(parts, paths, project=project.slug))
    assert page.status_code == 507
    text = page.content.decode()
    assert 'id="upload-error"' in text and "disk is full" in text and "nothing of it was stored" in text
    assert "Free space" in text and "Server Error" not in text
    assert _stored(media) == [] and not Job.objects.exists()
    full_disk.undo()
    again = client.post("/import/", _data(parts, paths, project=project.slug))
    assert again.status_code == 302 and Job.objects.count() == 1


@pytest.mark.parametrize(("what", "after"), [("one file", 0), ("a folder", 0), ("a zip", 0), ("a zip", 1)])
def test_a_full_disk_at_an_api_upload_is_a_507_with_what_to_do(what, after, project, user, media, tmp_path, full_disk):
    full_disk.after = after  # 1: the zip is stored, its members are not
    client = Client()
    client.force_login(user)
    parts, paths = _uploads(tmp_path)[what]
    answer = client.post("/api/imports", _data(parts, paths))
    assert answer.status_code == 507, answer.content[:300]
    detail = answer.json()["detail"]
    assert "disk is full" in detail and "nothing" in detail and "Free space" in detail
    assert _stored(media) == [] and not Job.objects.exists()
    full_disk.undo()
    assert client.post("/api/imports", _data(parts, paths)).status_code == 202
