"""The old home of the row writer, kept for the callers that name it: ``Writer`` is the row maker
(row_maker.RowMaker: records -> rows, ``consume`` then ``finish``), ``child_key`` is keys.py's. An
import is now three pieces: reading files (files.py, sources.py, reports.py), turning records into
rows (row_maker.py, positions.py, row_values.py) and writing the rows (row_writer.py, rows.py,
conversation_figures.py, fold_figures.py). Nothing in ingest imports this module.
"""

from __future__ import annotations

from contextviewer.ingest.keys import child_key  # noqa: F401 - writer.child_key, as before
from contextviewer.ingest.row_maker import RowMaker

Writer = RowMaker
