"""Shared test fixtures.

The real corpus is read in place from ../shared/fixtures (or CONTEXTVIEWER_FIXTURES); tests that
need it are skipped with a clear message where it is absent. Synthetic sessions need nothing.
"""

import os
from pathlib import Path

import pytest
from django.conf import settings
from hypothesis import settings as hypothesis_settings

# Property tests draw the same examples on every run (a CI run that lands is one that can be run
# again); CONTEXTVIEWER_HYPOTHESIS=explore draws new ones each run, to look for what they have not met.
hypothesis_settings.register_profile("repeatable", derandomize=True, database=None)
hypothesis_settings.register_profile("explore", database=None)
hypothesis_settings.load_profile("explore" if os.environ.get("CONTEXTVIEWER_HYPOTHESIS") == "explore" else "repeatable")


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hasher():
    """Passwords hashed with MD5 in the tests: the product's PBKDF2 costs most of a second a user on
    this machine, and no test is about the hash's cost (Django's own advice for test settings). The
    product's hashers stay after it, so a hash a subprocess made (serve's admin) still checks."""
    hashers = list(settings.PASSWORD_HASHERS)
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher", *hashers]


def shared_fixtures_dir() -> Path | None:
    path = Path(settings.FIXTURES_DIR)
    return path if path.is_dir() else None


@pytest.fixture
def fixtures_dir() -> Path:
    path = shared_fixtures_dir()
    if path is None:
        pytest.skip(f"shared fixtures not found at {settings.FIXTURES_DIR} (set CONTEXTVIEWER_FIXTURES)")
    return path


def claude_code_fixture_files() -> list[Path]:
    """Main session files and sub-agent files of ../shared/fixtures/claude-code (for parametrize)."""
    root = shared_fixtures_dir()
    if root is None:
        return []
    return sorted(p for p in (root / "claude-code").rglob("*.jsonl"))


# --- which tests run on PostgreSQL too -----------------------------------------------------------
# bin/test runs the suite on SQLite and on PostgreSQL, the second without the tests marked
# backend_independent: those that cannot differ between the two. Marked here:
# - a unit test that touches no database;
# - a browser test that starts no worker: what it checks is the page in the browser; the queries
#   behind those pages run on both backends in tests/integration;
# - a real-agent test (tests/agents): what it checks is what the agent's own CLI does with a file we
#   wrote or a threshold the lab computed, from rows the same importer stores on either backend
#   (the store itself is checked on both in tests/integration).
# An integration module that only renders or reads files says so itself
# (`pytestmark = pytest.mark.backend_independent`, with why).
DB_FIXTURES = {"db", "transactional_db", "django_db_setup", "live_server", "worker", "worker_process", "module_worker"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = Path(str(item.fspath)).parts
        folder = parts[parts.index("tests") + 1] if "tests" in parts else ""
        uses_db = bool(DB_FIXTURES & set(getattr(item, "fixturenames", ()))) or item.get_closest_marker("django_db")
        if folder == "unit" and not uses_db:
            item.add_marker(pytest.mark.backend_independent)
        elif folder == "browser" and not item.get_closest_marker("worker") and "worker_process" not in item.fixturenames:
            item.add_marker(pytest.mark.backend_independent)
        elif folder == "agents":  # once, in the PostgreSQL run when both run (bin/test)
            item.add_marker(pytest.mark.backend_independent)
            item.add_marker(pytest.mark.real_agents)
