"""The line reader: exact lines and offsets, the line cap, gzip with its decompression cap."""

import gzip
import io
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from contextviewer.core.records import BadLine
from contextviewer.importers.lines import (
    GzipStream,
    Line,
    PrefixedStream,
    human_size,
    iter_lines,
    open_stream,
    skip_to,
)


class Unseekable(io.RawIOBase):
    """A pipe-like stream: no seek, no tell."""

    def __init__(self, data: bytes):
        self._inner = io.BytesIO(data)

    def readable(self):
        return True

    def read(self, size=-1):
        return self._inner.read(size)


def expected(data: bytes, cap: int, start_line: int = 0, start_offset: int = 0):
    """What iter_lines must yield, computed with a plain split."""
    out = []
    pieces = data.split(b"\n")
    terminated = pieces[:-1]
    offset = start_offset
    line_no = start_line
    for piece in terminated:
        line_no += 1
        if len(piece) > cap:
            out.append(("bad", line_no, offset, len(piece)))
        else:
            out.append(("line", line_no, offset, piece, offset + len(piece) + 1, True))
        offset += len(piece) + 1
    if pieces[-1]:
        line_no += 1
        piece = pieces[-1]
        if len(piece) > cap:
            out.append(("bad", line_no, offset, len(piece)))
        else:
            out.append(("line", line_no, offset, piece, offset + len(piece), False))
    return out


def actual(items):
    out = []
    for item in items:
        if isinstance(item, BadLine):
            out.append(("bad", item.line_no, item.offset, item.size))
        else:
            assert isinstance(item, Line)
            out.append(("line", item.line_no, item.offset, item.data, item.end, item.newline))
    return out


def test_lines_offsets_and_last_line_without_newline():
    data = b'{"a":1}\n\n{"b":2}\r\n{"c":3}'
    reader = iter_lines(io.BytesIO(data), max_line_bytes=100)
    items = list(reader)
    assert [(i.line_no, i.offset, i.data, i.end, i.newline) for i in items] == [
        (1, 0, b'{"a":1}', 8, True),
        (2, 8, b"", 9, True),
        (3, 9, b'{"b":2}\r', 18, True),
        (4, 18, b'{"c":3}', 25, False),
    ]
    # The resume point is after the last complete line, not after the unterminated one.
    assert (reader.consumed_offset, reader.consumed_lines) == (18, 3)


def test_start_offset_and_line_number_the_lines():
    data = b"abc\ndef\n"
    items = list(iter_lines(io.BytesIO(data), start_offset=100, start_line=7, max_line_bytes=10))
    assert [(i.line_no, i.offset, i.end) for i in items] == [(8, 100, 104), (9, 104, 108)]


def test_empty_stream_yields_nothing():
    assert list(iter_lines(io.BytesIO(b""), max_line_bytes=10)) == []


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x")), max_size=12),
    trailing_newline=st.booleans(),
    chunk_size=st.integers(1, 17),
    cap=st.integers(1, 30),
    hold=st.integers(1, 20),
    seekable=st.booleans(),
)
def test_any_chunking_gives_the_same_lines(lines, trailing_newline, chunk_size, cap, hold, seekable):
    data = b"\n".join(lines) + (b"\n" if trailing_newline and lines else b"")
    stream = io.BytesIO(data) if seekable else Unseekable(data)
    got = actual(iter_lines(stream, max_line_bytes=cap, chunk_size=chunk_size, hold_bytes=hold))
    assert got == expected(data, cap)


def test_a_long_line_on_a_seekable_stream_is_reread_not_held():
    # 6 MB line under a 10 MB cap, with a small hold: measured first, then read once.
    big = b"y" * (6 << 20)
    data = b"first\n" + big + b"\nlast\n"
    items = list(iter_lines(io.BytesIO(data), max_line_bytes=10 << 20, chunk_size=1 << 16, hold_bytes=1 << 18))
    assert [i.line_no for i in items] == [1, 2, 3]
    assert items[1].data == big and items[2].data == b"last"


def test_over_the_cap_line_is_reported_with_its_size_and_skipped():
    data = b"ok\n" + b"z" * 5000 + b"\nafter\n"
    items = list(iter_lines(io.BytesIO(data), max_line_bytes=1000, chunk_size=256))
    assert isinstance(items[1], BadLine)
    assert items[1].line_no == 2 and items[1].size == 5000
    assert "line 2 is 4.9 KiB, over the 1000 bytes limit; skipped" == items[1].reason
    assert items[2].data == b"after" and items[2].line_no == 3


def test_human_size():
    assert human_size(512) == "512 bytes"
    assert human_size(50 * 1024 * 1024) == "50.0 MiB"
    assert human_size(32 * 1024 * 1024) == "32.0 MiB"
    assert human_size(4 * 1024**3) == "4.0 GiB"


