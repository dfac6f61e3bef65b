"""A job's end and its follow-ups (jobs/kinds.py FOLLOW_UPS: an import's titles and probes) commit
together. A worker killed between them used to leave the job finished with some follow-ups never
made: a folder import's title job was lost so when its worker was stopped at that moment (seen in
the fan-out test, whose title job did not exist). Now the job is left running for a dead worker,
taken over, and its follow-ups made once when it ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from contextviewer.accounts.services import get_or_create_project
from contextviewer.jobs import kinds as job_kinds, queue as jobs
from contextviewer.jobs.models import Job, JobStatus
from tests.worker import ROOT, worker_env

HERE = __name__


def succeed(job, progress) -> dict:
    return {"made": 1}


def make_a_job(job, result) -> None:
    jobs.create_job(job.project, "title", {"conversation_ids": []}, idempotency_key=f"after:{job.pk}", enqueue=False)


def die(job, result) -> None:
    os.kill(os.getpid(), signal.SIGKILL)  # as a worker killed (OOM, kill -9, a stop) at that moment


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_between_a_jobs_end_and_its_follow_ups_leaves_it_running_and_the_rerun_makes_them_once(monkeypatch):
    monkeypatch.setitem(job_kinds.JOB_KINDS, "test-follow", f"{HERE}.succeed")
    monkeypatch.setitem(job_kinds.FOLLOW_UPS, "test-follow", (f"{HERE}.make_a_job",))  # here; the run below dies
    job, _ = jobs.create_job(get_or_create_project("Follow-ups"), "test-follow", {}, enqueue=False)
    code = (
        "import django; django.setup()\n"
        "from contextviewer.jobs import kinds, queue\n"
        f"kinds.JOB_KINDS['test-follow'] = '{HERE}.succeed'\n"
        f"kinds.FOLLOW_UPS['test-follow'] = ('{HERE}.make_a_job', '{HERE}.die')\n"
        f"queue.run({job.pk})\n"
    )
    env = {**worker_env(), "DJANGO_SETTINGS_MODULE": "contextviewer.settings"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == -signal.SIGKILL, out.stderr[-3000:]

    # Not finished without its follow-ups: still running, for a worker that is gone, and the first
    # follow-up's job is not there on its own.
    row = Job.objects.get(pk=job.pk)
    assert row.status == JobStatus.RUNNING and row.finished_at is None
    assert not Job.objects.filter(kind="title").exists()

    # The reconciler sees its worker's process gone and queues it again; the next run ends it, with
    # its follow-ups, once.
    monkeypatch.setattr(jobs, "enqueue_job", lambda pk: None)  # this test runs it itself, below
    assert jobs.reconcile()["requeued"] == 1
    assert Job.objects.get(pk=job.pk).status == JobStatus.QUEUED
    job_kinds.follow_ups.cache_clear()
    job_kinds.runner.cache_clear()
    try:
        done = jobs.run(job.pk)
    finally:
        job_kinds.follow_ups.cache_clear()
        job_kinds.runner.cache_clear()
    assert done.status == JobStatus.SUCCEEDED and done.result == {"made": 1}
    assert Job.objects.filter(kind="title", idempotency_key__endswith=f"after:{job.pk}").count() == 1
