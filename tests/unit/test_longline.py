"""Lines over the in-memory cap: reduced, never dropped (small caps here; the 40 MB and 150 MB lines
are in tests/integration/ingest/test_long_lines.py).

What a person notices: the message of a huge line is there, its long strings end with a marker that
says how much was not kept, the lines after it import as usual, and a line that is not JSON at all
is still reported as a bad line.
"""

from __future__ import annotations

import gzip
import io
import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from contextviewer.core.records import BadLine, MessageRecord, SessionInfo
from contextviewer.importers.claude_code import parser as claude_code
from contextviewer.importers.lines import Line, LongLine, iter_lines
from contextviewer.importers.longline import MARKER_PREFIX, OBJECT_MARKER_KEY, Reducer

MARKER = re.compile(r"\[contextviewer: ([0-9.]+ (?:bytes|KiB|MiB|GiB)) of this string not kept; the line was ([0-9.]+ (?:bytes|KiB|MiB|GiB))\]$")


def reduce(data: bytes, chunk: int = 7, **kw):
    r = Reducer(**{"max_line_bytes": 1000, **kw})
    for i in range(0, len(data), chunk):
        r.feed(data[i : i + chunk])
    return r.close(len(data))


def words(n: int) -> str:
    """Text as a tool prints it (spaces, newlines, quotes), not base64."""
    line = 'ok "quoted" path/to/file.py: 12 passed\n'
    return (line * (n // len(line) + 1))[:n]


def user(uid: str, content) -> bytes:
    return json.dumps({"type": "user", "uuid": uid, "sessionId": "s1", "message": {"role": "user", "content": content}}).encode() + b"\n"


def of(records, kind):
    return [r for r in records if isinstance(r, kind)]


# -- the reducer --------------------------------------------------------------------------------


def test_a_long_text_keeps_its_head_and_ends_with_a_marker_saying_what_was_not_kept():
    text = words(50_000)
    line = json.dumps({"a": 1, "out": text, "small": "kept", "n": [1, 2.5, None, True]}).encode()
    res = reduce(line, keep_whole=2000, head=500)
    assert res.error is None and res.strings_cut == 1
    value = res.value
    assert {k: v for k, v in value.items() if k != "out"} == {"a": 1, "small": "kept", "n": [1, 2.5, None, True]}
    head, marker = value["out"].rsplit("\n", 1)
    assert text.startswith(head) and 400 < len(head) <= 500
    m = MARKER.match(marker)
    assert m, marker
    # The line's size, and what was not kept of the string (as written in the line: escapes count).
    written = len(json.dumps(text)) - 2
    assert m.group(2) == f"{len(line) / 1024:.1f} KiB"
    assert m.group(1) == f"{(written - len(json.dumps(head)) + 2) / 1024:.1f} KiB"
    assert res.markers == [value["out"]]


def test_base64_data_is_replaced_by_the_marker_alone():
    data = "iVBORw0KGgo" + "QUJD" * 5000
    line = json.dumps({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}).encode()
    res = reduce(line, keep_whole=1000, head=300)
    assert res.value["source"]["data"].startswith(MARKER_PREFIX)
    assert MARKER.match(res.value["source"]["data"])
    assert res.value["source"]["media_type"] == "image/png"


def test_strings_are_kept_whole_while_the_line_budget_allows():
    parts = [words(3000) for _ in range(6)]  # about 3.2 KB each as JSON writes them
    line = json.dumps(parts).encode()
    res = reduce(line, keep_total=10_000, keep_whole=5000, head=100, budget=10**6)
    kept = [p for p in res.value if MARKER_PREFIX not in p]
    assert kept == parts[:3]  # three fit in the line's 10 KB; the rest are cut
    assert res.strings_cut == 3 and len(res.value) == 6


def test_past_the_structure_budget_items_are_counted_not_kept():
    numbers = list(range(10_000))
    line = json.dumps({"numbers": numbers, "tail": {"x": 1}}).encode()
    res = reduce(line, budget=20_000, chunk=997)
    *ints, marker = res.value["numbers"]
    assert ints == numbers[: len(ints)] and 0 < len(ints) < 10_000
    left_out = int(re.search(r"(\d+) more items not kept; the line was", marker).group(1))
    assert len(ints) + left_out == len(numbers)
    # The object that came after the budget was spent: left out, and its parent says so.
    assert "tail" not in res.value and "1 more member not kept" in res.value[OBJECT_MARKER_KEY]
    assert res.items_not_kept == left_out + 1


def test_not_json_is_an_error_not_a_value():
    assert reduce(b"this is not json at all" * 100).error
    assert reduce(b'{"a": "unterminated').error
    assert reduce(b'{"a": 1} trailing').error


json_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=300)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | json_text,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(json_text, inner, max_size=5),
    max_leaves=20,
)


