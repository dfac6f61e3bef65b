"""Job kinds live in one table; jobs.py resolves them when a job runs and imports none of them."""

import json
import subprocess
import sys
from pathlib import Path

from contextviewer.jobs import kinds as job_kinds

ROOT = Path(__file__).resolve().parents[2]

# The modules that own the kinds: importing jobs.py must load none of them (they import jobs.py).
OWNERS = [
    "contextviewer.ingest.imports",
    "contextviewer.builds.handoffs",
    "contextviewer.builds.services",
    "contextviewer.ingest.titles",
    "contextviewer.review.services",
    "contextviewer.review.alternatives",
]


def test_every_kind_resolves_to_a_callable():
    # The kinds the project starts, each a function taking (job, progress).
    assert set(job_kinds.JOB_KINDS) == {"import", "handoff", "build", "title", "probes", "judge", "summarize_again"}
    for kind in job_kinds.JOB_KINDS:
        fn = job_kinds.runner(kind)
        assert callable(fn), kind
        assert fn.__code__.co_argcount == 2, kind
        assert f"{fn.__module__}.{fn.__name__}" == job_kinds.JOB_KINDS[kind]


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
