"""Crush: the light entry of ``importers/crush/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

from contextviewer.importers.charm import store as charm_store
from contextviewer.importers.formats import DATABASE, Entry
from contextviewer.importers.crush.tools import TOOLS


NAME = charm_store.CRUSH


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.crush.parser",
    name=NAME,
    label="Crush",
    storage=DATABASE,
    sniff=charm_store.sniffer(NAME),
    extensions=(".db", ".db-wal", ".db-shm"),
    where="<project>/.crush/crush.db (+ its -wal: one conversation per session; agent sessions are sub-agents; the summary message folds)",
)
