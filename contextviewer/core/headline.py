"""One line that tells a fold's summary apart from the others (the compact list of folds).

Claude Code's summaries all open the same way ("This session is being continued from a previous
conversation...", then "Analysis:" and "Let me chronologically analyze..."): their first line says
nothing. The headline is the user's request when the summary names it ("Primary Request and
Intent"), else the first line that is not one of those openings. Pure: no Django.
"""

from __future__ import annotations

import re

LIMIT = 160

_PREAMBLES = (
    "this session is being continued from a previous conversation",
    "the summary below covers",
    "let me chronologically analy",
    "let me analy",
    "i'll analy",
    "summary of the conversation",
    "conversation summary",
)
_MARKUP = re.compile(r"^(?:#+\s*|>\s*|[-*+]\s+|\d+[.)]\s+)+")
_TAG = re.compile(r"</?[a-zA-Z_][\w-]*>")
_EMPHASIS = re.compile(r"(\*\*|__|`)")
_REQUEST = re.compile(r"primary request(?:s)?(?: and intent)?\s*:?", re.IGNORECASE)


def _clean(line: str) -> str:
    line = _TAG.sub(" ", line)
    line = _MARKUP.sub("", line.strip())
    line = _EMPHASIS.sub("", line)
    return " ".join(line.split())


def _cut(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def _is_heading(line: str) -> bool:
    """"Analysis:", "Summary:", "1. Primary Request and Intent:": a label, not content."""
    return line.endswith(":") and len(line) <= 60


def summary_headline(text: str | None, limit: int = LIMIT) -> str:
    """The headline of a fold's summary, at most `limit` characters, cut on a word."""
    if not text:
        return ""
    lines = [_clean(raw) for raw in str(text).splitlines()]
    lines = [line for line in lines if line]
    for i, line in enumerate(lines):
        match = _REQUEST.search(line)
        if match and match.start() <= 4:
            rest = line[match.end():].strip()
            if rest:
                return _cut(rest, limit)
            for following in lines[i + 1:]:
                if not _is_heading(following):
                    return _cut(following, limit)
            break
    for line in lines:
        low = line.lower()
        if any(low.startswith(p) for p in _PREAMBLES) or _is_heading(line):
            continue
        return _cut(line, limit)
    return _cut(lines[0], limit) if lines else ""
