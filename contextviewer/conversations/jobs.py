"""One way to run jobs: a Job row claimed with a conditional update, run by a Celery task by id.

Progress written while a job's transaction is open goes to the cache (a SQLite write lock would
block a second writer), and is folded into the Job row when the job ends.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from .models import Job, JobStatus

log = logging.getLogger(__name__)

PROGRESS_TTL = 24 * 3600
# A task cannot run past its hard time limit: a job still "running" after that lost its worker.
# CONTEXTVIEWER_JOB_STALE_AFTER (seconds) overrides it, for tests that kill workers on purpose.
STALE_AFTER = timedelta(
    seconds=float(os.environ.get("CONTEXTVIEWER_JOB_STALE_AFTER") or settings.CELERY_TASK_TIME_LIMIT + 60)
)
# The reconciler gives a job left running by a dead worker (or past its time limit) this many runs.
MAX_RUNS = 3

# kind -> callable(job, progress) -> result dict. Registered by the modules that own each kind.
RUNNERS: dict[str, Callable[[Job, Callable[[float, str], None]], dict]] = {}


def runner(kind: str):
    def register(fn):
        RUNNERS[kind] = fn
        return fn

    return register


class JobCancelled(Exception):
    pass


def create_job(project, kind: str, params: dict, *, user=None, idempotency_key: str | None = None, enqueue=True) -> tuple[Job, bool]:
    """Create (or find, by idempotency key) a job and enqueue it once the transaction commits."""
    key = idempotency_key or f"{kind}:{uuid.uuid4()}"
    try:
        with transaction.atomic():
            job = Job.objects.create(
                project=project, kind=kind, params=params, idempotency_key=key, created_by=user
            )
    except IntegrityError:
        return Job.objects.get(idempotency_key=key), False
    if enqueue:
        transaction.on_commit(lambda: enqueue_job(job.pk))
    return job, True


def enqueue_job(job_id: int) -> None:
    from .tasks import run_job_task

    run_job_task.delay(job_id)


def claim(job_id: int) -> Job | None:
    """Take a queued job (or one left running by a dead worker past STALE_AFTER). None if taken."""
    now = timezone.now()
    claimable = Q(status=JobStatus.QUEUED) | Q(status=JobStatus.RUNNING, started_at__lt=now - STALE_AFTER)
    updated = Job.objects.filter(claimable, pk=job_id).update(
        status=JobStatus.RUNNING, started_at=now, attempts=F("attempts") + 1, error=""
    )
    return Job.objects.get(pk=job_id) if updated else None


def progress_key(job_id: int) -> str:
    return f"job-progress:{job_id}"


def set_progress(job_id: int, fraction: float, text: str = "") -> None:
    cache.set(progress_key(job_id), {"progress": max(0.0, min(1.0, fraction)), "text": text[:500]}, PROGRESS_TTL)


def current_progress(job: Job) -> tuple[float, str]:
    if job.status == JobStatus.RUNNING:
        live = cache.get(progress_key(job.pk))
        if live:
            return live["progress"], live["text"]
    return job.progress, job.progress_text


def _cancel_key(job: Job) -> str:
    # The creation time in the key: a flag left by an earlier job with the same id (a test
    # database created again, a restored backup) never cancels this one.
    stamp = int(job.created_at.timestamp() * 1_000_000) if job.created_at else 0
    return f"job-cancel:{job.pk}:{stamp}"


def is_cancel_requested(job: Job) -> bool:
    return bool(cache.get(_cancel_key(job)))


def cancel(job: Job) -> bool:
    """Queued jobs stop at once; running ones at their next progress report."""
    if job.is_finished:
        return False
    cache.set(_cancel_key(job), True, PROGRESS_TTL)
    Job.objects.filter(pk=job.pk, status=JobStatus.QUEUED).update(
        status=JobStatus.CANCELLED, finished_at=timezone.now(), progress_text="cancelled"
    )
    return True


def retry(job: Job) -> bool:
    """Run a failed, cancelled or abandoned (its worker died) job again: same job, same key.

    Jobs are idempotent, so retrying one that is in fact still running produces one result."""
    updated = Job.objects.filter(
        pk=job.pk, status__in=[JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.RUNNING]
    ).update(status=JobStatus.QUEUED, error="", finished_at=None)
    if updated:
        cache.delete(_cancel_key(job))
        transaction.on_commit(lambda: enqueue_job(job.pk))
    return bool(updated)


def run(job_id: int, *, on_progress: Callable[[float, str], None] | None = None) -> Job | None:
    """Claim and run one job; the Celery task and the CLI both come here."""
    job = claim(job_id)
    if job is None:
        return None

    def progress(fraction: float, text: str = "") -> None:
        if is_cancel_requested(job):
            raise JobCancelled()
        set_progress(job.pk, fraction, text)
        if on_progress:
            on_progress(fraction, text)

    fn = RUNNERS.get(job.kind)
    try:
        if fn is None:
            raise RuntimeError(f"no runner for job kind {job.kind!r}")
        result = fn(job, progress)
    except JobCancelled:
        _finish(job, JobStatus.CANCELLED, job.result, "", "cancelled")
    except Exception as exc:  # the job row says what went wrong; the worker stays up
        log.exception("job %s failed", job.pk)
        _finish(job, JobStatus.FAILED, job.result, f"{type(exc).__name__}: {exc}", "failed")
    else:
        _finish(job, JobStatus.SUCCEEDED, result, "", "done")
    job.refresh_from_db()
    return job


def reconcile(now=None) -> dict:
    """Re-queue jobs left running past their limit (their worker died or hit the time limit) and
    re-send queued jobs whose message may be lost; fail jobs that have had MAX_RUNS runs.

    Safe to run anywhere, any number of times: claim() is conditional, so a re-sent job runs once."""
    now = now or timezone.now()
    stale = now - STALE_AFTER
    failed = Job.objects.filter(status=JobStatus.RUNNING, started_at__lt=stale, attempts__gte=MAX_RUNS).update(
        status=JobStatus.FAILED,
        finished_at=now,
        progress_text="failed",
        error=f"the job's worker stopped or it ran past its time limit {MAX_RUNS} times; run it again to retry",
    )
    requeue = list(
        Job.objects.filter(status=JobStatus.RUNNING, started_at__lt=stale, attempts__lt=MAX_RUNS).values_list("pk", flat=True)
    )
    requeued = 0
    for pk in requeue:
        if Job.objects.filter(pk=pk, status=JobStatus.RUNNING, started_at__lt=stale).update(status=JobStatus.QUEUED):
            requeued += 1
            enqueue_job(pk)
    resent = 0
    waiting = Job.objects.filter(status=JobStatus.QUEUED, created_at__lt=stale).filter(
        Q(started_at__isnull=True) | Q(started_at__lt=stale)
    )
    for pk in waiting.values_list("pk", flat=True)[:100]:
        # Once per STALE_AFTER at most: a long queue is not flooded with copies.
        if cache.add(f"job-resent:{pk}", True, int(STALE_AFTER.total_seconds())):
            enqueue_job(pk)
            resent += 1
    if failed or requeued or resent:
        log.warning("reconciler: %s re-queued, %s re-sent, %s failed", requeued, resent, failed)
    return {"requeued": requeued, "resent": resent, "failed": failed}


def _finish(job: Job, status: str, result: dict, error: str, text: str) -> None:
    Job.objects.filter(pk=job.pk).update(
        status=status,
        result=result or {},
        error=error,
        progress=1.0 if status == JobStatus.SUCCEEDED else job.progress,
        progress_text=text,
        finished_at=timezone.now(),
    )
    cache.delete(progress_key(job.pk))
