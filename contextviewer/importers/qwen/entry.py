"""Qwen Code: the light entry of ``importers/qwen/parser.py`` (its name, label, where its logs are, the
file endings it reads, its sniff and its layout on disk); see ``importers/formats.py``.

Qwen Code's chat log looks like Claude Code's at a glance (JSON lines with ``uuid``, ``parentUuid``,
``sessionId``, ``type: user|assistant|system``) and is not: its messages hold Gemini-style
``parts`` (``text``, ``functionCall``, ``functionResponse``, ``thought``), the model's role is
``model``, tool results are lines of ``type: "tool_result"``, usage is ``usageMetadata`` and
system lines carry a ``systemPayload`` (``ui_telemetry``, ``chat_compression``...). The sniff
looks for those, and claims above Claude Code's sniff (which sees the envelope alone).

Layout: ``~/.qwen/projects/<cwd, every character other than a letter, a digit or - as ->/``
  ``chats/<sessionId>.jsonl``                       the session
  ``subagents/<sessionId>/agent-<agentId>.jsonl``  a sub-agent of it (+ ``agent-<agentId>.meta.json``)
"""

from __future__ import annotations

import json
from pathlib import Path

from contextviewer.importers.common import head_text, json_lines
from contextviewer.importers.formats import LINES, Entry, SessionFiles, SubagentFile
from contextviewer.importers.qwen.tools import TOOLS

NAME = "qwen-code"
SUFFIX = ".jsonl"
META_SUFFIX = ".meta.json"
MAX_META_BYTES = 1 << 20
TYPES = frozenset({"user", "assistant", "tool_result", "system"})


def _is_qwen(obj: dict) -> bool:
    """A line of Qwen Code's own shape: its envelope, and parts / a system payload / its usage."""
    if obj.get("type") not in TYPES or not ("uuid" in obj and "sessionId" in obj):
        return False
    message = obj.get("message")
    if message.__class__ is dict and message.get("parts").__class__ is list and "content" not in message:
        return True
    return "systemPayload" in obj or "usageMetadata" in obj or "toolCallResult" in obj


def sniff(path: Path, head: bytes) -> float:
    """Qwen Code: JSON lines whose messages hold ``parts`` (or whose system lines hold a
    ``systemPayload``), with the uuid/sessionId envelope. 0.95: above Claude Code's 0.9."""
    if path.is_dir() or not head:
        return 0.0
    objects = [obj for _n, obj in json_lines(head_text(head))]
    if not objects:
        return 0.0
    hits = sum(1 for obj in objects[:200] if _is_qwen(obj))
    if not hits or hits < len(objects[:200]) // 2:
        return 0.0
    named = path.name.endswith(SUFFIX) and (path.parent.name == "chats" or is_subagent_file(path))
    return 0.95 if named else 0.92


# -- layout -------------------------------------------------------------------------------------


def is_subagent_file(path: Path) -> bool:
    return path.name.startswith("agent-") and path.name.endswith(SUFFIX) and path.parent.parent.name == "subagents"


def safe_id(value: str) -> str:
    """An agent id as Qwen Code names its files: every character other than [A-Za-z0-9_-] as _."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in value)


def meta_path(path: Path) -> Path:
    return path.with_name(path.name[: -len(SUFFIX)] + META_SUFFIX)


def read_meta(path: Path) -> dict:
    """A sub-agent's ``agent-<id>.meta.json`` (agentId, agentType, toolUseId, description...), or {}."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_META_BYTES:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if data.__class__ is dict else {}


def subagent_file(path: Path) -> SubagentFile:
    meta = read_meta(meta_path(path))
    agent_type = meta.get("agentType")
    return SubagentFile(
        path=path,
        agent_id=path.name[len("agent-") : -len(SUFFIX)],
        agent_type=agent_type if agent_type.__class__ is str and agent_type else None,
    )


def subagents_of(main: Path) -> list[Path]:
    """``<project>/subagents/<sessionId>/agent-*.jsonl`` beside ``<project>/chats/<sessionId>.jsonl``."""
    folder = main.parent.parent / "subagents" / main.name[: -len(SUFFIX)]
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and is_subagent_file(p))


def group(paths: list[Path]) -> list[SessionFiles]:
    """Each session file with its sub-agent files (those claimed, and those found beside it); a
    sub-agent file whose session is not there is imported under its session's id alone."""
    sessions: dict[str, SessionFiles] = {}
    loose: list[Path] = []
    for p in sorted(paths):
        if is_subagent_file(p):
            loose.append(p)
            continue
        sid = p.name[: -len(SUFFIX)] if p.name.endswith(SUFFIX) else p.stem
        entry = sessions.setdefault(str(p), SessionFiles(format=NAME, main=p, session_id=sid))
        for sub in subagents_of(p):
            if all(s.path != sub for s in entry.subagents):
                entry.subagents.append(subagent_file(sub))
    by_dir = {(s.main.parent.parent / "subagents" / s.session_id): s for s in sessions.values() if s.main and s.session_id}
    orphans: dict[Path, SessionFiles] = {}
    for p in loose:
        entry = by_dir.get(p.parent)
        if entry is None:
            entry = orphans.setdefault(p.parent, SessionFiles(format=NAME, main=None, session_id=p.parent.name))
        if all(s.path != p for s in entry.subagents):
            entry.subagents.append(subagent_file(p))
    out = list(sessions.values()) + list(orphans.values())
    for entry in out:
        entry.subagents.sort(key=lambda s: str(s.path))
    return out


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.qwen.parser",
    name=NAME,
    label="Qwen Code",
    storage=LINES,
    sniff=sniff,
    extensions=(".jsonl",),
    where="~/.qwen/projects/<project>/chats/<session>.jsonl, sub-agents in subagents/<session>/agent-*.jsonl",
    locations=("~/.qwen/projects",),
)