def _same_or_cut(original, reduced) -> None:
    if isinstance(original, dict):
        assert set(reduced) == set(original)
        for k in original:
            _same_or_cut(original[k], reduced[k])
    elif isinstance(original, list):
        assert len(reduced) == len(original)
        for a, b in zip(original, reduced):
            _same_or_cut(a, b)
    elif isinstance(original, str) and reduced != original:
        head, _, marker = reduced.rpartition("\n") if "\n[contextviewer" in reduced else ("", "", reduced)
        assert MARKER.match(marker), reduced
        assert original.startswith(head)
    else:
        assert reduced == original


@settings(max_examples=150, deadline=None)
@given(value=json_values, chunk=st.integers(1, 64), ascii_only=st.booleans(), keep_whole=st.integers(1, 200))
def test_any_value_in_any_chunks_keeps_its_structure_and_cuts_strings_cleanly(value, chunk, ascii_only, keep_whole):
    """Cuts never split an escape, a UTF-8 character or a surrogate pair: every kept head is a
    prefix of the original string, and everything else is kept as it was."""
    line = json.dumps({"v": value}, ensure_ascii=ascii_only).encode()
    res = reduce(line, chunk=chunk, keep_whole=keep_whole, head=keep_whole // 2, keep_total=10**6, budget=10**6)
    assert res.error is None
    _same_or_cut({"v": value}, res.value)


# -- the line reader and the driver ---------------------------------------------------------------


def _session(big: bytes) -> bytes:
    return user("u1", "before") + big + b"\n" + user("u2", "after")


def _big_line() -> tuple[bytes, str]:
    text = words(300_000)
    line = user("big", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": text}]).rstrip(b"\n")
    return line, text


class Unseekable(io.RawIOBase):
    def __init__(self, data: bytes):
        self._b = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, b):
        data = self._b.read(len(b))
        b[: len(data)] = data
        return len(data)


def test_the_line_reader_streams_an_over_cap_line_to_a_sink_on_any_stream():
    big, _ = _big_line()
    data = _session(big)
    for stream in (io.BytesIO(data), io.BufferedReader(Unseekable(data)), Unseekable(data)):
        items = list(iter_lines(stream, max_line_bytes=50_000, chunk_size=4096, long_line=lambda: Reducer(max_line_bytes=50_000)))
        assert [i.__class__ for i in items] == [Line, LongLine, Line]
        long = items[1]
        assert (long.line_no, long.offset, long.size, long.newline) == (2, len(user("u1", "before")), len(big), True)
        assert long.result.value["uuid"] == "big"


def _parse(data: bytes, **kw) -> list:
    return list(claude_code.parse(io.BytesIO(data), **{"max_line_bytes": 50_000, "chunk_size": 4096, **kw}))


def test_an_over_cap_line_is_imported_reduced_with_a_notice_and_the_rest_imports():
    big, text = _big_line()
    data = _session(big)
    records = _parse(data)
    (notice,) = of(records, BadLine)
    assert notice.line_no == 2
    assert notice.reason.startswith(f"line 2 is {len(big) / 1024:.1f} KiB, over the 48.8 KiB limit: imported reduced (1 string shortened, ")
    messages = of(records, MessageRecord)
    assert [m.uuid for m in messages] == ["u1", "big", "u2"]
    (block,) = messages[1].blocks
    assert block.kind == "tool_result" and block.tool_id == "toolu_1"
    head, marker = block.text.rsplit("\n", 1)
    assert text.startswith(head) and MARKER.match(marker)
    # The stored raw line is the reduced JSON, markers included.
    raw = json.loads(messages[1].raw)
    assert raw["message"]["content"][0]["content"] == block.text
    assert len(messages[1].raw) < 50_000
    info = of(records, SessionInfo)[-1]
    assert info.bytes_consumed == len(data) and info.lines == 3
    # Gzip (a stream that cannot seek): the same records.
    gz = _parse(gzip.compress(data))
    assert [(m.uuid, [b.text for b in m.blocks]) for m in of(gz, MessageRecord)] == [
        (m.uuid, [b.text for b in m.blocks]) for m in messages
    ]


def test_an_over_cap_line_that_is_not_json_is_still_a_bad_line():
    data = _session(b"this is not json " * 10_000)
    records = _parse(data)
    (bad,) = of(records, BadLine)
    assert bad.line_no == 2
    assert bad.reason.startswith("line 2 is 166.0 KiB, over the 48.8 KiB limit, and is not valid JSON (")
    assert bad.reason.endswith("); skipped")
    assert [m.uuid for m in of(records, MessageRecord)] == ["u1", "u2"]


def test_an_over_cap_last_line_without_newline_imports_or_is_incomplete():
    big, _ = _big_line()
    records = _parse(user("u1", "before") + big)
    assert [m.uuid for m in of(records, MessageRecord)] == ["u1", "big"]
    assert of(records, SessionInfo)[-1].bytes_consumed == len(user("u1", "before") + big)
    records = _parse(user("u1", "before") + big[:-5])
    (bad,) = of(records, BadLine)
    assert bad.reason == "line 2 is incomplete (the file ends mid-line)"


def test_an_image_left_out_shows_the_marker_on_its_block():
    data = "iVBORw0KGgo" + "QUJD" * 30_000
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    line = user("img", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [image]}, image])
    records = _parse(user("u1", "before") + line)
    message = of(records, MessageRecord)[1]
    result, img = message.blocks
    assert result.kind == "tool_result" and result.images == 1 and MARKER.match(result.text)
    assert img.kind == "image" and img.media_type == "image/png" and MARKER.match(img.text)


