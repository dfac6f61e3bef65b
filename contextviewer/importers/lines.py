"""Byte-stream line reading with safety caps, shared by the JSONL importers.

Pure (no Django). Reads big chunks and splits them with bytes methods, so the cost per line is a
few C calls. Two caps protect the process:

- ``max_line_bytes``: a line longer than this is never held in memory whole. Without a
  ``long_line`` sink it is skipped and reported as a ``BadLine`` with its size; with one, its bytes
  are streamed into a fresh sink (``feed``, then ``close(size, complete)``) and a ``LongLine`` with
  what the sink made is handed out (the JSON driver reduces it: see ``longline.py``).
- ``max_decompressed_bytes`` (gzip input): decompression stops at the cap with a file-level
  ``BadLine`` (line_no 0), so a gzip bomb cannot exhaust memory or disk.
"""

from __future__ import annotations

import codecs
import io
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

from contextviewer.core.records import BadLine

GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_MAX_LINE_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_DECOMPRESSED_BYTES = 4 * 1024 * 1024 * 1024
DEFAULT_CHUNK_SIZE = 1 << 20


def human_size(n: int) -> str:
    """'50.0 MiB', '4.0 GiB', '512 bytes': binary units (1 MiB = 1,048,576 bytes) named as such,
    one decimal."""
    if n < 1024:
        return f"{n} bytes"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    return f"{n} bytes"  # pragma: no cover


class StreamError(Exception):
    """A file-level read problem (decompression cap, corrupt gzip). ``str()`` is a readable reason."""


class Line(NamedTuple):
    line_no: int  # 1-based
    offset: int  # byte offset of the line start
    data: bytes  # the line without its newline
    end: int  # offset just after the line (after its newline when it has one)
    newline: bool  # False only for a last line that ends the stream without a newline


class LongLine(NamedTuple):
    """A line over the cap, streamed through a ``long_line`` sink (never held whole)."""

    line_no: int
    offset: int
    size: int  # the line's length without its newline
    end: int
    newline: bool
    result: Any  # what the sink's close() returned


# -- streams ------------------------------------------------------------------------------------


class PrefixedStream(io.RawIOBase):
    """Puts already-read bytes back in front of a stream (for sniffing non-seekable input)."""

    def __init__(self, prefix: bytes, stream: IO[bytes]):
        self._prefix = prefix
        self._stream = stream

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._prefix:
            if size is None or size < 0:
                data, self._prefix = self._prefix + self._stream.read(), b""
                return data
            data, self._prefix = self._prefix[:size], self._prefix[size:]
            return data
        return self._stream.read(size)

    def readinto(self, b) -> int:  # pragma: no cover - read() is what we use
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            super().close()


class _Wrapped(io.RawIOBase):
    """A readable stream over another one (`_raw`), whose `read` subclasses write: readinto from
    read, and closing it closes the stream it wraps."""

    _raw: IO[bytes]

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # pragma: no cover
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


class GzipStream(_Wrapped):
    """Streams gzip data through ``zlib.decompressobj`` with a cap on the decompressed total.

    Handles concatenated gzip members. Past the cap, ``read`` raises ``StreamError``; the bytes
    before the cap are returned first, so every complete line before the stop can still be read.
    """

    def __init__(self, raw: IO[bytes], *, max_decompressed_bytes: int, input_chunk: int = 1 << 16):
        self._raw = raw
        self._cap = max_decompressed_bytes
        self._input_chunk = input_chunk
        self._d = zlib.decompressobj(wbits=31)
        self._pending = b""  # compressed input not yet fed (unconsumed_tail)
        self._out = 0  # decompressed bytes returned so far
        self._eof = False
        self._member_started = False
        self._error: StreamError | None = None

    @property
    def decompressed_bytes(self) -> int:
        return self._out

    def _cap_error(self) -> StreamError:
        return StreamError(
            f"gzip data expands beyond the {human_size(self._cap)} cap; import stopped (possible gzip bomb)"
        )

    def read(self, size: int = -1) -> bytes:
        if self._error is not None:
            raise self._error
        if self._eof:
            return b""
        if size is None or size < 0:
            size = 1 << 20
        size = max(1, size)
        pieces: list[bytes] = []
        got = 0
        while got < size:
            room = self._cap - self._out - got  # may be 0: then one more byte means "over the cap"
            if not self._pending:
                self._pending = self._raw.read(self._input_chunk)
                if not self._pending:
                    if self._member_started:
                        self._error = StreamError("the gzip data ends early (the file is truncated)")
                    else:
                        self._eof = True
                    break
            self._member_started = True
            # One byte more than the room tells "over the cap" without inflating further.
            want = min(size - got, room + 1)
            try:
                out = self._d.decompress(self._pending, want)
            except zlib.error as exc:
                self._error = StreamError(f"the gzip data is corrupt ({exc})")
                break
            self._pending = self._d.unconsumed_tail
            if self._d.eof:
                # Past a member's end, unused_data holds every byte fed after it; after an
                # output-limited decompress unconsumed_tail may hold the same bytes again, so it
                # is not added (the next member would be fed twice).
                rest = self._d.unused_data.lstrip(b"\x00")
                self._d = zlib.decompressobj(wbits=31)
                self._member_started = False
                # Another member may follow; anything else after the data is ignored.
                self._pending = rest if rest[:2] == GZIP_MAGIC or rest == GZIP_MAGIC[:1] else b""
                if rest and not self._pending:
                    self._eof = True
            if out:
                if len(out) > room:
                    pieces.append(out[:room])
                    got += room
                    self._error = self._cap_error()
                    break
                pieces.append(out)
                got += len(out)
            if self._eof:
                break
        self._out += got
        if got == 0 and self._error is not None:
            raise self._error
        return b"".join(pieces)



