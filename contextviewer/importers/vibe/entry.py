"""Mistral Vibe (PyPI ``mistral-vibe``): the light entry of ``importers/vibe/parser.py`` (its name,
label, where its logs are, the file endings it reads, and its sniff); see ``importers/formats.py``.

A session is a folder ``~/.vibe/logs/session/unified/<session id>/`` (Vibe 3.0's "unified session
store", ``store_format`` ``mistral.vibe.unified-session-store/v1``): ``meta.json``, ``CURRENT``
(the current generation), ``generations/<n>/manifest.json`` (which ``chunks/<sha256>.json`` hold
the session's history and the model's context), ``journal/<n>.jsonl`` (the recovery journal since
the last generation but one). The folder is read whole; pointing at one of its files reads it. A
sub-agent runs as a child session in a folder of its own beside it, ``child-<id>/`` (no
``meta.json``), read as the sub-agent of the session that spawned it.
"""

from __future__ import annotations

from pathlib import Path

from contextviewer.importers.formats import FOLDER, Entry
from contextviewer.importers.vibe.tools import TOOLS

NAME = "vibe"
LABEL = "Mistral Vibe"
STORE_FORMAT = "mistral.vibe.unified-session-store"
META = "meta.json"
CURRENT = "CURRENT"
SUBFOLDERS = ("chunks", "generations", "journal")


def _is_session(folder: Path) -> bool:
    """A session folder: ``CURRENT`` beside ``generations/``, with ``meta.json`` (a main session) or
    without (a sub-agent's: ``child-<id>/``, whose ``CURRENT`` names the store's format)."""
    try:
        if not (folder / CURRENT).is_file() or not (folder / "generations").is_dir():
            return False
        if (folder / META).is_file():
            return True
        with open(folder / CURRENT, "rb") as fh:
            return STORE_FORMAT.encode() in fh.read(4096)
    except OSError:
        return False


def session_folder(path: Path) -> Path | None:
    """The session folder ``path`` is, or is a file of (``meta.json``, ``CURRENT``, a chunk, a
    journal segment, a generation's file); None otherwise."""
    for folder in (path, path.parent, path.parent.parent, path.parent.parent.parent):
        if folder == path and not path.is_dir():
            continue
        if _is_session(folder):
            inside = path.relative_to(folder).parts
            if not inside or inside[0] in (META, CURRENT, "scheduled-loops.json", *SUBFOLDERS):
                return folder
            return None
    return None


def sniff(path: Path, head: bytes) -> float:
    """A Vibe session folder (``CURRENT`` beside ``generations/``), or one of its files: the folder is
    read."""
    if path.is_dir():
        return 0.95 if _is_session(path) else 0.0
    return 0.9 if session_folder(path) is not None else 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.vibe.parser",
    name=NAME,
    label=LABEL,
    storage=FOLDER,
    sniff=sniff,
    extensions=(".json", ".jsonl"),
    where="~/.vibe/logs/session/unified/<session>/ (meta.json, CURRENT, generations/, chunks/, journal/)",
    locations=("~/.vibe/logs/session/unified",),
)
