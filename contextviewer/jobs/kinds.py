"""Every job kind and the function that runs it, in one table.

A kind names its runner by dotted path, resolved when a job of that kind runs: jobs.py imports
nothing of the modules that own the kinds (they import jobs.py to create jobs), so there is no
import circle, and a worker needs no list of modules to import "so that the runners register".

A runner is ``fn(job, progress) -> dict`` (the job's result); ``progress(fraction, text)`` reports
and raises JobCancelled when the job was cancelled. Adding a kind is one line here.

Follow-ups are declared here too, not imported by the job that produces their input: when a job of
a kind in FOLLOW_UPS succeeds, queue.py calls each ``fn(job, result)`` in order, after the job is
finished (its result written). The producer's result says what they need (the conversations an
import touched, the conversation a handoff folded); a follow-up that fails is logged and the job
stays succeeded. So an import or a handoff imports nothing of review (an app above theirs).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from django.utils.module_loading import import_string

JOB_KINDS: dict[str, str] = {
    "import": "contextviewer.ingest.imports.run_import",
    # A batch of a folder import's sessions (queue.start_parts): no follow-ups of its own, the
    # folder's import job runs them once for all its parts.
    "import_part": "contextviewer.ingest.imports.run_import_part",
    "handoff": "contextviewer.builds.handoffs.run_handoff",
    "build": "contextviewer.builds.services.run_build",
    "title": "contextviewer.ingest.titles.run_title",
    "probes": "contextviewer.review.probes.run_probes",
    "judge": "contextviewer.review.judge.run_judge",
    "summarize_again": "contextviewer.review.alternatives.run",
    "policy_table": "contextviewer.lab.table.run_policy_table",
}


FOLLOW_UPS: dict[str, tuple[str, ...]] = {
    # Fact probes for every conversation that now has folds; titles for the new conversations.
    # The sessions a push client's files gave, on its row (the project's members page shows them).
    "import": ("contextviewer.review.probes.after_job", "contextviewer.ingest.imports.titles_after_job",
               "contextviewer.ingest.push.counts_after_job"),
    # Did the new summary keep the facts it replaced?
    "handoff": ("contextviewer.review.probes.after_job",),
}


# What a finished job made, for its page: ``fn(job) -> dict | None`` (review/outcomes.py says the
# shape), declared by dotted path like the runners; a kind without one shows its result as is.
OUTCOMES: dict[str, str] = {
    "handoff": "contextviewer.review.outcomes.fold_outcome",
    "summarize_again": "contextviewer.review.outcomes.fold_outcome",
    "build": "contextviewer.builds.outcomes.build_outcome",
    "probes": "contextviewer.review.outcomes.conversation_outcome",
    "judge": "contextviewer.review.outcomes.conversation_outcome",
    "policy_table": "contextviewer.lab.table.table_outcome",
    "title": "contextviewer.ingest.titles.title_outcome",
}


# Kinds whose result lists what they stored as an import does ({"conversations": [...], "errors",
# "skipped", "files"}): the job page shows those lists. Another kind's "conversations" may be a count.
LISTS_CONVERSATIONS = frozenset({"import", "import_part", "build"})


def outcome(job) -> dict | None:
    """What `job` made (None while it runs, for a kind without an outcome, or one that failed)."""
    path = OUTCOMES.get(job.kind)
    if path is None or job.status != "succeeded":
        return None
    return import_string(path)(job)


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


@cache
def follow_ups(kind: str) -> tuple[Callable, ...]:
    """The functions called with ``(job, result)`` when a job of ``kind`` succeeds (imported on
    first use)."""
    return tuple(import_string(path) for path in FOLLOW_UPS.get(kind, ()))
