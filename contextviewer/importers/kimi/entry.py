"""Kimi CLI (PyPI ``kimi-cli``): the light entry of ``importers/kimi/parser.py`` (its name, label, where
its logs are, the file endings it reads, and its sniff); see ``importers/formats.py``.

A session is a folder ``~/.kimi/sessions/<work folder hash>/<session id>/``: ``context.jsonl`` (its
first line ``{"role": "_system_prompt", ...}``, then messages and ``_checkpoint`` / ``_usage``
records), ``context_<n>.jsonl`` (the history a compaction or an undo set aside), ``wire.jsonl``
(the UI's events), ``state.json``; a sub-agent's in ``subagents/<agent id>/`` (+ ``meta.json``).
The folder is read (a file of it stands for its folder).
"""

from __future__ import annotations

import re
from pathlib import Path

from contextviewer.importers.common import first_lines
from contextviewer.importers.formats import FOLDER, Entry
from contextviewer.importers.kimi.tools import TOOLS

NAME = "kimi"
CONTEXT = "context.jsonl"
ROTATED = re.compile(r"^context_(\d+)\.jsonl$")
RECORDS = frozenset({"_system_prompt", "_checkpoint", "_usage"})
ROLES = frozenset({"user", "assistant", "tool", "system"}) | RECORDS
FOLDER_FILES = ("wire.jsonl", "state.json", "meta.json", "prompt.txt")


def looks_like_context(head: bytes) -> bool:
    """Kimi's context lines: every line a role record, Kimi's own (_system_prompt, _checkpoint,
    _usage) among them."""
    objects = first_lines(head)
    roles = [o.get("role") for o in objects]
    return bool(objects) and all(r.__class__ is str and r in ROLES for r in roles) and any(r in RECORDS for r in roles)


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(64 * 1024)
    except OSError:
        return b""


def is_session_folder(folder: Path) -> bool:
    try:
        log = folder / CONTEXT
        return log.is_file() and looks_like_context(_head(log))
    except OSError:
        return False


def folder_of(path: Path) -> Path | None:
    """The session (or sub-agent) folder a file of it stands for."""
    if path.name == CONTEXT or ROTATED.match(path.name) or path.name in FOLDER_FILES:
        return path.parent if is_session_folder(path.parent) else None
    return None


def sniff(path: Path, head: bytes) -> float:
    """A session folder (or one of its files: the folder is read); a context.jsonl on its own by its lines."""
    if path.is_dir():
        return 0.9 if is_session_folder(path) else 0.0
    if folder_of(path) is not None:
        return 0.9
    return 0.8 if path.suffix == ".jsonl" and looks_like_context(head) else 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.kimi.parser",
    name=NAME,
    label="Kimi CLI",
    storage=FOLDER,
    sniff=sniff,
    extensions=(".jsonl", ".json"),
    where="~/.kimi/sessions/<work folder hash>/<session>/ (context.jsonl, context_<n>.jsonl; sub-agents in subagents/<id>/)",
    locations=("~/.kimi/sessions",),
)
