"""gptme (PyPI ``gptme``): the light entry of ``importers/gptme/parser.py`` (its name, label, where its
logs are, the file endings it reads, and its sniff); see ``importers/formats.py``.

A conversation is a folder ``~/.local/share/gptme/logs/<name>/`` holding ``conversation.jsonl``
(one message a line: ``{"role", "content", "timestamp"}`` and gptme's own keys: ``pinned``,
``hide``, ``files``, ``call_id``, ``metadata``...), ``events.jsonl``, ``config.toml``, and after a
compaction ``compaction.jsonl`` and ``views/compacted-NNN.jsonl``; a sub-agent's folder
``subagent-<id>-<hex>/`` beside it has a ``subagent-meta.json`` naming its parent's folder. The folder
is read (a file of it stands for its folder).
"""

from __future__ import annotations

from pathlib import Path

from contextviewer.importers.common import first_lines
from contextviewer.importers.formats import FOLDER, Entry
from contextviewer.importers.gptme.tools import TOOLS

NAME = "gptme"
CONVERSATION = "conversation.jsonl"
SUBAGENT_META = "subagent-meta.json"
# The keys gptme writes on a message line (message.py Message.to_dict), beside role and content.
MESSAGE_KEYS = frozenset({"role", "content", "timestamp", "pinned", "hide", "quiet", "files", "file_hashes", "call_id",
                          "metadata", "ui_only", "ephemeral_ttl"})
ROLES = frozenset({"system", "user", "assistant"})
# Files of a conversation folder: any of them stands for the folder.
FOLDER_FILES = (CONVERSATION, "lossless.jsonl", "events.jsonl", "compaction.jsonl", SUBAGENT_META, "config.toml")
_BESIDE = ("events.jsonl", "config.toml", SUBAGENT_META)


def _is_message(obj: dict) -> bool:
    role = obj.get("role")
    return role.__class__ is str and role in ROLES and "content" in obj and "timestamp" in obj and obj.keys() <= MESSAGE_KEYS


def looks_like_log(head: bytes) -> bool:
    """gptme's conversation lines: every line a message of gptme's keys, its first a system prompt."""
    objects = first_lines(head)
    if not objects or not all(_is_message(o) for o in objects):
        return False
    first = objects[0]
    content = first.get("content")
    return first.get("role") == "system" and content.__class__ is str and (
        content.startswith("You are gptme") or any("call_id" in o or "pinned" in o for o in objects))


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(64 * 1024)
    except OSError:
        return b""


def is_conversation_folder(folder: Path) -> bool:
    """A gptme conversation folder: its conversation.jsonl is gptme's, with gptme's files beside it."""
    try:
        log = folder / CONVERSATION
        if not log.is_file() or not any((folder / name).exists() for name in _BESIDE):
            return False
    except OSError:
        return False
    return looks_like_log(_head(log))


def folder_of(path: Path) -> Path | None:
    """The conversation folder a file of it stands for (views/compacted-001.jsonl is two levels down)."""
    if path.parent.name == "views" and path.suffix == ".jsonl":
        folder = path.parent.parent
    elif path.name in FOLDER_FILES:
        folder = path.parent
    else:
        return None
    return folder if is_conversation_folder(folder) else None


def sniff(path: Path, head: bytes) -> float:
    """A conversation folder (or one of its files: the folder is read); a conversation.jsonl on its
    own by its lines (a system prompt that says gptme, gptme's keys on every message)."""
    if path.is_dir():
        return 0.9 if is_conversation_folder(path) else 0.0
    if folder_of(path) is not None:
        return 0.9
    return 0.8 if path.suffix == ".jsonl" and looks_like_log(head) else 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.gptme.parser",
    name=NAME,
    label="gptme",
    storage=FOLDER,
    sniff=sniff,
    extensions=(".jsonl", ".json", ".toml"),
    where="~/.local/share/gptme/logs/<conversation>/ (conversation.jsonl; a sub-agent's subagent-<id>-<hex>/ beside it)",
    locations=("~/.local/share/gptme/logs",),
)
