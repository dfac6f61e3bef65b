"""Kilo: its FORMAT, built on the reader it shares with opencode (``importers/opencode/store.py``):
``kilo.db`` has opencode's tables, messages and parts; Kilo adds an ``<environment_details>`` text to
each user message it sends (not stored) and, after an automatic fold, replays the prompt that
overflowed as a synthetic user message."""

from __future__ import annotations

from collections.abc import Iterator

from contextviewer.core.harness import Harness
from contextviewer.core.records import Record
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.kilo.entry import ENTRY, sniff  # noqa: F401 - the light part, re-exported
from contextviewer.importers.opencode.store import images, parse  # noqa: F401 - the reader, re-exported


def _parse(source: ParseInput) -> Iterator[Record]:
    return parse(source.path, ENTRY.label)


# The harness's rules (core/harness.py): opencode's (Kilo keeps its session/compaction.ts isOverflow:
# input above the model's input limit, else the window less min(max output, 32,000)).
HARNESS = Harness(fold_label="Kilo compact", fold_at_effective=True, reserve_cap=32_000)

FORMAT = ENTRY.format(
    parse=_parse,
    multi_session=True,
    rewrites=True,  # message and part rows are updated in place as a step runs
    images=images,
    harness=HARNESS,
)
