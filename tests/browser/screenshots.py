"""Where browser tests save the screenshots they take.

Tests never rewrite tracked files: by default screenshots go to var/screenshots (ignored by git).
`bin/screenshots` runs the browser tests with CONTEXTVIEWER_SCREENSHOTS=docs/screenshots to
refresh the README's pictures on demand."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("CONTEXTVIEWER_SCREENSHOTS") or ROOT / "var" / "screenshots")
SCREENSHOTS.mkdir(parents=True, exist_ok=True)
