"""Factory Droid (npm ``@factory/cli``, bin ``droid``): the light entry of ``importers/droid/parser.py``
(its name, label, where its logs are, the file endings it reads, and its sniff); see
``importers/formats.py``.

A session is ``~/.factory/sessions/<cwd, / as ->/<session id>.jsonl`` (with ``<id>.settings.json``
beside it): JSON lines whose first is ``{"type": "session_start", "id", "title", "cwd", "version", ...}``,
then ``message`` lines (``{"type": "message", "id", "parentId", "timestamp", "message": {"role",
"content"}}``), ``agent_turn_outcome`` and ``compaction_state`` lines.
"""

from __future__ import annotations

from pathlib import Path

from contextviewer.importers.common import head_text, json_lines
from contextviewer.importers.droid.tools import TOOLS
from contextviewer.importers.formats import DOCUMENT, Entry

NAME = "droid"
LINE_TYPES = frozenset({"session_start", "message", "agent_turn_outcome", "compaction_state"})


def _droid_message(obj: dict) -> bool:
    """A message line only Droid writes: a ``context-`` message, or an assistant's ``modelId`` /
    ``openaiMessageId`` beside its content."""
    message = obj.get("message")
    if obj.get("type") != "message" or message.__class__ is not dict:
        return False
    ident = obj.get("id")
    return (ident.__class__ is str and ident.startswith("context-")) or "modelId" in message or "openaiMessageId" in message


def sniff(path: Path, head: bytes) -> float:
    """Droid: its ``session_start`` line first, or lines of its types with a line only Droid writes."""
    if path.is_dir() or not head:
        return 0.0
    objects = [obj for _n, obj in json_lines(head_text(head))]
    if not objects:
        return 0.0
    first = objects[0]
    if first.get("type") == "session_start" and "id" in first and ("cwd" in first or "version" in first):
        return 0.95
    if all(obj.get("type") in LINE_TYPES for obj in objects[:200]) and (
        any(_droid_message(obj) for obj in objects[:200]) or any(obj.get("type") == "compaction_state" for obj in objects[:200])
    ):
        return 0.8
    return 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.droid.parser",
    name=NAME,
    label="Factory Droid",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".jsonl",),
    where="~/.factory/sessions/<project, / as ->/<session>.jsonl",
    locations=("~/.factory/sessions",),
)
