"""aider chat histories (``.aider.chat.history.md``) -> normalized records.

Pure and streaming (see ../shared/docs/formats.md §6.3). The file is Markdown written for people,
appended to by every aider run in a repository:

- ``# aider chat started at 2024-08-05 19:33:02`` opens a session (one conversation each; text
  before the first header is the tail of a session whose start is not in the file);
- ``#### text`` lines are what the user typed (consecutive ones are one user message);
- ``> text`` lines are aider's own output (commands, files added, errors, lint and test output):
  each output aider wrote is one ``tool`` message. A multi-line output is written with ``> `` on its
  first line only and two trailing spaces on its last, so an output whose first line does not end
  with two spaces goes on until a line that does;
- everything else is the assistant's reply (Markdown, edit blocks, diffs), one message per reply.
  A ``> `` line inside an open code fence of a reply is the reply's, not aider's output.

Usage: ``> Tokens: 12,566 sent, 1.1k cache write, 3.3k cache hit, 84 received. Cost: …`` lines are
measured usage, one ``UsageRecord`` each, placed at the assistant reply they follow (the reply of
the current turn not yet claimed by a call; else the output message holding the line). Newer aider
rounds its figures (``3.3k``, ``11k``, ``1.2M``): the record then holds the rounded value and the
output message is flagged ``usage_rounded`` (its text keeps the line as written). "sent" is the
whole prompt in aider ≥ 0.51 (it includes cache write and cache hit); older lines (``N cached``,
or a "sent" smaller than its cache figures) counted only the uncached part, so ``input_uncached`` is
``sent - write - hit`` when that is not negative, else ``sent``.

Uuids are ``<file stem>@<start time>:<line offset in the session>``: each message starts where
aider began one of its writes, so a grown file (read again whole: storage DOCUMENT) gives the same
uuids for what was there before, and the session still being written gets its new messages.
Empty ``>`` lines (spacing) go with the output that follows them; a run of them that no output
follows holds no text and is left out.

Memory is bounded by one turn: records are yielded as each turn ends, and each session's model
calls and ``SessionInfo`` as soon as the next header (or the end of the file) closes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO

from contextviewer.core.records import (
    BadLine,
    Block,
    ImportProgress,
    MessageRecord,
    Record,
    SessionInfo,
    UsageRecord,
)
from contextviewer.importers.common import BOM, parse_timestamp
from contextviewer.importers.driver import open_head, unexpected
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.lines import DEFAULT_MAX_DECOMPRESSED_BYTES, DEFAULT_MAX_LINE_BYTES, iter_lines
from contextviewer.importers.aider.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    HEADER_PREFIX,
    HISTORY_NAME,
    sniff,
)

_HEADER = re.compile(r"^# aider chat started at\s*(.*?)\s*$")
_USAGE_FIELD = re.compile(r"([0-9][0-9,]*(?:\.[0-9]+)?)\s*([kKmM]?)\s+(sent|cache write|cache hit|cached|received)\b")
# A model line names a model (`gpt-4o`, `anthropic/claude-3-opus-20240229`, `ollama/llama3:70b`):
# output that merely starts so (`Models: ['claude-3-opus-20240229', ...]`, a printed list) is not one.
_MODEL = re.compile(r"^(?:Main model|Models|Model):\s*([A-Za-z0-9][\w./:@+-]*)(?:\s|$)")
_VERSION = re.compile(r"^Aider v(\d\S*)")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
DEFAULT_PROGRESS_EVERY_BYTES = 8 * 1024 * 1024


def _number(digits: str, suffix: str) -> tuple[int, bool]:
    """(value, rounded) of '12,566', '3.3k', '11k', '1.2M'."""
    value = float(digits.replace(",", ""))
    if suffix in ("k", "K"):
        return int(round(value * 1_000)), True
    if suffix in ("m", "M"):
        return int(round(value * 1_000_000)), True
    return int(value), False


def usage_of(text: str) -> dict[str, int] | None:
    """The figures of a ``Tokens: …`` report (without its ``> ``), plus ``rounded`` (0/1)."""
    if not text.startswith("Tokens:"):
        return None
    head = text.split("Cost:", 1)[0]
    found: dict[str, int] = {}
    rounded = False
    for digits, suffix, name in _USAGE_FIELD.findall(head):
        value, was_rounded = _number(digits, suffix)
        rounded = rounded or was_rounded
        found["cache hit" if name == "cached" else name] = value
    if "sent" not in found and "received" not in found:
        return None
    found["rounded"] = int(rounded)
    return found


class _Message:
    __slots__ = ("kind", "line_no", "offset", "lines", "fence", "open", "blank_prefix")

    def __init__(self, kind: str, line_no: int, offset: int):
        self.kind = kind  # user | tool | assistant | header | modeline
        self.line_no = line_no
        self.offset = offset
        self.lines: list[str] = []
        self.fence: str | None = None  # assistant: the open code fence
        self.open = False  # tool: a multi-line output not yet ended
        self.blank_prefix = 0  # tool: empty '>' lines before the output


class _Session:
    def __init__(self, session_id: str, header_line: int, started_at: datetime | None):
        self.id = session_id
        self.header_line = header_line
        self.started_at = started_at
        self.model: str | None = None
        self.models: dict[str, None] = {}
        self.version: str | None = None
        self.calls: list[UsageRecord] = []
        self.turn: list[MessageRecord] = []  # records of the current turn, not yet yielded
        self.unclaimed: MessageRecord | None = None  # the turn's last reply no call claimed yet


class _Parser:
    def __init__(self, path: Path, progress_every: int):
        self.base = _base_name(path)
        self.progress_every = max(1, progress_every)
        self.session: _Session | None = None
        self.ids: dict[str, int] = {}
        self.current: _Message | None = None
        self.blank_tool: list[tuple[int, int, str]] = []  # (line_no, offset, line) of empty '>' lines
        self.lines = 0
        self.offset = 0

    # -- sessions

    def _open_session(self, stamp: str | None, line_no: int) -> None:
        key = stamp or "preamble"
        n = self.ids.get(key, 0) + 1
        self.ids[key] = n
        session_id = f"{self.base}@{key}" + (f"#{n}" if n > 1 else "")
        self.session = _Session(session_id, line_no, parse_timestamp(stamp) if stamp else None)

    def _close_session(self) -> Iterator[Record]:
        session = self.session
        if session is None:
            return
        yield from session.turn
        session.turn = []
        yield from session.calls
        yield SessionInfo(
            external_id=session.id,
            cli_version=session.version,
            models=list(session.models),
            started_at=session.started_at,
            ended_at=session.started_at,
            lines=self.lines,
            bytes_consumed=self.offset,
        )
        self.session = None

    # -- messages

    def _start(self, kind: str, line_no: int, offset: int) -> _Message:
        self.current = _Message(kind, line_no, offset)
        return self.current

    def _close(self) -> Iterator[Record]:
        message, self.current = self.current, None
        if message is None:
            return
        if self.session is None:
            self._open_session(None, message.line_no)
        session = self.session
        lines = message.lines
        while lines and not lines[-1].strip():
            lines.pop()
        if not lines:
            return
        raw = "\n".join(lines)
        kind = message.kind
        if kind == "user":
            text = "\n".join(_strip_user(line) for line in lines)
            role, record_type = "user", "user"
        elif kind == "tool":
            body = lines[message.blank_prefix :]
            first = body[0][1:] if body else ""
            first = first[1:] if first.startswith(" ") else first
            text = "\n".join([first, *body[1:]]).rstrip()
            role, record_type = "tool", "output"
        elif kind == "header":
            text = raw
            role, record_type = "system", "session-start"
        elif kind == "modeline":
            text = raw
            role, record_type = "other", "modeline"
        else:
            text = raw.strip("\n")
            role, record_type = "assistant", "assistant"
        uuid = f"{session.id}:{message.line_no - session.header_line}"
        record = MessageRecord(
            line_no=message.line_no,
            offset=message.offset,
            role=role,
            record_type=record_type,
            raw=raw,
            blocks=[Block("text", text=text)],
            uuid=uuid,
            session_id=session.id,
            timestamp=session.started_at if kind == "header" else None,
            subtype="session_start" if kind == "header" else None,
            is_meta=kind == "header",
        )
        if kind == "tool":
            self._output(session, record, text)
        elif kind == "assistant":
            record.model = session.model
            session.unclaimed = record
        elif kind == "user":
            # A new turn: what the last one held can go.
            yield from session.turn
            session.turn = []
            session.unclaimed = None
        session.turn.append(record)

    def _output(self, session: _Session, record: MessageRecord, text: str) -> None:
        first = text.split("\n", 1)[0]
        match = _MODEL.match(first)
        if match:
            session.model = match.group(1)
        match = _VERSION.match(first)
        if match and session.version is None:
            session.version = match.group(1)
        usage = usage_of(" ".join(text.split("\n")[:3]))
        if usage is None:
            return
        sent = usage.get("sent", 0)
        write = usage.get("cache write", 0)
        hit = usage.get("cache hit", 0)
        uncached = sent - write - hit if sent >= write + hit else sent
        reply = session.unclaimed
        session.unclaimed = None
        call_id = f"{session.id}:call{len(session.calls) + 1}"
        if reply is not None:
            reply.api_message_id = call_id
        model = reply.model if reply is not None and reply.model else session.model
        if model:
            session.models[model] = None
        record.flags["usage"] = True
        if usage["rounded"]:
            record.flags["usage_rounded"] = True
        session.calls.append(
            UsageRecord(
                api_message_id=call_id,
                request_id=None,
                message_uuid=(reply or record).uuid,
                line_no=record.line_no,
                model=model,
                input_uncached=uncached,
                cache_write=write,
                cache_read=hit,
                output=usage.get("received", 0),
                timestamp=None,
            )
        )

    # -- lines

    def feed(self, line_no: int, offset: int, line: str) -> Iterator[Record]:
        current = self.current
        stripped = line.strip()
        header = _HEADER.match(line) if line.startswith(HEADER_PREFIX) else None
        if header is not None:
            yield from self._close()
            self.blank_tool = []
            yield from self._close_session()
            self._open_session(header.group(1) or f"line{line_no}", line_no)
            self._start("header", line_no, offset).lines.append(line)
            yield from self._close()
            return
        is_user = line.startswith("#### ") or line.rstrip() == "####"
        if is_user and not line.endswith("  ") and current is not None and current.kind == "assistant":
            is_user = False  # a Markdown heading inside a reply (aider ends what the user typed with two spaces)
        # A multi-line output goes on until its last line (two trailing spaces).
        if current is not None and current.kind == "tool" and current.open:
            if not is_user and not line.startswith("> Tokens:"):
                current.lines.append(line)
                if stripped and line.endswith("  "):
                    current.open = False
                return
            current.open = False
        if is_user:
            if current is None or current.kind != "user":
                yield from self._close()
                self.blank_tool = []
                self._start("user", line_no, offset)
            self.current.lines.append(line)
            return
        is_tool = line.startswith("> ") or (line.startswith(">") and not line[1:].strip())
        if is_tool and current is not None and current.kind == "assistant" and current.fence:
            is_tool = line.startswith("> Tokens:")  # inside a code fence of the reply
        if is_tool:
            if not line[1:].strip():
                self.blank_tool.append((line_no, offset, line))
                return
            yield from self._close()
            if self.blank_tool:
                message = self._start("tool", self.blank_tool[0][0], self.blank_tool[0][1])
                message.lines = [b[2] for b in self.blank_tool]
                message.blank_prefix = len(self.blank_tool)
                self.blank_tool = []
            else:
                message = self._start("tool", line_no, offset)
            message.lines.append(line)
            message.open = not line.endswith("  ")
            return
        self.blank_tool = []
        if not stripped:
            if current is not None:
                if current.kind == "assistant":
                    current.lines.append(line)
                else:
                    yield from self._close()
            return
        if current is None or current.kind != "assistant":
            yield from self._close()
            if line_no == 1 and line.startswith("-*-") and line.rstrip().endswith("-*-"):
                self._start("modeline", line_no, offset).lines.append(line)
                yield from self._close()
                return
            current = self._start("assistant", line_no, offset)
        current.lines.append(line)
        fence = _FENCE.match(line)
        if fence:
            mark = fence.group(1)
            if current.fence is None:
                current.fence = mark
            elif mark[0] == current.fence[0] and len(mark) >= len(current.fence) and not line.strip()[len(mark):]:
                current.fence = None

    def finish(self) -> Iterator[Record]:
        yield from self._close()
        yield from self._close_session()


def parse(
    stream: IO[bytes],
    *,
    path: Path | str = HISTORY_NAME,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    progress_every_bytes: int = DEFAULT_PROGRESS_EVERY_BYTES,
) -> Iterator[Record]:
    """Records of one aider chat history (see the module docstring). Never raises."""
    parser = _Parser(Path(path), progress_every_bytes)
    try:
        yield from _run(parser, stream, max_line_bytes, max_decompressed_bytes)
    except Exception as exc:  # a last resort: every expected problem is a BadLine already
        yield BadLine(line_no=0, offset=parser.offset, reason=unexpected(exc))
        try:
            yield from parser.finish()
        except Exception:  # pragma: no cover
            yield SessionInfo(lines=parser.lines, bytes_consumed=parser.offset)


def _run(parser: _Parser, stream: IO[bytes], max_line_bytes: int, max_decompressed_bytes: int) -> Iterator[Record]:
    opened = open_head(stream, what="an aider chat history", max_decompressed_bytes=max_decompressed_bytes,
                       blank_is_empty=True)
    if opened.__class__ is BadLine:
        yield opened
        yield SessionInfo()
        return
    _head, stream = opened
    reader = iter_lines(stream, max_line_bytes=max_line_bytes)
    next_progress = parser.progress_every
    for item in reader:
        if item.__class__ is BadLine:
            yield item
            continue
        line_no, offset, data, end, _newline = item
        if end >= next_progress:
            yield ImportProgress(bytes_read=end, lines=line_no)
            next_progress = end + parser.progress_every
        if line_no == 1 and data.startswith(BOM):
            data = data[3:]
        try:
            line = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.decode("utf-8", "replace")
            yield BadLine(
                line_no=line_no,
                offset=offset,
                reason=(
                    f"line {line_no} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at position {exc.start}); "
                    "it was read with replacement characters"
                ),
                size=len(data),
            )
        if line.endswith("\r"):
            line = line[:-1]
        parser.lines, parser.offset = line_no, end
        yield from parser.feed(line_no, offset, line)
    parser.offset = max(parser.offset, reader.consumed_offset)
    yield from parser.finish()


def _strip_user(line: str) -> str:
    text = line[5:] if line.startswith("#### ") else line[4:]
    return text[:-2] if text.endswith("  ") else text.rstrip()


def _base_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".md", ".markdown"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name or "aider"


# -- the format ---------------------------------------------------------------------------------


def _parse(source: ParseInput) -> Iterator[Record]:
    return parse(
        source.stream,
        path=source.path,
        max_line_bytes=source.max_line_bytes,
        max_decompressed_bytes=source.max_decompressed_bytes,
    )


# The harness's rules (core/harness.py): the default, no automatic fold of the window is recorded
# (aider's chat summary is not logged).
FORMAT = ENTRY.format(
    parse=_parse,
    multi_session=True,
)
