"""Shared test fixtures.

The real corpus is read in place from ../shared/fixtures (or CONTEXTVIEWER_FIXTURES); tests that
need it are skipped with a clear message where it is absent. Synthetic sessions need nothing.
"""

from pathlib import Path

import pytest
from django.conf import settings


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
