"""Conversation titles from a first request: Claude Code's command and reminder tags taken out, one
line, cut on a word with an ellipsis. Pure functions (no Django)."""

from __future__ import annotations

import re

# Harness text wrapped around or injected into a prompt: dropped with its content.
DROPPED = (
    "system-reminder",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "command-message",
    "task-notification",
    "user-prompt-submit-hook",
    "bash-stdout",
    "bash-stderr",
    "persisted-output",
)
_DROPPED = re.compile(r"<(" + "|".join(DROPPED) + r")\b[^>]*>.*?(?:</\1\s*>|\Z)", re.S | re.I)
# Any other hyphenated tag (<command-name>, <command-args>, <bash-input>, ...): the tag goes, the text stays.
_TAG = re.compile(r"</?[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b[^<>]*>", re.I)


def strip_tags(text: str | None) -> str:
    """The request without harness tags: reminders, command output and notifications are dropped,
    a command's name and arguments kept as text ("/review src/app.py")."""
    text = _DROPPED.sub(" ", text or "")
    return _TAG.sub(" ", text)


def cut(text: str, limit: int) -> str:
    """At most `limit` characters, cut after a whole word with "…" when anything was left out."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space >= limit // 2:  # a word boundary not too far back; else one very long word is cut
        head = head[:space]
    return head.rstrip(" ,;:.-–—") + "…"


def from_request(text: str | None, limit: int = 80) -> str:
    """A title from a first request: tags out, first non-empty line ... cut on a word."""
    plain = strip_tags(text)
    if plain != (text or ""):  # the lines were the tags' layout: a command's name and arguments join
        plain = " ".join(plain.split())
    line = next((ln for ln in plain.split("\n") if ln.strip()), "")
    line = re.sub(r"^\s*(#+|title:)\s*", "", line, flags=re.IGNORECASE).strip().strip("\"'`*").strip()
    return cut(line, limit)


def is_command_only(text: str | None) -> bool:
    """A request that is only a slash command (`/clear`, `/model sonnet`): a poor title when a real
    request follows."""
    return strip_tags(text).strip().startswith("/")
