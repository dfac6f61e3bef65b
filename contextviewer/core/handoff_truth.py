"""What a handoff may state, read from the transcript as the log shows it (issue 34, item 4).

- A command ran when its call was not refused before it started: a user's decision (a rejected
  call, a refused permission), a tool input validation error or a call cancelled because a sibling
  failed did not run it. A command that exited non-zero ran.
- A file was read (or changed) when its call succeeded: a Read whose result is an error (the file
  does not exist, EISDIR) read nothing.
- A path is whole: a path seen only where the transcript cut a long text (`[... N characters cut
  ...]`, a long input value ending in `…`), only after a backslash (`\\nexamples/a.json` is an
  escaped newline, not a path), or only as the tail of a path written with spaces (`Man.md` of
  `/Users/me/The Man.md`) is not one: it is left out (a file a tool read or changed is named by
  its call's input, whole, spaces and all).

Pure: strings in, strings out."""

from __future__ import annotations

import re
from collections.abc import Iterable

from . import facts
from .salience import NOT_ITS_OWN_RE, is_user_decision, shell_command

# The marker core/handoff.clip leaves in a long text, with the words it cut in two.
_CLIP_RE = re.compile(r"\S*\n\[\.\.\. \d+ characters cut \.\.\.\]\n\S*")
# A long input value cut by core/handoff.render_input ends in "…": its last word is cut.
_CUT_VALUE_RE = re.compile(r"\S*…$")
# Claude Code wraps what stops a call before it runs (a validation error, a write to a file not
# read first, a hook's refusal) in <tool_use_error>; a command that ran and failed says "Exit code N".
_NOT_RUN_RE = re.compile(r"^\s*<tool_use_error>")
_PLAIN_WORD_RE = re.compile(r"[\w'’-]+")
_SLASH_RE = re.compile(r"[/\\]")


def uncut(text: str) -> str:
    """The text without the words a cut left in pieces (the cut itself becomes a space)."""
    text = _CLIP_RE.sub(" ", text or "")
    return _CUT_VALUE_RE.sub("", text)


def refused(text: str, is_error: bool) -> bool:
    """Whether a call's result says it never ran: the user's decision, an error raised before it
    ran (a validation error of its input), or a cancelled parallel call."""
    if not is_error:
        return False
    return is_user_decision(text) or bool(NOT_ITS_OWN_RE.match(text or "")) or bool(_NOT_RUN_RE.match(text or ""))


def failed(text: str) -> bool:
    """Whether an error-marked result is a failure of the tool or the command: not the user's
    decision (its own kind) nor a parallel call cancelled because a sibling failed."""
    return not is_user_decision(text) and not NOT_ITS_OWN_RE.match(text or "")


def command_of(tool_input: dict) -> str:
    """The command a call runs, as one line: `command` (a string, or a list whose shell script is
    the command) or Codex's `cmd`; "" for none."""
    for key in ("command", "cmd"):
        command = shell_command(tool_input.get(key))
        if command.strip():
            return " ".join(command.split())
    return ""


def _cut_tail(before: str) -> bool:
    """Whether a path that follows `before` is the tail of a path written with spaces: the words
    just before it (at most two plain words) follow a slashed word that names no file."""
    words = before.split(" ")
    if len(words) < 2 or words[-1] != "":
        return False  # not right after a space
    words = words[:-1]
    for word in reversed(words[-3:]):
        if not word or "\n" in word:
            return False
        if _SLASH_RE.search(word):
            word = word.lstrip("`'\"(")
            # A word that ends a phrase (`a/b.py;`) or names a file or a folder is a path of its own.
            return not re.search(r"[,;:.!?)\]`'\"/\\]$", word) and not facts.is_file_like(word)
        if not _PLAIN_WORD_RE.fullmatch(word):
            return False
    return False


def is_whole(path: str, text: str) -> bool:
    """Whether `path` is written whole at least once in `text`: not inside a longer word (after a
    slash, a backslash, a word character), not before "…", and not as the tail of a path with spaces."""
    if re.search(r"\\[ntr]", path) and not re.match(r"[A-Za-z]:\\", path):
        return False  # `1.24\nREADME.md`: an escaped newline in a text, not a Windows path
    start = text.find(path)
    while start >= 0:
        end = start + len(path)
        left = text[start - 1] if start else " "
        right = text[end] if end < len(text) else " "
        line_start = text.rfind("\n", 0, start) + 1
        if not (re.match(r"[\w/\\.@~-]", left) or right == "…" or _cut_tail(text[max(line_start, start - 300) : start])):
            return True
        start = text.find(path, start + 1)
    return False


def whole_paths(paths: Iterable[str], texts: Iterable[str]) -> list[str]:
    """The paths of `paths` written whole somewhere in `texts` (is_whole), in order."""
    corpus = "\n".join(texts)
    return [p for p in paths if re.search(r"\s", p) or is_whole(p, corpus)]
