"""A folder import fans out: its job splits the folder's sessions into parts (jobs of their own, a
session's main file and sub-agent files always in one part) that any worker runs, the folder's job
too. Real Celery workers with two pool processes, on the test database (SQLite or PostgreSQL).

What a user sees: every conversation stored once with its sub-agents under it, the folder's job
page summing its parts' progress and, at the end, listing what they imported as one import did;
one title job for the folder (not one per part); a part that fails reported on the folder's job
while the others import; Cancel on the folder's job stops its parts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from contextviewer.conversations.models import Conversation, ConversationKind, Source
from contextviewer.importers.claude_code import synthetic
from contextviewer.ingest import imports as services
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import Job, JobStatus
from tests.worker import ROOT, Worker, job_state, purge_broker, wait_for, worker_env

SESSIONS = 6
# Parts of about one session each (a session here is two or three small files): six parts.
WORKER_ENV = {"CONTEXTVIEWER_IMPORT_PART_SECONDS": "0.1"}


def _folder(tmp_path: Path, count: int = SESSIONS) -> Path:
    folder = tmp_path / "projects"
    for i in range(count):
        synthetic.write_session(folder, messages=24, seed=100 + i, compaction=(i % 2 == 0))
    return folder


def _main_ids(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.jsonl")}


def _assert_stored_once(folder: Path, project) -> None:
    mains = Conversation.objects.filter(project=project, kind=ConversationKind.MAIN)
    assert sorted(mains.values_list("external_id", flat=True)) == sorted(_main_ids(folder))
    for conv in mains:
        subs = list(Conversation.objects.filter(parent=conv))
        assert subs, f"{conv.external_id} lost its sub-agents"
        expected = {p.stem.removeprefix("agent-") for p in (folder / conv.external_id / "subagents").glob("*.jsonl")}
        assert {s.agent_id for s in subs} == expected
    files = [p for p in folder.rglob("*.jsonl")]
    assert Source.objects.filter(project=project).count() == len(files)  # every file once


@pytest.mark.django_db(transaction=True)
def test_a_folder_imports_in_parts_stored_once_with_summed_progress_and_one_result(project, user, client, tmp_path):
    folder = _folder(tmp_path)
    # Each session's import takes 0.3 s more in this worker (planted), so both pool processes take
    # parts and the page is seen while parts run, however fast or busy the machine.
    purge_broker()
    slow = PlantedWorker("", "", delay=0.3)
    try:
        job, _ = services.start_import(project, paths=[str(folder)], user=user)
        client.force_login(user)
        seen = set()

        def ended():
            row = Job.objects.get(pk=job.pk)
            if not row.is_finished:
                page = client.get(f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
                if "parts done" in page:
                    seen.add("summed")
            return row if row.is_finished else None

        done = wait_for(ended, timeout=180, interval=0.1, message="the folder's import to end")
    finally:
        slow.stop()
    worker = Worker(concurrency=2, env=WORKER_ENV)  # the follow-ups and the second import below
    try:
        assert done.status == JobStatus.SUCCEEDED, done.error
        parts = list(Job.objects.filter(parent=done).order_by("pk"))
        assert len(parts) == SESSIONS and all(p.status == JobStatus.SUCCEEDED for p in parts)
        assert all(p.kind == "import_part" for p in parts)
        assert len({p.worker_id for p in parts}) == 2, "both pool processes ran parts"
        _assert_stored_once(folder, project)

        # The result lists every conversation once, each session's sub-agents after it, as one import did.
        listed = [c["external_id"] for c in done.result["conversations"]]
        assert len(listed) == len(set(listed)) == Conversation.objects.filter(project=project).count()
        for i, c in enumerate(done.result["conversations"]):
            if c["parent_external_id"]:
                assert c["parent_external_id"] in listed[:i]
        assert len(done.result["files"]) == Source.objects.count() and done.result["errors"] == []

        # The folder's page: while it ran, "n of N parts done"; at the end, its conversations and parts.
        assert "summed" in seen
        page = client.get(f"/jobs/{job.pk}/").content.decode()
        assert f"In {SESSIONS} parts run by any worker: {SESSIONS} done." in page
        for conv in Conversation.objects.filter(project=project):
            assert f'href="{reverse("conversation", args=[conv.pk])}"' in page
        # The jobs list shows the folder's import, not its parts.
        listing = client.get("/jobs/").content.decode()
        assert f"/jobs/{job.pk}/\"" in listing and all(f"/jobs/{p.pk}/\"" not in listing for p in parts)
        part_page = client.get(f"/jobs/{parts[0].pk}/").content.decode()
        assert f"Part 1 of {SESSIONS} of import job {job.pk}" in part_page

        # Follow-ups once, for the whole folder: one title job naming every top-level conversation.
        # It was queued as the folder's job ended, and the planted worker, stopped then, may have
        # been running it (its pool processes end with it: the job is left running for a dead
        # worker) or holding its message (seen on a slow machine: the title job never ended). What
        # `serve`'s reconciler does in time (a dead holder's job queued again, a job queued longer
        # than STALE_AFTER sent again) is done here at once; it still runs once (claim()).
        jobs.reconcile()
        for pk in Job.objects.filter(kind="title", status=JobStatus.QUEUED).values_list("pk", flat=True):
            jobs.enqueue_job(pk)
        wait_for(lambda: Job.objects.filter(kind="title").exclude(status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).exists(),
                 timeout=120, message="the title job", describe=lambda: job_state(Job.objects.filter(kind="title"), worker))
        [title] = Job.objects.filter(kind="title")
        assert sorted(title.params["conversation_ids"]) == sorted(
            Conversation.objects.filter(project=project, kind=ConversationKind.MAIN).values_list("pk", flat=True)
        )
        probes = Job.objects.filter(kind="probes")
        assert probes.count() == len(set(probes.values_list("idempotency_key", flat=True)))  # none twice

        # The same folder again: nothing stored twice, every file unchanged.
        again, _ = services.start_import(project, paths=[str(folder)], user=user)
        again = wait_for(lambda: Job.objects.filter(pk=again.pk, status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
                         timeout=120, message="the second import")
        assert again.status == JobStatus.SUCCEEDED, again.error
        assert {f["status"] for f in again.result["files"]} == {"unchanged"}
        _assert_stored_once(folder, project)

    finally:
        worker.stop()

@pytest.mark.django_db
def test_a_small_folder_is_one_job_and_a_big_one_is_split_by_sessions(project, tmp_path, monkeypatch):
    # With the default part size, six small sessions are one part's worth: the job imports them itself.
    folder = _folder(tmp_path)
    job, _ = services.start_import(project, paths=[str(folder)], enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED and "parts" not in done.result
    assert not Job.objects.filter(parent=done).exists()
    _assert_stored_once(folder, project)
    # Smaller parts: each holds whole sessions (a main file and its sub-agent files together).
    monkeypatch.setenv("CONTEXTVIEWER_IMPORT_PART_SECONDS", "0.3")
    assert services._plan(Job.objects.get(pk=job.pk)) is None  # run by its caller (`import`): one piece
    job, _ = services.start_import(project, paths=[str(folder)])  # sent to the workers (once committed)
    plan = services._plan(Job.objects.get(pk=job.pk))
    assert plan is not None and 1 < len(plan.parts) < SESSIONS
    groups = [u["group"] for part in plan.parts for u in part]
    assert sorted(Path(g["main"]).stem for g in groups) == sorted(_main_ids(folder))
    for g in groups:
        assert g["subagents"] and all(Path(s["path"]).parent.parent.name == Path(g["main"]).stem for s in g["subagents"])
    monkeypatch.setenv("CONTEXTVIEWER_IMPORT_PART_SECONDS", "0")
    assert services._plan(Job.objects.get(pk=job.pk)) is None  # never split


@pytest.mark.django_db
def test_a_folder_upload_in_parts_names_its_files_as_one_import_did(client, user, settings, tmp_path, monkeypatch):
    """A folder upload split into parts (run here, in this process, by the folder's job: no worker
    is needed) keys and names its files by their path in the folder, as one import does."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.upload_folders import write_upload_folder

    settings.MEDIA_ROOT = str(tmp_path / "media")
    monkeypatch.setenv("CONTEXTVIEWER_IMPORT_PART_SECONDS", "0.01")
    folder = write_upload_folder(tmp_path)
    rels = folder.relative()
    files = [SimpleUploadedFile(rel.rsplit("/", 1)[-1], p.read_bytes()) for rel, p in zip(rels, folder.files())]
    client.force_login(user)
    response = client.post("/api/imports", {"files": files, "paths": rels})
    assert response.status_code == 202, response.content
    done = jobs.run(response.json()["id"])
    assert done.status == JobStatus.SUCCEEDED, done.error
    assert done.result["parts"] >= 2 and Job.objects.filter(parent=done, status=JobStatus.SUCCEEDED).count() == done.result["parts"]
    main = Conversation.objects.get(agent="claude-code", parent=None)
    assert main.children.count() == len(folder.claude_subagents)
    assert Conversation.objects.filter(agent="picoclaw").exists() and done.result["skipped"] == []
    (stored,) = [p for p in (tmp_path / "media" / "uploads").iterdir() if not p.name.startswith(".")]
    shown = {f["path"] for f in done.result["files"]}
    assert shown <= set(rels) and folder.claude_main.relative_to(tmp_path).as_posix() in shown
    assert set(Source.objects.values_list("path", flat=True)) == {f"upload:{stored.name}/{p}" for p in shown}


