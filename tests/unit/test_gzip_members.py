"""Multi-member gzip (files made by appending gzip members, as `cat a.gz b.gz` does): every member
is read once, whatever the read size and wherever the members split the data."""

import gzip
import io
import os

from hypothesis import given, settings, strategies as st

from contextviewer.importers.lines import GzipStream, open_stream


def _members(parts: list[bytes]) -> bytes:
    return b"".join(gzip.compress(p) for p in parts)


def _read_all(data: bytes, read_size: int, input_chunk: int = 1 << 16) -> bytes:
    stream = GzipStream(io.BytesIO(data), max_decompressed_bytes=1 << 34, input_chunk=input_chunk)
    out = []
    while chunk := stream.read(read_size):
        out.append(chunk)
    return b"".join(out)


def test_two_members_whose_first_expands_past_the_read_size_read_once_each():
    first = b"".join(b'{"n": %d, "pad": "%s"}\n' % (i, b"x" * 200) for i in range(5000))  # ~1 MB
    second = b'{"n": "second member"}\n' * 3
    data = _members([first, second])
    assert len(first) > 64 * 1024
    assert _read_all(data, 64 * 1024) == first + second
    assert _read_all(data, 1 << 20) == first + second


def test_open_stream_reads_an_appended_gzip_file_like_zcat(tmp_path):
    path = tmp_path / "s.jsonl.gz"
    a = os.urandom(300_000).hex().encode() + b"\n"
    b = b"tail line\n"
    path.write_bytes(_members([a, b]))
    stream, compression = open_stream(path)
    assert compression == "gzip"
    assert stream.read(1 << 30) + stream.read(1 << 30) == a + b


@settings(max_examples=60, deadline=None)
@given(
    # Compressible data: a member inflates to far more than was fed, as session logs do.
    data=st.builds(lambda unit, n: unit * n, st.binary(min_size=1, max_size=64), st.integers(min_value=0, max_value=4000)),
    cuts=st.lists(st.integers(min_value=0, max_value=200_000), max_size=5),
    read_size=st.integers(min_value=1, max_value=70_000),
    input_chunk=st.sampled_from([7, 1024, 1 << 16]),
)
def test_any_split_into_members_reads_back_the_same_bytes(data, cuts, read_size, input_chunk):
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    parts = [data[a:b] for a, b in zip(points, points[1:])] or [b""]
    assert _read_all(_members(parts), read_size, input_chunk) == data
