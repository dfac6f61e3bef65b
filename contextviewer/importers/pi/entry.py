"""pi (``@mariozechner/pi-coding-agent``): the light entry of ``importers/pi/parser.py`` (its name, label,
where its logs are, the file endings it reads, and its sniff); see ``importers/formats.py``.

A session is ``~/.pi/agent/sessions/--<cwd, / as ->--/<timestamp>_<id>.jsonl``: JSON lines whose first
is the header ``{"type": "session", "version", "id", "timestamp", "cwd"}``, then entries
``{"type", "id", "parentId", "timestamp", ...}`` (``message``, ``model_change``,
``thinking_level_change``, ``compaction``, ...).
"""

from __future__ import annotations

from pathlib import Path

from contextviewer.importers.common import head_text, json_lines
from contextviewer.importers.formats import DOCUMENT, Entry
from contextviewer.importers.pi.tools import TOOLS

NAME = "pi"
ENTRY_TYPES = frozenset(
    {
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)


def _is_header(obj: dict) -> bool:
    """pi's session line: its id with its cwd or version; without an id (a key the log garbled), its
    version and cwd both (the parser names the session from its file then)."""
    if obj.get("type") != "session":
        return False
    return ("cwd" in obj or "version" in obj) if "id" in obj else ("cwd" in obj and "version" in obj)


def sniff(path: Path, head: bytes) -> float:
    """pi: a session header line, then entries of pi's types (or a file of such entries alone)."""
    if path.is_dir() or not head:
        return 0.0
    objects = [obj for _n, obj in json_lines(head_text(head))]
    if not objects:
        return 0.0
    header = _is_header(objects[0])
    entries = sum(1 for obj in objects[1:200] if obj.get("type") in ENTRY_TYPES and "timestamp" in obj)
    named = path.name.endswith(".jsonl") and path.parent.name.startswith("--") and path.parent.name.endswith("--")
    if header and (entries or len(objects) == 1):
        return 0.95 if named else 0.9
    messages = sum(1 for obj in objects[:200] if obj.get("type") == "message" and "parentId" in obj and "message" in obj)
    if named and messages and all(obj.get("type") in ENTRY_TYPES for obj in objects[:200]):
        return 0.8
    return 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.pi.parser",
    name=NAME,
    label="pi",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".jsonl",),
    where="~/.pi/agent/sessions/--<project>--/<timestamp>_<session>.jsonl",
    locations=("~/.pi/agent/sessions",),
)
