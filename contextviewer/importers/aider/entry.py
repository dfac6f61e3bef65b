"""aider: the light entry of ``importers/aider/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

from pathlib import Path

from contextviewer.importers.common import BOM
from contextviewer.importers.formats import DOCUMENT, Entry


HISTORY_NAME = ".aider.chat.history.md"
HEADER_PREFIX = "# aider chat started at"


def sniff(path: Path, head: bytes) -> float:
    """aider: the history's own name, or Markdown whose first line (an Emacs mode line aside) is
    a session header; a Markdown file holding such a header and user lines scores a little less."""
    if path.is_dir():
        return 0.0
    if path.name in (HISTORY_NAME, HISTORY_NAME + ".gz"):
        return 0.95
    if not head or b"\x00" in head[:8192]:
        return 0.0
    text = head.removeprefix(BOM).decode("utf-8", "replace")
    lines = [line for line in text.split("\n")[:4000] if line.strip()]
    if not lines:
        return 0.0
    first = lines[0]
    if first.startswith("-*-") and len(lines) > 1:
        first = lines[1]
    if first.startswith(HEADER_PREFIX):
        return 0.9
    markdown = path.suffix.lower() in (".md", ".markdown") or path.name.endswith((".md.gz", ".markdown.gz"))
    if markdown and any(line.startswith(HEADER_PREFIX) for line in lines):
        if any(line.startswith("#### ") for line in lines) or any(line.startswith("> ") for line in lines):
            return 0.85
    return 0.0


ENTRY = Entry(
    module="contextviewer.importers.aider.parser",
    name="aider",
    label="aider",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".md", ".markdown", ".md.gz"),
    where="<repository>/.aider.chat.history.md (one file per repository, a session per '# aider chat started at' header)",
    locations=(),
)
