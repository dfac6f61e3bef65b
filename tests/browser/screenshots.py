"""Where browser tests save the screenshots they take.

Tests never rewrite tracked files: by default screenshots go to var/screenshots (ignored by git).
`bin/screenshots` runs the browser tests with CONTEXTVIEWER_SCREENSHOTS=docs/screenshots to
refresh the README's pictures on demand."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("CONTEXTVIEWER_SCREENSHOTS") or ROOT / "var" / "screenshots")
SCREENSHOTS.mkdir(parents=True, exist_ok=True)


def shot_path(name: str, tmp_path: Path) -> Path:
    """Where a test saves the screenshot `name`: the folder CONTEXTVIEWER_SCREENSHOTS names when it
    is set (`bin/screenshots` sets docs/screenshots), else the test's own tmp_path.
    tests/browser/test_fold_review.py -> fold-review.png (`bin/screenshots -k test_the_fold_page`)."""
    folder = SCREENSHOTS if os.environ.get("CONTEXTVIEWER_SCREENSHOTS") else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name