@pytest.mark.django_db(transaction=True)
def test_cancel_of_the_folder_job_cancels_its_parts(project, user, client, tmp_path):
    folder = _folder(tmp_path, 14)
    # Each session's import takes 0.5 s more in this worker (planted), so parts are still queued
    # when the cancel comes, however fast the machine: 14 parts, two run at a time.
    purge_broker()
    slow = PlantedWorker("", "", delay=0.5)
    try:
        job, _ = services.start_import(project, paths=[str(folder)], user=user)
        wait_for(lambda: Job.objects.filter(parent_id=job.pk, status=JobStatus.SUCCEEDED).exists(), timeout=120,
                 interval=0.02, message="a first part to be done")
        client.force_login(user)
        response = client.post(f"/jobs/{job.pk}/cancel/")
        assert response.status_code == 302
        done = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=[JobStatus.CANCELLED, JobStatus.SUCCEEDED,
                                                                             JobStatus.FAILED]).first(),
                        timeout=60, message="the folder's job to stop")
        wait_for(lambda: not Job.objects.filter(parent=done, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).exists(),
                 timeout=60, message="its parts to stop")
    finally:
        slow.stop()
    assert done.status == JobStatus.CANCELLED
    parts = Job.objects.filter(parent=done)
    assert parts.filter(status=JobStatus.CANCELLED).exists(), "parts not yet run were cancelled"
    # What the parts that finished imported is stored whole, once; nothing of the cancelled ones.
    stored = set(Conversation.objects.filter(project=project, kind=ConversationKind.MAIN).values_list("external_id", flat=True))
    assert stored and stored < _main_ids(folder)
    for conv in Conversation.objects.filter(project=project, kind=ConversationKind.MAIN):
        assert Conversation.objects.filter(parent=conv).exists()

    # Run again: the cancelled parts are imported, the finished ones kept; every conversation once.
    purge_broker()
    worker = Worker(concurrency=2, env=WORKER_ENV)
    try:
        assert jobs.retry(done)
        again = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
                         timeout=180, message="the import run again")
    finally:
        worker.stop()
    assert again.status == JobStatus.SUCCEEDED, again.error
    assert Job.objects.filter(parent=again).count() == parts.count()
    _assert_stored_once(folder, project)