def test_a_one_line_json_array_over_the_cap_is_read_element_by_element():
    items = [{"type": "user", "uuid": f"u{i}", "message": {"role": "user", "content": words(20_000)}} for i in range(4)]
    data = json.dumps(items).encode() + b"\n"
    records = _parse(data)
    bad = of(records, BadLine)
    assert bad[0].line_no == 0 and "its 4 elements were read reduced" in bad[0].reason
    assert [m.uuid for m in of(records, MessageRecord)] == ["u0", "u1", "u2", "u3"]


def test_an_image_left_out_is_not_exported_as_an_image():
    """Exports put image data back from the raw line (enrich): a marker is text, not base64."""
    data = "iVBORw0KGgo" + "QUJD" * 30_000
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    line = user("img", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [image]}, image])
    message = of(_parse(user("u1", "before") + line), MessageRecord)[1]
    d = claude_code.enrich({"raw": message.raw, "blocks": [b.as_dict() for b in message.blocks]})
    result, img = d["blocks"]
    assert "data" not in img
    ((part),) = result["content"]
    assert part["type"] == "text" and MARKER.match(part["text"])


def test_an_objects_long_keys_are_kept_whole_and_its_long_values_cut():
    key_a, key_b = "k" * 400 + "a", "k" * 400 + "b"  # cut to their heads, these two would collide
    line = json.dumps({key_a: "x" * 5000, key_b: ["y" * 5000, {"inner": "z" * 5000}]}).encode()
    res = reduce(line, keep_whole=100, head=50, keep_total=10**6, budget=10**6)
    assert res.error is None
    assert set(res.value) == {key_a, key_b}
    assert MARKER.search(res.value[key_a]) and MARKER.search(res.value[key_b][0])
    assert set(res.value[key_b][1]) == {"inner"} and MARKER.search(res.value[key_b][1]["inner"])
