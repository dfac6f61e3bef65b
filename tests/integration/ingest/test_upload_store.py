"""The shared upload store (issue 38, item 1): an upload received by the web process is read by a
worker that has only its own data folder. Here the "other machine" is a second MEDIA_ROOT, empty,
set before the job runs: what the job reads must come from the store (the database, or an S3
bucket on a real S3-compatible server, moto's standalone server on 127.0.0.1), and a deleted
conversation takes its upload out of the store too."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from contextviewer.conversations import deletion, upload_store
from contextviewer.conversations.models import Conversation, StoredUpload
from contextviewer.jobs import queue as jobs
from tests.module_worlds import project_and_user
from tests.sessions import session_lines
from tests.upload_folders import write_upload_folder

pytestmark = pytest.mark.django_db

_module_world, project, user = project_and_user()


def _lines(turns: int = 3) -> bytes:
    return b"".join(line.encode() + b"\n" for line in session_lines(turns))


def _upload(client, parts: list[tuple[str, bytes]], paths: list[str] | None = None) -> int:
    data = {"files": [SimpleUploadedFile(name.rsplit("/", 1)[-1], raw) for name, raw in parts]}
    if paths is not None:
        data["paths"] = paths
    response = client.post("/api/imports", data)
    assert response.status_code == 202, response.content
    return response.json()["id"]


def _other_machine(settings, tmp_path: Path, name: str) -> Path:
    """The worker's own data folder: an empty MEDIA_ROOT."""
    media = tmp_path / name / "media"
    media.mkdir(parents=True)
    settings.MEDIA_ROOT = str(media)
    return media


def _stored_files(store: str) -> list[str]:
    if store == "database":
        return sorted(StoredUpload.objects.values_list("key", flat=True))
    return sorted(k for k, _ in upload_store._backend().list("uploads/") if _ is not None)


@pytest.fixture(params=["database", "s3"])
def store(request, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "web" / "media")
    settings.UPLOAD_STORE = request.param
    if request.param == "s3":
        server = request.getfixturevalue("s3_server")
        settings.UPLOAD_S3 = {"bucket_name": server, "endpoint_url": os.environ["CV_TEST_S3_URL"], "region_name": "us-east-1",
                              "location": "team"}
    return request.param


@pytest.fixture(scope="module")
def _moto():
    """moto's standalone S3 server (`moto_server`, from the dev extras) on a free port."""
    exe = Path(sys.executable).with_name("moto_server")
    if not exe.exists():
        pytest.fail("moto_server is not installed: run bin/setup --dev (pyproject's dev extras)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url, timeout=1)
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("moto_server did not start")
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def s3_server(_moto, monkeypatch):
    """A fresh bucket on the server, reached with boto3's own environment variables."""
    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "team")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "team-secret")
    monkeypatch.setenv("CV_TEST_S3_URL", _moto)
    bucket = f"uploads-{time.time_ns()}"
    boto3.client("s3", endpoint_url=_moto, region_name="us-east-1").create_bucket(Bucket=bucket)
    return bucket


def test_a_worker_with_its_own_data_folder_imports_an_upload_from_the_store(client, user, project, store, settings, tmp_path, django_capture_on_commit_callbacks):
    client.force_login(user)
    data = _lines(4)
    job_id = _upload(client, [("session.jsonl", data)])
    (key,) = _stored_files(store)
    assert key.startswith("uploads/") and key.endswith("/session.jsonl")
    media = _other_machine(settings, tmp_path, "worker")
    done = jobs.run(job_id)
    assert done.status == "succeeded", done.error
    conv = Conversation.objects.get(project=project)
    assert conv.messages.count() > 0
    # The worker's copy: fetched into its own folder, byte for byte what was sent.
    assert (media / key).read_bytes() == data

    # Deleting the conversation removes the upload from the store, not only from a local folder.
    with django_capture_on_commit_callbacks(execute=True):
        deletion.delete_conversation(conv)
    assert _stored_files(store) == []


def test_a_folder_upload_is_read_whole_from_the_store(client, user, project, store, settings, tmp_path):
    client.force_login(user)
    folder = write_upload_folder(tmp_path)
    rels = folder.relative()
    job_id = _upload(client, [(rel, p.read_bytes()) for rel, p in zip(rels, folder.files())], rels)
    assert len(_stored_files(store)) == len(rels)
    _other_machine(settings, tmp_path, "worker")
    done = jobs.run(job_id)
    assert done.status == "succeeded", done.error
    main = Conversation.objects.get(agent="claude-code", parent=None)
    assert main.children.count() == len(folder.claude_subagents)  # sub-agent files read with their session
    assert Conversation.objects.filter(agent="picoclaw").exists()


