"""Roo Code's task folders: Cline's, read by ``importers/cline/parser.py`` (its docstring says what Roo
writes: ``ts`` on history messages, ``apiProtocol`` on requests, its condense's summary)."""

from __future__ import annotations

from contextviewer.importers.cline.parser import grouper, parse
from contextviewer.importers.roo_code.entry import ENTRY, NAME

FORMAT = ENTRY.format(
    parse=parse,
    group=grouper(NAME),
    rewrites=True,  # the history file is rewritten (a condense replaces messages; a request's figures come later)
)
