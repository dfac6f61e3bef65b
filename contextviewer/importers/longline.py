"""A JSON line over the in-memory cap, read with bounded memory and reduced (pure, no Django).

A line longer than ``max_line_bytes`` is never held whole. Its bytes are fed, as they are read, to a
``Reducer``:

1. a byte-level string scanner in front of the parser: every JSON string is passed on whole while it
   is small and the line's budget of kept string bytes allows; a longer one (a base64 image, a huge
   tool output) is cut: its head is kept (nothing of a base64 string, whose head is useless) and
   ends with a marker that says how much was not kept, e.g.
   ``[contextviewer: 148.2 MiB of this string not kept; the line was 150.0 MiB]``;
2. ijson (its C backend where installed) parses the reduced bytes incrementally;
3. a builder makes the object from ijson's events with a budget on what it keeps: past it, further
   items of an array or members of an object are left out and the container says how many
   (an array ends with a marker string, an object gets a ``"[contextviewer]"`` member).

The result is the line's object with its structure kept; the record's raw text is that reduced
object as compact JSON (with the markers), not the bytes of the file. Memory is bounded by the
budgets (about ``max_line_bytes``), whatever the size of the line. A line that is not JSON gives an
error sentence instead, as a line within the cap would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from contextviewer.importers.lines import human_size

try:  # pragma: no cover - ijson is a dependency; without it an over-cap line is reported as before
    import ijson
except ImportError:  # pragma: no cover
    ijson = None

MARKER_PREFIX = "[contextviewer: "
OBJECT_MARKER_KEY = "[contextviewer]"
# Stands for the line's size at the end of a marker until the line's end (when the size is known).
_LINE_SIZE = "(size)"
_LINE_SIZE_JSON = b"(size)"

MAX_KEEP_WHOLE = 8 * 1024 * 1024  # a string up to this size is kept whole (while the budget allows)
MAX_HEAD = 256 * 1024  # of a cut string, this much of its start is kept
SMALL = 1024  # a string up to this size is always kept whole
FLUSH_BYTES = 1 << 16  # reduced bytes handed to the parser at a time
_B64_SAMPLE = 4096
# A value nested deeper than this (a bracket opened inside MAX_DEPTH open ones) is not passed on: a
# marker string stands in its place. The scanner only counts its brackets, so a line of a hundred
# million nested brackets costs neither a stack of them nor a parse (issue 40: 823 MB for 110 MB,
# and the message lost to a RecursionError when its reduced JSON was written).
MAX_DEPTH = 100
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.S)
_DEEP_RUN = re.compile(rb'(?:[^"]++|"(?:[^"\\]++|\\.)*+")*+', re.S)
_DEEP_TOKEN = re.compile(rb'"(?:[^"\\]++|\\.)*+"|[{}\[\]]', re.S)
_STRUCTURAL = re.compile(rb"[{}\[\],:]")

# The rest of a string's content from a position: runs of plain bytes and complete escapes. It stops
# at the closing quote, or before a backslash that ends the data (its escaped byte comes next).
_STRING_RUN = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+', re.S)
# The start of a base64 string (optionally a data: URL), as JSON writes it ("/" may be escaped).
_BASE64 = re.compile(rb"(?:data:[\w.+/-]{1,100}(?:;[\w=.+-]{1,100})*,)?(?:[A-Za-z0-9+=]|\\/)*")


def is_marker(value: Any) -> bool:
    return value.__class__ is str and MARKER_PREFIX in value


@dataclass(slots=True)
class Reduced:
    """What a reduced line gave: ``value`` (None with ``error``), and what was left out."""

    value: Any = None
    error: str | None = None  # why the line is not JSON (a sentence without the line number)
    strings_cut: int = 0
    bytes_not_kept: int = 0  # string bytes (as written in the line) left out
    items_not_kept: int = 0  # array items and object members left out
    values_too_deep: int = 0  # values nested deeper than MAX_DEPTH, each replaced by a marker
    markers: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = []
        if self.strings_cut:
            s = "string" if self.strings_cut == 1 else "strings"
            parts.append(f"{self.strings_cut} {s} shortened, {human_size(self.bytes_not_kept)} not kept")
        if self.items_not_kept:
            s = "item" if self.items_not_kept == 1 else "items"
            parts.append(f"{self.items_not_kept} {s} left out")
        if self.values_too_deep:
            s = "value" if self.values_too_deep == 1 else "values"
            parts.append(f"{self.values_too_deep} {s} nested deeper than {MAX_DEPTH} levels left out")
        return "; ".join(parts) if parts else "nothing left out"


class Reducer:
    """Feed the bytes of one line (``feed``), then ``close(size, complete)`` for a ``Reduced``.

    Never raises: a parse error is remembered and the rest of the line only counted.
    """

    def __init__(
        self,
        *,
        max_line_bytes: int,
        keep_total: int | None = None,
        keep_whole: int | None = None,
        head: int | None = None,
        budget: int | None = None,
    ):
        cap = max(1, int(max_line_bytes))
        self.keep_total = keep_total if keep_total is not None else max(SMALL, cap // 2)
        self.keep_whole = keep_whole if keep_whole is not None else max(SMALL, min(MAX_KEEP_WHOLE, cap // 4))
        self.head = head if head is not None else max(0, min(MAX_HEAD, self.keep_whole // 4))
        self.budget = budget if budget is not None else max(4 * SMALL, cap)
        self.error: str | None = None
        self.fed = 0  # bytes of the line fed so far
        self.kept = 0  # string bytes passed on
        self.strings_cut = 0
        self.bytes_not_kept = 0
        self._out = bytearray()
        self._carry = b""  # a backslash that ended the last chunk inside a string
        self._in_string = False
        self._pending = bytearray()  # the current string's content (up to its limit)
        self._limit = 0
        self._cut = False
        self._skipped = 0
        self._strings = 0  # strings started (keys included)
        self._stack: list[int] = []  # open { and [ outside strings
        self._last = 0  # the last structural byte outside strings
        self._cut_strings: set[int] = set()  # their numbers, for the builder
        self._deep = 0  # open brackets of a value nested too deep (0: none is being skipped)
        self._deep_bytes = 0  # its bytes so far
        self.values_too_deep = 0
        self._builder = _Builder(self.budget, self._cut_strings)
        if ijson is None:  # pragma: no cover
            self.error = "no streaming JSON parser is installed (ijson)"
            self._events = None
            self._coro = None
        else:
            self._events = ijson.sendable_list()
            self._coro = ijson.basic_parse_coro(self._events, use_float=True)

    # -- input

    def feed(self, data: bytes) -> None:
        if not self.fed and data[:3] == b"\xef\xbb\xbf":  # a BOM before the value (line 1)
            self.fed = 3
            data = data[3:]
        self.fed += len(data)
        if self.error is not None or not data:
            return
        try:
            self._scan(data)
            if len(self._out) >= FLUSH_BYTES:
                self._flush()
        except Exception as exc:  # noqa: BLE001 - never raise: the line becomes a bad line
            self._fail(exc)

    def _scan(self, data: bytes) -> None:
        if self._carry:
            data = self._carry + data
            self._carry = b""
        n = len(data)
        i = 0
        out = self._out
        while i < n:
            if not self._in_string:
                if self._deep:  # inside a value nested too deep: counted, not passed on
                    i = self._skip_deep(data, i, n)
                    continue
                j = data.find(b'"', i)
                end = n if j < 0 else j
                deeper = self._structure(data[i:end])
                if deeper >= 0:  # an opening bracket past MAX_DEPTH: what it opens is left out
                    out += data[i : i + deeper]
                    self._deep = 1
                    self._deep_bytes = 1
                    i += deeper + 1
                    continue
                if j < 0:
                    out += data[i:] if i else data
                    return
                out += data[i : j + 1]
                self._start_string()
                i = j + 1
                continue
            k = _STRING_RUN.match(data, i).end()
            if self._deep:
                self._deep_bytes += k - i
            elif k > i:
                self._string_bytes(data, i, k)
            if k >= n:
                return
            if data[k] == 0x22:  # the closing quote
                if self._deep:
                    self._deep_bytes += 1
                    self._in_string = False
                else:
                    self._end_string()
                i = k + 1
            else:  # a backslash that ends the data: its escaped byte is in the next chunk
                self._carry = data[k:]
                return

    def _skip_deep(self, data: bytes, i: int, n: int) -> int:
        """Skip ``data`` from ``i`` inside a value nested too deep, counting its brackets (strings
        and their brackets skipped whole, in C); where to go on: past the bracket that closes it
        (its marker written), at a string that goes on in the next chunk, or the end."""
        p = _DEEP_RUN.match(data, i).end()  # up to a string that does not end in this data
        seg = data[i:p]
        bare = _JSON_STRING.sub(b"", seg) if b'"' in seg else seg
        closes = bare.count(b"}") + bare.count(b"]")
        if closes < self._deep:  # it cannot close here
            self._deep += bare.count(b"{") + bare.count(b"[") - closes
        else:
            for m in _DEEP_TOKEN.finditer(data, i, p):
                if m.group()[0] == 0x22:
                    continue
                self._deep += 1 if m.group() in (b"{", b"[") else -1
                if not self._deep:
                    self._deep_bytes += m.end() - i
                    self._end_deep()
                    return m.end()
        self._deep_bytes += p - i
        if p < n:  # a string that ends in a later chunk
            self._in_string = True
            self._deep_bytes += 1
            return p + 1
        return n

    def _end_deep(self) -> None:
        """The value nested too deep is closed: a marker string stands in its place."""
        self.values_too_deep += 1
        self.bytes_not_kept += self._deep_bytes
        self._cut_strings.add(self._strings)  # the builder keeps it and puts in the line's size
        self._strings += 1
        self._last = 0x22
        self._out += (
            f'"{MARKER_PREFIX}a value nested deeper than {MAX_DEPTH} levels not kept '
            f"({human_size(self._deep_bytes)}); the line was "
        ).encode() + _LINE_SIZE_JSON + b']"'

    def _structure(self, data: bytes) -> int:
        """Follow the brackets between strings, to tell an object's key from a value; the index of
        an opening bracket that would nest past MAX_DEPTH (-1: none)."""
        if len(self._stack) + data.count(b"{") + data.count(b"[") > MAX_DEPTH:
            for m in _STRUCTURAL.finditer(data):
                byte = data[m.start()]
                if byte in (0x7B, 0x5B):  # { [
                    if len(self._stack) >= MAX_DEPTH:
                        return m.start()
                    self._stack.append(byte)
                elif byte in (0x7D, 0x5D) and self._stack:  # } ]
                    self._stack.pop()
                self._last = byte
            return -1
        for byte in data.translate(None, _NOT_STRUCTURAL):
            if byte in (0x7B, 0x5B):  # { [
                self._stack.append(byte)
            elif byte in (0x7D, 0x5D):  # } ]
                if self._stack:
                    self._stack.pop()
            self._last = byte
        return -1

    def _start_string(self) -> None:
        self._strings += 1
        self._in_string = True
        self._cut = False
        self._skipped = 0
        self._pending = bytearray()
        is_key = bool(self._stack) and self._stack[-1] == 0x7B and self._last in (0x7B, 0x2C)  # after { or ,
        self._last = 0x22
        # A key is never cut (two cut keys would collide and lose a member); a value within its limit.
        limit = self.keep_total if is_key else min(self.keep_whole, self.keep_total - self.kept)
        self._limit = max(SMALL, limit)

    def _string_bytes(self, data: bytes, i: int, k: int) -> None:
        if self._cut:
            self._skipped += k - i
            return
        room = self._limit - len(self._pending)
        if k - i <= room:
            self._pending += data[i:k]
            return
        self._pending += data[i : i + room]
        self._skipped += k - i - room
        self._start_cut()

    def _start_cut(self) -> None:
        pending = self._pending
        sample = bytes(pending[:_B64_SAMPLE])
        keep = min(self.head, len(pending), max(0, self.keep_total - self.kept))
        if len(sample) >= 256 and _BASE64.match(sample).end() >= len(sample) - 1:
            keep = 0  # base64 data: a head of it shows nothing
        keep = _safe_cut(pending, keep)
        self._skipped += len(pending) - keep
        self._pending = bytearray(pending[:keep])
        self._cut = True

    def _end_string(self) -> None:
        out = self._out
        out += self._pending
        self.kept += len(self._pending)
        if self._cut:
            self._cut_strings.add(self._strings - 1)
            self.strings_cut += 1
            self.bytes_not_kept += self._skipped
            sep = b"\\n" if self._pending else b""
            out += sep + (
                f"{MARKER_PREFIX}{human_size(self._skipped)} of this string not kept; the line was ".encode()
                + _LINE_SIZE_JSON
                + b"]"
            )
        out += b'"'
        self._pending = bytearray()
        self._in_string = False
        self._cut = False

    # -- parsing

    def _flush(self) -> None:
        if not self._out:
            return
        data = bytes(self._out)
        self._out.clear()
        self._coro.send(data)
        self._drain()

    def _drain(self) -> None:
        events = self._events
        if events:
            self._builder.seen = human_size(self.fed)
            self._builder.events(events)
            del events[:]

    def _fail(self, exc: Exception) -> None:
        self.error = _reason(exc)
        self._out = bytearray()
        self._pending = bytearray()
        self._builder = None
        self._events = None
        self._coro = None

    def close(self, size: int, complete: bool = True) -> Reduced:
        """The reduced value of a line of ``size`` bytes (``complete``: it ended with a newline)."""
        if self.error is None:
            try:
                if self._in_string or self._carry:
                    raise ValueError("the line ends inside a string")
                if self._deep:
                    raise ValueError("the line ends before its value does")
                self._flush()
                self._coro.close()
                self._drain()
                if not self._builder.done:
                    raise ValueError("the line ends before its value does")
            except Exception as exc:  # noqa: BLE001
                self._fail(exc)
        if self.error is not None:
            return Reduced(error=self.error, strings_cut=self.strings_cut, bytes_not_kept=self.bytes_not_kept)
        builder = self._builder
        value = builder.finish(human_size(size))
        return Reduced(
            value=value,
            strings_cut=self.strings_cut,
            bytes_not_kept=self.bytes_not_kept,
            items_not_kept=builder.items_not_kept,
            values_too_deep=self.values_too_deep,
            markers=builder.markers,
        )


# Whole pieces of string content: plain bytes and complete escapes (so a match stops before an
# escape cut in two).
_WHOLE_ESCAPES = re.compile(rb'(?:[^"\\]++|\\u[0-9a-fA-F]{4}|\\[^u])*+', re.S)
_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")


_NOT_STRUCTURAL = bytes(b for b in range(256) if b not in b"{}[],:")


def _safe_cut(data: bytearray, n: int) -> int:
    """``n`` or less, so that ``data[:n]`` ends neither inside an escape nor inside a UTF-8
    character, nor with the first half of an escaped surrogate pair."""
    if n <= 0:
        return 0
    n = _WHOLE_ESCAPES.match(data, 0, n).end()
    # A UTF-8 character cut in two: back off to its lead byte.
    j = n
    while j > 0 and n - j < 3 and 0x80 <= data[j - 1] < 0xC0:
        j -= 1
    if j > 0 and data[j - 1] >= 0xC0:
        lead = data[j - 1]
        width = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        if j - 1 + width != n:
            n = j - 1
    # A high surrogate escape whose low half is not kept.
    if n >= 6 and _HIGH_SURROGATE.fullmatch(data, n - 6, n):
        run = 0
        k = n - 7
        while k >= 0 and data[k] == 0x5C:
            run += 1
            k -= 1
        if run % 2 == 0:  # the backslash starts an escape (it is not the second of a pair)
            n -= 6
    return n


def _reason(exc: Exception) -> str:
    text = str(exc).strip() or exc.__class__.__name__
    text = text.splitlines()[0][:200]
    return text


def _with_size(text: str, size: str) -> str:
    """A marker with the line's size put in (the placeholder is its end, whatever the text before)."""
    tail = _LINE_SIZE + "]"
    return text[: -len(tail)] + size + "]" if text.endswith(tail) else text


