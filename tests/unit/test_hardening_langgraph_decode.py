"""The LangGraph blob decoder on generated nestings of msgpack ext types, maps and arrays: a value
or a readable BlobError, never a crash (issue 21). Nestings go past the ext depth that used to
overflow the C stack (~200), so a regression ends this process: the integration test
(test_hardening_langgraph.py) runs the same parse in a subprocess."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from contextviewer.importers.langgraph import parser as langgraph
from contextviewer.importers.langgraph.parser import MAX_EXT_DEPTH, BlobError

LEAVES = st.one_of(st.integers(-5, 5), st.text(max_size=5), st.none(), st.booleans()).map(msgpack.packb)


def _array(items: list[bytes]) -> bytes:
    return (bytes([0x90 | len(items)]) if len(items) < 16 else b"\xdc" + len(items).to_bytes(2, "big")) + b"".join(items)


def _map(items: list[bytes]) -> bytes:
    pairs = items[: len(items) // 2 * 2]
    return bytes([0x80 | len(pairs) // 2]) + b"".join(pairs)


def _ext(code: int, inner: bytes) -> bytes:
    return msgpack.packb(msgpack.ExtType(code, inner))


def _wrap(inner: bytes, levels: int, kind: str, code: int) -> bytes:
    for _ in range(levels):
        inner = _ext(code, inner) if kind == "ext" else (_array([inner]) if kind == "array" else _map([b"\xa1k", inner]))
    return inner


CODES = st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 42])
BLOBS = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(_array),
        st.lists(children, max_size=6).map(_map),
        st.tuples(CODES, children).map(lambda t: _ext(*t)),
        st.tuples(children, st.integers(0, 400), st.sampled_from(["ext", "array", "map"]), CODES).map(lambda t: _wrap(*t)),
    ),
    max_leaves=12,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BLOBS)
def test_any_nesting_decodes_or_is_a_readable_error(blob):
    try:
        value = langgraph.decode("msgpack", blob)
    except BlobError as exc:
        assert str(exc).startswith("its msgpack value") or "limit" in str(exc)
        return
    langgraph.to_json(value)  # what the importer does with a value never raises either


def test_ext_nesting_up_to_the_limit_decodes_and_one_more_level_is_refused():
    ok = _wrap(msgpack.packb(["m", "C", {"a": 1}]), MAX_EXT_DEPTH - 1, "ext", 42)
    ok = _ext(5, _array([msgpack.packb("m"), msgpack.packb("C"), ok]))  # MAX_EXT_DEPTH levels
    assert langgraph.decode("msgpack", ok) == {"__ext__": 42}
    with pytest.raises(BlobError, match=f"nesting limit of {MAX_EXT_DEPTH} levels"):
        langgraph.decode("msgpack", _ext(5, ok))


def test_the_size_limit_bounds_the_work_of_nested_ext_values():
    # each level decodes its payload again: 31 levels of a 1 MiB value is 31 MiB of decoding for a
    # 1 MiB blob, over the budget of 16 times the blob
    blob = _wrap(msgpack.packb("x" * (1 << 20)), MAX_EXT_DEPTH - 1, "ext", 42)
    with pytest.raises(BlobError, match="size limit"):
        langgraph.decode("msgpack", blob)