# A worker with two faults planted before it starts (its pool processes and their parsing
# processes inherit them): the parser of one session's main file kills its process (SIGSEGV, a
# file failure), and the import of another session raises in the worker (its part fails).
_PLANTED = r"""
import os, signal, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
import django
django.setup()
from contextviewer.importers import formats
from contextviewer.ingest import files, imports
from pathlib import Path
from tests.planted import registry_with_fault
crash, fail, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
worker_pid = os.getpid()

def crash_parse(source, n):
    if n == 5 and source.path.stem == crash and os.getpid() != worker_pid:
        os.kill(os.getpid(), signal.SIGSEGV)

formats._REGISTRY = registry_with_fault(crash_parse)
real_attach = files.attach_compaction_costs
real_calibrate = imports._calibrate

def attach(parent):
    if delay:
        import time
        time.sleep(delay)
    return real_attach(parent)

def calibrate(report):
    # After its files were stored: the part itself fails (a file's own error fails only that file).
    if any(Path(f.path).stem == fail for f in report.files):
        raise RuntimeError("planted: this session's import fails")
    return real_calibrate(report)

files.attach_compaction_costs = attach
imports._calibrate = calibrate
from celery.__main__ import main
sys.argv = ["celery"] + sys.argv[4:]
main()
"""