# Byte order marks, longest first (UTF-32 LE's starts with UTF-16 LE's).
BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def text_encoding(head: bytes) -> tuple[str, int] | None:
    """(encoding, BOM length) of text written in UTF-16 or UTF-32, from a file's first bytes: a byte
    order mark says it; without one, text whose first characters are ASCII with NUL bytes beside
    them in a fixed pattern (JSON lines saved as "Unicode" on Windows, or by PowerShell's ``>``)
    is UTF-16 or UTF-32. None:
    not one of these (UTF-8, or binary)."""
    for bom, encoding in BOMS:
        if head.startswith(bom):
            return encoding, len(bom)
    sample = head[:64]
    for encoding, unit, at in (("utf-32-le", 4, 0), ("utf-32-be", 4, 3), ("utf-16-le", 2, 0), ("utf-16-be", 2, 1)):
        units = [sample[i : i + unit] for i in range(0, len(sample) - unit + 1, unit)][:16]
        if len(units) < 2:
            continue
        # ASCII characters (no NUL, no high bit) in their byte, the other bytes NUL: the first two
        # (JSON starts so) and most of the rest (keys and punctuation are ASCII).
        ascii_units = [0 < u[at] < 0x80 and u[:at] + u[at + 1 :] == bytes(unit - 1) for u in units]
        if all(ascii_units[:2]) and sum(ascii_units) * 2 >= len(units):
            return encoding, 0
    return None


class Utf8Stream(_Wrapped):
    """UTF-16 or UTF-32 text read as UTF-8 bytes (what every importer reads), decoded as it is read.

    Offsets past it are offsets in the UTF-8 bytes, so the stream is not seekable; a grown file of
    this kind is read again whole (ingest keeps what is stored). A malformed character (a lone
    surrogate) becomes U+FFFD."""

    def __init__(self, raw: IO[bytes], encoding: str, *, chunk: int = 1 << 16):
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._chunk = chunk
        self._buffer = b""
        self._eof = False

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = 1 << 20
        while len(self._buffer) < size and not self._eof:
            data = self._raw.read(self._chunk)
            if not data:
                self._eof = True
                self._buffer += self._decoder.decode(b"", final=True).encode("utf-8", "surrogatepass")
                break
            self._buffer += self._decoder.decode(data).encode("utf-8", "surrogatepass")
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out



def as_utf8(stream: IO[bytes]) -> tuple[IO[bytes], str | None]:
    """``stream``, read as UTF-8 when it is UTF-16 or UTF-32 text (its byte order mark dropped),
    and the encoding it was in (None: passed through)."""
    if _seekable(stream):
        head, stream = peek(stream, 64)
    else:  # one read: a gzip stream hands out the bytes before an error, then raises the error
        head = stream.read(64) or b""
        stream = PrefixedStream(head, stream)
    found = text_encoding(head)
    if found is None:
        return stream, None
    encoding, bom = found
    if bom:
        stream.read(bom)
    return Utf8Stream(stream, encoding), encoding


def utf8_head(head: bytes) -> bytes:
    """The first bytes of a file as UTF-8 when they are UTF-16 or UTF-32 text (for sniffing); a
    character cut at the end is left out."""
    found = text_encoding(head)
    if found is None:
        return head
    encoding, bom = found
    return codecs.getincrementaldecoder(encoding)(errors="replace").decode(head[bom:]).encode("utf-8", "surrogatepass")


