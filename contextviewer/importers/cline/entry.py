"""Cline / Roo Code: the light entry of ``importers/cline/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``. Two layouts: the VS Code
extensions' task folders (``api_conversation_history.json`` beside ``ui_messages.json``), and the
Cline CLI's session folders (``~/.cline/data/sessions/<id>/<id>.messages.json``, read by
``cli_session.py``)."""

from __future__ import annotations

from pathlib import Path

from contextviewer.importers.formats import Entry, FOLDER


NAME = "cline"
HISTORY = "api_conversation_history.json"
UI = "ui_messages.json"
METADATA = "task_metadata.json"
TASK_FILES = (HISTORY, UI, METADATA)
# The Cline CLI (npm ``cline`` 3.x): <id>/<id>.json (manifest), <id>/<id>.messages.json (the lead),
# <id>/agent_<agentId>.messages.json (a spawn_agent sub-agent).
CLI_MESSAGES = ".messages.json"
CLI_SUBAGENT = "agent_"


def _is_task_folder(folder: Path) -> bool:
    try:
        return (folder / HISTORY).is_file() and (folder / UI).is_file()
    except OSError:
        return False


def is_cli_session(folder: Path) -> bool:
    """A Cline CLI session folder: ``<id>/<id>.messages.json``."""
    try:
        return (folder / f"{folder.name}{CLI_MESSAGES}").is_file()
    except OSError:
        return False


def is_cli_file(path: Path) -> bool:
    """One of a CLI session folder's own files (its manifest, the lead's or a sub-agent's messages)."""
    name, folder = path.name, path.parent.name
    own = name in (f"{folder}.json", f"{folder}{CLI_MESSAGES}") or (name.startswith(CLI_SUBAGENT) and name.endswith(CLI_MESSAGES))
    return own and is_cli_session(path.parent)


def sniff(path: Path, head: bytes) -> float:
    """A task folder (``api_conversation_history.json`` beside ``ui_messages.json``), or one of its
    files: the folder is read (this wins over the plain message array the history also is). A CLI
    session folder (``<id>/<id>.messages.json``), or one of its files: the folder is read."""
    if path.is_dir():
        return 0.9 if _is_task_folder(path) or is_cli_session(path) else 0.0
    if path.name in TASK_FILES and _is_task_folder(path.parent):
        return 0.9
    if is_cli_file(path):
        return 0.9
    return 0.0


ENTRY = Entry(
    module="contextviewer.importers.cline.parser",
    name=NAME,
    label="Cline / Roo Code",
    storage=FOLDER,
    sniff=sniff,
    extensions=(".json",),
    where=("VS Code globalStorage: saoudrizwan.claude-dev/tasks/<id>/ (Cline), rooveterinaryinc.roo-cline/tasks/<id>/ (Roo Code);"
           " the Cline CLI: ~/.cline/data/sessions/<id>/"),
    locations=("~/.cline/data/sessions",),
)
