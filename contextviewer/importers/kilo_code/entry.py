"""Kilo Code (VS Code extension ``kilocode.kilo-code``, a fork of Roo Code; not the Kilo CLI, format
``kilo``): the light entry of ``importers/kilo_code/parser.py``; its task folders are Roo Code's, read by
``importers/cline/parser.py`` (see ``importers/cline/forks.py``)."""

from __future__ import annotations

from contextviewer.importers.cline import forks
from contextviewer.importers.formats import FOLDER, Entry

NAME = "kilo-code"
EXTENSION = "kilocode.kilo-code"

ENTRY = Entry(
    module="contextviewer.importers.kilo_code.parser",
    name=NAME,
    label="Kilo Code",
    storage=FOLDER,
    sniff=forks.sniffer(EXTENSION),
    extensions=(".json",),
    where=f"VS Code globalStorage: {EXTENSION}/tasks/<id>/ (api_conversation_history.json, ui_messages.json, "
          "task_metadata.json; its condense folds)",
    locations=forks.locations(EXTENSION),
)
