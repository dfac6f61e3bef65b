"""Every job kind and the function that runs it, in one table.

A kind names its runner by dotted path, resolved when a job of that kind runs: jobs.py imports
nothing of the modules that own the kinds (they import jobs.py to create jobs), so there is no
import circle, and a worker needs no list of modules to import "so that the runners register".

A runner is ``fn(job, progress) -> dict`` (the job's result); ``progress(fraction, text)`` reports
and raises JobCancelled when the job was cancelled. Adding a kind is one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from django.utils.module_loading import import_string

JOB_KINDS: dict[str, str] = {
    "import": "contextviewer.ingest.imports.run_import",
    "handoff": "contextviewer.builds.handoffs.run_handoff",
    "build": "contextviewer.builds.services.run_build",
    "title": "contextviewer.ingest.titles.run_title",
    "probes": "contextviewer.review.services.run_probes",
    "judge": "contextviewer.review.services.run_judge",
    "summarize_again": "contextviewer.review.alternatives.run",
}


class UnknownJobKind(LookupError):
    pass


@cache
def runner(kind: str) -> Callable:
    """The function that runs jobs of ``kind`` (imported on first use)."""
    try:
        path = JOB_KINDS[kind]
    except KeyError:
        raise UnknownJobKind(f"no runner for job kind {kind!r}") from None
    return import_string(path)
