"""Claude Code session transcripts (JSONL) -> normalized records.

Pure and streaming: ``parse`` reads a byte stream line by line and yields records from
``contextviewer.core.records`` as it goes; state kept across lines is small (uuids seen, one entry
per model call, Task calls, compaction summaries). It never raises: every problem becomes a
``BadLine`` with a line number (0 for the file as a whole). See ../shared/docs/formats.md §1.

Order of the output:

1. while reading: ``MessageRecord``, ``BadLine`` and ``ImportProgress`` (every N bytes);
2. after the last line: ``UsageRecord`` (one per model call), ``FoldRecord``, ``AgentLink``;
3. last: one ``SessionInfo`` (with the resume point ``bytes_consumed``/``lines``).

Decisions worth knowing:

- Lines of the types in ``KNOWN_METADATA_TYPES`` are bookkeeping: they produce no message (they
  feed titles, sub-agent links and session info). Every other JSON object becomes a message;
  types other than user/assistant/system get role "other" with the raw type kept.
- Duplicate ``uuid`` rows (re-appended history) are dropped, first occurrence wins, and counted in
  ``SessionInfo.duplicate_uuids``. Only message lines take part.
- ``SessionInfo.lines`` counts complete (newline-terminated) lines. A last line without a newline
  that parses is consumed (``bytes_consumed`` includes it) but not counted, so resuming with
  ``start_offset=bytes_consumed, start_line=lines`` reads its later newline as an empty line with
  its own number and numbers the following lines right. A last line that does not parse is not
  consumed at all.
- Inline sidechains (1.0.x: ``isSidechain`` lines without ``agentId`` in a main file) are grouped
  into runs; each run gets the agent id ``sidechain-<root uuid[:8]>`` and an ``AgentLink`` to the
  Task call whose prompt equals the run's first user text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO, Any

from contextviewer.core.records import (
    AgentLink,
    BadLine,
    Block,
    FoldRecord,
    ImportProgress,
    MessageRecord,
    Record,
    SessionInfo,
    UsageRecord,
)
from contextviewer.importers.lines import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    GZIP_MAGIC,
    GzipStream,
    StreamError,
    human_size,
    iter_lines,
    peek,
)

# Bookkeeping record types of formats.md §1.1 (rows "summary", "file-history-snapshot",
# "queue-operation", "progress" and the 2.1.x "metadata/title records" row). Not messages.
KNOWN_METADATA_TYPES = frozenset(
    {
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "pr-link",
        "agent-name",
        "custom-title",
        "last-prompt",
        "ai-title",
        "permission-mode",
        "agent-setting",
        "bridge-session",
        "worktree-state",
        "attachment",
    }
)
MESSAGE_TYPES = frozenset({"user", "assistant", "system"})
FOLD_SUBTYPES = {"compact_boundary": "compact", "microcompact_boundary": "microcompact"}
TASK_TOOL_NAMES = frozenset({"Task", "Agent"})
SYNTHETIC_MODEL = "<synthetic>"

DEFAULT_PROGRESS_EVERY_BYTES = 8 * 1024 * 1024
SNIFF_BYTES = 64 * 1024

_BOM = b"\xef\xbb\xbf"
_WS = re.compile(r"[ \t\n\r]*")
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_loads = json.loads


def parse(
    stream: IO[bytes],
    *,
    start_offset: int = 0,
    start_line: int = 0,
    agent_id: str | None = None,
    agent_type: str | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    progress_every_bytes: int = DEFAULT_PROGRESS_EVERY_BYTES,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> Iterator[Record]:
    """Records of one Claude Code transcript stream (see the module docstring for the order).

    ``stream`` is a binary stream positioned at ``start_offset`` (already decompressed; gzip data
    met at offset 0 is decompressed here too, capped at ``max_decompressed_bytes``).
    ``start_line`` is the number of lines before ``start_offset``. ``agent_id``/``agent_type``
    describe a sub-agent file (they label every message and the ``SessionInfo``).
    """
    parser = _Parser(
        agent_id=agent_id,
        agent_type=agent_type,
        max_line_bytes=max_line_bytes,
        progress_every_bytes=progress_every_bytes,
        max_decompressed_bytes=max_decompressed_bytes,
        chunk_size=chunk_size,
    )
    try:
        yield from parser.run(stream, start_offset, start_line)
    except Exception as exc:  # never raise: a last resort, the per-line guard catches the rest
        yield BadLine(
            line_no=0,
            offset=parser.consumed_offset,
            reason=f"the import stopped on an unexpected error ({exc.__class__.__name__}: {exc})",
        )
        if not parser.finished:
            try:
                info = parser.session_info()
            except Exception:  # pragma: no cover - session_info only reads plain fields
                info = SessionInfo(agent_id=agent_id, agent_type=agent_type)
            yield info


# -- small helpers ------------------------------------------------------------------------------


def _str(value: Any) -> str | None:
    return value if value.__class__ is str and value else None


def _int(value: Any) -> int:
    if value.__class__ is int:
        return value if value > 0 else 0
    if value.__class__ is float and value == value and 0 < value < 1e18:
        return int(value)
    return 0


def _int_or_none(value: Any) -> int | None:
    if value.__class__ is int:
        return value
    if value.__class__ is float and value == value and abs(value) < 1e18 and value == int(value):
        return int(value)
    return None


def parse_timestamp(value: Any) -> datetime | None:
    """ISO-8601 (with ``Z`` or an offset) to an aware UTC datetime; anything else to None."""
    if value.__class__ is not str or not 10 <= len(value) <= 64:
        return None
    try:
        dt = datetime.fromisoformat(value)
        if dt.tzinfo is None:
            return dt.replace(tzinfo=UTC)
        return dt.astimezone(UTC)
    except (ValueError, OverflowError, TypeError):
        return None


def _compact(value: Any) -> str:
    try:
        return _dumps(value)
    except (ValueError, TypeError, RecursionError):
        return ""


def _json_kind(value: Any) -> str:
    if value is None:
        return "JSON null"
    if value.__class__ is bool:
        return "a JSON boolean"
    if value.__class__ in (int, float):
        return "a JSON number"
    if value.__class__ is str:
        return "a JSON string"
    if value.__class__ is list:
        return "a JSON array"
    return "a JSON value"


def _result_content(content: Any) -> tuple[str, int]:
    """(joined text parts, number of image parts) of a tool_result's content."""
    if content.__class__ is str:
        return content, 0
    if content.__class__ is dict:
        content = [content]
    elif content.__class__ is not list:
        return "", 0
    texts: list[str] = []
    images = 0
    for part in content:
        if part.__class__ is str:
            texts.append(part)
        elif part.__class__ is dict:
            kind = part.get("type")
            if kind == "text":
                text = part.get("text")
                if text.__class__ is str:
                    texts.append(text)
            elif kind == "image":
                images += 1
    return "\n".join(texts), images


