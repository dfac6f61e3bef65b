"""The Celery app is loaded when something asks for it (a worker: `celery -A contextviewer`, a job
being queued: conversations/tasks.py), not at every start: `manage.py import --help` stays fast."""


def __getattr__(name: str):
    if name == "celery_app":
        from .celery import app  # lazy: Celery loads when a job is sent, not with every command

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["celery_app"]
