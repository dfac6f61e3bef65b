import os
import warnings

from celery import Celery, signals
from celery.exceptions import SecurityWarning

from contextviewer import broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
broker.install()  # "filesystem://" with atomic message files (see contextviewer/broker.py)

app = Celery("contextviewer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Serializers whose messages run code when read: a worker accepting one of them must not run as root.
CODE_SERIALIZERS = frozenset({"pickle", "application/x-python-serialize", "application/group-python-serialize"})
ROOT_WARNING = "You're running the worker with superuser privileges"  # Celery's words (celery.platforms)
ROOT_NOTE = (
    "Running as root: the worker's superuser warning is left out. It is safe here: the worker accepts "
    "JSON messages only (never pickle), so a job's message is data, not code, and names one of "
    "contextviewer's own tasks."
)


def root_is_safe(accept_content) -> bool:
    """Whether a worker accepting ``accept_content`` may run as root: no serializer that runs code."""
    accepted = {str(c) for c in accept_content or ()}
    return bool(accepted) and not accepted & CODE_SERIALIZERS


def root_note() -> str | None:
    """What ``serve`` says once when it runs as root: why the worker's warning is left out (None
    when it is not: the worker was made to accept a serializer that runs code)."""
    return ROOT_NOTE if root_is_safe(app.conf.accept_content) else None


@signals.celeryd_init.connect
def quiet_root_warning(conf=None, **_) -> None:
    """Celery warns at every worker start when it runs as root ("absolutely not recommended!"). What
    it guards against is a message deserialised by pickle, which runs the code it carries: this
    worker accepts JSON only (Celery's default, which settings keep), so the warning is left out
    and ``serve`` says once, at its start, why (ROOT_NOTE). A worker made to accept pickle keeps the
    warning (and Celery refuses to run it as root)."""
    if conf is not None and root_is_safe(conf.accept_content):
        warnings.filterwarnings("ignore", message=ROOT_WARNING, category=SecurityWarning)