def _block(item: dict) -> Block:
    kind = item.get("type")
    if kind == "text":
        text = item.get("text")
        return Block("text", text=text if text.__class__ is str else "")
    if kind == "thinking":
        text = item.get("thinking")
        return Block("thinking", text=text if text.__class__ is str else "")
    if kind == "redacted_thinking":
        return Block("thinking", raw_type="redacted_thinking")
    if kind == "tool_use" or kind == "server_tool_use":
        tool_input = item.get("input")
        return Block(
            "tool_call",
            text=_compact(tool_input) if tool_input is not None else "",
            tool_id=_str(item.get("id")),
            tool_name=_str(item.get("name")),
            tool_input=tool_input,
            raw_type=None if kind == "tool_use" else kind,
        )
    if kind == "tool_result":
        text, images = _result_content(item.get("content"))
        return Block(
            "tool_result",
            text=text,
            tool_id=_str(item.get("tool_use_id")),
            is_error=item.get("is_error") is True,
            images=images,
        )
    if kind == "image":
        source = item.get("source")
        media_type = None
        size = 0
        if source.__class__ is dict:
            media_type = _str(source.get("media_type"))
            data = source.get("data")
            if data.__class__ is str:
                size = len(data)
        # The base64 data stays in the raw line, never in blocks.
        return Block("image", media_type=media_type, data_size=size)
    text = item.get("text")
    return Block(
        "other",
        text=text if text.__class__ is str else "",
        raw_type=kind if kind.__class__ is str and kind else "(none)",
    )


