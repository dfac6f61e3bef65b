"""Kilo Code's task folders: Roo Code's (Kilo Code is its fork), read by ``importers/cline/parser.py``."""

from __future__ import annotations

from contextviewer.importers.cline.parser import grouper, parse
from contextviewer.importers.kilo_code.entry import ENTRY, NAME

FORMAT = ENTRY.format(
    parse=parse,
    group=grouper(NAME),
    rewrites=True,  # the history file is rewritten (a condense replaces messages; a request's figures come later)
)