def peek(stream: IO[bytes], size: int) -> tuple[bytes, IO[bytes]]:
    """Read up to ``size`` bytes and return them with a stream that still starts at them."""
    head = b""
    while len(head) < size:
        data = stream.read(size - len(head))
        if not data:
            break
        head += data
    if _seekable(stream):
        try:
            stream.seek(-len(head), io.SEEK_CUR)
            return head, stream
        except (OSError, ValueError):
            pass
    return head, PrefixedStream(head, stream)


def open_stream(
    path_or_fileobj: str | Path | IO[bytes],
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> tuple[IO[bytes], str | None]:
    """Open a file (or wrap a binary file object) for line reading.

    Returns ``(stream, compression)`` with compression ``"gzip"``, the text encoding the file was
    in when it is UTF-16 or UTF-32 (``"utf-16-le"``: it is read as UTF-8), or ``None``. Gzip is
    detected by its magic bytes (not the file name) and streamed; plain data passes through
    unchanged. Either way the stream is not seekable, and offsets are in what it gives.
    """
    if isinstance(path_or_fileobj, (str, Path)):
        raw: IO[bytes] = open(path_or_fileobj, "rb")  # noqa: SIM115 - the caller closes the stream
    else:
        raw = path_or_fileobj
    head, raw = peek(raw, 2)
    compression = None
    if head == GZIP_MAGIC:
        raw, compression = GzipStream(raw, max_decompressed_bytes=max_decompressed_bytes), "gzip"
    try:
        raw, encoding = as_utf8(raw)
    except StreamError:  # a corrupt gzip head: the reader says so when it reads it
        return raw, compression
    return raw, compression or encoding


def skip_to(stream: IO[bytes], offset: int, *, chunk_size: int = DEFAULT_CHUNK_SIZE) -> int:
    """Position a fresh stream at ``offset`` (seek when possible, else read and discard).

    Returns the offset reached (smaller than ``offset`` when the stream is shorter).
    """
    if offset <= 0:
        return 0
    if _seekable(stream):
        try:
            stream.seek(offset)
            return offset
        except (OSError, ValueError):
            pass
    done = 0
    while done < offset:
        data = stream.read(min(chunk_size, offset - done))
        if not data:
            break
        done += len(data)
    return done


def _seekable(stream) -> bool:
    try:
        return bool(stream.seekable())
    except (AttributeError, OSError, ValueError):
        return False


# -- lines --------------------------------------------------------------------------------------


class LineReader:
    """Iterator of ``Line`` and ``BadLine`` objects; see ``iter_lines``.

    ``consumed_offset``/``consumed_lines`` always describe the end of the last newline-terminated
    line handed out (good or bad), which is where a later resume must start.
    """

    def __init__(
        self,
        stream,
        *,
        start_offset: int,
        start_line: int,
        max_line_bytes: int,
        chunk_size: int,
        hold_bytes: int | None = None,
        long_line: Callable[[], Any] | None = None,
    ):
        self.stream = stream
        self.long_line = long_line
        self.start_offset = start_offset
        self.start_line = start_line
        self.max_line_bytes = max(1, int(max_line_bytes))
        self.chunk_size = max(1, int(chunk_size))
        self.hold_bytes = hold_bytes
        self.consumed_offset = start_offset
        self.consumed_lines = start_line
        self.bytes_read = start_offset  # offset just after the last byte read from the stream
        self.error: str | None = None
        # Where the stream and the hold limit stand (set by _start, when reading begins).
        self._origin: int | None = None  # stream position of offset 0, when the stream is seekable
        self._seekable = False
        self._hold_limit = self.max_line_bytes
        # The pending line: a line begun in an earlier chunk, whose newline is not read yet.
        self._parts: list[bytes] = []  # its bytes, while it is held
        self._plen = 0  # its length so far
        self._scanning = False  # seekable: the pending line is not held, only measured
        self._skipping = False  # over the cap: discard until the next newline
        self._sink = None  # over the cap, not seekable, with a long_line factory: the line's bytes go here
        self._gen = self._run()

    def __iter__(self) -> Iterator[Line | LongLine | BadLine]:
        return self._gen

    def __next__(self) -> Line | LongLine | BadLine:
        return next(self._gen)

    def _over(self, line_no: int, offset: int, size: int, newline: bool, sink=None, origin=None, parts=(), tail=b""):
        """A line over the cap: a ``BadLine``, or with a sink factory a ``LongLine``. Its bytes are
        in ``sink`` (fed already), or in ``parts`` + ``tail``, or re-read from a seekable stream at
        ``origin + offset`` (+ ``tail``, the bytes after the re-read range). None after a read error."""
        if self.long_line is None:
            return self._too_long(line_no, offset, size)
        if sink is None:
            sink = self.long_line()
            if parts:
                for part in parts:
                    sink.feed(part)
            elif origin is not None:
                if not self._feed_range(sink, origin, offset, size - len(tail)):
                    return None
        if tail:
            sink.feed(tail)
        end = offset + size + (1 if newline else 0)
        return LongLine(line_no, offset, size, end, newline, sink.close(size, newline))

    def _feed_range(self, sink, origin: int, offset: int, size: int) -> bool:
        """Feed ``size`` bytes at ``offset`` to ``sink``, chunk by chunk, and put the stream back."""
        stream = self.stream
        try:
            here = stream.tell()
            stream.seek(origin + offset)
            left = size
            while left > 0:
                data = stream.read(min(self.chunk_size, left))
                if not data:
                    break
                left -= len(data)
                sink.feed(data)
            stream.seek(here)
        except (OSError, ValueError) as exc:
            self.error = f"the file could not be re-read ({exc.__class__.__name__}: {exc})"
            return False
        if left:
            self.error = "the file changed while it was read"
            return False
        return True

    def _too_long(self, line_no: int, offset: int, size: int) -> BadLine:
        return BadLine(
            line_no=line_no,
            offset=offset,
            reason=(
                f"line {line_no} is {human_size(size)}, over the {human_size(self.max_line_bytes)} limit; skipped"
            ),
            size=size,
        )

    def _read(self) -> bytes | None:
        """Next chunk, b"" at the end, None after a file-level error (recorded in self.error)."""
        try:
            data = self.stream.read(self.chunk_size)
        except StreamError as exc:
            self.error = str(exc)
            return None
        except (OSError, EOFError, zlib.error, ValueError) as exc:
            self.error = f"the file could not be read ({exc.__class__.__name__}: {exc})"
            return None
        if data is None:  # non-blocking raw stream with nothing available: treat as the end
            return b""
        self.bytes_read += len(data)
        return data

    def _run(self) -> Iterator[Line | LongLine | BadLine]:
        """The lines: whole lines in a chunk are split off it in one go (the fast path); a line that
        runs on past its chunk is pending (``_hold``, ``_grow``) until a newline or the end of the
        stream ends it (``_end_pending``)."""
        self._start()
        cap = self.max_line_bytes
        line_no = self.start_line
        pos = self.start_offset  # offset of the start of the pending (partial) line
        while True:
            chunk = self._read()
            if not chunk:
                break
            start = 0
            if self._parts or self._scanning or self._skipping:  # a line started in an earlier chunk
                idx = chunk.find(b"\n")
                if idx < 0:
                    self._grow(chunk)
                    continue
                line_no += 1
                end = pos + self._plen + idx + 1
                item = self._end_pending(line_no, pos, chunk[:idx], True)
                if item is None:
                    break  # self.error is set: reported below
                self.consumed_offset, self.consumed_lines = end, line_no
                yield item
                pos = end
                start = idx + 1
            # Fast path: whole lines inside this chunk.
            last_nl = chunk.rfind(b"\n")
            if last_nl >= start:
                for data in chunk[start:last_nl].split(b"\n"):
                    line_no += 1
                    size = len(data)
                    end = pos + size + 1
                    if size > cap:
                        bad = self._over(line_no, pos, size, True, tail=data)
                        self.consumed_offset, self.consumed_lines = end, line_no
                        yield bad
                    else:
                        self.consumed_offset, self.consumed_lines = end, line_no
                        yield Line(line_no, pos, data, end, True)
                    pos = end
                start = last_nl + 1
            if start < len(chunk):
                self._hold(chunk[start:] if start else chunk)
        # End of the stream: the pending line has no newline. After a file-level error the pending
        # bytes are cut by the error, not by the file, so they are not handed out as a line.
        if self.error is None and (self._parts or self._scanning or self._skipping):
            item = self._end_pending(line_no + 1, pos, b"", False)
            if item is not None:
                yield item
        if self.error is not None:
            yield BadLine(line_no=0, offset=self.bytes_read, reason=self.error)

    def _start(self) -> None:
        """Where the stream stands (a seekable one can re-read a line from its start) and so how
        much of a partial line is held."""
        seekable = _seekable(self.stream)
        if seekable:
            try:
                self._origin = self.stream.tell() - self.start_offset
            except (OSError, ValueError):
                seekable = False
        self._seekable = seekable
        # Holding a partial line costs memory; past this size a seekable stream is scanned instead
        # and the line re-read in one piece once its end (and so its size) is known.
        hold = self.hold_bytes if self.hold_bytes is not None else max(4 * self.chunk_size, 1 << 22)
        self._hold_limit = min(self.max_line_bytes, max(1, hold)) if seekable else self.max_line_bytes

    def _hold(self, data: bytes) -> None:
        """``data`` (no newline in it) goes on the pending line, held in parts up to the hold limit.
        Past it the line is no longer held: a seekable stream measures it (scanning) to re-read it
        whole; over the cap it is skipped, its bytes streamed into a ``long_line`` sink when the
        stream cannot be re-read."""
        self._plen += len(data)
        if self._plen <= self._hold_limit:
            self._parts.append(data)
            return
        if self._plen > self.max_line_bytes:
            self._skipping = True
            if self.long_line is not None and not self._seekable:
                self._sink = sink = self.long_line()
                for part in self._parts:
                    sink.feed(part)
                sink.feed(data)
        else:
            self._scanning = True
        self._parts = []

    def _grow(self, chunk: bytes) -> None:
        """A whole chunk without a newline: the pending line runs on through it."""
        if not (self._scanning or self._skipping):
            self._hold(chunk)
            return
        self._plen += len(chunk)
        if self._sink is not None:
            self._sink.feed(chunk)
        if self._scanning and self._plen > self.max_line_bytes:
            self._scanning, self._skipping = False, True

    def _end_pending(self, line_no: int, pos: int, head: bytes, newline: bool) -> Line | LongLine | BadLine | None:
        """The pending line, ended by ``head`` (its bytes before the newline; b"" at the end of the
        stream): joined from its parts, re-read once measured, or over the cap (a ``LongLine`` or a
        ``BadLine``). None after a read error (in self.error). The next line starts afresh."""
        size = self._plen + len(head)
        if self._skipping or size > self.max_line_bytes:
            item = self._over(line_no, pos, size, newline, sink=self._sink, origin=self._origin, parts=self._parts, tail=head)
        elif self._scanning:
            data = self._reread(self._origin, pos, size)
            item = None if data is None else Line(line_no, pos, data, pos + size + (1 if newline else 0), newline)
        else:
            self._parts.append(head)
            item = Line(line_no, pos, b"".join(self._parts), pos + size + (1 if newline else 0), newline)
        self._parts, self._plen, self._scanning, self._skipping, self._sink = [], 0, False, False, None
        return item

    def _reread(self, origin: int | None, offset: int, size: int) -> bytes | None:
        """Read ``size`` bytes at ``offset`` and put the stream back where it was."""
        stream = self.stream
        try:
            here = stream.tell()
            stream.seek(origin + offset)
            data = stream.read(size)
            stream.seek(here)
        except (OSError, ValueError) as exc:
            self.error = f"the file could not be re-read ({exc.__class__.__name__}: {exc})"
            return None
        if len(data) != size:
            self.error = "the file changed while it was read"
            return None
        return data


def iter_lines(
    stream: IO[bytes],
    *,
    start_offset: int = 0,
    start_line: int = 0,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    hold_bytes: int | None = None,
    long_line: Callable[[], Any] | None = None,
) -> LineReader:
    """Lines of a byte stream positioned at ``start_offset``.

    Yields ``Line`` objects (numbered from ``start_line + 1``) and ``BadLine`` objects: a line over
    ``max_line_bytes`` (never held whole in memory) and, last, a file-level read error with
    ``line_no=0`` (decompression cap, corrupt or truncated gzip). Every complete line before such an
    error is yielded first. The returned ``LineReader`` also tells how far complete lines reach.

    On a seekable stream a partial line is buffered up to ``hold_bytes`` (default: 4 chunks, at
    least 4 MB); a longer line is only measured, then re-read in one piece if it is within the cap.
    With ``long_line`` (a factory of sinks), a line over the cap is a ``LongLine`` instead of a
    ``BadLine``: on a seekable stream it is measured, then re-read chunk by chunk into a sink; on
    another its bytes are held up to the cap, then streamed into the sink.
    """
    return LineReader(
        stream,
        start_offset=start_offset,
        start_line=start_line,
        max_line_bytes=max_line_bytes,
        chunk_size=chunk_size,
        hold_bytes=hold_bytes,
        long_line=long_line,
    )
