"""Claude Code: the light entry of ``importers/claude_code/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

import json
from pathlib import Path

from contextviewer.importers.claude_code import layout as claude_code_layout
from contextviewer.importers.common import first_items, head_text, json_lines
from contextviewer.importers.formats import Entry, LINES
from contextviewer.importers.claude_code.tools import TOOLS


# Bookkeeping record types of formats.md §1.1 (rows "summary", "file-history-snapshot",
# "queue-operation", "progress" and the 2.1.x "metadata/title records" row). Not messages, but for
# a queue-operation enqueue (``_Parser._queued``).
KNOWN_METADATA_TYPES = frozenset(
    {
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "pr-link",
        "agent-name",
        "custom-title",
        "last-prompt",
        "ai-title",
        "permission-mode",
        "agent-setting",
        "bridge-session",
        "worktree-state",
        "attachment",
        # 2.1.3xx: what each request carried (``_Parser._request``: the window of the call), the
        # tools used so far, the session's cost, a latch. Never conversation text: no message, no tokens.
        "api-request",
        "api-request-blob",
        "api-request-shape",
        "api-request-resumed",
        "atis-latch",
        "tools-used",
        "cost-state",
        "file-history-delta",
        "content-replacement",
        "fork-context-ref",
        "frame-link",
        "continued-in",
        "resume-head-vouch",
        "attribution-snapshot",
    }
)
MESSAGE_TYPES = frozenset({"user", "assistant", "system"})


_SNIFF_KEYS = ("uuid", "parentUuid", "sessionId", "leafUuid", "isSidechain")


def sniff(path: Path, head: bytes) -> float:
    """Claude Code: JSON lines (or an array) of records whose ``type`` is one of its own and that
    carry its envelope keys (uuid, parentUuid, sessionId, leafUuid)."""
    if path.is_dir() or not head:
        return 0.0
    if path.name in claude_code_layout.IGNORED_NAMES:
        return 0.0
    text = head_text(head)
    objects: list = []
    if text.startswith("["):
        try:
            value = json.loads(text)
        except ValueError:
            value = first_items(text, limit=50)
        objects = [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
    else:
        objects = [obj for _n, obj in json_lines(text)]
    hits = 0
    for obj in objects[:200]:
        kind = obj.get("type")
        if isinstance(kind, str) and (kind in MESSAGE_TYPES or kind in KNOWN_METADATA_TYPES):
            if any(key in obj for key in _SNIFF_KEYS):
                hits += 1
    if not hits:
        return 0.0
    named = claude_code_layout.is_session_file(path)
    return 0.9 if named else 0.7


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.claude_code.parser",
    name="claude-code",
    label="Claude Code",
    storage=LINES,
    sniff=sniff,
    extensions=(".jsonl", ".jsonl.gz", ".json"),
    where="~/.claude/projects/<project>/<session>.jsonl, sub-agents in <session>/subagents/agent-*.jsonl",
    locations=("~/.claude/projects",),
)