def content_blocks(content: Any) -> list[Block]:
    """Blocks of a message's ``content`` (a string, a list of blocks, or something odd)."""
    if content is None:
        return []
    if content.__class__ is str:
        return [Block("text", text=content)]
    if content.__class__ is dict:
        return [_block(content)]
    if content.__class__ is not list:
        return [Block("other", text=_compact(content), raw_type=_json_kind(content))]
    blocks: list[Block] = []
    for item in content:
        if item.__class__ is dict:
            blocks.append(_block(item))
        elif item.__class__ is str:
            blocks.append(Block("text", text=item))
        elif item is not None:
            blocks.append(Block("other", text=_compact(item), raw_type=_json_kind(item)))
    return blocks


def _text_of(blocks: list[Block]) -> str:
    return "\n".join(b.text for b in blocks if b.kind == "text" and b.text)


def _looks_binary(head: bytes) -> bool:
    sample = head[:8192]
    if b"\x00" in sample:
        return True
    if not sample:
        return False
    # Control bytes other than tab/newline/carriage return/form feed/escape are rare in text.
    controls = sum(sample.count(bytes([c])) for c in range(32) if c not in (9, 10, 12, 13, 27))
    return controls > len(sample) // 10


# -- the parser ---------------------------------------------------------------------------------


class _Call:
    __slots__ = ("record", "all_null")

    def __init__(self, record: UsageRecord, all_null: bool):
        self.record = record
        self.all_null = all_null


