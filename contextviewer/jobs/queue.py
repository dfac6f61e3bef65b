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

from contextviewer.core.secrets import mask_text, mask_value

from contextviewer.jobs import heartbeat, kinds as job_kinds
from contextviewer.jobs.idempotency import check_stored
from contextviewer.jobs.models import Job, JobStatus

log = logging.getLogger(__name__)

PROGRESS_TTL = 24 * 3600
# A running job whose worker is dead is found by its heartbeat (heartbeat.DEAD_AFTER, 30 s).
# STALE_AFTER is how long a queued job may wait before its message is sent again (once per period).
# CONTEXTVIEWER_JOB_STALE_AFTER (seconds) overrides it.
STALE_AFTER = timedelta(
    seconds=float(os.environ.get("CONTEXTVIEWER_JOB_STALE_AFTER") or settings.CELERY_TASK_TIME_LIMIT + 60)
)
# The reconciler gives a job left running by a dead worker (or past its time limit) this many runs.
MAX_RUNS = 3
RUN_JOB = "contextviewer.run_job"  # the Celery task that runs any job by id (jobs/tasks.py)

class JobRefused(Exception):
    """A job that cannot do what was asked because of its input (a file no format reads): the
    job fails with this message as it is, and ``result`` still says what was found."""

    def __init__(self, message: str, result: dict | None = None):
        super().__init__(message)
        self.result = result or {}


class JobCancelled(Exception):
    pass


class JobTakenOver(JobCancelled):
    """This process no longer holds the job (another worker took it over, or it was run again):
    it stops without writing a result; the holder writes the one result."""


def create_job(project, kind: str, params: dict, *, user=None, idempotency_key: str | None = None, enqueue=True) -> tuple[Job, bool]:
    """Create (or find, by idempotency key) a job and enqueue it once the transaction commits."""
    key = check_stored(idempotency_key) if idempotency_key else f"{kind}:{uuid.uuid4()}"
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
    """Send the job to a worker by the task's name (jobs/tasks.py RUN_JOB): this module imports
    nothing of the Celery side, which imports it."""
    from contextviewer.celery import app  # lazy: Celery's modules load only when a job is sent (0.14 s of every start-up)

    app.send_task(RUN_JOB, args=[job_id])


def claim(job_id: int) -> Job | None:
    """Take a queued job, or take over a running one whose worker is dead (heartbeat.holder_dead:
    no beat for DEAD_AFTER, or its process on this machine is gone). None if someone else has it.

    A redelivered task (acks_late + reject_on_worker_lost: its pool process was killed) comes here
    too. Both takes are conditional updates, so of two claims at once one wins."""
    now = timezone.now()
    take = {"status": JobStatus.RUNNING, "started_at": now, "heartbeat_at": now, "worker_id": heartbeat.worker_id(),
            "attempts": F("attempts") + 1, "error": ""}
    updated = Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(**take)
    if not updated:
        row = Job.objects.filter(pk=job_id, status=JobStatus.RUNNING).values(*heartbeat.ROW).first()
        if row and heartbeat.holder_dead(row, now):
            if row["attempts"] >= MAX_RUNS:
                _give_up(row, now)
            else:
                updated = Job.objects.filter(heartbeat.same_holder(row)).update(**take)
                if updated:
                    log.warning("job %s: its worker %s stopped; taken over by %s", job_id, row["worker_id"] or "-",
                                take["worker_id"])
    return Job.objects.get(pk=job_id) if updated else None


