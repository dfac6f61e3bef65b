"""picoclaw: the light entry of ``importers/picoclaw/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from contextviewer.importers.common import json_kind
from contextviewer.importers.formats import DOCUMENT, Entry


SESSION_SUFFIX = ".jsonl"
LEGACY_SUFFIX = ".json"
# pkg/session's Session marshalled: key first, then messages (an array of picoclaw messages).
LEGACY_START = re.compile(r'\A\s*\{\s*"key"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"messages"\s*:\s*(?:\[\s*(?:\]|\{\s*"role")|null)')
META_SUFFIX = ".meta.json"
MAX_META_BYTES = 4 * 1024 * 1024


ROLES = frozenset({"user", "assistant", "tool", "system"})
# Keys of picoclaw's providers.Message as it marshals it; a line with other keys is not picoclaw's.
MESSAGE_KEYS = frozenset(
    {
        "role",
        "content",
        "model_name",
        "created_at",
        "media",
        "attachments",
        "reasoning_content",
        "tool_calls",
        "tool_call_id",
        "system_parts",
        "name",
    }
)
# Keys other agents' JSONL lines carry (Claude Code, Codex, Gemini CLI): never picoclaw's.
FOREIGN_KEYS = frozenset({"type", "uuid", "sessionId", "payload", "timestamp", "id", "message", "$set", "kind"})


def session_key(path: Path) -> str:
    name = path.name
    for suffix in (META_SUFFIX, SESSION_SUFFIX, LEGACY_SUFFIX):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def meta_path(path: Path) -> Path:
    return path.with_name(session_key(path) + META_SUFFIX)


def _line_values(head: bytes, limit: int = 50) -> tuple[list, int]:
    """The JSON values of the head's complete lines, and how many lines were not JSON."""
    text = head.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")
    lines = text.split("\n")
    if len(head) >= 64 * 1024 and len(lines) > 1:
        lines = lines[:-1]  # the last one may be cut by the head's end
    values, broken = [], 0
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            values.append(json.loads(line))
        except ValueError:
            broken += 1
        if len(values) + broken >= limit:
            break
    return values, broken


def _is_message(obj: Any) -> bool:
    """picoclaw's message shape: a role, string content, none of other agents' envelope keys."""
    if obj.__class__ is not dict or obj.get("role").__class__ is not str:
        return False
    if FOREIGN_KEYS & obj.keys():
        return False
    content = obj.get("content")
    return content is None or content.__class__ is str


def _is_meta(obj: Any) -> bool:
    return obj.__class__ is dict and "key" in obj and "summary" in obj and bool({"skip", "count"} & obj.keys())


def _read_meta(path: Path) -> tuple[dict | None, str, str | None]:
    """(meta object, its text, a problem) of a session's meta file (None, "", None when absent)."""
    try:
        if not path.is_file():
            return None, "", None
        if path.stat().st_size > MAX_META_BYTES:
            return None, "", f"the meta file {path.name} is over 4 MB; its summary was not read"
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError as exc:
        return None, "", f"the meta file {path.name} could not be read ({exc.strerror or exc})"
    try:
        obj = json.loads(text)
    except ValueError as exc:
        return None, text, f"the meta file {path.name} is not valid JSON ({exc}); its summary was not read"
    if obj.__class__ is not dict:
        return None, text, f"the meta file {path.name} is {json_kind(obj)}, not an object; its summary was not read"
    return obj, text, None


def sniff(path: Path, head: bytes) -> float:
    """picoclaw: ``<key>.jsonl`` whose lines are all its message shape ({role, content, ...} with
    no other agent's keys), beside its ``<key>.meta.json`` or in a ``sessions`` folder (0.9); the
    shape alone with picoclaw's own keys (model_name, reasoning_content) is 0.5. A meta file is
    not a session: 0. A legacy ``<key>.json`` (``{"key", "messages": [...], ...}`` in that order,
    as picoclaw marshals it) is 0.9 in a ``sessions`` folder, else 0.6."""
    if path.is_dir() or not head:
        return 0.0
    if path.name.endswith(LEGACY_SUFFIX) and not path.name.endswith(META_SUFFIX):
        text = head.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")
        if not LEGACY_START.match(text):
            return 0.0
        return 0.9 if path.parent.name == "sessions" else 0.6
    if not path.name.endswith(SESSION_SUFFIX):
        return 0.0
    values, broken = _line_values(head)
    objects = [v for v in values if v.__class__ is dict]
    if not objects or broken > len(objects) or not all(_is_message(obj) for obj in objects):
        return 0.0
    if not any(obj["role"] in ROLES and obj.keys() <= MESSAGE_KEYS for obj in objects):
        return 0.0
    meta, _text, _problem = _read_meta(meta_path(path))
    if (meta is not None and _is_meta(meta)) or path.parent.name == "sessions":
        return 0.9
    if any(obj.keys() & {"model_name", "reasoning_content"} for obj in objects):
        return 0.5
    return 0.0


FORMAT_NAME = "picoclaw"


ENTRY = Entry(
    module="contextviewer.importers.picoclaw.parser",
    name=FORMAT_NAME,
    label="picoclaw",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".jsonl", ".json"),
    where="~/.picoclaw/workspace/sessions/<key>.jsonl + <key>.meta.json (named agents: ~/.picoclaw/workspace-<id>/sessions)",
    locations=("~/.picoclaw/workspace/sessions",),
)
