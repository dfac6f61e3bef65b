"""The upload report (issue 36, item 4): a SQLite database's -wal and -shm uploaded with it are
said to be read with it, never "not a format contextviewer reads"; a broken or truncated file in a
folder or a zip is described as a file uploaded alone is; a Cline ``api_conversation_history.json``
uploaded on its own is a Cline session whose assistant messages' metrics are its model calls."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import tempfile
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from contextviewer.conversations.models import Conversation, ModelCall
from contextviewer.ingest.files import UNREAD
from contextviewer.jobs import queue as jobs
from tests.cline_folders import make_task
from tests.module_worlds import project_and_user
from tests.unit.test_opencode_importer import SESSIONS, write_database

pytestmark = pytest.mark.django_db

_module_world, project, user = project_and_user()

TRUNCATED = '{"sessionId": "abc", "title": "Fix the parser", "messages": [{"type": "user", "cont'


@pytest.fixture
def media(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"


def wal_database(folder: Path) -> list[Path]:
    """opencode.db as a running opencode leaves it: every row still in its -wal (the database file
    itself holds no table), with the -shm beside them. Returns the three files."""
    folder.mkdir(parents=True, exist_ok=True)
    live = Path(tempfile.mkdtemp(prefix="live-opencode-"))  # where opencode is "running": not in the folder
    db = live / "opencode.db"
    holder = sqlite3.connect(db)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("CREATE TABLE IF NOT EXISTS keep (x)")  # the holder's read keeps the WAL from its checkpoint
    holder.execute("PRAGMA wal_autocheckpoint=0")
    holder.commit()
    try:
        write_database(db)  # written through the WAL; the holder's connection keeps it there
        names = ["opencode.db", "opencode.db-wal", "opencode.db-shm"]
        for name in names:
            shutil.copyfile(live / name, folder / name)
    finally:
        holder.close()
        shutil.rmtree(live, ignore_errors=True)
    return [folder / name for name in names]


def broken_files(folder: Path) -> dict[str, str]:
    """A truncated JSON export and a text file no format reads, by name, with what each looks like
    (``formats.describe``'s words)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "chat-export.json").write_text(TRUNCATED)
    (folder / "notes.txt").write_text("remember to rerun the tests\n")
    return {"chat-export.json": "a JSON object", "notes.txt": "a text file starting 'remember to rerun the tests'"}


def zip_of(folder: Path) -> bytes:
    """The folder zipped as a file manager does (its name at the top of every member)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            archive.write(path, path.relative_to(folder.parent).as_posix())
    return buf.getvalue()


def _post(client, parts: list[tuple[str, bytes]], paths: list[str] | None = None):
    data: dict = {"files": [SimpleUploadedFile(name.rsplit("/", 1)[-1], body) for name, body in parts]}
    if paths is not None:
        data["paths"] = paths
    response = client.post("/api/imports", data)
    assert response.status_code == 202, response.content
    done = jobs.run(response.json()["id"])
    assert done is not None
    return done


def _folder(client, root: Path, files: list[Path]):
    rels = [p.relative_to(root).as_posix() for p in files]
    return _post(client, [(rel, p.read_bytes()) for rel, p in zip(rels, files)], rels)


def test_a_databases_wal_and_shm_are_read_with_it_not_called_unreadable(client, user, project, media, tmp_path):
    files = wal_database(tmp_path / "store" / "opencode")
    alone = sqlite3.connect(f"{files[0].as_uri()}?mode=ro&immutable=1", uri=True)  # the file without its -wal
    assert not alone.execute("SELECT name FROM sqlite_master").fetchall()  # every row is in the -wal
    alone.close()
    client.force_login(user)
    done = _folder(client, tmp_path / "store", files)
    assert done.status == "succeeded", done.error
    # The sessions were in the -wal only: they are there, so it was read.
    top = [s for s in SESSIONS if not s.get("parentID")]
    assert Conversation.objects.filter(project=project, agent="opencode", parent=None).count() == len(top)
    assert done.result["skipped"] == []
    assert sorted((e["path"], e["reason"]) for e in done.result["read_with"]) == [
        ("opencode/opencode.db-shm", "read with opencode.db (its SQLite shared-memory index)"),
        ("opencode/opencode.db-wal", "read with opencode.db (its SQLite write-ahead log)"),
    ]


def test_the_job_page_lists_the_wal_as_read_with_its_database(client, user, project, media, tmp_path):
    client.force_login(user)
    done = _folder(client, tmp_path / "store", wal_database(tmp_path / "store" / "opencode"))
    page = client.get(f"/jobs/{done.pk}/").content.decode()
    assert "Read with their session" in page and "read with opencode.db (its SQLite write-ahead log)" in page
    assert "Not read" not in page and UNREAD not in page


@pytest.mark.parametrize("how", ["folder", "zip"])
def test_broken_files_in_a_folder_or_a_zip_are_described_as_a_lone_upload_is(client, user, project, media, tmp_path, how):
    client.force_login(user)
    root = tmp_path / "upload"
    looks = broken_files(root / "exports")
    session = make_task(root / "exports" / "tasks")  # something read, so the job succeeds
    files = sorted(p for p in root.rglob("*") if p.is_file())
    if how == "folder":
        done = _folder(client, root, files)
    else:
        done = _post(client, [("exports.zip", zip_of(root / "exports"))])
    assert done.status == "succeeded", done.error
    assert Conversation.objects.filter(project=project, agent="cline", external_id=session.folder.name).exists()
    reasons = {e["path"].rsplit("/", 1)[-1]: e["reason"] for e in done.result["skipped"]}
    assert set(reasons) == set(looks)
    for name, looked_like in looks.items():
        assert reasons[name].startswith(looked_like), reasons[name]
        assert reasons[name] != UNREAD

    # The same file uploaded alone is refused with the same description.
    alone = _post(client, [("chat-export.json", TRUNCATED.encode())])
    assert alone.status == "failed"
    assert alone.result["errors"][0]["reason"].startswith(looks["chat-export.json"])


def lone_history(folder: Path) -> tuple[Path, list[dict]]:
    """A Cline task's ``api_conversation_history.json`` alone, its assistant messages carrying the
    ``metrics`` Cline writes (``tokens{prompt, completion, cached}``, ``cost``); and the requests as
    written (their figures, counted while writing)."""
    written = make_task(folder / "task")
    history = json.loads((written.folder / "api_conversation_history.json").read_text())
    assistants = [m for m in history if m["role"] == "assistant"]
    assert len(assistants) == len(written.requests)
    for message, request in zip(assistants, written.requests):
        prompt = request["uncached"] + request["cacheReads"] + request["cacheWrites"]
        message["metrics"] = {"tokens": {"prompt": prompt, "completion": request["tokensOut"], "cached": request["cacheReads"]},
                              "cost": request["cost"]}
    path = folder / "api_conversation_history.json"
    path.write_text(json.dumps(history))
    return path, written.requests


def test_a_lone_cline_history_upload_is_cline_with_its_model_calls(client, user, project, media, tmp_path):
    path, requests = lone_history(tmp_path)
    client.force_login(user)
    done = _post(client, [(path.name, path.read_bytes())])
    assert done.status == "succeeded", done.error
    (conv,) = done.result["conversations"]
    assert conv["agent"] == "cline"
    assert conv["model_calls"] == len(requests)
    calls = ModelCall.objects.filter(conversation_id=conv["id"]).order_by("pk")
    assert sum(c.output for c in calls) == sum(r["tokensOut"] for r in requests)
    assert sum(c.cache_read for c in calls) == sum(r["cacheReads"] for r in requests)
    # what the model was sent: the uncached input and the cache writes (the history does not tell them apart)
    assert sum(c.input_uncached for c in calls) == sum(r["uncached"] + r["cacheWrites"] for r in requests)
    assert Conversation.objects.get(pk=conv["id"]).title == "Fix the failing test in src/utils.py"
