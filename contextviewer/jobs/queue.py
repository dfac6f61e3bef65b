"""One way to run jobs: a Job row claimed with a conditional update, run by a Celery task by id.

Progress written while a job's transaction is open goes to the cache (a SQLite write lock would
block a second writer), and is folded into the Job row when the job ends.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, models, transaction
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
    """Queued jobs stop at once; running ones at their next progress report. A job's parts
    (run_parts) are cancelled with it."""
    if job.is_finished:
        return False
    parts = list(Job.objects.filter(parent=job, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).only("pk", "created_at"))
    cache.set_many({_cancel_key(j): True for j in [job, *parts]}, PROGRESS_TTL)
    Job.objects.filter(pk__in=[job.pk, *(p.pk for p in parts)], status=JobStatus.QUEUED).update(
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


# -- parts: one job's work split over several jobs (a folder import's batches of sessions) -----------

FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
PARTS_POLL = 0.2  # seconds between looks at the parts other workers run
PARTS_REPORT = 0.5  # seconds between two sums of the parts' progress


def start_parts(job: Job, kind: str, params: list[dict], weights: list[float]) -> list[int]:
    """The parts of ``job`` (one job of ``kind`` per ``params``), created and sent to the workers
    once; ids in the order of ``params``. Run again (the job retried, or taken over from a dead
    worker), the same parts are found by their keys: those that succeeded are kept, those that
    failed or were cancelled are queued again, the others are left to whoever holds them."""
    keys = []
    for index, p in enumerate(params):
        digest = hashlib.sha256(json.dumps(p, sort_keys=True).encode()).hexdigest()[:24]
        keys.append(f"part:{job.pk}:{index}:{digest}")
    have = dict(Job.objects.filter(idempotency_key__in=keys).values_list("idempotency_key", "pk"))
    fresh = [
        Job(project_id=job.project_id, kind=kind, params={**p, "part": [index + 1, len(params)], "weight": weights[index]},
            idempotency_key=key, created_by_id=job.created_by_id, parent=job)
        for index, (p, key) in enumerate(zip(params, keys))
        if key not in have
    ]
    Job.objects.bulk_create(fresh, ignore_conflicts=True)
    ids = dict(Job.objects.filter(idempotency_key__in=keys).values_list("idempotency_key", "pk"))
    again = list(Job.objects.filter(pk__in=[ids[k] for k in have], status__in=[JobStatus.FAILED, JobStatus.CANCELLED]).only("pk", "created_at"))
    if again:
        cache.delete_many([_cancel_key(j) for j in again])
        Job.objects.filter(pk__in=[j.pk for j in again]).update(status=JobStatus.QUEUED, error="", finished_at=None)
    send = sorted([ids[k] for k in keys if k not in have] + [j.pk for j in again])
    transaction.on_commit(lambda: [enqueue_job(pk) for pk in send])  # at once outside a transaction
    return [ids[k] for k in keys]


def run_parts(job: Job, part_ids: list[int], progress: Callable[[float, str], None]) -> list[Job]:
    """Run a job's parts to their end: this process runs those still queued, from the last one
    (other workers take their messages from the first), and waits for those another worker holds.
    The job's progress is the parts' progress summed (each weighted by its ``weight`` parameter).
    ``progress`` is the job's own: it raises when the job is cancelled (cancel() stops its parts
    too). Returns the parts, in order, once every one has ended (succeeded, failed or cancelled).
    A part whose worker died is taken over here (claim) like anywhere else."""
    weights = {pk: float(params.get("weight") or 1) for pk, params in Job.objects.filter(pk__in=part_ids).values_list("pk", "params")}
    total = sum(weights.values()) or 1.0
    last = [0.0]

    def report(inline: int | None = None, inline_fraction: float = 0.0, what: str = "", force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - last[0] < PARTS_REPORT:
            return
        last[0] = now
        rows = Job.objects.filter(pk__in=part_ids).values_list("pk", "status")
        done = ended = 0.0
        count = 0
        for pk, status in rows:
            weight = weights.get(pk, 1.0)
            if status in FINISHED:
                done += weight
                ended += 1
            elif pk == inline:
                done += weight * inline_fraction
            elif status == JobStatus.RUNNING:
                live = cache.get(progress_key(pk))
                done += weight * (live["progress"] if live else 0.0)
            count += 1
        text = f"{int(ended)} of {count} parts done" + (f"; {what}" if what else "")
        if inline is None:
            progress(done / total, text)
        else:  # from inside a part: no cancel check here (the part has its own), just the figure
            set_progress(job.pk, done / total, text)

    while True:
        report(force=True)  # raises JobCancelled / JobTakenOver: the job stops here
        states = dict(Job.objects.filter(pk__in=part_ids).values_list("pk", "status"))
        left = [pk for pk in part_ids if states.get(pk) not in FINISHED]
        if not left:
            break
        ran = False
        for pk in reversed([pk for pk in left if states[pk] == JobStatus.QUEUED] or left):
            # run() claims conditionally: a part another worker has just taken (or holds, alive) is left to it.
            part = run(pk, on_progress=lambda f, t, pk=pk: report(pk, f, t))
            if part is not None:
                ran = True
                break
        if not ran:
            time.sleep(PARTS_POLL)
    return sorted(Job.objects.filter(pk__in=part_ids), key=lambda j: part_ids.index(j.pk))


def parts_summary(job: Job) -> dict | None:
    """How a job's parts stand ({"count", "queued", "running", "succeeded", "failed", "cancelled"}),
    for its page; None for a job without parts."""
    counts = dict(Job.objects.filter(parent=job).values_list("status").annotate(n=models.Count("pk")))
    if not counts:
        return None
    return {"count": sum(counts.values()), **{s: counts.get(s, 0) for s in JobStatus.values}}


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
    # The end and its follow-ups commit together: a worker killed in between leaves the job running
    # for a dead worker (taken over and run again), never finished without its follow-ups (an
    # import's titles were lost so when its worker was stopped at that moment).
    with transaction.atomic():
        finished = Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, worker_id=job.worker_id).update(
            status=status,
            result=mask_value(result or {}),  # a result quotes titles, summaries, errors: stored masked
            error=mask_text(error),
            progress=1.0 if status == JobStatus.SUCCEEDED else job.progress,
            progress_text=text,
            finished_at=timezone.now(),
        )
        if finished and status == JobStatus.SUCCEEDED:
            _follow_up(job, result or {})
    if not finished:
        log.warning("job %s: no longer this worker's; its %s result is dropped", job.pk, status)
        return
    cache.delete(progress_key(job.pk))


def _follow_up(job: Job, result: dict) -> None:
    """The follow-ups the job's kind declares (job_kinds.FOLLOW_UPS), called with the job and its
    result, in the transaction that finishes it: each in its own savepoint, and one that fails is
    logged, never the finished job's failure."""
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