def test_an_upload_missing_from_the_store_fails_its_job_with_a_message(client, user, project, store, settings, tmp_path):
    client.force_login(user)
    job_id = _upload(client, [("session.jsonl", _lines())])
    (key,) = _stored_files(store)
    upload_store.remove(key)
    _other_machine(settings, tmp_path, "worker")
    done = jobs.run(job_id)
    assert done.status == "failed"
    assert "shared store" in done.error and key in done.error and not Conversation.objects.exists()


def test_the_files_store_keeps_uploads_where_they_were(client, user, settings, tmp_path):
    """The embedded default: MEDIA_ROOT is the store; nothing goes to the database."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.UPLOAD_STORE = "files"
    client.force_login(user)
    done = jobs.run(_upload(client, [("session.jsonl", _lines())]))
    assert done.status == "succeeded" and not StoredUpload.objects.exists()
    assert [p.name for p in (tmp_path / "media" / "uploads").rglob("*.jsonl")] == ["session.jsonl"]


def test_an_unknown_store_is_said(settings, tmp_path):
    settings.UPLOAD_STORE = "nfs"
    settings.MEDIA_ROOT = str(tmp_path)
    (tmp_path / "uploads").mkdir()
    (tmp_path / "uploads" / "x").write_text(json.dumps({}))
    with pytest.raises(upload_store.StoreError, match="one of files, database, s3"):
        upload_store.publish("uploads/x")
    shutil.rmtree(tmp_path / "uploads")


def test_a_growing_stored_file_goes_on_where_it_stopped_whichever_worker_reads_it(project, store, settings, tmp_path):
    """A push client's file (stored by the server under uploads/push/...) imported by one worker,
    then grown and imported by another: one conversation, one Source named by its place in the
    store, every line once; the first worker then fetches only what was appended."""
    from contextviewer.conversations.models import Source
    from contextviewer.ingest import imports

    web = Path(settings.MEDIA_ROOT)
    root = "uploads/push/1/client-a/"
    key = root + ".claude/projects/-home-dev-app/11111111-2222-4333-8444-555555555555.jsonl"
    lines = session_lines(6)
    half = len(lines) // 2
    (web / key).parent.mkdir(parents=True)
    (web / key).write_text("".join(line + "\n" for line in lines[:half]))
    upload_store.publish(key)
    item = {"key": key, "root": root, "name": key.removeprefix(root)}

    _other_machine(settings, tmp_path, "worker1")
    first = jobs.run(imports.start_import(project, stored=[item])[0].pk)
    assert first.status == "succeeded", first.error
    conv = Conversation.objects.get(project=project)
    assert conv.messages.count() == half

    settings.MEDIA_ROOT = str(web)  # the server receives the appended lines
    offset = (web / key).stat().st_size
    with open(web / key, "a") as f:
        f.write("".join(line + "\n" for line in lines[half:]))
    upload_store.grew(key, offset)

    _other_machine(settings, tmp_path, "worker2")
    second = jobs.run(imports.start_import(project, stored=[item], idempotency_key="again")[0].pk)
    assert second.status == "succeeded", second.error
    assert Conversation.objects.filter(project=project).count() == 1
    assert Conversation.objects.get(pk=conv.pk).messages.count() == len(lines)
    assert list(Source.objects.values_list("path", flat=True)) == [f"stored:{key}"]
    assert first.result["files"][0]["path"] == item["name"]

    # Back on the first worker: its copy is completed from the store, byte for byte.
    settings.MEDIA_ROOT = str(tmp_path / "worker1" / "media")
    assert upload_store.fetch(key).read_bytes() == (web / key).read_bytes()


def test_a_stored_session_file_is_fetched_with_what_lies_beside_it(project, store, settings, tmp_path):
    """A pushed Claude Code session's sub-agent files lie in <session>/subagents/ beside it: a worker
    that imports the session file fetches them too, and the sub-agents are linked under it."""
    from contextviewer.ingest import imports

    folder = write_upload_folder(tmp_path)
    web = Path(settings.MEDIA_ROOT)
    root = "uploads/push/1/client-b/"
    for path, rel in zip(folder.files(), folder.relative()):
        target = web / root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
        upload_store.publish(root + rel)
    key = root + folder.claude_main.relative_to(tmp_path).as_posix()
    _other_machine(settings, tmp_path, "worker")
    done = jobs.run(imports.start_import(project, stored=[{"key": key, "root": root, "name": key.removeprefix(root)}])[0].pk)
    assert done.status == "succeeded", done.error
    main = Conversation.objects.get(agent="claude-code", parent=None)
    assert main.children.count() == len(folder.claude_subagents) == 2
