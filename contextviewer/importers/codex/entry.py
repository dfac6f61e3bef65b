"""Codex CLI: the light entry of ``importers/codex/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

import re
from pathlib import Path

from contextviewer.importers.common import head_text, json_lines
from contextviewer.importers.formats import Entry, LINES
from contextviewer.importers.codex.tools import TOOLS


ENVELOPE_TYPES = frozenset(
    {"session_meta", "turn_context", "response_item", "event_msg", "compacted", "world_state",
     "inter_agent_communication_metadata", "token_usage_record"}
)


ROLLOUT_NAME = re.compile(
    r"^rollout-.*?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl(\.gz)?$"
)


def sniff(path: Path, head: bytes) -> float:
    """Codex: JSON lines in its envelope ({"timestamp", "type": session_meta | response_item |
    event_msg | ..., "payload": {...}}); a pre-envelope rollout named rollout-*.jsonl whose first
    line is the bare meta object."""
    if path.is_dir() or not head:
        return 0.0
    text = head_text(head)
    if not text.startswith("{"):
        return 0.0
    hits = 0
    meta = False
    bare_meta = False
    for n, obj in json_lines(text):
        kind = obj.get("type")
        if isinstance(kind, str) and kind in ENVELOPE_TYPES and isinstance(obj.get("payload"), dict):
            hits += 1
            meta = meta or kind == "session_meta"
        elif n == 0 and kind is None and "id" in obj and "instructions" in obj and "timestamp" in obj:
            bare_meta = True
    if hits:
        return 0.95 if meta or ROLLOUT_NAME.match(path.name) else 0.85
    if bare_meta and ROLLOUT_NAME.match(path.name):
        return 0.8
    return 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.codex.parser",
    name="codex",
    label="Codex CLI",
    storage=LINES,
    sniff=sniff,
    extensions=(".jsonl", ".jsonl.gz"),
    where="~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl (archived: ~/.codex/archived_sessions/)",
    locations=("~/.codex/sessions", "~/.codex/archived_sessions"),
)