class PlantedWorker(Worker):
    def __init__(self, crash: str, fail: str, delay: float = 0.0):
        self.log = Path(os.environ.get("TMPDIR", "/tmp")) / f"planted-worker-{os.getpid()}.log"
        cmd = [sys.executable, "-c", _PLANTED, crash, fail, str(delay), "-A", "contextviewer", "worker", "--loglevel", "INFO",
               "--concurrency", "2", "--without-gossip", "--without-mingle", "--without-heartbeat"]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env={**worker_env(), **WORKER_ENV}, stdout=open(self.log, "wb"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready()


@pytest.mark.django_db(transaction=True)
def test_a_part_that_fails_is_reported_on_the_folder_job_and_the_others_import(project, user, tmp_path):
    folder = _folder(tmp_path)
    mains = sorted(_main_ids(folder))
    crash = next(p.stem for p in (folder / mains[1] / "subagents").glob("agent-*.jsonl")
                 if not p.name.startswith("agent-acompact"))  # a sub-agent's file
    fail = mains[3]
    purge_broker()
    worker = PlantedWorker(crash, fail)
    try:
        job, _ = services.start_import(project, paths=[str(folder)], user=user)
        done = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
                        timeout=180, message="the folder's import to end")
    finally:
        worker.stop()
    assert done.status == JobStatus.FAILED
    assert "1 of 6 parts of this import did not finish" in done.error and "planted" in done.error
    # The crashed file is its own failure, said with the record; its sub-agents and the rest imported.
    reasons = [e["reason"] for e in done.result["errors"]]
    assert any("the importer crashed (signal SIGSEGV) after record 5" in r for r in reasons), (reasons, crash, [(p.params, p.result.get("files")) for p in Job.objects.filter(parent=done)])
    assert any("planted: this session's import fails" in r for r in reasons), reasons
    stored = set(Conversation.objects.filter(project=project, kind=ConversationKind.MAIN).values_list("external_id", flat=True))
    assert stored == set(mains)  # the failed part's files were committed before it raised
    listed = {c["external_id"] for c in done.result["conversations"]}
    assert set(mains) - {fail} <= listed
    assert not Conversation.objects.filter(agent_id=crash.removeprefix("agent-")).exists()
    assert not Job.objects.filter(kind="title").exists()  # the folder's follow-ups wait for its success

    # Run again with a worker without the faults: the failed part alone runs again, nothing twice.
    purge_broker()
    worker = Worker(concurrency=2, env=WORKER_ENV)
    try:
        ran = {p.pk: p.finished_at for p in Job.objects.filter(parent=done)}
        assert jobs.retry(done)
        again = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
                         timeout=180, message="the import run again")
        assert again.status == JobStatus.SUCCEEDED, again.error
        rerun = [p for p in Job.objects.filter(parent=again) if p.finished_at != ran[p.pk]]
        assert len(rerun) == 1 and rerun[0].attempts == 2
        assert fail in {c["external_id"] for c in again.result["conversations"]}
        # The crashed file's part had succeeded (the file failed alone): the next import reads it.
        job2, _ = services.start_import(project, paths=[str(folder)], user=user)
        last = wait_for(lambda: Job.objects.filter(pk=job2.pk, status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
                        timeout=180, message="the next import")
    finally:
        worker.stop()
    assert last.status == JobStatus.SUCCEEDED and last.result["errors"] == []
    _assert_stored_once(folder, project)
