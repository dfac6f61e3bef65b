"""The Celery side of jobs: one task runs any job by id, and a reconciler thread in each worker
re-queues jobs left running past their limit.

Celery beat does not run in the embedded mode, so the reconciler is a daemon thread the worker
starts when it is ready (worker_ready signal): every CONTEXTVIEWER_RECONCILE_INTERVAL seconds
(default 60) it calls jobs.reconcile(), which is safe to run from several workers at once.
"""

import logging
import os
import threading

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown

from . import jobs

log = logging.getLogger(__name__)


@shared_task(name="contextviewer.run_job", acks_late=True, reject_on_worker_lost=True)
def run_job_task(job_id: int) -> None:
    # Registers the runners before running (the worker imports this module only).
    from . import handoff, services, titles  # noqa: F401
    from . import builds  # noqa: F401  (build)
    from contextviewer.review import services as review_services  # noqa: F401  (probes, judge)

    jobs.run(job_id)


_stop = threading.Event()


def _reconcile_loop(interval: float) -> None:
    from django.db import close_old_connections

    while not _stop.wait(interval):
        try:
            close_old_connections()
            jobs.reconcile()
        except Exception:  # the next round tries again
            log.exception("job reconciler failed")


@worker_ready.connect
def start_reconciler(**kwargs) -> None:
    interval = float(os.environ.get("CONTEXTVIEWER_RECONCILE_INTERVAL", "60") or 60)
    if interval <= 0:
        return
    _stop.clear()
    threading.Thread(target=_reconcile_loop, args=(interval,), name="job-reconciler", daemon=True).start()


@worker_shutdown.connect
def stop_reconciler(**kwargs) -> None:
    _stop.set()
