"""The generic driver of JSON session logs (pure, no Django): one JSON object per line (JSONL), or
one JSON array of objects (read whole, within the line cap), gzip-compressed or not, with a BOM or
not; progress every N bytes; every problem a ``BadLine`` with a line number (0: the file as a
whole), never an exception.

A line over the cap (``max_line_bytes``) is not lost: it is streamed through ``longline.Reducer``
(bounded memory), its long strings shortened with a visible marker, and ``process`` gets the reduced
object; its ``raw`` is that reduced object as compact JSON, and a ``BadLine`` says the line was
imported reduced. A line over the cap that is not JSON is reported and skipped.

A format subclasses ``JsonParser`` and writes ``process`` (one object -> a record or None),
``finish`` (records after the last line, ending with ``session_info()``) and ``session_info``.
``open_head`` opens a file (gzip undone) and says why it cannot be read; ``jsondoc.py`` reads a
file that is one JSON document (a format that is not line-based).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import IO, Any

from contextviewer.core.records import BadLine, ImportProgress, Record, SessionInfo
from contextviewer.importers.common import BOM, JSON_DEPTH, json_kind, looks_binary
from contextviewer.importers.lines import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    GZIP_MAGIC,
    GzipStream,
    LineReader,
    LongLine,
    StreamError,
    as_utf8,
    human_size,
    iter_lines,
    peek,
    text_encoding,
)
from contextviewer.importers.longline import Reducer

DEFAULT_PROGRESS_EVERY_BYTES = 8 * 1024 * 1024
SNIFF_BYTES = 64 * 1024

_WS = re.compile(r"[ \t\n\r]*")
_loads = json.loads


def open_head(
    stream: IO[bytes],
    *,
    what: str,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    blank_is_empty: bool = False,
) -> tuple[bytes, IO[bytes]] | BadLine:
    """(the first ``SNIFF_BYTES`` of a file, gzip undone, and the stream to read it all from), or
    the file-level ``BadLine`` saying why it cannot be read: unreadable, empty (``blank_is_empty``:
    white space alone is empty too), or binary (``what`` names what it is not)."""
    try:
        head, stream = peek(stream, SNIFF_BYTES)
        if head[:2] == GZIP_MAGIC:
            stream = GzipStream(stream, max_decompressed_bytes=max_decompressed_bytes)
            head, stream = peek(stream, SNIFF_BYTES)
        if text_encoding(head) is not None:  # UTF-16 or UTF-32 text (open_stream reads it as UTF-8 already)
            stream, _ = as_utf8(stream)
            head, stream = peek(stream, SNIFF_BYTES)
    except StreamError as exc:
        return BadLine(line_no=0, offset=0, reason=str(exc))
    except (OSError, ValueError, EOFError) as exc:
        return BadLine(line_no=0, offset=0, reason=f"the file could not be read ({exc})")
    if not (head.strip() if blank_is_empty else head):
        return BadLine(line_no=0, offset=0, reason="the file is empty")
    if looks_binary(head):
        return BadLine(line_no=0, offset=0, reason=f"binary file, not {what}", size=len(head))
    return head, stream


def unexpected(exc: Exception) -> str:
    """The reason said when an import stops on an error nothing else caught."""
    return f"the import stopped on an unexpected error ({exc.__class__.__name__}: {exc})"


def guarded(records: Iterator[Record], info: Callable[[], SessionInfo] = SessionInfo) -> Iterator[Record]:
    """``records`` with a last-resort guard: an unexpected error becomes a file-level ``BadLine``,
    then ``info()`` unless a ``SessionInfo`` came already."""
    done = False
    try:
        for record in records:
            if record.__class__ is SessionInfo:
                done = True
            yield record
    except Exception as exc:  # never raise: a last resort, the per-record guards catch the rest
        yield BadLine(line_no=0, offset=0, reason=unexpected(exc))
        if not done:
            yield info()


def read_objects(
    items: list,
    read: Callable[[dict, int], Any],
    bad: list[BadLine],
    *,
    name: str,
    failed: str | None = None,
    kind: str = "not an object",
) -> None:
    """``read(item, number)`` of each element of a document's list that is a JSON object (numbered
    from 1, the number its line and offset too); the others, and those ``read`` fails on, a
    ``BadLine`` in ``bad``: "``name`` N is a JSON string, ``kind``", "``failed`` N could not be read
    (...)" (``name`` and ``failed`` say ``{n}`` where the number goes)."""
    for number, item in enumerate(items, start=1):
        if item.__class__ is not dict:
            reason = f"{name.format(n=number)} is {json_kind(item)}, {kind}"
            bad.append(BadLine(line_no=number, offset=number, reason=reason))
            continue
        try:
            read(item, number)
        except Exception as exc:  # one odd element must not stop the import
            reason = f"{(failed or name).format(n=number)} could not be read ({exc.__class__.__name__}: {exc})"
            bad.append(BadLine(line_no=number, offset=number, reason=reason))


