"""An install without the dev extras runs the team setup (issue 40, item 6): `./bin/run` installs
pyproject.toml's dependencies only (bin/setup without --dev), and with CELERY_BROKER_URL=redis://
its worker crash-looped: kombu's Redis transport imports ``packaging``, which only the dev extras
brought in. Here bin/setup, as `./bin/run` calls it, sets up a copy of the project (a fresh
virtualenv, the project installed with pip without extras) with the team setup's variables set, and
the modules the Redis broker, the Redis cache and PostgreSQL load are imported in it, as the worker
and the web server load them.

Runs once (backend_independent): it makes its own virtualenv and touches no database. Bounded: the
install has 8 minutes (pip's cache and the machine's wheel folders make it take one or two)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_independent
ROOT = Path(__file__).resolve().parents[3]
INSTALL_TIMEOUT = 480

# What `celery worker` with a redis:// broker, the Redis cache and the PostgreSQL backend import.
CHECK = textwrap.dedent(
    """
    import django, importlib, kombu
    django.setup()
    from contextviewer.celery import app
    for url in ("redis://127.0.0.1:6379/0", "rediss://127.0.0.1:6379/0"):
        kombu.Connection(url).transport  # the broker's transport class, loaded as the worker loads it
    importlib.import_module("django.core.cache.backends.redis").RedisCache
    import redis
    from django.db import connections
    connections["default"].vendor  # the PostgreSQL backend (psycopg), loaded without connecting
    import psycopg
    print("ok", app.conf.broker_url.split(":")[0], connections["default"].vendor, psycopg.__version__)
    """
)


def _project_copy(dest: Path) -> Path:
    """The files `./bin/run` sets itself up from (the checkout's own .venv stays as it is)."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, dest / name)
    for folder in ("contextviewer", "ops", "bin"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def test_bin_setup_without_dev_loads_the_redis_broker_and_postgresql(tmp_path):
    """What `./bin/run` runs first (bin/setup, no --dev), with the team setup's variables set."""
    project = _project_copy(tmp_path / "project")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "PYTHON": sys.executable,
        "DJANGO_SETTINGS_MODULE": "contextviewer.settings",
        "CONTEXTVIEWER_DATA_DIR": str(tmp_path / "data"),
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/contextviewer",
    }
    setup = subprocess.run([str(project / "bin" / "setup")], capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                           env=env, cwd=project)
    assert setup.returncode == 0, f"bin/setup (no --dev) failed:\n{setup.stderr[-3000:]}"
    python = project / ".venv" / "bin" / "python"
    dev_only = subprocess.run([str(python), "-c", "import pytest"], capture_output=True, timeout=60)
    assert dev_only.returncode != 0, "the dev extras were installed: this test would prove nothing"
    check = subprocess.run([str(python), "-c", CHECK], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert check.returncode == 0, f"the team setup's modules do not load without the dev extras:\n{check.stderr[-3000:]}"
    assert check.stdout.split()[:3] == ["ok", "redis", "postgresql"]
