"""opencode: its FORMAT, built on the reader it shares with Kilo (``importers/opencode/store.py``:
how the JSON storage folder and ``opencode.db`` map to records)."""

from __future__ import annotations

from collections.abc import Iterator

from contextviewer.core.harness import Harness
from contextviewer.core.records import Record
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.opencode.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    _connect,
    is_opencode_db,
    sniff,
)
from contextviewer.importers.opencode.store import images, parse  # noqa: F401 - the reader, re-exported


def _parse(source: ParseInput) -> Iterator[Record]:
    return parse(source.path, ENTRY.label)


# The harness's rules (core/harness.py; not in the policy docs): opencode compacts on overflow: input
# above the model's input limit, else the window less min(max output, 32,000) (session/compaction.ts
# isOverflow).
HARNESS = Harness(fold_label="opencode compact", fold_at_effective=True, reserve_cap=32_000)

FORMAT = ENTRY.format(
    parse=_parse,
    multi_session=True,
    rewrites=True,  # message and part files (rows) are updated in place as a step runs
    images=images,
    harness=HARNESS,
)