def test_open_stream_passes_plain_files_through(tmp_path):
    path = tmp_path / "plain.jsonl"
    path.write_bytes(b'{"a":1}\n')
    stream, compression = open_stream(path)
    with stream:
        assert compression is None
        assert stream.read() == b'{"a":1}\n'


def test_open_stream_sniffs_gzip_by_magic_not_name(tmp_path):
    path = tmp_path / "no-extension"
    path.write_bytes(gzip.compress(b'{"a":1}\n{"b":2}\n'))
    stream, compression = open_stream(path)
    with stream:
        assert compression == "gzip"
        assert [i.data for i in iter_lines(stream, max_line_bytes=100)] == [b'{"a":1}', b'{"b":2}']


def test_open_stream_on_an_unseekable_object_keeps_the_sniffed_bytes():
    stream, compression = open_stream(Unseekable(b"hello\nworld\n"))
    assert compression is None
    assert isinstance(stream, PrefixedStream)
    assert stream.read() == b"hello\nworld\n"
    stream, compression = open_stream(Unseekable(gzip.compress(b"x\n")))
    assert compression == "gzip" and stream.read() == b"x\n"


def test_concatenated_gzip_members_are_all_read():
    data = gzip.compress(b"one\n") + gzip.compress(b"two\n")
    stream, _ = open_stream(io.BytesIO(data))
    assert [i.data for i in iter_lines(stream, max_line_bytes=100)] == [b"one", b"two"]


def test_gzip_cap_stops_with_a_file_level_bad_line_after_the_valid_lines():
    body = b'{"n":1}\n{"n":2}\n' + b"0" * (3 << 20) + b"\n"
    stream, _ = open_stream(io.BytesIO(gzip.compress(body)), max_decompressed_bytes=1 << 20)
    items = list(iter_lines(stream, max_line_bytes=8 << 20))
    assert [i.data for i in items[:2]] == [b'{"n":1}', b'{"n":2}']
    assert isinstance(items[-1], BadLine) and items[-1].line_no == 0
    assert items[-1].reason == "gzip data expands beyond the 1.0 MiB cap; import stopped (possible gzip bomb)"
    assert len(items) == 3  # the cut line is not handed out as a line


def test_gzip_stream_never_returns_more_than_the_cap():
    raw = io.BytesIO(gzip.compress(b"a" * 100_000))
    stream = GzipStream(raw, max_decompressed_bytes=1000)
    assert len(stream.read(10_000)) == 1000
    try:
        stream.read(10)
    except Exception as exc:
        assert "1000 bytes cap" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("the cap did not stop the stream")


def test_a_gzip_bomb_stops_fast():
    # 128 MB of zeros in ~130 KB, against a 10 MB cap.
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1 << 20)
    bomb = b"".join(comp.compress(block) for _ in range(128)) + comp.flush()
    stream, _ = open_stream(io.BytesIO(bomb), max_decompressed_bytes=10 << 20)
    items = list(iter_lines(stream, max_line_bytes=32 << 20))
    assert items[-1].line_no == 0 and "possible gzip bomb" in items[-1].reason


def test_corrupt_and_truncated_gzip_are_file_level_bad_lines():
    good = gzip.compress(b'{"a":1}\n' * 1000)
    corrupt = good[:20] + bytes(b ^ 0xFF for b in good[20:40]) + good[40:]
    stream, _ = open_stream(io.BytesIO(corrupt))
    items = list(iter_lines(stream, max_line_bytes=100))
    assert items[-1].line_no == 0 and "corrupt" in items[-1].reason

    stream, _ = open_stream(io.BytesIO(good[: len(good) // 2]))
    items = list(iter_lines(stream, max_line_bytes=100))
    assert items[-1].line_no == 0 and "truncated" in items[-1].reason
    assert all(i.data == b'{"a":1}' for i in items[:-1])


def test_skip_to_seeks_or_reads():
    assert skip_to(io.BytesIO(b"0123456789"), 4) == 4
    stream = Unseekable(b"0123456789")
    assert skip_to(stream, 4, chunk_size=3) == 4 and stream.read() == b"456789"
    assert skip_to(Unseekable(b"012"), 10) == 3


def test_gzip_data_exactly_at_the_cap_is_fine():
    for size, ok in ((999, True), (1000, True), (1001, False)):
        stream, _ = open_stream(io.BytesIO(gzip.compress(b"a" * size)), max_decompressed_bytes=1000)
        items = list(iter_lines(stream, max_line_bytes=5000, chunk_size=300))
        assert (items[-1].line_no != 0) is ok
