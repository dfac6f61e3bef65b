"""The Cline format: its ``FORMAT``, read with ``parser.py`` (the task-folder reader that Roo Code's and
Kilo Code's formats share, so that reading one of their folders does not load this format)."""

from __future__ import annotations

from contextviewer.importers.cline.entry import ENTRY, NAME  # noqa: F401 - the light part, re-exported
from contextviewer.importers.cline.parser import grouper, parse

FORMAT = ENTRY.format(
    parse=parse,
    group=grouper(NAME),
    rewrites=True,  # the history file is rewritten (a condense replaces messages; a request's figures come later)
)
