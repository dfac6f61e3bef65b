"""Reading a session log that is one JSON document (pure, no Django): the Gemini CLI, message
arrays, OpenHands trajectories and SWE-agent ``.traj`` files. Nothing here raises: what cannot be
read comes back as a file-level ``BadLine`` (line 0) with a sentence a person can read.

- ``read_text(source, what)``: the whole decompressed file as text, within the line cap
  (``max_line_bytes``: a document is one record, so the cap on one record applies to it), with
  every problem (empty, binary, over the cap, not UTF-8, unreadable) a file-level ``BadLine``;
  the caller parses it (``json_error(exc)``: a sentence for a JSON syntax error).
- ``read_json(stream, what=...)``: the same read (gzip undone, head checked first) and parsed: a
  ``Document`` (its value and text) or the ``BadLine``; ``read_json_file(path)`` for a file inside
  a folder a format reads as one session.
- ``head_value(head)``: for sniffers, the JSON value at the start of the first 64 KB, as much of it
  as is complete (a document cut by the sniff window keeps its complete members and elements),
  and whether more JSON follows it (then the file is JSON lines, not one document).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import IO, Any

from contextviewer.core.records import BadLine
from contextviewer.importers.common import BOM, JSON_DEPTH, looks_binary
from contextviewer.importers.driver import open_head
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.lines import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    StreamError,
    human_size,
)

_WS = re.compile(r"[ \t\n\r]*")
_STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*')
_decode = json.JSONDecoder().raw_decode
_CHUNK = 1 << 20


def _read_all(stream: IO[bytes], cap: int) -> tuple[bytes | None, int]:
    """(every byte of ``stream``, or None once it goes over ``cap``; how many bytes were read)."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            return b"".join(chunks), total
        total += len(chunk)
        if total > cap:
            return None, total
        chunks.append(chunk)


def _unreadable(exc: Exception) -> BadLine:
    if isinstance(exc, StreamError):
        return BadLine(0, 0, str(exc))
    return BadLine(0, 0, f"the file could not be read ({exc})")


