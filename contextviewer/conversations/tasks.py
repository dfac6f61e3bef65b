from celery import shared_task

from . import jobs


@shared_task(name="contextviewer.run_job", acks_late=True, reject_on_worker_lost=True)
def run_job_task(job_id: int) -> None:
    # Registers the runners before running (the worker imports this module only).
    from . import services  # noqa: F401
    from contextviewer.review import services as review_services  # noqa: F401  (probes, judge)

    jobs.run(job_id)
