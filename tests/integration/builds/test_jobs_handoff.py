"""Jobs under crashes: kill -9 of the worker during a handoff, the reconciler, bounded runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from contextviewer.builds import handoffs as handoff
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation, Fold
from contextviewer.jobs.models import Job, JobStatus
from contextviewer.providers import services
from tests.fake_providers import FakeProvider
from tests.sessions import session_lines, write_lines
from tests.worker import Worker, purge_broker, wait_for

FAST = {"CONTEXTVIEWER_RECONCILE_INTERVAL": "1", "CONTEXTVIEWER_JOB_STALE_AFTER": "3", "CONTEXTVIEWER_PROVIDER_BACKOFF": "0.05"}


def _conversation(project, tmp_path) -> Conversation:
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(4))
    ingest.import_file(project, path)
    return Conversation.objects.get()


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_worker_killed_during_a_handoff_the_job_completes_after_restart_with_one_fold(project, tmp_path):
    conv = _conversation(project, tmp_path)
    # The first answer never comes (the worker dies waiting for it); the next ones are quick.
    with FakeProvider(["hang"]) as server:
        services.save_config(project, "openai", base_url=server.url("openai"), model="m", api_key="sk-x",
                             make_default=True, allow_private_network=True, may_allow_private=True)
        purge_broker()
        worker = Worker(env=FAST)
        try:
            job, _ = handoff.start_handoff(conv)
            wait_for(lambda: server.count() >= 1, timeout=120, message="the handoff to call the provider")
            worker.kill()
        finally:
            worker.stop()
        assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING  # its worker died with it
        assert not Fold.objects.filter(conversation=conv, origin="generated").exists()

        # A new worker's reconciler finds the job left running and runs it again.
        worker = Worker(env=FAST)
        try:
            done = wait_for(
                lambda: Job.objects.filter(pk=job.pk, status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
                timeout=120, message="the job to end",
            )
        finally:
            worker.stop()
        assert done.status == JobStatus.SUCCEEDED, done.error
        assert done.attempts == 2
        assert 2 <= server.count() <= 6
    folds = Fold.objects.filter(conversation=conv, origin="generated")
    assert folds.count() == 1 and folds.get().key == job.idempotency_key
    assert done.result["fold_id"] == folds.get().pk


@pytest.mark.django_db
def test_the_reconciler_requeues_stale_jobs_and_fails_them_after_max_runs(project, tmp_path, monkeypatch):
    conv = _conversation(project, tmp_path)
    sent = []
    monkeypatch.setattr(jobs, "enqueue_job", sent.append)
    job, _ = handoff.start_handoff(conv, enqueue=False)
    long_ago = timezone.now() - jobs.STALE_AFTER - timedelta(seconds=5)
    fresh, _ = handoff.start_handoff(conv, enqueue=False, idempotency_key="another")
    Job.objects.filter(pk=fresh.pk).update(status=JobStatus.RUNNING, started_at=timezone.now(), attempts=1)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, started_at=long_ago, attempts=1)
    assert jobs.reconcile()["requeued"] == 1
    assert sent == [job.pk]
    assert Job.objects.get(pk=job.pk).status == JobStatus.QUEUED
    assert Job.objects.get(pk=fresh.pk).status == JobStatus.RUNNING  # still within its limit

    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, started_at=long_ago, attempts=jobs.MAX_RUNS)
    assert jobs.reconcile()["failed"] == 1
    failed = Job.objects.get(pk=job.pk)
    assert failed.status == JobStatus.FAILED and "time limit" in failed.error
    # Run again by a person: the job completes, with one fold.
    assert jobs.retry(failed)
    assert jobs.run(job.pk).status == JobStatus.SUCCEEDED
    assert Fold.objects.filter(conversation=conv, key=job.idempotency_key).count() == 1


@pytest.mark.django_db
def test_the_reconciler_resends_a_long_queued_job_once_per_period(project, tmp_path, monkeypatch):
    from django.core.cache import cache

    conv = _conversation(project, tmp_path)
    sent = []
    monkeypatch.setattr(jobs, "enqueue_job", sent.append)
    job, _ = handoff.start_handoff(conv, enqueue=False)
    cache.delete(f"job-resent:{job.pk}")
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - jobs.STALE_AFTER - timedelta(seconds=5))
    assert jobs.reconcile()["resent"] == 1
    assert jobs.reconcile()["resent"] == 0  # not again within the period
    assert sent == [job.pk]
    cache.delete(f"job-resent:{job.pk}")
