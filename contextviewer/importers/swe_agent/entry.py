"""SWE-agent: the light entry of ``importers/swe_agent/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

import re
from pathlib import Path

from contextviewer.importers.common import head_text
from contextviewer.importers.formats import DOCUMENT, Entry
from contextviewer.importers.swe_agent.tools import TOOLS


NAME = "swe-agent"


_TRAJ_KEYS = re.compile(r'"(?:trajectory|history)"\s*:\s*\[')
_STEP_KEYS = re.compile(r'"(?:action|observation|thought|message_type)"\s*:')
_MODEL_STATS = re.compile(r'"(?:model_stats|replay_config|tool_call_ids|message_type)"\s*:')


def sniff(path: Path, head: bytes) -> float:
    """A JSON object with a ``trajectory`` or ``history`` list of SWE-agent steps/messages; the
    ``.traj`` name makes it sure."""
    if path.is_dir() or not head:
        return 0.0
    text = head_text(head)
    if not text.startswith("{"):
        return 0.0
    if not (_TRAJ_KEYS.search(text) and _STEP_KEYS.search(text)):
        return 0.0
    name = path.name.lower()
    if name.endswith((".traj", ".traj.gz")):
        return 0.9
    return 0.75 if _MODEL_STATS.search(text) else 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.swe_agent.parser",
    name=NAME,
    label="SWE-agent",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".traj", ".traj.gz"),
    where="<traj_dir>/<instance_id>/<instance_id>.traj",
    locations=(),
)
