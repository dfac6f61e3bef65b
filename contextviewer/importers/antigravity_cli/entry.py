"""Antigravity CLI (Google's ``agy``): the light entry of ``importers/antigravity_cli/parser.py`` (its name,
label, where its logs are, the file endings it reads, and its sniff); see ``importers/formats.py``.

The CLI keeps each conversation under ``~/.gemini/antigravity-cli/conversations/``: ``<uuid>.db`` (a SQLite
file of protobuf-encoded steps, newer releases) or ``<uuid>.pb`` (AES-encrypted, older ones), and beside it
``<uuid>.trajectory.json``, the language server's own decode of the same trajectory as JSON (written by
agy-reader). This format reads that JSON: an object ``{"trajectoryId", "cascadeId", "steps": [{"type":
"CORTEX_STEP_TYPE_...", "metadata", ...}], "generatorMetadata": [...], "agyReader": {...}}`` (sources in the
parser's docstring)."""

from __future__ import annotations

from pathlib import Path

from contextviewer.importers.antigravity_cli.tools import TOOLS
from contextviewer.importers.formats import DOCUMENT, Entry
from contextviewer.importers.jsondoc import head_value

NAME = "antigravity-cli"
SUFFIX = ".trajectory.json"
STEP_PREFIX = "CORTEX_STEP_TYPE_"
# Keys of a trajectory's top (beside its steps): its ids, the model calls, the reader's own metadata.
TOP_KEYS = frozenset({"trajectoryId", "cascadeId", "generatorMetadata", "executorMetadatas", "agyReader"})


def sniff(path: Path, head: bytes) -> float:
    """An Antigravity trajectory: one JSON object with a ``steps`` list whose first step's ``type`` is a
    ``CORTEX_STEP_TYPE_...`` and a ``cascadeId`` or ``trajectoryId``; named ``<uuid>.trajectory.json`` by
    agy-reader (the name alone claims nothing)."""
    if path.is_dir() or not head:
        return 0.0
    value, more = head_value(head)
    if value.__class__ is not dict or more:
        return 0.0
    steps = value.get("steps")
    if steps.__class__ is not list or not ("cascadeId" in value or "trajectoryId" in value):
        return 0.0
    first = steps[0] if steps else None
    if first is not None and not (first.__class__ is dict and str(first.get("type", "")).startswith(STEP_PREFIX)):
        return 0.0
    if first is None and sum(1 for k in TOP_KEYS if k in value) < 2:
        return 0.0
    return 0.95 if path.name.endswith(SUFFIX) else 0.85


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.antigravity_cli.parser",
    name=NAME,
    label="Antigravity CLI",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".json",),
    where="~/.gemini/antigravity-cli/conversations/<uuid>.trajectory.json (the JSON decode agy-reader writes"
          " beside the CLI's own <uuid>.db or encrypted <uuid>.pb, which are not read)",
    locations=("~/.gemini/antigravity-cli/conversations",),
)
