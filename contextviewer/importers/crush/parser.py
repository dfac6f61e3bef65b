"""Charm Crush's session store (``<project>/.crush/crush.db``) as a format; the reading is in
``charm_db.py`` (the schema Crush shares with the Go-era opencode it grew from)."""

from __future__ import annotations

from collections.abc import Iterator

from contextviewer.core.records import Record
from contextviewer.importers.charm import db as charm_db
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.crush.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    NAME,
)


def parse(source: ParseInput) -> Iterator[Record]:
    return charm_db.parse(source.path, NAME)


FORMAT = ENTRY.format(
    parse=parse,
    group=charm_db.grouper(NAME),
    multi_session=True,
    rewrites=True,  # a message row's parts grow as the model streams, then its finish part comes
    images=charm_db.images,
)
