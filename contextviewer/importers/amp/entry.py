"""Amp (ampcode.com, Sourcegraph): the light entry of ``importers/amp/parser.py`` (its name, label, where
its logs are, the file endings it reads, and its sniff); see ``importers/formats.py``.

Amp keeps each thread as one JSON document, ``~/.local/share/amp/threads/T-<uuid>.json`` (its data folder
is ``$AMP_DATA_DIR``, by default ``~/.local/share/amp``); its VS Code extension kept them before in
``globalStorage/sourcegraph.amp/threads3/``. The document is an object ``{"v", "id": "T-...", "created",
"title", "agentMode", "messages", "env", "relationships", "nextMessageId", ...}`` (sources in the parser's
docstring)."""

from __future__ import annotations

import re
from pathlib import Path

from contextviewer.importers.amp.tools import TOOLS
from contextviewer.importers.formats import DOCUMENT, Entry
from contextviewer.importers.jsondoc import head_value

NAME = "amp"
THREAD_ID = re.compile(r"T-[0-9A-Za-z][0-9A-Za-z-]*\Z")
# Keys only an Amp thread has at its top (beside its T- id): its version counter, creation time in
# milliseconds, next message number, agent mode, environment, relationships to other threads.
THREAD_KEYS = frozenset({"v", "created", "nextMessageId", "agentMode", "env", "relationships", "usageLedger"})


def is_thread_id(value: object) -> bool:
    return value.__class__ is str and THREAD_ID.match(value) is not None


def sniff(path: Path, head: bytes) -> float:
    """An Amp thread: one JSON object whose ``id`` is a thread id (``T-<uuid>``) with a ``messages`` list
    or two of Amp's other top keys; named ``T-<id>.json`` by Amp (the name alone claims nothing)."""
    if path.is_dir() or not head:
        return 0.0
    value, more = head_value(head)
    if value.__class__ is not dict or more or not is_thread_id(value.get("id")):
        return 0.0
    keys = sum(1 for k in THREAD_KEYS if k in value)
    messages = value.get("messages")
    if messages is not None and messages.__class__ is not list:
        return 0.0
    if keys < 2 and not (keys and messages is not None):
        return 0.0
    return 0.95 if is_thread_id(path.name.removesuffix(".json")) else 0.85


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.amp.parser",
    name=NAME,
    label="Amp",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".json",),
    where="~/.local/share/amp/threads/T-<thread>.json (one JSON document per thread; $AMP_DATA_DIR/threads"
          " where set; the VS Code extension's globalStorage/sourcegraph.amp/threads3/ before)",
    locations=("~/.local/share/amp/threads",),
)
