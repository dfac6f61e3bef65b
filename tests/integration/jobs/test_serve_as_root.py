"""`serve` run as root (issue 36, item 7): it says once why the worker may run as root, and
Celery's superuser warning is not printed, neither at the start nor when the worker is started
again."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from contextviewer.celery import ROOT_NOTE, ROOT_WARNING
from tests.integration.jobs.test_job_recovery import _answers, _celery_workers, _free_port, _serve
from tests.worker import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.skipif(os.geteuid() != 0, reason="serve must run as root")]


def test_serve_as_root_says_once_why_and_celery_does_not_warn(tmp_path):
    port = _free_port()
    serve, log = _serve(tmp_path, port, quick=False)
    try:
        wait_for(lambda: _answers(f"http://127.0.0.1:{port}/login/"), timeout=120, interval=0.2, message=f"the web server: {log}")
        first = wait_for(lambda: _celery_workers(serve), timeout=60, message="the worker")[0]
        wait_for(lambda: b"celery@" in log.read_bytes(), timeout=60, message="the worker's banner")
        first.kill()  # serve starts it again: a second worker start
        wait_for(lambda: [p for p in _celery_workers(serve) if p.pid != first.pid], timeout=60, message="a new worker")
        wait_for(lambda: log.read_bytes().count(b"celery@") >= 2, timeout=60, message="the new worker's banner")
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            raise
    text = log.read_text(errors="replace")
    assert text.count(ROOT_NOTE) == 1, text
    assert ROOT_WARNING not in text and "absolutely not recommended" not in text, text
