"""Segments: archived runs put away by folds, and the loaded segment."""

from contextviewer.core.segments import FoldSpan, LoadedView, Segment, loaded_view_positions, segments


def test_no_folds_everything_is_loaded():
    assert segments(0, 9, []) == [Segment("loaded", 0, 9, None)]
    assert loaded_view_positions(0, 9, []) == LoadedView(None, (), 0, 9)


def test_empty_conversation():
    (loaded,) = segments(0, -1, [])
    assert loaded.is_empty and len(loaded) == 0


def test_one_fold_claude_code_layout():
    # messages 0..20; fold puts away 0..9; boundary at 10, summary at 11, then 12..20
    fold = FoldSpan("b1", 9, summary_position=11, preserved_positions=(8, 9))
    archived, loaded = segments(0, 20, [fold])
    assert archived == Segment("archived", 0, 9, 0, 11, (8, 9))
    assert loaded == Segment("loaded", 10, 20, 0, 11, (8, 9))
    assert 11 in loaded and 9 not in loaded and len(archived) == 10


def test_several_folds_given_out_of_order():
    folds = [
        FoldSpan("second", 30, 32),
        FoldSpan("first", 9, 11),
        FoldSpan("third", 55, 57, (50, 54)),
    ]
    result = segments(0, 60, folds)
    assert [(s.kind, s.start, s.end, s.fold_index) for s in result] == [
        ("archived", 0, 9, 1),
        ("archived", 10, 30, 0),  # includes the first fold's boundary and summary
        ("archived", 31, 55, 2),
        ("loaded", 56, 60, 2),
    ]
    assert result[-1].summary_position == 57
    assert result[-1].preserved_positions == (50, 54)


def test_fold_at_the_last_message_leaves_an_empty_loaded_segment():
    archived, loaded = segments(0, 9, [FoldSpan("f", 9, None)])
    assert (archived.start, archived.end) == (0, 9)
    assert (loaded.start, loaded.end, loaded.fold_index) == (10, 9, 0)
    assert loaded.is_empty


def test_folds_beyond_the_end_are_ignored():
    result = segments(0, 20, [FoldSpan("a", 5, 7), FoldSpan("late", 25, 27)])
    assert [(s.kind, s.start, s.end, s.fold_index) for s in result] == [
        ("archived", 0, 5, 0),
        ("loaded", 6, 20, 0),
    ]


def test_first_position_offset_and_duplicate_fold_positions():
    result = segments(100, 120, [FoldSpan("a", 110), FoldSpan("b", 110)])
    # Two summaries of the same messages: both stand for 100-110 (review compares them side by side).
    assert [(s.start, s.end, s.fold_index) for s in result] == [(100, 110, 0), (100, 110, 1), (111, 120, 1)]


def test_loaded_view_positions_are_ranges():
    folds = [FoldSpan("a", 9, 11), FoldSpan("b", 29, 31, preserved_positions=(27, 28))]
    view = loaded_view_positions(0, 1_000_000, folds)
    assert view == LoadedView(31, (27, 28), 30, 1_000_000)
    assert 27 in view and 30 in view and 999_999 in view
    assert 26 not in view and 11 not in view