class _Parser:
    def __init__(
        self,
        *,
        agent_id: str | None,
        agent_type: str | None,
        max_line_bytes: int,
        progress_every_bytes: int,
        max_decompressed_bytes: int,
        chunk_size: int,
    ):
        self.agent_id = agent_id
        self.agent_type = agent_type
        self.max_line_bytes = max(1, int(max_line_bytes))
        self.progress_every = max(1, int(progress_every_bytes))
        self.max_decompressed_bytes = max_decompressed_bytes
        self.chunk_size = chunk_size
        self.finished = False
        self.consumed_offset = 0
        self.consumed_lines = 0
        # session info
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.git_branch: str | None = None
        self.cli_version: str | None = None
        self.models: dict[str, None] = {}
        self.started_at: datetime | None = None
        self.ended_at: datetime | None = None
        self.titles: dict[str, str] = {}
        self.file_agent_id: str | None = None
        self.seen_message = False
        # per-line state
        self.parents: dict[str, str | None] = {}  # uuid -> parentUuid of every message line kept
        self.duplicates = 0
        self.calls: dict[tuple[str, str | None], _Call] = {}
        self.folds: list[FoldRecord] = []
        self.summaries: list[tuple[int, str | None, str | None, str]] = []
        self.links: dict[str, list] = {}  # agent_id -> [tool_use_id, line_no]
        self.tasks: dict[str, dict] = {}  # Task tool_use id -> input
        self.task_calls: list[tuple[str | None, str, dict]] = []  # non-sidechain (id, prompt, input)
        self.side_run_of: dict[str, list] = {}  # inline sidechain uuid -> run
        self.side_runs: list[list] = []  # [run_id, root line_no, first user text or None]
        self.side_run_ids: set[str] = set()

    # ---- driver ----

    def run(self, stream: IO[bytes], start_offset: int, start_line: int) -> Iterator[Record]:
        self.consumed_offset = start_offset
        self.consumed_lines = start_line
        maybe_array = False
        if start_offset == 0:
            try:
                head, stream = peek(stream, SNIFF_BYTES)
                if head[:2] == GZIP_MAGIC:
                    stream = GzipStream(stream, max_decompressed_bytes=self.max_decompressed_bytes)
                    head, stream = peek(stream, SNIFF_BYTES)
            except StreamError as exc:
                yield BadLine(line_no=0, offset=0, reason=str(exc))
                yield self.session_info()
                return
            except (OSError, ValueError, EOFError) as exc:
                yield BadLine(line_no=0, offset=0, reason=f"the file could not be read ({exc})")
                yield self.session_info()
                return
            if not head:
                yield BadLine(line_no=0, offset=0, reason="the file is empty")
                yield self.session_info()
                return
            if _looks_binary(head):
                yield BadLine(line_no=0, offset=0, reason="binary file, not a JSONL session log", size=len(head))
                yield self.session_info()
                return
            maybe_array = head.removeprefix(_BOM).lstrip()[:1] == b"["

        reader = iter_lines(
            stream,
            start_offset=start_offset,
            start_line=start_line,
            max_line_bytes=self.max_line_bytes,
            chunk_size=self.chunk_size,
        )
        lines = iter(reader)
        next_progress = start_offset + self.progress_every
        unterminated_end: int | None = None
        first_content = start_offset == 0
        process = self.process
        for item in lines:
            if item.__class__ is BadLine:
                yield item
                continue
            line_no, offset, data, end, newline = item
            if end >= next_progress:
                yield ImportProgress(bytes_read=end, lines=line_no)
                next_progress = end + self.progress_every
            if not data or data.isspace():
                continue
            if line_no == 1 and data.startswith(_BOM):
                data = data[3:]
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                if not newline:
                    yield self._incomplete(line_no, offset, len(data))
                else:
                    yield BadLine(
                        line_no=line_no,
                        offset=offset,
                        reason=(
                            f"line {line_no} is not valid UTF-8 "
                            f"(byte 0x{data[exc.start]:02x} at position {exc.start})"
                        ),
                        size=len(data),
                    )
                first_content = False
                continue
            try:
                obj = _loads(text)
            except (ValueError, RecursionError) as exc:
                if first_content and maybe_array:
                    yield from self._json_array(item, lines, reader)
                    yield from self.finish()
                    return
                first_content = False
                if not newline:
                    yield self._incomplete(line_no, offset, len(data))
                else:
                    yield BadLine(line_no=line_no, offset=offset, reason=self._json_error(line_no, text, exc), size=len(data))
                continue
            first_content = False
            if not newline:
                unterminated_end = end
            if obj.__class__ is not dict:
                yield BadLine(
                    line_no=line_no,
                    offset=offset,
                    reason=f"line {line_no} is {_json_kind(obj)}, not a JSON object",
                    size=len(data),
                )
                continue
            try:
                record = process(obj, line_no, offset, text)
            except Exception as exc:  # one odd line must not stop the import
                yield BadLine(
                    line_no=line_no,
                    offset=offset,
                    reason=f"line {line_no} could not be read ({exc.__class__.__name__}: {exc})",
                    size=len(data),
                )
                continue
            if record is not None:
                yield record
        self.consumed_offset = reader.consumed_offset
        self.consumed_lines = reader.consumed_lines
        if unterminated_end is not None and unterminated_end > self.consumed_offset:
            self.consumed_offset = unterminated_end
        yield from self.finish()

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
            return f"line {line_no} is nested too deeply to read"
        if isinstance(exc, json.JSONDecodeError):
            return f"line {line_no} is not valid JSON ({exc.msg} at column {exc.colno})"
        return f"line {line_no} is not valid JSON ({exc})"

    def _json_array(self, first, lines, reader) -> Iterator[Record]:
        """The file is one JSON array (pretty-printed or not): say so, and import its objects."""
        reason = "the file is a JSON array, not JSONL (one JSON object per line)"
        base = first.offset + (3 if first.line_no == 1 and first.data.startswith(_BOM) else 0)
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
            elements = _array_elements(text)
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
            number = index + 1
            if value.__class__ is not dict:
                yield BadLine(
                    line_no=number,
                    offset=byte_pos,
                    reason=f"element {number} of the array is {_json_kind(value)}, not a JSON object",
                )
                continue
            try:
                record = self.process(value, number, byte_pos, text[start:stop])
            except Exception as exc:
                yield BadLine(
                    line_no=number,
                    offset=byte_pos,
                    reason=f"element {number} of the array could not be read ({exc.__class__.__name__}: {exc})",
                )
                continue
            if record is not None:
                yield record

    # ---- one record ----

    def _envelope(self, obj: dict) -> datetime | None:
        if self.session_id is None:
            self.session_id = _str(obj.get("sessionId"))
        if self.cwd is None:
            self.cwd = _str(obj.get("cwd"))
        value = obj.get("gitBranch")
        if value.__class__ is str and value:
            self.git_branch = value
        value = obj.get("version")
        if value.__class__ is str and value[:1].isdigit():
            self.cli_version = value
        ts = parse_timestamp(obj.get("timestamp"))
        if ts is not None:
            if self.started_at is None or ts < self.started_at:
                self.started_at = ts
            if self.ended_at is None or ts > self.ended_at:
                self.ended_at = ts
        return ts

    def _metadata(self, kind: str, obj: dict, line_no: int) -> None:
        if kind == "progress":
            data = obj.get("data")
            if data.__class__ is dict and data.get("type") == "agent_progress":
                self._link(_str(data.get("agentId")), _str(obj.get("parentToolUseID")), line_no)
        elif kind == "custom-title":
            value = _str(obj.get("customTitle"))
            if value:
                self.titles["custom"] = value
        elif kind == "ai-title":
            value = _str(obj.get("aiTitle"))
            if value:
                self.titles["ai"] = value
        elif kind == "summary":
            value = _str(obj.get("summary"))
            if value:
                self.titles["summary"] = value

    def _link(self, agent_id: str | None, tool_use_id: str | None, line_no: int) -> None:
        if agent_id is None:
            return
        link = self.links.get(agent_id)
        if link is None:
            self.links[agent_id] = [tool_use_id, line_no]
        elif link[0] is None and tool_use_id is not None:
            link[0] = tool_use_id

    def _sidechain_run(self, uuid: str | None, parent: str | None, line_no: int) -> list:
        run = self.side_run_of.get(parent) if parent is not None else None
        if run is None:
            run_id = f"sidechain-{uuid[:8]}" if uuid else f"sidechain-line{line_no}"
            if run_id in self.side_run_ids:
                n = 2
                while f"{run_id}-{n}" in self.side_run_ids:
                    n += 1
                run_id = f"{run_id}-{n}"
            self.side_run_ids.add(run_id)
            run = [run_id, line_no, None]
            self.side_runs.append(run)
        if uuid is not None:
            self.side_run_of[uuid] = run
        return run

    def process(self, obj: dict, line_no: int, offset: int, raw: str) -> MessageRecord | None:
        kind = obj.get("type")
        ts = self._envelope(obj)
        if kind.__class__ is str and kind in KNOWN_METADATA_TYPES:
            self._metadata(kind, obj, line_no)
            return None

        uuid = _str(obj.get("uuid"))
        parent = _str(obj.get("parentUuid"))
        if uuid is not None:
            if uuid in self.parents:
                self.duplicates += 1
                return None
            self.parents[uuid] = parent

        message = obj.get("message")
        if message.__class__ is not dict:
            message = None
        model = api_id = None
        subtype = None
        if kind == "user":
            blocks = content_blocks(message.get("content")) if message else []
            role = "tool" if blocks and all(b.kind == "tool_result" for b in blocks) else "user"
            record_type = kind
        elif kind == "assistant":
            role = record_type = "assistant"
            blocks = content_blocks(message.get("content")) if message else []
            if message:
                model = _str(message.get("model"))
                api_id = _str(message.get("id"))
        elif kind == "system":
            role = record_type = "system"
            subtype = _str(obj.get("subtype"))
            blocks = content_blocks(obj.get("content"))
        else:
            role = "other"
            if kind is None:
                record_type = "(none)"
            elif kind.__class__ is str:
                record_type = kind or "(none)"
            else:
                record_type = _compact(kind)[:80] or "(none)"
            blocks = content_blocks(message.get("content")) if message else []

        is_sidechain = obj.get("isSidechain") is True
        line_agent = _str(obj.get("agentId"))
        if not self.seen_message:
            self.seen_message = True
            self.file_agent_id = line_agent
        agent = line_agent or self.agent_id
        run = None
        if agent is None and is_sidechain:
            run = self._sidechain_run(uuid, parent, line_no)
            agent = run[0]
            if run[2] is None and role == "user":
                text = _text_of(blocks)
                if text:
                    run[2] = text

        request_id = _str(obj.get("requestId"))
        flags: dict[str, Any] = {}
        if obj.get("isApiErrorMessage") is True or (subtype == "api_error"):
            flags["api_error"] = True
        if model == SYNTHETIC_MODEL:
            flags["synthetic"] = True
        elif model is not None and kind == "assistant":
            self.models[model] = None
        if obj.get("isVisibleInTranscriptOnly") is True:
            flags["visible_in_transcript_only"] = True
        if "toolUseResult" in obj:
            flags["tool_use_result"] = True

        record = MessageRecord(
            line_no=line_no,
            offset=offset,
            role=role,
            record_type=record_type,
            raw=raw,
            blocks=blocks,
            uuid=uuid,
            parent_uuid=parent,
            logical_parent_uuid=_str(obj.get("logicalParentUuid")),
            subtype=subtype,
            timestamp=ts,
            session_id=_str(obj.get("sessionId")),
            is_sidechain=is_sidechain,
            agent_id=agent,
            is_meta=obj.get("isMeta") is True,
            is_compact_summary=obj.get("isCompactSummary") is True,
            model=model,
            api_message_id=api_id,
            request_id=request_id,
            flags=flags,
        )

        # Task calls (for sub-agent links) and 2.x links from the tool result.
        for block in blocks:
            if block.kind == "tool_call" and block.tool_name in TASK_TOOL_NAMES:
                tool_input = block.tool_input if block.tool_input.__class__ is dict else {}
                if block.tool_id is not None:
                    self.tasks.setdefault(block.tool_id, tool_input)
                if run is None and not is_sidechain:
                    prompt = tool_input.get("prompt")
                    self.task_calls.append(
                        (block.tool_id, prompt.strip() if prompt.__class__ is str else "", tool_input)
                    )
        if kind == "user":
            result = obj.get("toolUseResult")
            if result.__class__ is dict:
                linked = _str(result.get("agentId"))
                if linked is not None:
                    tool_use_id = next((b.tool_id for b in blocks if b.kind == "tool_result" and b.tool_id), None)
                    self._link(linked, tool_use_id, line_no)
            if record.is_compact_summary:
                self.summaries.append((line_no, uuid, parent, _text_of(blocks)))
        elif kind == "assistant":
            if message is not None and api_id is not None and model != SYNTHETIC_MODEL:
                self._usage(message, api_id, request_id, uuid, line_no, model, agent, ts)
        elif kind == "system" and subtype in FOLD_SUBTYPES:
            self._fold(obj, subtype, uuid, line_no, agent, ts)
        return record

    def _usage(self, message, api_id, request_id, uuid, line_no, model, agent, ts) -> None:
        usage = message.get("usage")
        if usage.__class__ is not dict:
            return
        final = message.get("stop_reason") is not None
        key = (api_id, request_id)
        call = self.calls.get(key)
        output = _int(usage.get("output_tokens"))
        if call is not None:
            rec = call.record
            if output > rec.output:
                rec.output = output
            if final:
                call.all_null = False
            return
        rec = UsageRecord(
            api_message_id=api_id,
            request_id=request_id,
            message_uuid=uuid,
            line_no=line_no,
            model=model,
            input_uncached=_int(usage.get("input_tokens")),
            cache_write=_int(usage.get("cache_creation_input_tokens")),
            cache_read=_int(usage.get("cache_read_input_tokens")),
            output=output,
            agent_id=agent,
            timestamp=ts,
        )
        split = usage.get("cache_creation")
        if split.__class__ is dict:
            rec.cache_write_5m = _int_or_none(split.get("ephemeral_5m_input_tokens"))
            rec.cache_write_1h = _int_or_none(split.get("ephemeral_1h_input_tokens"))
        self.calls[key] = _Call(rec, not final)

    def _fold(self, obj, subtype, uuid, line_no, agent, ts) -> None:
        kind = FOLD_SUBTYPES[subtype]
        meta = obj.get("compactMetadata" if kind == "compact" else "microcompactMetadata")
        if meta.__class__ is not dict:
            meta = {}
        trigger = _str(meta.get("trigger")) or _str(obj.get("trigger"))
        preserved: list[str] = []
        if kind == "compact":
            preserved = self._preserved(meta)
        self.folds.append(
            FoldRecord(
                line_no=line_no,
                boundary_uuid=uuid,
                kind=kind,
                trigger=trigger,
                tokens_before=_int_or_none(meta.get("preTokens")),
                tokens_after=_int_or_none(meta.get("postTokens")),
                logical_parent_uuid=_str(obj.get("logicalParentUuid")),
                preserved_uuids=preserved,
                timestamp=ts,
                agent_id=agent,
                metadata=meta,
            )
        )

    def _preserved(self, meta: dict) -> list[str]:
        """Uuids kept verbatim across a partial compaction (in both the archived and loaded views)."""
        kept = meta.get("preservedMessages")
        if kept.__class__ is dict and kept.get("uuids").__class__ is list:
            return list(dict.fromkeys(u for u in kept["uuids"] if u.__class__ is str and u))
        segment = meta.get("preservedSegment")
        if segment.__class__ is not dict:
            return []
        head = _str(segment.get("headUuid"))
        tail = _str(segment.get("tailUuid"))
        anchor = _str(segment.get("anchorUuid"))
        if head and tail:
            # The segment precedes the boundary, so its chain is known: walk tail -> head.
            chain = [tail]
            node = tail
            limit = len(self.parents)
            while node != head and len(chain) <= limit:
                node = self.parents.get(node)
                if node is None:
                    break
                chain.append(node)
            if node == head:
                return chain[::-1]
        return list(dict.fromkeys(u for u in (head, anchor, tail) if u))

    # ---- the end ----

    def finish(self) -> Iterator[Record]:
        for call in self.calls.values():
            call.record.output_is_lower_bound = call.all_null
            yield call.record
        self._attach_summaries()
        yield from self.folds
        yield from self._agent_links()
        self.finished = True
        yield self.session_info()

    def _attach_summaries(self) -> None:
        compacts = [f for f in self.folds if f.kind == "compact"]
        if not compacts or not self.summaries:
            return
        claimed: set[int] = set()
        for fold in compacts:
            if fold.boundary_uuid is None:
                continue
            for i, (line_no, uuid, parent, text) in enumerate(self.summaries):
                if i not in claimed and parent == fold.boundary_uuid and line_no > fold.line_no:
                    fold.summary_uuid, fold.summary_text = uuid, text
                    claimed.add(i)
                    break
        for n, fold in enumerate(compacts):
            if fold.summary_uuid is not None or fold.summary_text:
                continue
            stop = compacts[n + 1].line_no if n + 1 < len(compacts) else None
            for i, (line_no, uuid, _parent, text) in enumerate(self.summaries):
                if i in claimed or line_no <= fold.line_no:
                    continue
                if stop is not None and line_no > stop:
                    break
                fold.summary_uuid, fold.summary_text = uuid, text
                claimed.add(i)
                break

    def _agent_links(self) -> list[AgentLink]:
        links = []
        for agent_id, (tool_use_id, line_no) in self.links.items():
            task = self.tasks.get(tool_use_id) if tool_use_id else None
            task = task or {}
            links.append(
                AgentLink(
                    agent_id=agent_id,
                    tool_use_id=tool_use_id,
                    line_no=line_no,
                    agent_type=_str(task.get("subagent_type")),
                    description=_str(task.get("description")),
                )
            )
        used: set[int] = set()
        for run_id, line_no, prompt in self.side_runs:
            match = None
            if prompt:
                wanted = prompt.strip()
                for i, (tool_id, task_prompt, tool_input) in enumerate(self.task_calls):
                    if i not in used and task_prompt == wanted:
                        used.add(i)
                        match = (tool_id, tool_input)
                        break
            tool_input = match[1] if match else {}
            links.append(
                AgentLink(
                    agent_id=run_id,
                    tool_use_id=match[0] if match else None,
                    line_no=line_no,
                    agent_type=_str(tool_input.get("subagent_type")),
                    description=_str(tool_input.get("description")),
                )
            )
        links.sort(key=lambda link: link.line_no)
        return links

    def session_info(self) -> SessionInfo:
        titles = self.titles
        return SessionInfo(
            external_id=self.session_id,
            title=titles.get("custom") or titles.get("ai") or titles.get("summary"),
            cwd=self.cwd,
            git_branch=self.git_branch,
            cli_version=self.cli_version,
            models=list(self.models),
            started_at=self.started_at,
            ended_at=self.ended_at,
            agent_id=self.agent_id or self.file_agent_id,
            agent_type=self.agent_type,
            lines=self.consumed_lines,
            bytes_consumed=self.consumed_offset,
            duplicate_uuids=self.duplicates,
        )


def _array_elements(text: str) -> list[tuple[int, int, Any]]:
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
