"""iFlow CLI session logs (JSONL) -> normalized records (pure, no Django).

iFlow CLI does not run here (not on npm under its documented names, and it needs an iflow.cn login;
../shared/docs/stack-notes.md), so
these facts come from another reader's source and the real log it keeps as test data (facts carry over,
code does not; tests/iflow_sessions.py writes a sample from them):

- wesm/agentsview, commit 069d7fe0 ("add iFlow support", 2026-02-28): ``internal/sync/discovery.go``
  (``DiscoverIflowProjects``: ``<iflow dir>/<project>/session-<uuid>.jsonl``, only names starting
  ``session-``), ``internal/config/config.go`` (the folder ``~/.iflow/projects``, ``$IFLOW_DIR``),
  ``internal/parser/iflow.go`` (the session id is the file name less ``session-``; the lines' ``sessionId``
  is ``session-<uuid>``; only ``user`` and ``assistant`` lines are messages, every line's ``timestamp``
  widens the session; ``cwd`` and ``gitBranch`` on user lines; ``isMeta`` and ``isCompactSummary`` user
  lines are not prompts; Anthropic-shaped ``message.content``);
- the same repository's ``internal/parser/iflow_parser_test.go`` (commit 66b6655c) and its test data
  ``internal/parser/testdata/iflow/session-5de701fc-7454-4858-a249-95cac4fd3b51.jsonl`` (MIT; read,
  not copied here: nothing the search tools bring is committed): a real log of iFlow 1.0.0 with ``glm-4.7``. It shows what the reader
  does not say: a line's envelope is Claude Code's (``uuid``, ``parentUuid``, ``isSidechain``,
  ``userType``, ``version``); an assistant line's ``message`` is ``{id: "response-<ms>[-tool-call_<id>]",
  type, role, content, model, stop_reason, stop_sequence, usage: {input_tokens, output_tokens}}`` (zeros
  there: that build records no usage); iFlow writes a response as several assistant lines, one per tool
  call it streams, each repeating the call(s) the line before it announced (the same ``tool_use`` id); a
  tool result is a user line whose ``tool_result`` block holds Gemini CLI's ``{callId, responseParts:
  {functionResponse: {id, name, response: {output}}}, resultDisplay}`` with a ``toolUseResult`` of
  ``{toolName, status, timestamp}`` beside the message; ``parentUuid`` does not chain the lines (every
  assistant line names the prompt): the file's order is the conversation's; the tools are Gemini CLI's
  (``read_file`` with ``absolute_path``, ``replace`` with ``file_path``/``old_string``/``new_string``).

Mapping: a file is one conversation, its id the file's name less ``session-`` (else the lines'
``sessionId`` less it). A message's uuid is its line's ``uuid`` (else ``<session>:<line>``). A run of
assistant lines with no other message between them is one model call (its api id the first line's
``message.id``): a ``tool_use`` whose id was seen before is that earlier call written again and is not read
again (a line holding nothing else is kept as a meta message, flagged ``repeats``). A call's usage is its
lines' last non-zero ``usage`` (``input_tokens`` uncached, ``cache_creation_input_tokens``,
``cache_read_input_tokens``, ``output_tokens``); where every line has zeros the call is emitted with usage
0 and flagged ``usage_unmeasured`` (shown as estimated). A user line of tool results only is a ``tool``
message; a result's text is ``response.output`` (``response.error``, or a ``toolUseResult.status`` other
than ``success``, marks it an error). An ``isCompactSummary`` user line (which the reader skips as no
prompt) is a fold: a ``compact_boundary`` marker, then the summary; no trigger or tokens (none is
recorded). The title is the first prompt (the file holds none), the working folder the lines' ``cwd``.

Not read, because no source records them: sub-agents (iFlow's ``task`` call and its result are read in the
parent; where a sub-agent's own transcript lies is written nowhere we found: the reader's check of a
``sessionId`` other than the file's own compares it with the name still ending ``.jsonl``, so it never
links; the real log's lines are all ``isSidechain: false``), and compaction triggers and token counts.
Nothing here raises.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from contextviewer.core.harness import Harness
from contextviewer.core.records import BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import (
    KeptIds,
    TimeSpan,
    compact_json,
    content_blocks,
    parse_timestamp,
    pos_int,
    str_or_none,
)
from contextviewer.importers.driver import JsonParser
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.iflow.entry import ENTRY, PREFIX, SUFFIX, sniff  # noqa: F401 - the light part

WHAT = "iFlow CLI session log"
ROLES = {"user": "user", "assistant": "assistant", "system": "system"}


def session_of(name: str | None) -> str | None:
    """``session-<uuid>[.jsonl]`` -> ``<uuid>``."""
    if not name:
        return None
    name = name.removesuffix(SUFFIX)
    return (name[len(PREFIX):] or None) if name.startswith(PREFIX) else name


def result_text(content: Any) -> tuple[str, bool]:
    """(text, is an error) of a tool result's content: iFlow's ``responseParts.functionResponse``, a
    string, or a list of text parts."""
    if content.__class__ is str:
        return content, False
    if content.__class__ is dict:
        parts = content.get("responseParts")
        response = parts.get("functionResponse") if parts.__class__ is dict else None
        body = response.get("response") if response.__class__ is dict else None
        if body.__class__ is dict:
            if body.get("error") is not None:
                error = body["error"]
                return (error if error.__class__ is str else compact_json(error)), True
            out = body.get("output")
            if out.__class__ is str:
                return out, False
            return compact_json(body), False
        display = content.get("resultDisplay")
        if display.__class__ is str:
            return display, False
        return compact_json(content), False
    if content.__class__ is list:
        texts = [p.get("text") for p in content if p.__class__ is dict and p.get("text").__class__ is str]
        return "\n".join(texts), False
    return ("" if content is None else compact_json(content)), False


def text_of(blocks: list[Block]) -> str:
    return "\n".join(b.text for b in blocks if b.kind == "text" and b.text)


class _Parser(JsonParser, TimeSpan):
    what = f"an {WHAT}"

    def __init__(self, source: ParseInput):
        super().__init__(max_line_bytes=source.max_line_bytes, max_decompressed_bytes=source.max_decompressed_bytes)
        path = getattr(source, "path", None)
        self.sid: str | None = session_of(path.name) if path is not None and path.name.startswith(PREFIX) else None
        self.cwd: str | None = None
        self.branch: str | None = None
        self.version: str | None = None
        self.title: str | None = None
        self.models: dict[str, None] = {}
        self.calls: list[UsageRecord] = []
        self.call: UsageRecord | None = None  # the call the current run of assistant lines belongs to
        self.seen: set[str] = set()  # tool_use ids read
        self.out: list[Record] = []
        self.folds: list[FoldRecord] = []
        self.kept = KeptIds()
        self.duplicates = 0
        self.call_measured = False

    # -- the driver

    def run(self, stream, start_offset: int, start_line: int) -> Iterator[Record]:
        for record in super().run(stream, start_offset, start_line):
            if record.__class__ is BadLine and not record.reason.startswith("iFlow"):
                record = dataclasses.replace(record, reason=f"{WHAT}: {record.reason}")
            yield record
            if self.out:
                out, self.out = self.out, []
                yield from out

    def finish(self) -> Iterator[Record]:
        yield from self.calls
        yield from self.folds
        self.finished = True
        yield self.session_info()

    def session_info(self) -> SessionInfo:
        return SessionInfo(
            external_id=self.sid,
            title=self.title,
            cwd=self.cwd,
            git_branch=self.branch,
            cli_version=self.version,
            models=list(self.models),
            started_at=self.started_at,
            ended_at=self.ended_at,
            lines=self.consumed_lines,
            bytes_consumed=self.consumed_offset,
            duplicate_uuids=self.duplicates,
        )

    # -- one line

    def process(self, obj: dict, line_no: int, offset: int, raw: str) -> Record | None:
        kind = obj.get("type")
        ts = self.saw(parse_timestamp(obj.get("timestamp")))
        if kind.__class__ is not str:
            return BadLine(line_no=line_no, offset=offset, size=len(raw),
                           reason=f"{WHAT}: line {line_no} is not an iFlow record (it has no type)")
        uuid = str_or_none(obj.get("uuid"))
        if uuid is not None:
            if uuid in self.kept:  # a line written twice: the first is kept (a different one is said)
                self.duplicates += 1
                return self.kept.collision(uuid, line_no, offset, raw, obj.get("timestamp"))
            self.kept.add(uuid, line_no, raw, obj.get("timestamp"))
        self.sid = self.sid or session_of(str_or_none(obj.get("sessionId")))
        self.cwd = self.cwd or str_or_none(obj.get("cwd"))
        self.branch = self.branch or str_or_none(obj.get("gitBranch"))
        self.version = str_or_none(obj.get("version")) or self.version
        message = obj.get("message") if obj.get("message").__class__ is dict else {}
        record = MessageRecord(
            line_no=line_no, offset=offset, role=ROLES.get(kind, "other"), record_type=kind, raw=raw,
            uuid=uuid or f"{self.sid}:{line_no}", parent_uuid=str_or_none(obj.get("parentUuid")),
            timestamp=ts, session_id=self.sid, is_sidechain=obj.get("isSidechain") is True,
            is_meta=obj.get("isMeta") is True,
        )
        if kind == "assistant":
            self._assistant(record, message, line_no)
            return record
        self.call = None  # any other line ends a run of assistant lines
        if kind == "user":
            return self._user(record, obj, message)
        if kind in ROLES:
            record.blocks = content_blocks(message.get("content", obj.get("content")))
        return record

    def _assistant(self, record: MessageRecord, message: dict, line_no: int) -> None:
        model = str_or_none(message.get("model"))
        record.model = model
        if model:
            self.models.setdefault(model)
        blocks, repeats = [], []
        for block in content_blocks(message.get("content")):
            if block.kind == "tool_call" and block.tool_id is not None:
                if block.tool_id in self.seen:
                    repeats.append(block.tool_id)
                    continue
                self.seen.add(block.tool_id)
            blocks.append(block)
        record.blocks = blocks
        if repeats:
            record.flags["repeats"] = repeats
            record.is_meta = record.is_meta or not blocks
        if self.call is None:
            api_id = str_or_none(message.get("id")) or record.uuid
            self.call = UsageRecord(api_message_id=api_id, request_id=None, message_uuid=record.uuid, line_no=line_no,
                                    model=model, timestamp=record.timestamp)
            self.call_measured = False
            self.calls.append(self.call)
        record.api_message_id = self.call.api_message_id
        usage = message.get("usage")
        figures = self._usage(usage)
        if figures is not None:
            (self.call.input_uncached, self.call.cache_write, self.call.cache_read, self.call.output) = figures
            self.call_measured = True
        if not self.call_measured:
            record.flags["usage_unmeasured"] = True

    @staticmethod
    def _usage(usage: Any) -> tuple[int, int, int, int] | None:
        if usage.__class__ is not dict:
            return None
        figures = (pos_int(usage.get("input_tokens")), pos_int(usage.get("cache_creation_input_tokens")),
                   pos_int(usage.get("cache_read_input_tokens")), pos_int(usage.get("output_tokens")))
        return figures if any(figures) else None

    def _user(self, record: MessageRecord, obj: dict, message: dict) -> MessageRecord:
        content = message.get("content")
        status = obj.get("toolUseResult")
        failed = status.__class__ is dict and status.get("status") not in (None, "success")
        blocks: list[Block] = []
        for item in content if content.__class__ is list else [content]:
            if item.__class__ is dict and item.get("type") == "tool_result":
                text, error = result_text(item.get("content"))
                blocks.append(Block("tool_result", text=text, tool_id=str_or_none(item.get("tool_use_id")),
                                    is_error=error or failed or item.get("is_error") is True))
            elif item is not None:
                blocks.extend(content_blocks(item))
        record.blocks = blocks
        if blocks and all(b.kind == "tool_result" for b in blocks):
            record.role = "tool"
            return record
        if obj.get("isCompactSummary") is True:
            return self._fold(record)
        text = text_of(blocks).strip()
        if self.title is None and text and not record.is_meta:
            self.title = text.splitlines()[0][:200]
        return record

    def _fold(self, record: MessageRecord) -> MessageRecord:
        """A summary line: its boundary marker (returned), then the summary (emitted right after it)."""
        record.is_compact_summary = True
        marker = MessageRecord(
            line_no=record.line_no, offset=record.offset, role="system", record_type="system", raw=record.raw,
            subtype="compact_boundary", uuid=f"{record.uuid}:boundary", timestamp=record.timestamp,
            session_id=record.session_id,
        )
        self.out.append(record)  # the summary follows its marker
        self.folds.append(FoldRecord(line_no=record.line_no, boundary_uuid=marker.uuid, kind="compact", trigger=None,
                                     tokens_before=None, summary_uuid=record.uuid, summary_text=text_of(record.blocks),
                                     timestamp=record.timestamp))
        return marker


def parse(source: ParseInput) -> Iterator[Record]:
    yield from _Parser(source).parse(source.stream, source.start_offset, source.start_line)


# iFlow CLI's harness is Gemini CLI's (its /compress); the threshold it folds at is written in no source
# we read: no automatic fold line is drawn.
HARNESS = Harness()

FORMAT = ENTRY.format(parse=parse, harness=HARNESS)