def _give_up(row: dict, now) -> int:
    return Job.objects.filter(heartbeat.same_holder(row)).update(
        status=JobStatus.FAILED,
        finished_at=now,
        progress_text="failed",
        error=f"the job's worker stopped or it ran past its time limit {MAX_RUNS} times; run it again to retry",
    )


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
    beat = heartbeat.Heartbeat(job)

    def progress(fraction: float, text: str = "") -> None:
        if beat.lost:  # taken over: stop here (an import's transaction rolls back), write nothing
            raise JobTakenOver()
        if is_cancel_requested(job):
            raise JobCancelled()
        set_progress(job.pk, fraction, text)
        if on_progress:
            on_progress(fraction, text)

    try:
        # The kinds and their runners: job_kinds.JOB_KINDS (imported when a job runs, not here).
        with beat:
            result = job_kinds.runner(job.kind)(job, progress)
    except JobTakenOver:
        log.warning("job %s: taken over by another worker; this run stops without a result", job.pk)
    except KeyboardInterrupt:  # the CLI, stopped: the job ends here, no worker takes it over
        _finish(job, JobStatus.CANCELLED, job.result, "", "cancelled")
        raise
    except JobCancelled:
        _finish(job, JobStatus.CANCELLED, job.result, "", "cancelled")
    except JobRefused as exc:  # the input, not the code: say it as it is, keep what the job found
        _finish(job, JobStatus.FAILED, exc.result or job.result, str(exc), "failed")
    except Exception as exc:  # the job row says what went wrong; the worker stays up
        log.exception("job %s failed", job.pk)
        _finish(job, JobStatus.FAILED, job.result, f"{type(exc).__name__}: {exc}", "failed")
    else:
        _finish(job, JobStatus.SUCCEEDED, result, "", "done")
    job.refresh_from_db()
    return job


def reconcile(now=None) -> dict:
    """Re-queue running jobs whose worker is dead (no heartbeat for DEAD_AFTER, or its process on
    this machine is gone: killed, or stopped by its time limit) and re-send queued jobs whose
    message may be lost; fail jobs that have had MAX_RUNS runs.

    Safe to run anywhere, any number of times: each take is a conditional update on the worker id
    and beat that were read, and claim() is conditional, so a re-sent job runs once."""
    now = now or timezone.now()
    stale = now - STALE_AFTER
    failed = requeued = 0
    for row in Job.objects.filter(status=JobStatus.RUNNING).values(*heartbeat.ROW)[:500]:
        if not heartbeat.holder_dead(row, now):
            continue
        if row["attempts"] >= MAX_RUNS:
            failed += _give_up(row, now)
        elif Job.objects.filter(heartbeat.same_holder(row)).update(status=JobStatus.QUEUED):
            log.warning("job %s: its worker %s stopped; queued again", row["pk"], row["worker_id"] or "-")
            requeued += 1
            enqueue_job(row["pk"])
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
    # Only while this process still holds the job: a worker that was taken for dead and comes back
    # (it was only slow) finds another worker id, or the job no longer running, and writes nothing.
    finished = Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, worker_id=job.worker_id).update(
        status=status,
        result=mask_value(result or {}),  # a result quotes titles, summaries, errors: stored masked
        error=mask_text(error),
        progress=1.0 if status == JobStatus.SUCCEEDED else job.progress,
        progress_text=text,
        finished_at=timezone.now(),
    )
    if not finished:
        log.warning("job %s: no longer this worker's; its %s result is dropped", job.pk, status)
        return
    cache.delete(progress_key(job.pk))
    if status == JobStatus.SUCCEEDED:
        _follow_up(job, result or {})


def _follow_up(job: Job, result: dict) -> None:
    """The follow-ups the job's kind declares (job_kinds.FOLLOW_UPS), called with the job and its
    result once it is finished: each in its own savepoint, and one that fails is logged, never
    the finished job's failure."""
    try:
        follow_ups = job_kinds.follow_ups(job.kind)
    except Exception:
        log.exception("job %s: the follow-ups of kind %s cannot be loaded", job.pk, job.kind)
        return
    for fn in follow_ups:
        try:
            with transaction.atomic():
                fn(job, result)
        except Exception:
            log.exception("job %s: its follow-up %s.%s failed", job.pk, fn.__module__, fn.__qualname__)
