"""Workers that share no disk (issue 38, item 1): the web server (`manage.py serve --web-only`) and two
workers (`manage.py worker`), each with a data folder of its own, against PostgreSQL and Redis with
the `database` upload store. A folder of sessions is uploaded through the API; one worker is
killed (kill -9 of its process group) while it imports a part; every session arrives once, whole.

PostgreSQL only: SQLite is one file on one machine, which workers elsewhere cannot share."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest
import requests
from django.conf import settings

from contextviewer.accounts.services import create_token
from contextviewer.conversations.models import Conversation, Message
from contextviewer.jobs.models import Job, JobStatus
from tests.deploy_commands import WEB, WORKER
from tests.sessions import SessionBuilder, session_lines
from tests.worker import ROOT, purge_broker, wait_for, worker_env

SESSIONS = 24
TURNS = 120
FAST = {
    "CONTEXTVIEWER_RECONCILE_INTERVAL": "1",
    "CONTEXTVIEWER_JOB_DEAD_AFTER": "3",
    "CONTEXTVIEWER_HEARTBEAT_INTERVAL": "0.3",
    "CONTEXTVIEWER_WORKER_LOST_WAIT": "1",
    "CONTEXTVIEWER_IMPORT_PART_SECONDS": "0.25",  # a few sessions a part: several parts to share out
}
ENDED = [JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED]

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker,
    pytest.mark.skipif(settings.IS_SQLITE, reason="workers on other machines share PostgreSQL, not a SQLite file"),
]


class Process:
    """A manage.py command with a data folder of its own, in its own process group, logged to a file."""

    def __init__(self, name: str, args: list[str], base: Path, env: dict):
        self.data = base / name
        self.data.mkdir(parents=True)
        self.log = base / f"{name}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", *args], cwd=ROOT, stdout=open(self.log, "wb"), stderr=subprocess.STDOUT,
            env={**env, "CONTEXTVIEWER_DATA_DIR": str(self.data)}, start_new_session=True,
        )

    def pids(self) -> set[int]:
        try:
            return {self.proc.pid} | {c.pid for c in psutil.Process(self.proc.pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            return set()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def tail(self) -> str:
        return f"--- {self.log.name} ---\n" + "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _folder(tmp_path: Path) -> dict[str, tuple[Path, int]]:
    """SESSIONS Claude Code sessions in one project folder: session id -> (file, its line count)."""
    root = tmp_path / "upload" / "-home-dev-app"
    root.mkdir(parents=True)
    out = {}
    for _ in range(SESSIONS):
        sid = str(uuid.uuid4())
        lines = session_lines(TURNS, SessionBuilder(session_id=sid))
        path = root / f"{sid}.jsonl"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        out[sid] = (path, len(lines))
    return out


def _part_on(worker: Process) -> Job | None:
    """A part of the import running in one of this worker's processes."""
    pids = worker.pids()
    for job in Job.objects.filter(kind="import_part", status=JobStatus.RUNNING):
        pid = int((job.worker_id or "::0").rsplit(":", 2)[1] or 0)
        if pid in pids:
            return job
    return None


def test_a_folder_uploaded_to_the_web_server_is_imported_once_by_workers_on_their_own_folders(project, user, tmp_path):
    sessions = _folder(tmp_path)
    purge_broker()
    _, secret = create_token(user, project, "laptop")
    env = {**worker_env(), **FAST, "CONTEXTVIEWER_UPLOAD_STORE": "database", "CONTEXTVIEWER_SECRET_KEY": settings.SECRET_KEY,
           "CELERY_BROKER_URL": settings.CELERY_BROKER_URL, "REDIS_URL": os.environ.get("REDIS_URL", ""), "CONTEXTVIEWER_WATCH": ""}
    port = _free_port()
    base = tmp_path / "machines"
    procs: list[Process] = []
    try:
        web = Process("web", [*WEB, "--port", str(port), "--workers", "1"], base, env)
        procs.append(web)
        url = f"http://127.0.0.1:{port}"

        def up():
            try:
                return requests.get(f"{url}/login/", timeout=2).status_code == 200
            except requests.RequestException:
                return False

        wait_for(up, timeout=90, interval=0.2, message="the web server", describe=web.tail)
        # --web-only: no worker beside the web server (only gunicorn's processes under serve).
        assert not [p for p in web.pids() if "celery" in " ".join(psutil.Process(p).cmdline())]
        workers = [Process(f"worker{i}", WORKER, base, env) for i in (1, 2)]
        procs.extend(workers)
        for w in workers:
            wait_for(lambda w=w: b"ready." in w.log.read_bytes(), timeout=90, message=f"{w.log.name} ready", describe=w.tail)

        files = [("files", (p.name, p.read_bytes())) for p, _ in sessions.values()]
        paths = [("paths", f"-home-dev-app/{p.name}") for p, _ in sessions.values()]
        response = requests.post(f"{url}/api/imports", headers={"Authorization": f"Bearer {secret}"},
                                 files=files, data=paths, timeout=60)
        assert response.status_code == 202, response.text
        job_id = response.json()["id"]

        victim, survivor = workers
        killed = wait_for(lambda: _part_on(victim), timeout=120, interval=0.02, message="a part running on worker 1",
                          describe=lambda: "\n".join(p.tail() for p in procs))
        victim.kill()
        done = wait_for(lambda: Job.objects.filter(pk=job_id, status__in=ENDED).first(), timeout=240, interval=0.2,
                        message="the folder import to end", describe=lambda: "\n".join(p.tail() for p in procs))
    finally:
        for p in procs:
            p.stop()

    assert done.status == JobStatus.SUCCEEDED, done.error
    # A part names its sessions' files relative to the upload, never by the folder of the worker
    # that planned it (another machine's path), and each worker fetched only what it imported.
    parts = list(Job.objects.filter(kind="import_part", parent_id=job_id))
    assert len(parts) > 2
    for part in parts:
        for unit in part.params["units"]:
            assert not Path(unit["group"]["main"]).is_absolute(), unit["group"]["main"]
    retried = Job.objects.get(pk=killed.pk)
    assert retried.status == JobStatus.SUCCEEDED and retried.attempts == 2, (retried.status, retried.attempts)
    # Every session once, whole: one conversation per session id, each line one message.
    mains = Conversation.objects.filter(project=project, parent=None)
    assert sorted(mains.values_list("external_id", flat=True)) == sorted(sessions)
    for conv in mains:
        assert Message.objects.filter(conversation=conv).count() == sessions[conv.external_id][1], conv.external_id
    # Nothing shared a disk: the web server received the files in its folder, each worker read
    # what it imported from the store into its own.
    assert list((base / "web" / "media" / "uploads").rglob("*.jsonl"))
    assert list((base / "worker2" / "media" / "uploads").rglob("*.jsonl"))
