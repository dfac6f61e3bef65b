"""Cline / Roo Code: the light entry of ``importers/cline/format.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``. Two layouts: the VS Code
extensions' task folders (``api_conversation_history.json`` beside ``ui_messages.json``; the history
file alone is read too), and the Cline CLI's session folders
(``~/.cline/data/sessions/<id>/<id>.messages.json``, read by ``cli_session.py``)."""

from __future__ import annotations

import re
from pathlib import Path

from contextviewer.importers.cline.tools import TOOLS
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


def in_session_folder(path: Path) -> bool:
    """A file of a task folder or of a CLI session folder (the folder is read, not the file)."""
    return (path.name in TASK_FILES and _is_task_folder(path.parent)) or is_cli_file(path)


# Cline's own keys on a history message (``ClineStorageMessage``: the model that wrote it, the
# tokens and cost of its call), in a history that no longer has its name.
_CLINE_KEYS = re.compile(rb'"(?:modelInfo"\s*:\s*\{\s*"modelId"|metrics"\s*:\s*\{\s*"tokens")')


def lone_history(path: Path, head: bytes) -> float:
    """An ``api_conversation_history.json`` on its own (its task folder left behind): a JSON array
    of messages, by its name, or by Cline's keys on its messages under another name. It wins over
    the plain message array it also is: its assistant messages' ``metrics`` are its model calls."""
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if not text.startswith(b"[") or b'"role"' not in text:
        return 0.0
    if path.name == HISTORY:
        return 0.8
    return 0.7 if _CLINE_KEYS.search(text) else 0.0


def sniff(path: Path, head: bytes) -> float:
    """A task folder (``api_conversation_history.json`` beside ``ui_messages.json``), or one of its
    files: the folder is read (this wins over the plain message array the history also is). A CLI
    session folder (``<id>/<id>.messages.json``), or one of its files: the folder is read. A history
    file on its own: the file is read (``lone_history``)."""
    if path.is_dir():
        return 0.9 if _is_task_folder(path) or is_cli_session(path) else 0.0
    if in_session_folder(path):
        return 0.9
    return lone_history(path, head)


ENTRY = Entry(
    module="contextviewer.importers.cline.format",
    name=NAME,
    label="Cline / Roo Code",
    storage=FOLDER,
    sniff=sniff,
    tools=TOOLS,
    extensions=(".json",),
    where=("VS Code globalStorage: saoudrizwan.claude-dev/tasks/<id>/ (Cline; a Roo Code task folder out of its"
           " extension's folder too); the Cline CLI: ~/.cline/data/sessions/<id>/"),
    locations=("~/.cline/data/sessions",),
)