def read_text(source: ParseInput, what: str) -> tuple[str | None, list[BadLine]]:
    """(the file's text, problems): text is None when the file cannot be read as a whole."""
    stream = source.stream
    own = False
    if stream is None:
        try:
            stream = open(source.path, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            return None, [BadLine(0, 0, f"the file could not be read ({exc.strerror or exc})")]
        own = True
    cap = max(1, int(source.max_line_bytes))
    try:
        data, total = _read_all(stream, cap)
    except (StreamError, OSError, ValueError, EOFError) as exc:
        return None, [_unreadable(exc)]
    finally:
        if own:
            stream.close()
    if data is None:
        return None, [
            BadLine(
                0,
                0,
                f"{what} is read whole, and this file is over the {human_size(cap)} limit: not imported",
                size=total,
            )
        ]
    if data.startswith(BOM):
        data = data[3:]
    if not data.strip():
        return None, [BadLine(0, 0, "the file is empty")]
    if looks_binary(data[:8192]):
        return None, [BadLine(0, 0, f"binary file, not {what}", size=len(data))]
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return None, [
            BadLine(
                line,
                exc.start,
                f"the file is not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line}): not imported",
            )
        ]


class Document:
    """A JSON document read whole: its value and its text (for the raw of its elements)."""

    __slots__ = ("value", "text", "size")

    def __init__(self, value: Any, text: str, size: int):
        self.value = value
        self.text = text
        self.size = size


def read_json(
    stream: IO[bytes] | None,
    *,
    what: str,
    max_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Document | BadLine:
    """The JSON document of ``stream`` (gzip undone), or the BadLine saying why it is not one.
    ``what`` names the format's document in the reasons ("an OpenHands trajectory")."""
    if stream is None:
        return BadLine(line_no=0, offset=0, reason="the file could not be opened")
    opened = open_head(stream, what=what, max_decompressed_bytes=max_decompressed_bytes)
    if opened.__class__ is BadLine:
        return opened
    _head, stream = opened
    try:
        data, total = _read_all(stream, max_bytes)
    except (StreamError, OSError, ValueError, EOFError) as exc:
        return _unreadable(exc)
    if data is None:
        return BadLine(
            line_no=0,
            offset=0,
            reason=f"the file is over the {human_size(max_bytes)} limit for {what} read whole, so it was not imported",
            size=total,
        )
    data = data.removeprefix(BOM)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return BadLine(line_no=0, offset=0, reason=f"the file is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return BadLine(
            line_no=0,
            offset=0,
            reason=f"the file is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}), so it is not {what}",
        )
    except RecursionError:
        return BadLine(line_no=0, offset=0, reason=f"a JSON document nested deeper than {JSON_DEPTH} levels: not {what}")
    except ValueError as exc:
        return BadLine(line_no=0, offset=0, reason=f"the file could not be read as JSON ({exc.__class__.__name__})")
    return Document(value, text, total)


def read_source(source: ParseInput, what: str) -> Document | BadLine:
    """``read_json`` of a format's input, within its caps."""
    return read_json(source.stream, what=what, max_bytes=source.max_line_bytes,
                     max_decompressed_bytes=source.max_decompressed_bytes)


def read_json_file(path: Path, *, max_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Document | BadLine:
    """``read_json`` of a file on disk (a file inside a folder a format reads as one session)."""
    try:
        with open(path, "rb") as fh:
            return read_json(fh, what=f"a JSON file ({path.name})", max_bytes=max_bytes)
    except OSError as exc:
        return BadLine(line_no=0, offset=0, reason=f"{path.name} could not be read ({exc.strerror or exc})")


def json_error(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    if isinstance(exc, RecursionError):
        return f"nested deeper than {JSON_DEPTH} levels"
    return str(exc)


# -- sniffing ------------------------------------------------------------------------------------

_CUT = object()  # a value the sniff window cut


def _partial(text: str, i: int, depth: int) -> tuple[Any, int | None]:
    """(value, end) of the JSON value at ``text[i]``; end None when the text ends inside it (the
    value then holds what was complete: members of an object, elements of an array)."""
    n = len(text)
    if i >= n:
        return _CUT, None
    ch = text[i]
    if depth > 2 or ch not in "[{":
        try:
            return _decode(text, i)
        except (ValueError, RecursionError):
            return (_cut_string(text, i) if ch == '"' else _CUT), None
    if ch == "[":
        out: list = []
        i = _WS.match(text, i + 1).end()
        if i < n and text[i] == "]":
            return out, i + 1
        while True:
            value, end = _partial(text, i, depth + 1)
            if end is None:  # the element the window cut is left out, unless it is the only one
                if not out and value.__class__ is dict and value:  # (an element longer than the window)
                    out.append(value)
                return out, None
            out.append(value)
            i = _WS.match(text, end).end()
            if i < n and text[i] == ",":
                i = _WS.match(text, i + 1).end()
                continue
            if i < n and text[i] == "]":
                return out, i + 1
            return out, None
    obj: dict = {}
    i = _WS.match(text, i + 1).end()
    if i < n and text[i] == "}":
        return obj, i + 1
    while True:
        try:
            key, i = _decode(text, i)
        except (ValueError, RecursionError):
            return obj, None
        i = _WS.match(text, i).end()
        if i >= n or text[i] != ":" or not isinstance(key, str):
            return obj, None
        i = _WS.match(text, i + 1).end()
        value, end = _partial(text, i, depth + 1)
        if end is None:
            if value is not _CUT:
                obj[key] = value
            return obj, None
        obj[key] = value
        i = _WS.match(text, end).end()
        if i < n and text[i] == ",":
            i = _WS.match(text, i + 1).end()
            continue
        if i < n and text[i] == "}":
            return obj, i + 1
        return obj, None


def _cut_string(text: str, i: int) -> Any:
    """The start of the JSON string at ``text[i]`` that the sniff window cut (a 100,000-character id
    is a string still), or ``_CUT`` when it is not one (it ends in the head: it is malformed)."""
    body = _STRING_BODY.match(text, i + 1).end()
    if body < len(text) and text[body:] != "\\":  # it ends (or breaks) inside the head
        return _CUT
    for back in range(7):  # an escape the window cut in two is left out
        try:
            return json.loads(text[i:body - back] + '"')
        except (ValueError, RecursionError):
            continue
    return _CUT


def head_value(head: bytes) -> tuple[Any, bool]:
    """(the JSON value the head starts with, as much as is complete, or None; True when more JSON
    follows it, i.e. the file is JSON lines)."""
    value, more, _cut = head_value_cut(head)
    return value, more


def head_value_cut(head: bytes) -> tuple[Any, bool, bool]:
    """``head_value``, and whether the sniff window cut the value (the file goes on past the head).
    A string the window cut is kept as far as the head holds it; an element longer than the window
    is kept as far as it is complete when it is the first."""
    text = head.removeprefix(BOM).decode("utf-8", "replace")
    i = _WS.match(text, 0).end()
    if i >= len(text) or text[i] not in "[{":
        return None, False, False
    value, end = _partial(text, i, 0)
    if value is _CUT:
        return None, False, False
    more = end is not None and text[end:].strip() != ""
    return value, more, end is None
