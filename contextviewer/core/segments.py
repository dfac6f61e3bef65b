"""Segments: what each fold put away, and what the model sees now.

A fold stands in for every message up to its position (inclusive) and deletes nothing. Archived
segment i is the run of messages fold i put away (after the previous fold, up to fold i's
position), headed by fold i's summary. The loaded segment starts right after the latest fold: in
Claude Code that is the compact_boundary line, then the isCompactSummary message, then everything
that followed; the fold's preserved messages (positions <= the fold) stay loaded as well.

Pure, over positions only; O(number of folds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

ARCHIVED = "archived"
LOADED = "loaded"


@dataclass(frozen=True, slots=True)
class FoldSpan:
    key: str
    position: int  # last message position the fold put away (inclusive)
    summary_position: int | None = None  # the summary message, after `position` (None: no message)
    preserved_positions: tuple[int, ...] = ()  # messages <= position kept verbatim in the loaded view
    # Estimated tokens of a summary the log keeps outside the messages (summary_position None: an
    # efferent checkpoint, picoclaw's meta summary): it is in the loaded view all the same.
    summary_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Segment:
    kind: str  # "archived" | "loaded"
    start: int
    end: int  # inclusive; end < start when the segment is empty
    fold_index: int | None  # archived: the fold that put it away; loaded: the latest fold, or None
    summary_position: int | None = None
    preserved_positions: tuple[int, ...] = ()

    @property
    def is_empty(self) -> bool:
        return self.end < self.start

    def __len__(self) -> int:
        return max(0, self.end - self.start + 1)

    def __contains__(self, position: object) -> bool:
        return isinstance(position, int) and self.start <= position <= self.end


def _active(last_position: int, folds: list[FoldSpan]) -> list[tuple[int, FoldSpan]]:
    """(index in `folds`, fold) of the folds within the conversation, by position (stable)."""
    kept = [(i, f) for i, f in enumerate(folds) if f.position <= last_position]
    kept.sort(key=lambda item: item[1].position)
    return kept


def segments(first_position: int, last_position: int, folds: list[FoldSpan]) -> list[Segment]:
    """Archived segments in order, then the loaded segment (always last, possibly empty).

    fold_index is the fold's index in `folds` as given. Folds beyond last_position are ignored
    (a fold recorded past the messages we have puts nothing away yet). A fold at the position of
    the fold before it is another summary of the same messages: it shares that fold's segment.
    """
    result: list[Segment] = []
    previous_end = first_position - 1
    previous_start = first_position
    latest: tuple[int, FoldSpan] | None = None
    for index, fold in _active(last_position, folds):
        same = latest is not None and fold.position == latest[1].position
        start = previous_start if same else previous_end + 1
        previous_start = start
        result.append(
            Segment(ARCHIVED, start, fold.position, index, fold.summary_position, tuple(fold.preserved_positions))
        )
        previous_end = max(previous_end, fold.position)
        latest = (index, fold)
    if latest is None:
        result.append(Segment(LOADED, first_position, last_position, None))
    else:
        index, fold = latest
        result.append(
            Segment(
                LOADED,
                previous_end + 1,
                last_position,
                index,
                fold.summary_position,
                tuple(sorted(p for p in fold.preserved_positions if p <= fold.position)),
            )
        )
    return result


class LoadedView(NamedTuple):
    """The loaded view as ranges: `start..end` (inclusive) plus the preserved positions before it.

    summary_position is given for display (the summary heads the view); when it is a message it lies
    inside start..end already, so do not count it twice. None: no fold, or a fold without a message.
    """

    summary_position: int | None
    preserved_positions: tuple[int, ...]
    start: int
    end: int

    def __contains__(self, position: object) -> bool:
        if not isinstance(position, int):
            return False
        return self.start <= position <= self.end or position in self.preserved_positions


def loaded_view_positions(first_position: int, last_position: int, folds: list[FoldSpan]) -> LoadedView:
    loaded = segments(first_position, last_position, folds)[-1]
    return LoadedView(loaded.summary_position, loaded.preserved_positions, loaded.start, loaded.end)
