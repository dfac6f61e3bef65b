"""The Celery side of jobs: one task runs any job by id, and a reconciler thread in each worker
takes over jobs whose worker died (heartbeat: contextviewer.jobs.heartbeat).

Celery beat does not run in the embedded mode, so the reconciler is a daemon thread the worker
starts when it is ready (worker_ready signal): at once (a restarted worker takes over the jobs its
dead predecessor held) and then every CONTEXTVIEWER_RECONCILE_INTERVAL seconds (default 15) it
calls jobs.reconcile(), which is safe to run from several workers at once. With the 30 s heartbeat
limit (jobs.heartbeat.DEAD_AFTER) a job whose worker died is running again within a minute.
"""

import logging
import os
import threading

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown

import contextviewer.celery  # noqa: F401 - the app these tasks bind to (not loaded at start-up: contextviewer/__init__.py)

from contextviewer.jobs import queue as jobs

log = logging.getLogger(__name__)


@shared_task(name=jobs.RUN_JOB, acks_late=True, reject_on_worker_lost=True)
def run_job_task(job_id: int) -> None:
    jobs.run(job_id)  # the job's kind names its runner (job_kinds.JOB_KINDS)


_stop = threading.Event()


def _reconcile_loop(interval: float) -> None:
    from django.db import close_old_connections

    while not _stop.is_set():
        try:
            close_old_connections()
            jobs.reconcile()
        except Exception:  # the next round tries again
            log.exception("job reconciler failed")
        _stop.wait(interval)


@worker_ready.connect
def start_reconciler(**kwargs) -> None:
    interval = float(os.environ.get("CONTEXTVIEWER_RECONCILE_INTERVAL", "15") or 15)
    if interval <= 0:
        return
    _stop.clear()
    threading.Thread(target=_reconcile_loop, args=(interval,), name="job-reconciler", daemon=True).start()


@worker_shutdown.connect
def stop_reconciler(**kwargs) -> None:
    _stop.set()
