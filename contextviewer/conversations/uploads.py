"""Where an uploaded source is stored: MEDIA_ROOT/uploads/<sha256>/<safe name>. Ingest writes
there and deletion removes from there; both read the layout here.

An upload's name and its folders' names are stored masked (secrets.mask_text), as the text of a
log is: on disk, in its Source (name and path) and in its import job."""

from __future__ import annotations

import os
import re

from contextviewer.core.secrets import mask_text

UPLOAD_DIR = "uploads"


def upload_name(name: str) -> str:
    """An upload's name as its import job and its Source keep it: masked."""
    return mask_text(name)[:500]


def safe_name(name: str) -> str:
    """The stored file name of an upload: its base name, masked, with anything but [A-Za-z0-9._-]
    replaced."""
    name = os.path.basename(mask_text(name).replace("\\", "/")) or "upload.jsonl"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:200] or "upload.jsonl"


# A folder upload (or a zip of one) is stored whole under MEDIA_ROOT/uploads/<sha256>/, each file
# at its path relative to the chosen folder, so companion files are read together. The limits:
MAX_DEPTH = 32  # folders deep
MAX_PATH_CHARS = 900  # Source.path holds "upload:<sha256>/<path>" (1024)
MAX_NAME_BYTES = 255  # one file or folder name (the file system's own limit)


class UnsafePath(ValueError):
    """A relative path an upload may not write: the message says why."""


def relative_path(name: str) -> str:
    """``name`` (a browser's ``webkitRelativePath``, a zip member's name) normalised to a relative
    path inside the upload's folder ("a/b/c.jsonl"); raises UnsafePath for an absolute path, a
    ``..``, a NUL or control character, a drive letter, or one too deep or too long."""
    if not name or not name.strip():
        raise UnsafePath("an empty file name")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise UnsafePath("a file name with a NUL or control character: not stored")
    path = mask_text(name).replace("\\", "/")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise UnsafePath("an absolute path: not stored (an upload keeps paths relative to the chosen folder)")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafePath("a path with '..' (it would leave the upload's folder): not stored")
    if not parts:
        raise UnsafePath("an empty file name")
    if len(parts) > MAX_DEPTH:
        raise UnsafePath(f"a path more than {MAX_DEPTH} folders deep: not stored")
    if any(len(p.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for p in parts):
        raise UnsafePath(f"a file or folder name longer than {MAX_NAME_BYTES} bytes: not stored")
    out = "/".join(parts)
    if len(out) > MAX_PATH_CHARS:
        raise UnsafePath(f"a path longer than {MAX_PATH_CHARS} characters: not stored")
    return out