class _Builder:
    """Makes a value from ijson's basic events, keeping about ``budget`` units (a unit ~ a byte of
    kept text; a container or a number a few more); past it, items are counted, not kept.

    ``cut`` holds the numbers (in line order, keys included) of the strings the scanner shortened:
    their markers get the line's size at the end, and they are never left out."""

    __slots__ = ("budget", "cut", "seen", "strings", "units", "stack", "keys", "drops", "skip", "root", "done",
                 "items_not_kept", "fixups", "markers")

    def __init__(self, budget: int, cut: set[int]):
        self.budget = budget
        self.cut = cut
        self.seen = ""  # the size of the line read so far, said by a shortened key
        self.strings = 0  # strings seen (keys included), to match the scanner's numbers
        self.units = 0
        self.stack: list[Any] = []
        self.keys: list[Any] = []
        self.drops: list[int] = []
        self.skip = 0  # depth inside a container that is left out
        self.root: Any = None
        self.done = False
        self.items_not_kept = 0
        self.fixups: list[tuple[Any, Any]] = []  # (container, key) of markers waiting for the line's size
        self.markers: list[str] = []

    def events(self, events) -> None:
        for event, value in events:
            if event == "map_key" or event == "string":
                number = self.strings
                self.strings += 1
            if self.skip:
                if event == "start_map" or event == "start_array":
                    self.skip += 1
                elif event == "end_map" or event == "end_array":
                    self.skip -= 1
                continue
            if event == "map_key":
                if number in self.cut:  # a shortened key (a key over the string limit)
                    value = _with_size(value, f"over {self.seen}")
                self.keys[-1] = value
                self.units += len(value) + 8
            elif event == "start_map" or event == "start_array":
                if self.stack and self.units > self.budget:
                    self._drop()
                    self.skip = 1
                    continue
                container: Any = {} if event == "start_map" else []
                self._attach(container)
                self.stack.append(container)
                self.keys.append(None)
                self.drops.append(0)
                self.units += 64
            elif event == "end_map" or event == "end_array":
                container = self.stack.pop()
                self.keys.pop()
                dropped = self.drops.pop()
                if dropped:
                    what = "member" if container.__class__ is dict else "item"
                    what += "" if dropped == 1 else "s"
                    text = f"{MARKER_PREFIX}{dropped} more {what} not kept; the line was {_LINE_SIZE}]"
                    if container.__class__ is dict:
                        container[OBJECT_MARKER_KEY] = text
                        self.fixups.append((container, OBJECT_MARKER_KEY))
                    else:
                        self.fixups.append((container, len(container)))
                        container.append(text)
                if not self.stack:
                    self.done = True
            else:
                marker = event == "string" and number in self.cut  # always kept
                if not marker and self.stack and self.units > self.budget:
                    self._drop()
                    continue
                self.units += len(value) + 32 if value.__class__ is str else 32
                self._attach(value, fixup=marker)
                if not self.stack:
                    self.done = True

    def _drop(self) -> None:
        self.drops[-1] += 1
        self.items_not_kept += 1

    def _attach(self, value: Any, fixup: bool = False) -> None:
        if not self.stack:
            self.root = value
            if fixup:
                self.fixups.append((None, None))
            return
        parent = self.stack[-1]
        if parent.__class__ is dict:
            key = self.keys[-1]
            parent[key] = value
            if fixup:
                self.fixups.append((parent, key))
        else:
            if fixup:
                self.fixups.append((parent, len(parent)))
            parent.append(value)

    def finish(self, line_size: str) -> Any:
        for container, key in self.fixups:
            if container is None:
                self.root = _with_size(self.root, line_size)
                self.markers.append(self.root)
                continue
            text = _with_size(container[key], line_size)
            container[key] = text
            self.markers.append(text)
        return self.root
