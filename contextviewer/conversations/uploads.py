"""Where an uploaded source is stored: MEDIA_ROOT/uploads/<sha256>/<safe name>. Ingest writes
there and deletion removes from there; both read the layout here."""

from __future__ import annotations

import os
import re

UPLOAD_DIR = "uploads"


def safe_name(name: str) -> str:
    """The stored file name of an upload: its base name with anything but [A-Za-z0-9._-] replaced."""
    name = os.path.basename(name.replace("\\", "/")) or "upload.jsonl"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:200] or "upload.jsonl"
