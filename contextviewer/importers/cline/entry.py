"""Cline / Roo Code: the light entry of ``importers/cline/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

from pathlib import Path

from contextviewer.importers.formats import Entry, FOLDER


NAME = "cline"
HISTORY = "api_conversation_history.json"
UI = "ui_messages.json"
METADATA = "task_metadata.json"
TASK_FILES = (HISTORY, UI, METADATA)


def _is_task_folder(folder: Path) -> bool:
    try:
        return (folder / HISTORY).is_file() and (folder / UI).is_file()
    except OSError:
        return False


def sniff(path: Path, head: bytes) -> float:
    """A task folder (``api_conversation_history.json`` beside ``ui_messages.json``), or one of its
    files: the folder is read (this wins over the plain message array the history also is)."""
    if path.is_dir():
        return 0.9 if _is_task_folder(path) else 0.0
    if path.name in TASK_FILES and _is_task_folder(path.parent):
        return 0.9
    return 0.0


ENTRY = Entry(
    module="contextviewer.importers.cline.parser",
    name=NAME,
    label="Cline / Roo Code",
    storage=FOLDER,
    sniff=sniff,
    extensions=(".json",),
    where="VS Code globalStorage: saoudrizwan.claude-dev/tasks/<id>/ (Cline), rooveterinaryinc.roo-cline/tasks/<id>/ (Roo Code)",
    locations=(),
)
