"""Job kinds live in one table; jobs.py resolves them when a job runs and imports none of them."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contextviewer.jobs import kinds as job_kinds

ROOT = Path(__file__).resolve().parents[2]

# The modules that own the kinds: importing jobs.py must load none of them (they import jobs.py).
OWNERS = [
    "contextviewer.ingest.imports",
    "contextviewer.builds.handoffs",
    "contextviewer.builds.services",
    "contextviewer.ingest.titles",
    "contextviewer.review.probes",
    "contextviewer.review.judge",
    "contextviewer.review.queues",
    "contextviewer.review.alternatives",
]


def test_every_kind_resolves_to_a_callable():
    # The kinds the project starts, each a function taking (job, progress).
    assert set(job_kinds.JOB_KINDS) == {"import", "import_part", "handoff", "build", "title", "probes", "judge", "summarize_again", "policy_table"}
    for kind in job_kinds.JOB_KINDS:
        fn = job_kinds.runner(kind)
        assert callable(fn), kind
        assert fn.__code__.co_argcount == 2, kind
        assert f"{fn.__module__}.{fn.__name__}" == job_kinds.JOB_KINDS[kind]


def test_every_follow_up_resolves_to_a_callable_of_a_known_kind():
    # What follows a finished job is declared here, not imported by the job that produced it.
    assert set(job_kinds.FOLLOW_UPS) <= set(job_kinds.JOB_KINDS)
    assert "contextviewer.review.probes.after_job" in job_kinds.FOLLOW_UPS["import"]
    assert "contextviewer.review.probes.after_job" in job_kinds.FOLLOW_UPS["handoff"]
    for kind, paths in job_kinds.FOLLOW_UPS.items():
        fns = job_kinds.follow_ups(kind)
        assert len(fns) == len(paths), kind
        for fn, path in zip(fns, paths, strict=True):
            assert callable(fn) and fn.__code__.co_argcount == 2, path
            assert f"{fn.__module__}.{fn.__name__}" == path
    assert job_kinds.follow_ups("build") == ()


def test_an_unknown_kind_says_so():
    try:
        job_kinds.runner("no-such-kind")
    except job_kinds.UnknownJobKind as exc:
        assert "no-such-kind" in str(exc)
    else:
        raise AssertionError("an unknown kind resolved")


def test_importing_jobs_loads_none_of_the_modules_that_own_kinds():
    code = (
        "import json, sys, django; django.setup();"
        "import contextviewer.jobs.queue, contextviewer.jobs.tasks;"
        f"print(json.dumps([m for m in {OWNERS!r} if m in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**_env(), "DJANGO_SETTINGS_MODULE": "contextviewer.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def _env() -> dict:
    import os

    return dict(os.environ)


CALLED: list = []


def succeed(job, progress) -> dict:
    return {"conversation_id": None, "made": 1}


def broken_follow_up(job, result) -> None:
    CALLED.append(("broken", result["made"]))
    raise RuntimeError("a follow-up that fails")


def later_follow_up(job, result) -> None:
    from contextviewer.jobs.models import Job

    CALLED.append(("later", result["made"], Job.objects.get(pk=job.pk).status))


@pytest.mark.django_db
def test_a_finished_jobs_follow_ups_run_in_order_and_one_that_fails_leaves_it_succeeded(monkeypatch, caplog):
    from contextviewer.accounts.services import get_or_create_project
    from contextviewer.jobs import queue as jobs
    from contextviewer.jobs.models import JobStatus

    here = __name__
    monkeypatch.setitem(job_kinds.JOB_KINDS, "test-follow", f"{here}.succeed")
    monkeypatch.setitem(job_kinds.FOLLOW_UPS, "test-follow", (f"{here}.broken_follow_up", f"{here}.later_follow_up"))
    job_kinds.follow_ups.cache_clear()
    CALLED.clear()
    try:
        job, _ = jobs.create_job(get_or_create_project("Follow-ups"), "test-follow", {}, enqueue=False)
        done = jobs.run(job.pk)
    finally:
        job_kinds.follow_ups.cache_clear()
        job_kinds.runner.cache_clear()
    assert done.status == JobStatus.SUCCEEDED and done.error == "" and done.result == {"conversation_id": None, "made": 1}
    assert CALLED == [("broken", 1), ("later", 1, JobStatus.SUCCEEDED)]  # in order, once the job is finished
    assert "a follow-up that fails" in caplog.text