class JsonParser:
    """Base of line-based JSON parsers: the driver loop; subclasses read one object at a time."""

    finished = False
    what = "a JSONL session log"  # said of a binary file

    def __init__(
        self,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        progress_every_bytes: int = DEFAULT_PROGRESS_EVERY_BYTES,
        max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ):
        self.max_line_bytes = max(1, int(max_line_bytes))
        self.progress_every = max(1, int(progress_every_bytes))
        self.max_decompressed_bytes = max_decompressed_bytes
        self.chunk_size = chunk_size
        self.finished = False
        self.consumed_offset = 0
        self.consumed_lines = 0

    # -- what a format writes

    def process(self, obj: dict, line_no: int, offset: int, raw: str) -> Record | None:
        raise NotImplementedError

    def finish(self) -> Iterator[Record]:
        self.finished = True
        yield self.session_info()

    def session_info(self) -> SessionInfo:
        return SessionInfo(lines=self.consumed_lines, bytes_consumed=self.consumed_offset)

    # -- the driver

    def parse(self, stream: IO[bytes], start_offset: int = 0, start_line: int = 0) -> Iterator[Record]:
        """``run`` with a last-resort guard: an unexpected error becomes a file-level BadLine."""
        try:
            yield from self.run(stream, start_offset, start_line)
        except Exception as exc:  # never raise: a last resort, the per-line guard catches the rest
            yield BadLine(line_no=0, offset=self.consumed_offset, reason=unexpected(exc))
            if not self.finished:
                try:
                    info = self.session_info()
                except Exception:  # pragma: no cover - session_info only reads plain fields
                    info = SessionInfo()
                yield info


    def run(self, stream: IO[bytes], start_offset: int, start_line: int) -> Iterator[Record]:
        """The records of a stream: one ``process`` call per JSON object line (a progress notice
        every N bytes; a line over the cap reduced; a file that is one JSON array read whole), a
        ``BadLine`` for each line that is not one, then ``finish``."""
        self.consumed_offset = start_offset
        self.consumed_lines = start_line
        opened = self._open(stream, start_offset, start_line)
        if opened.__class__ is BadLine:
            yield opened
            yield self.session_info()
            return
        reader, maybe_array = opened
        lines = iter(reader)
        next_progress = start_offset + self.progress_every
        unterminated_end: int | None = None
        first_content = start_offset == 0
        process = self.process
        for item in lines:
            if item.__class__ is BadLine:
                yield item
                continue
            if item.__class__ is LongLine:
                if item.end >= next_progress:
                    yield ImportProgress(bytes_read=item.end, lines=item.line_no)
                    next_progress = item.end + self.progress_every
                yield from self._long_line(item, first_content and maybe_array)
                first_content = False
                if not item.newline and item.result.error is None:
                    unterminated_end = item.end
                continue
            line_no, offset, data, end, newline = item
            if end >= next_progress:
                yield ImportProgress(bytes_read=end, lines=line_no)
                next_progress = end + self.progress_every
            if not data or data.isspace():
                continue
            if line_no == 1 and data.startswith(BOM):
                data = data[3:]
            try:
                text = data.decode("utf-8")
                obj = _loads(text)
            except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError too
                if first_content and maybe_array and exc.__class__ is not UnicodeDecodeError:
                    yield from self._json_array(item, lines, reader)
                    yield from self.finish()
                    return
                first_content = False
                yield self._unreadable(line_no, offset, data, newline, exc)
                continue
            first_content = False
            if not newline:
                unterminated_end = end
            if obj.__class__ is not dict:
                yield self._not_an_object(line_no, offset, obj, len(data))
                continue
            try:
                record = process(obj, line_no, offset, text)
            except Exception as exc:  # one odd line must not stop the import
                yield self._failed(line_no, offset, exc, len(data))
                continue
            if record is not None:
                yield record
        self._consumed(reader, unterminated_end)
        yield from self.finish()

    def _open(self, stream: IO[bytes], start_offset: int, start_line: int) -> tuple[LineReader, bool] | BadLine:
        """(the line reader of the stream, whether the file may be one JSON array), or the
        file-level ``BadLine`` saying why it cannot be read. The head is sniffed at offset 0 only:
        a resumed read goes on from a point the file was read to already."""
        maybe_array = False
        if start_offset == 0:
            opened = open_head(stream, what=self.what, max_decompressed_bytes=self.max_decompressed_bytes)
            if opened.__class__ is BadLine:
                return opened
            head, stream = opened
            maybe_array = head.removeprefix(BOM).lstrip()[:1] == b"["
        reader = iter_lines(
            stream,
            start_offset=start_offset,
            start_line=start_line,
            max_line_bytes=self.max_line_bytes,
            chunk_size=self.chunk_size,
            long_line=self._reducer,
        )
        return reader, maybe_array

    def _consumed(self, reader: LineReader, unterminated_end: int | None) -> None:
        """How far the lines read reach: the last newline, or past a last line without one that
        was read (``unterminated_end``)."""
        self.consumed_offset = reader.consumed_offset
        self.consumed_lines = reader.consumed_lines
        if unterminated_end is not None and unterminated_end > self.consumed_offset:
            self.consumed_offset = unterminated_end

    def _unreadable(self, line_no: int, offset: int, data: bytes, newline: bool, exc: Exception) -> BadLine:
        """A line that is not UTF-8, or not JSON (a last line cut by the end of the file: incomplete)."""
        if not newline:
            return self._incomplete(line_no, offset, len(data))
        if exc.__class__ is UnicodeDecodeError:
            reason = f"line {line_no} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at position {exc.start})"
        else:
            reason = self._json_error(line_no, data.decode("utf-8"), exc)
        return BadLine(line_no=line_no, offset=offset, reason=reason, size=len(data))

    @staticmethod
    def _not_an_object(line_no: int, offset: int, value: Any, size: int) -> BadLine:
        return BadLine(line_no=line_no, offset=offset, reason=f"line {line_no} is {json_kind(value)}, not a JSON object", size=size)

    @staticmethod
    def _failed(line_no: int, offset: int, exc: Exception, size: int) -> BadLine:
        """A line ``process`` failed on."""
        reason = f"line {line_no} could not be read ({exc.__class__.__name__}: {exc})"
        return BadLine(line_no=line_no, offset=offset, reason=reason, size=size)

    def _reducer(self) -> Reducer:
        return Reducer(max_line_bytes=self.max_line_bytes)

    def _long_line(self, item: LongLine, maybe_array: bool) -> Iterator[Record]:
        """A line over the cap, reduced: a notice with its number, then its record."""
        line_no, offset, size = item.line_no, item.offset, item.size
        reduced = item.result
        over = f"line {line_no} is {human_size(size)}, over the {human_size(self.max_line_bytes)} limit"
        if reduced.error is not None:
            if not item.newline:
                yield self._incomplete(line_no, offset, size)
            else:
                yield BadLine(
                    line_no=line_no,
                    offset=offset,
                    reason=f"{over}, and is not valid JSON ({reduced.error}); skipped",
                    size=size,
                )
            return
        value = reduced.value
        if value.__class__ is list and maybe_array:
            # The whole file is one JSON array on one line: its objects, reduced, numbered from 1.
            yield BadLine(
                line_no=0,
                offset=0,
                reason=(
                    "the file is a JSON array, not JSONL (one JSON object per line); it is over the "
                    f"{human_size(self.max_line_bytes)} limit, so its {len(value)} elements were read "
                    f"reduced ({reduced.summary()}) as records (numbered from 1)"
                ),
                size=size,
            )
            for index, element in enumerate(value):
                yield from self._element(element, index + 1, offset)
            return
        if value.__class__ is not dict:
            yield BadLine(line_no=line_no, offset=offset, reason=f"{over}, and is {json_kind(value)}, not a JSON object; skipped", size=size)
            return
        yield BadLine(line_no=line_no, offset=offset, reason=f"{over}: imported reduced ({reduced.summary()})", size=size)
        yield from self._process_reduced(value, line_no, offset, f"line {line_no}")

    def _element(self, value: Any, number: int, offset: int, raw: str | None = None) -> Iterator[Record]:
        """Element ``number`` of a file that is one JSON array (``raw``: its text; None: reduced)."""
        if value.__class__ is not dict:
            yield BadLine(
                line_no=number,
                offset=offset,
                reason=f"element {number} of the array is {json_kind(value)}, not a JSON object",
            )
            return
        yield from self._process_reduced(value, number, offset, f"element {number} of the array", raw)

    def _process_reduced(self, obj: dict, line_no: int, offset: int, what: str, raw: str | None = None) -> Iterator[Record]:
        try:
            if raw is None:
                raw = reduced_json(obj)
            record = self.process(obj, line_no, offset, raw)
        except Exception as exc:  # one odd line must not stop the import
            yield BadLine(
                line_no=line_no,
                offset=offset,
                reason=f"{what} could not be read ({exc.__class__.__name__}: {exc})",
            )
            return
        if record is not None:
            yield record

    @staticmethod
    def _incomplete(line_no: int, offset: int, size: int) -> BadLine:
        return BadLine(
            line_no=line_no,
            offset=offset,
            reason=f"line {line_no} is incomplete (the file ends mid-line)",
            size=size,
        )

    @staticmethod
    def _json_error(line_no: int, text: str, exc: Exception) -> str:
        if text.lstrip().startswith("//"):
            return f"line {line_no} is a comment, not JSON"
        if isinstance(exc, RecursionError):
            return f"line {line_no} is nested deeper than {JSON_DEPTH} levels, too deep to read"
        if isinstance(exc, json.JSONDecodeError):
            return f"line {line_no} is not valid JSON ({exc.msg} at column {exc.colno})"
        return f"line {line_no} is not valid JSON ({exc})"

    def _json_array(self, first, lines, reader) -> Iterator[Record]:
        """The file is one JSON array (pretty-printed or not): say so, and import its objects."""
        reason = "the file is a JSON array, not JSONL (one JSON object per line)"
        base = first.offset + (3 if first.line_no == 1 and first.data.startswith(BOM) else 0)
        data = first.data[3:] if base != first.offset else first.data
        parts = [data, b"\n"] if first.newline else [data]
        total = len(data) + 1
        last_end = first.end
        too_big = False
        file_error = None
        for item in lines:
            if item.__class__ is not BadLine:
                last_end = item.end
            if item.__class__ is BadLine:
                if item.line_no == 0:
                    file_error = item
                too_big = True
                parts = []
                continue
            if too_big:
                continue
            total += len(item.data) + 1
            if total > self.max_line_bytes:
                too_big = True
                parts = []
                continue
            parts.append(item.data)
            if item.newline:
                parts.append(b"\n")
        self.consumed_offset = reader.consumed_offset
        self.consumed_lines = reader.consumed_lines
        if too_big:
            if file_error is not None:
                yield BadLine(line_no=0, offset=0, reason=f"{reason}; it was not imported")
                yield file_error
            else:
                yield BadLine(
                    line_no=0,
                    offset=0,
                    reason=f"{reason}; it is over the {human_size(self.max_line_bytes)} limit, so it was not imported",
                )
            return
        raw = b"".join(parts)
        parts = []
        try:
            text = raw.decode("utf-8")
            elements = array_elements(text)
        except (ValueError, RecursionError) as exc:
            detail = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
            yield BadLine(line_no=0, offset=0, reason=f"{reason}; it could not be read as a whole either ({detail})")
            return
        # The whole array was read: the file is consumed up to its last byte.
        self.consumed_offset = max(self.consumed_offset, last_end)
        yield BadLine(
            line_no=0,
            offset=0,
            reason=f"{reason}; its {len(elements)} elements were read as records (numbered from 1)",
        )
        char_pos = 0
        byte_pos = base
        for index, (start, stop, value) in enumerate(elements):
            byte_pos += len(text[char_pos:start].encode("utf-8", "surrogatepass"))
            char_pos = start
            yield from self._element(value, index + 1, byte_pos, text[start:stop])


def reduced_json(value: Any) -> str:
    """The stored text of a reduced line: compact JSON of the reduced object (with its markers)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (from a \ud800 escape): keep it escaped
        text = json.dumps(value, separators=(",", ":"))
    return text


def array_elements(text: str) -> list[tuple[int, int, Any]]:
    """(start, stop, value) of each element of a JSON array text; ValueError when it is not one."""
    decode = json.JSONDecoder().raw_decode
    ws = _WS.match
    n = len(text)
    i = ws(text, 0).end()
    if i >= n or text[i] != "[":
        raise ValueError("it does not start with '['")
    i = ws(text, i + 1).end()
    out: list[tuple[int, int, Any]] = []
    if i < n and text[i] == "]":
        i += 1
    else:
        while True:
            value, stop = decode(text, i)
            out.append((i, stop, value))
            i = ws(text, stop).end()
            if i < n and text[i] == ",":
                i = ws(text, i + 1).end()
                continue
            if i < n and text[i] == "]":
                i += 1
                break
            raise ValueError(f"expected ',' or ']' at character {i}")
    if ws(text, i).end() != n:
        raise ValueError(f"unexpected data after the array at character {i}")
    return out
