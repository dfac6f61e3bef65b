"""Cursor's agent (IDE agent and CLI): the light entry of ``importers/cursor/parser.py`` (its name, label,
where its logs are, the file endings it reads, and its sniff); see ``importers/formats.py``.

Cursor writes an agent transcript per chat under ``~/.cursor/projects/<project slug>/agent-transcripts/``:
``<chat>/<chat>.jsonl`` with its sub-agents' ``<chat>/subagents/<agent>.jsonl`` (current), or
``<chat>.jsonl`` / ``<chat>.txt`` (earlier). A JSONL record is exactly ``{"role", "message":
{"content": [...]}}``; a ``.txt`` transcript is ``user:`` / ``assistant:`` blocks (sources in the
parser's docstring)."""

from __future__ import annotations

from pathlib import Path

from contextviewer.importers.common import head_text, json_lines
from contextviewer.importers.cursor.tools import TOOLS
from contextviewer.importers.formats import DOCUMENT, Entry

NAME = "cursor"
TRANSCRIPTS = "agent-transcripts"
SUBAGENTS = "subagents"
ROLES = frozenset({"user", "assistant"})
BLOCK_KEYS = (frozenset({"type", "text"}), frozenset({"type", "name", "input"}), frozenset({"type", "id", "name", "input"}))


def in_transcripts(path: Path) -> bool:
    """Whether the file lies where Cursor writes transcripts: ``agent-transcripts/`` itself, a chat's
    folder in it, or that folder's ``subagents/``."""
    parents = [p.name for p in path.parents][:3]
    return TRANSCRIPTS in parents


def is_record(obj: dict) -> bool:
    """Cursor's record: the two keys ``role`` and ``message``, its ``message`` only ``content``."""
    message = obj.get("message")
    return (obj.keys() == {"role", "message"} and obj.get("role") in ROLES and message.__class__ is dict
            and message.keys() == {"content"} and message["content"].__class__ in (list, str))


def _plain_blocks(obj: dict) -> bool:
    content = obj["message"]["content"]
    return content.__class__ is str or all(b.__class__ is dict and frozenset(b) in BLOCK_KEYS for b in content)


def is_text_transcript(head: bytes) -> bool:
    """A ``.txt`` transcript: its first line that is not blank is ``user:``."""
    for line in head_text(head).splitlines():
        if line.strip():
            return line.strip() == "user:"
    return False


def sniff(path: Path, head: bytes) -> float:
    """Cursor: JSON lines all of Cursor's two-key record; where Cursor writes them, or with blocks of its
    only shapes (``text``, ``tool_use`` with no id). A ``.txt`` transcript only where Cursor writes them."""
    if path.is_dir() or not head:
        return 0.0
    if path.suffix == ".txt":
        return 0.9 if in_transcripts(path) and is_text_transcript(head) else 0.0
    lines = [obj for _n, obj in json_lines(head_text(head))]
    if not lines or not all(is_record(obj) for obj in lines):
        return 0.0
    if in_transcripts(path):
        return 0.95
    return 0.7 if all(_plain_blocks(obj) for obj in lines) else 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.cursor.parser",
    name=NAME,
    label="Cursor",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".jsonl", ".txt"),
    where="~/.cursor/projects/<project, / as ->/agent-transcripts/<chat>/<chat>.jsonl (+ subagents/<agent>.jsonl);"
          " earlier <chat>.jsonl or <chat>.txt there",
    locations=("~/.cursor/projects",),
)
