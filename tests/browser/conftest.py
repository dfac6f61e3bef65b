"""Playwright in Debian's Chromium (Playwright cannot download its own browsers here)."""

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def _chromium() -> str | None:
    for candidate in (os.environ.get("CONTEXTVIEWER_CHROMIUM"), "/usr/lib/chromium/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    executable = _chromium()
    if executable is None:
        pytest.fail("Chromium not found: install Debian's chromium (apt-get install -y chromium)")
    return {
        **browser_type_launch_args,
        "executable_path": executable,
        "args": [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1440, "height": 900}}


@pytest.fixture
def worker_process(live_server):
    """A real Celery worker on the live server's database."""
    from tests.worker import Worker, purge_broker

    purge_broker()
    w = Worker()
    yield w
    w.stop()
