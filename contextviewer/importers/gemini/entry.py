"""Gemini CLI: the light entry of ``importers/gemini/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from contextviewer.importers.common import bad_value, first_lines
from contextviewer.importers.formats import DOCUMENT, Entry
from contextviewer.importers.gemini.tools import TOOLS
from contextviewer.importers.jsondoc import head_value_cut


MESSAGE_TYPES = frozenset({"user", "gemini", "model", "info", "error", "warning"})


_SESSION_NAME = re.compile(r"^session-.+\.jsonl?(\.gz)?$")
_CHECKPOINT_NAME = re.compile(r"^checkpoint(-.+)?\.json(\.gz)?$")


def _is_message(obj: Any) -> bool:
    return obj.__class__ is dict and obj.get("type") in MESSAGE_TYPES and ("content" in obj or "parts" in obj or "toolCalls" in obj)


def _is_content(obj: Any) -> bool:
    return obj.__class__ is dict and obj.get("role") in ("user", "model") and obj.get("parts").__class__ is list


# The members of a ConversationRecord before its messages.
_ENVELOPE = frozenset({"sessionId", "projectHash", "startTime", "lastUpdated", "summary", "kind", "directories"})


def _counted(objects: list, ours) -> list:
    """The objects a sniff counts: those ``ours`` says are the format's, and the others unless a
    field holds a bad value (NUL, a lone surrogate, NaN: a bad record, said when it is read)."""
    return [o for o in objects if ours(o) or not bad_value(o)]


def sniff(path: Path, head: bytes) -> float:
    """Gemini CLI: a ConversationRecord (sessionId + projectHash + messages of types user/gemini/...),
    its JSONL form (metadata line, message lines, $set/$rewindTo), or a checkpoint's Content[]."""
    if path.is_dir() or not head:
        return 0.0
    named = bool(_SESSION_NAME.match(path.name)) and "chats" in path.parts[-3:-1]
    checkpoint_named = bool(_CHECKPOINT_NAME.match(path.name))
    value, more, cut = head_value_cut(head)
    if value is None:
        return 0.0
    if more:  # JSON lines
        objects = _counted(first_lines(head), lambda o: _is_message(o) or "$set" in o or "$rewindTo" in o)
        if not objects:
            return 0.0
        meta = objects[0].__class__ is dict and "sessionId" in objects[0] and "projectHash" in objects[0]
        controls = sum(1 for o in objects if "$set" in o or "$rewindTo" in o)
        messages = sum(1 for o in objects if _is_message(o) and "id" in o)
        gemini = sum(1 for o in objects if o.get("type") == "gemini")
        if meta and (messages or controls or len(objects) == 1):
            return 0.95 if named else 0.85
        if messages and (gemini or controls) and messages + controls >= len(objects) - 1:
            return 0.9 if named else 0.75
        return 0.0
    if value.__class__ is dict:
        messages = value.get("messages")
        if messages.__class__ is list:
            items = _counted([m for m in messages if m.__class__ is dict], _is_message)
            ours = sum(1 for m in items if _is_message(m))
            envelope = "sessionId" in value and ("projectHash" in value or "startTime" in value)
            # A first message longer than the sniff window (a 100,000-character id) is not judged.
            if envelope and (ours or not items or cut and len(items) == 1) and ours >= len(items) // 2:
                return 0.95 if named else 0.85
            if ours and ours == len(items) and any(m.get("type") == "gemini" for m in items):
                return 0.8
            return 0.0
        history = value.get("history")
        if history.__class__ is list and history:
            items = _counted([h for h in history if h.__class__ is dict], _is_content)
            if items and all(_is_content(h) or ("parts" in h and "role" in h) for h in items):
                return 0.9 if checkpoint_named else 0.75
        if cut and "sessionId" in value and set(value) <= _ENVELOPE:
            # The head ends inside the envelope, before its messages (a 100,000-character id).
            return 0.8 if named else 0.5
        return 0.0
    if value.__class__ is list and value:
        items = [v for v in value if v.__class__ is dict]
        counted = _counted(items, _is_content)
        if counted and len(items) == len(value) and all(_is_content(h) for h in counted):
            return 0.9 if checkpoint_named else 0.6
    return 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.gemini.parser",
    name="gemini",
    label="Gemini CLI",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".json", ".jsonl"),
    where="~/.gemini/tmp/<project_hash>/chats/session-*.json(l); sub-agents in chats/<session>/<id>.jsonl",
    locations=("~/.gemini/tmp",),
)
