"""GitHub Copilot CLI (npm ``@github/copilot``): the light entry of ``importers/copilot/parser.py`` (its
name, label, where its logs are, the file endings it reads, and its sniff); see ``importers/formats.py``.

A session is ``~/.copilot/session-state/<session uuid>/events.jsonl`` (older versions wrote
``session-state/<session uuid>.jsonl``): JSON lines, each one typed event
``{"type", "data", "id", "timestamp", "parentId"}`` (its schema ships with the CLI:
``schemas/session-events.schema.json``). The first is ``session.start`` (``data.sessionId``,
``data.producer`` ``"copilot-agent"``, ``data.copilotVersion``, ``data.context.cwd``); the types are
dotted (``user.message``, ``assistant.message``, ``tool.execution_complete``,
``session.compaction_complete``, ``subagent.started``...). A sub-agent's events are in its parent's
file, marked with their ``agentId``.
"""

from __future__ import annotations

from pathlib import Path

from contextviewer.importers.common import head_text, json_lines
from contextviewer.importers.copilot.tools import TOOLS
from contextviewer.importers.formats import DOCUMENT, Entry

NAME = "copilot"
FILE_NAME = "events.jsonl"
PRODUCER = "copilot-agent"
# The namespaces of Copilot's event types (session-events.schema.json).
NAMESPACES = frozenset({"session", "user", "assistant", "tool", "subagent", "system", "hook", "skill", "model",
                        "permission", "pending_messages", "tool_search", "abort"})


def is_event(obj: dict) -> bool:
    """A line of Copilot's event shape: a dotted type of its namespaces, and its data."""
    kind = obj.get("type")
    if kind.__class__ is not str or "data" not in obj:
        return False
    return kind.split(".", 1)[0] in NAMESPACES and ("." in kind or kind == "abort")


def is_start(obj: dict) -> bool:
    data = obj.get("data")
    return (obj.get("type") in ("session.start", "session.resume") and data.__class__ is dict
            and (data.get("producer") == PRODUCER or "copilotVersion" in data))


def sniff(path: Path, head: bytes) -> float:
    """Copilot CLI: its typed events (nine in ten lines at least: one bad record is not another
    format), a ``session.start`` of producer ``copilot-agent`` among the first; an events.jsonl of
    such events alone (a file cut at its start) is claimed lower."""
    if path.is_dir() or not head:
        return 0.0
    objects = [obj for _n, obj in json_lines(head_text(head))][:200]
    events = sum(1 for obj in objects if is_event(obj))
    if not events or events * 10 < len(objects) * 9:
        return 0.0
    if any(is_start(obj) for obj in objects[:3]):
        return 0.95
    if path.name == FILE_NAME and events >= 2:
        return 0.8
    return 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.copilot.parser",
    name=NAME,
    label="GitHub Copilot CLI",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".jsonl",),
    where="~/.copilot/session-state/<session>/events.jsonl (sub-agents in the same file; older versions: <session>.jsonl)",
    locations=("~/.copilot/session-state",),
)
