"""Kilo (``@kilocode/cli``, an opencode fork): the light entry of ``importers/kilo/parser.py`` (its name,
label, where its logs are, the file endings it reads, and its sniff); see ``importers/formats.py``. Its
store is opencode's (``importers/opencode/entry.py`` tells the two apart)."""

from __future__ import annotations

from pathlib import Path

from contextviewer.importers.formats import FOLDER, Entry
from contextviewer.importers.kilo.tools import TOOLS
from contextviewer.importers.opencode.entry import KILO, app_of


def sniff(path: Path, head: bytes) -> float:
    """A ``kilo.db`` (a database with opencode's tables and Kilo's own), or a storage folder under
    ``~/.local/share/kilo``."""
    return 0.9 if app_of(path, head) == KILO else 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.kilo.parser",
    name=KILO,
    label="Kilo",
    storage=FOLDER,
    sniff=sniff,
    extensions=(".json", ".db", ".db-wal", ".db-shm"),
    where="~/.local/share/kilo/kilo.db (+ its -wal: one conversation per session; task sub-agents are child sessions)",
    locations=("~/.local/share/kilo",),
)
