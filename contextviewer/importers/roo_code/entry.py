"""Roo Code (VS Code extension ``RooVeterinaryInc.roo-cline``): the light entry of
``importers/roo_code/parser.py``; its task folders are Cline's, read by ``importers/cline/parser.py``
(see ``importers/cline/forks.py``)."""

from __future__ import annotations

from contextviewer.importers.cline import forks
from contextviewer.importers.formats import FOLDER, Entry

NAME = "roo-code"
EXTENSION = "rooveterinaryinc.roo-cline"

ENTRY = Entry(
    module="contextviewer.importers.roo_code.parser",
    name=NAME,
    label="Roo Code",
    storage=FOLDER,
    sniff=forks.sniffer(EXTENSION),
    extensions=(".json",),
    where=f"VS Code globalStorage: {EXTENSION}/tasks/<id>/ (api_conversation_history.json, ui_messages.json, "
          "task_metadata.json; its condense folds)",
    locations=forks.locations(EXTENSION),
)
