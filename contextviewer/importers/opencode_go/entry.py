"""opencode (Go): the light entry of ``importers/opencode_go/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

from contextviewer.importers.charm import store as charm_store
from contextviewer.importers.formats import DATABASE, Entry
from contextviewer.importers.opencode_go.tools import TOOLS


NAME = charm_store.OPENCODE_GO


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.opencode_go.parser",
    name=NAME,
    label="opencode (Go)",
    storage=DATABASE,
    sniff=charm_store.sniffer(NAME),
    extensions=(".db", ".db-wal", ".db-shm"),
    where="<project>/.opencode/opencode.db (+ its -wal: one conversation per session; agent sessions are sub-agents; summaries fold)",
)
