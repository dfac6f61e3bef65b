"""A deeply nested line over the cap (issue 40, item 5): its message is kept, the nested value
replaced by a marker that says what was left out, in memory near the cap, in a few seconds.
A 110 MB line of nested brackets used 823 MB and lost its message (a RecursionError writing it)."""

from __future__ import annotations

import io
import json
import time
import tracemalloc

import pytest

from contextviewer.core.records import BadLine, MessageRecord
from contextviewer.importers.claude_code import parser as claude_code
from contextviewer.importers.longline import MARKER_PREFIX, MAX_DEPTH, Reducer

pytestmark = pytest.mark.backend_independent

CAP = 32 * 1024 * 1024  # the documented cap (CONTEXTVIEWER_MAX_LINE_BYTES' default)
HEAD = (b'{"type":"user","uuid":"deep","sessionId":"s1","message":{"role":"user","content":['
        b'{"type":"text","text":"Look at this output."},'
        b'{"type":"tool_result","tool_use_id":"toolu_1","content":"it printed a tree","tree":')
TAIL = b',"after":"kept"}]}}'


def _user(uid: str, text: str) -> bytes:
    return json.dumps({"type": "user", "uuid": uid, "sessionId": "s1", "message": {"role": "user", "content": text}}).encode() + b"\n"


def _nested(depth: int, leaf: bytes = b'"x"') -> tuple[bytes, bytes]:
    return b'[{"a\\"[":' * depth + leaf, b"}]" * depth


def _records(stream, **kw) -> list:
    return list(claude_code.parse(stream, max_line_bytes=kw.pop("cap", CAP), chunk_size=1 << 16, **kw))


def _check(records) -> None:
    messages = [r for r in records if isinstance(r, MessageRecord)]
    assert [m.uuid for m in messages] == ["u1", "deep", "u2"]
    blocks = messages[1].blocks
    assert blocks[0].text == "Look at this output." and blocks[1].kind == "tool_result"
    raw = json.loads(messages[1].raw)
    tool = raw["message"]["content"][1]
    assert tool["after"] == "kept" and tool["content"] == "it printed a tree"
    level, depth = tool["tree"], 0
    while isinstance(level, list):
        level, depth = level[0]['a"['], depth + 1
    assert depth <= MAX_DEPTH
    assert level.startswith(MARKER_PREFIX + f"a value nested deeper than {MAX_DEPTH} levels not kept")
    (notice,) = [r for r in records if isinstance(r, BadLine)]
    assert "imported reduced (1 value nested deeper than 100 levels left out)" in notice.reason


def test_a_nested_over_cap_line_keeps_its_message_with_a_marker_in_any_chunks():
    opened, closed = _nested(5_000)
    line = HEAD + opened + closed + TAIL
    data = _user("u1", "before") + line + b"\n" + _user("u2", "after")
    _check(_records(io.BytesIO(data), cap=50_000))
    for chunk in (1, 7, 4096):  # escapes, strings and brackets cut anywhere
        reducer = Reducer(max_line_bytes=50_000)
        for i in range(0, len(line), chunk):
            reducer.feed(line[i : i + chunk])
        reduced = reducer.close(len(line))
        assert reduced.error is None and reduced.values_too_deep == 1
        assert reduced.value["message"]["content"][1]["after"] == "kept"


def test_a_40_mb_nested_line_is_read_in_memory_near_the_cap(tmp_path):
    opened, closed = _nested(100_000)  # objects with strings and escapes, then 40 MB of brackets
    path = tmp_path / "deep.jsonl"
    with open(path, "wb") as out:
        out.write(_user("u1", "before") + HEAD)
        out.write(opened)
        for _ in range(20):
            out.write(b"[" * 1_000_000)
        for _ in range(20):
            out.write(b"]" * 1_000_000)
        out.write(closed)
        out.write(TAIL + b"\n" + _user("u2", "after"))
    assert path.stat().st_size > 40_000_000
    began = time.monotonic()
    tracemalloc.start()
    try:
        with open(path, "rb") as stream:
            records = _records(stream)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 1024 * 1024, f"peak {peak / 2**20:.0f} MiB"
    assert time.monotonic() - began < 30
    _check(records)
