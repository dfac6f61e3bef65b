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
- A ``queue-operation`` enqueue (a prompt typed while the agent worked, or a background task's
  notification) is the one bookkeeping line that becomes a message: role user, flag ``queued``,
  at its own position, so it stays in the turn where it was typed. Dequeue, remove and popAll
  stay bookkeeping. A queued prompt the harness later delivers comes again as a plain user line
  (it opens the turn the agent answers it in); fact probes count the text once (facts.py keys).
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
- A tool result's line may carry ``toolUseResult``: what the harness had beside what the model
  got. Read here, once, into the result block's ``extra`` (``result_extra``): a command's stdout
  and stderr apart (capped), interrupted, the return code note, a background task; and where the
  harness cut the result (a truncated or persisted marker), ``clip`` with the marker and the
  longer original the line keeps. The viewer and the policy lab read ``extra``, never the line.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import IO, Any

from contextviewer.core import export_claude, secrets
from contextviewer.core.export import Target
from contextviewer.core.harness import Harness, VersionRule
from contextviewer.core.records import (
    AgentLink,
    FoldRecord,
    MessageRecord,
    Record,
    SessionInfo,
    UsageRecord,
)
from contextviewer.importers.common import (
    add_extras,
    collect_images,
    compact_json as _compact,
    content_blocks,
    left_out_data,
    int_or_none as _int_or_none,
    parse_timestamp,
    pos_int as _int,
    raw_json,
    stored_extras,
    stream_text,
    TimeSpan,
    str_or_none as _str,
    text_of as _text_of,
    KeptIds,
)
from contextviewer.importers.claude_code import layout as claude_code_layout
from contextviewer.importers.driver import JsonParser
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.lines import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_LINE_BYTES,
)
from contextviewer.importers.claude_code.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    KNOWN_METADATA_TYPES,
    MESSAGE_TYPES,
    _SNIFF_KEYS,
    sniff,
)

FOLD_SUBTYPES = {"compact_boundary": "compact", "microcompact_boundary": "microcompact"}
TASK_TOOL_NAMES = frozenset({"Task", "Agent"})
SYNTHETIC_MODEL = "<synthetic>"

DEFAULT_PROGRESS_EVERY_BYTES = 8 * 1024 * 1024


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
    yield from parser.parse(stream, start_offset, start_line)


# -- the parser ---------------------------------------------------------------------------------


class _Call:
    __slots__ = ("record", "all_null")

    def __init__(self, record: UsageRecord, all_null: bool):
        self.record = record
        self.all_null = all_null


class _Parser(JsonParser, TimeSpan):
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
        super().__init__(
            max_line_bytes=max_line_bytes,
            progress_every_bytes=progress_every_bytes,
            max_decompressed_bytes=max_decompressed_bytes,
            chunk_size=chunk_size,
        )
        self.agent_id = agent_id
        self.agent_type = agent_type
        # session info
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.git_branch: str | None = None
        self.cli_version: str | None = None
        self.models: dict[str, None] = {}
        self.titles: dict[str, str] = {}
        self.file_agent_id: str | None = None
        self.seen_message = False
        # per-line state
        self.parents: dict[str, str | None] = {}  # uuid -> parentUuid of every message line kept
        self.kept = KeptIds()  # the uuids of the message lines kept
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
        # what each request carried (2.1.3xx api-request records; ``_request``)
        self.requests = _Requests()

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
        return self.saw(parse_timestamp(obj.get("timestamp")))

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

    def _queued(self, obj: dict, line_no: int, offset: int, raw: str, ts: datetime | None) -> MessageRecord | None:
        """An enqueue: what was typed while the agent worked (or a background task's notification
        the harness queued), a user message flagged queued at the line's own position, so it stays
        in the turn where it was typed (core/turns.py: a queued message opens no turn)."""
        text = obj.get("content")
        if text.__class__ is not str or not text.strip():
            return None
        return MessageRecord(
            line_no=line_no,
            offset=offset,
            role="user",
            record_type="queue-operation",
            raw=raw,
            blocks=content_blocks(text),
            timestamp=ts,
            session_id=_str(obj.get("sessionId")),
            agent_id=self.agent_id,
            flags={"queued": True},
        )

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
        """One line: bookkeeping (it feeds titles, links and session info; an enqueue is a queued
        message), a uuid read already (dropped), or a message and what it tells besides."""
        kind = obj.get("type")
        ts = self._envelope(obj)
        if kind.__class__ is str and kind in KNOWN_METADATA_TYPES:
            if kind == "queue-operation" and obj.get("operation") == "enqueue":
                return self._queued(obj, line_no, offset, raw, ts)
            if kind in REQUEST_TYPES:
                self.requests.note(kind, obj)
                return None
            self._metadata(kind, obj, line_no)
            return None

        uuid = _str(obj.get("uuid"))
        parent = _str(obj.get("parentUuid"))
        if uuid is not None:
            if uuid in self.kept:
                self.duplicates += 1
                if kind == "assistant" and self._usage_again(obj):
                    return None
                return self.kept.collision(uuid, line_no, offset, raw, obj.get("sessionId"), obj.get("timestamp"))
            self.parents[uuid] = parent
            self.kept.add(uuid, line_no, raw, obj.get("sessionId"), obj.get("timestamp"))

        message = obj.get("message")
        if message.__class__ is not dict:
            message = None
        record = self._message(obj, kind, message, uuid, parent, line_no, offset, raw, ts)
        self._follow(obj, kind, message, record)
        return record

    def _message(self, obj: dict, kind: Any, message: dict | None, uuid: str | None, parent: str | None,
                 line_no: int, offset: int, raw: str, ts: datetime | None) -> MessageRecord:
        """The message of a line: its content, read by its type; its agent; its flags (an API
        error, a synthetic response, ...)."""
        read = _CONTENT_READERS.get(kind, _other_content) if kind.__class__ is str else _other_content
        role, record_type, blocks, subtype, model, api_id = read(obj, kind, message)
        is_sidechain = obj.get("isSidechain") is True
        is_compact_summary = obj.get("isCompactSummary") is True
        agent, agent_kind = self._agent(obj, uuid, parent, line_no, role, blocks, is_sidechain, is_compact_summary)
        flags: dict[str, Any] = {}
        if obj.get("isApiErrorMessage") is True or (subtype == "api_error"):
            flags["api_error"] = True
        if model == SYNTHETIC_MODEL:
            flags["synthetic"] = True
        elif model is not None and kind == "assistant":
            self.models[model] = None  # the models of real calls
        if obj.get("isVisibleInTranscriptOnly") is True:
            flags["visible_in_transcript_only"] = True
        if "toolUseResult" in obj:
            flags["tool_use_result"] = True
        if blocks:
            # What the page and the policy lab read beside a result's text (its extra).
            add_extras(blocks, functools.partial(result_extra, obj.get("toolUseResult")))
        return MessageRecord(
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
            is_compact_summary=is_compact_summary,
            model=model,
            agent_kind=agent_kind,
            api_message_id=api_id,
            request_id=_str(obj.get("requestId")),
            flags=flags,
        )

    def _agent(self, obj: dict, uuid: str | None, parent: str | None, line_no: int, role: str, blocks: list,
               is_sidechain: bool, is_compact_summary: bool) -> tuple[str | None, str | None]:
        """(agent id, agent kind) of a message: the line's ``agentId``, else the file's; an inline
        sidechain (1.0.x) joins its run ("inline"); a compaction run's file is "compaction"."""
        line_agent = _str(obj.get("agentId"))
        if not self.seen_message:
            self.seen_message = True
            self.file_agent_id = line_agent
        agent = line_agent or self.agent_id
        if agent is None and is_sidechain:
            run = self._sidechain_run(uuid, parent, line_no)
            if run[2] is None and role == "user":
                text = _text_of(blocks)
                if text:
                    run[2] = text
            # A compaction summary heads the file's own loaded segment, never a sidechain run.
            return (None, None) if is_compact_summary else (run[0], "inline")
        if agent is not None and agent.startswith("acompact"):
            return agent, "compaction"
        return agent, None

    def _follow(self, obj: dict, kind: Any, message: dict | None, record: MessageRecord) -> None:
        """What a message tells besides itself: its Task calls (for sub-agent links: every one by
        id, the main thread's by prompt too); for a user line, its 2.x sub-agent link and a
        compaction summary; for an assistant line, its model call's usage; for a system line, a
        fold."""
        for block in record.blocks:
            if block.kind == "tool_call" and block.tool_name in TASK_TOOL_NAMES:
                tool_input = block.tool_input if block.tool_input.__class__ is dict else {}
                if block.tool_id is not None:
                    self.tasks.setdefault(block.tool_id, tool_input)
                if not record.is_sidechain:  # an inline sidechain run is linked to the call of its prompt
                    prompt = tool_input.get("prompt")
                    self.task_calls.append(
                        (block.tool_id, prompt.strip() if prompt.__class__ is str else "", tool_input)
                    )
        if kind in ("user", "assistant") and message is not None:
            self.requests.message(kind, message, record.uuid)
        if kind == "user":
            result = obj.get("toolUseResult")
            if result.__class__ is dict:
                linked = _str(result.get("agentId"))
                if linked is not None:
                    tool_use_id = next((b.tool_id for b in record.blocks if b.kind == "tool_result" and b.tool_id), None)
                    self._link(linked, tool_use_id, record.line_no)
            if record.is_compact_summary:
                self.summaries.append((record.line_no, record.uuid, record.parent_uuid, _text_of(record.blocks)))
        elif kind == "assistant":
            api_id, model = record.api_message_id, record.model
            if message is not None and api_id is not None and model != SYNTHETIC_MODEL:
                new = (api_id, record.request_id) not in self.calls
                self._usage(message, api_id, record.request_id, record.uuid, record.line_no, model, record.agent_id,
                            record.timestamp)
                if new and (api_id, record.request_id) in self.calls:
                    sent = self.requests.take()
                    if sent is not None:
                        record.flags["request"] = sent
        elif kind == "system" and record.subtype in FOLD_SUBTYPES:
            self.requests.boundary()
            self._fold(obj, record.subtype, record.uuid, record.line_no, record.agent_id, record.timestamp)

    def _usage_again(self, obj: dict) -> bool:
        """A line whose uuid was read already may still be the later record of its call: Claude
        Code writes a response first as a streaming placeholder (a few output tokens, no
        stop_reason) and may write it again under the same uuid with the real output. True when
        the line was such a record of a call read already."""
        message = obj.get("message")
        if message.__class__ is not dict:
            return False
        api_id = _str(message.get("id"))
        key = (api_id, _str(obj.get("requestId")))
        if api_id is not None and key in self.calls and message.get("usage").__class__ is dict:
            self._update_call(self.calls[key], message["usage"], message.get("stop_reason") is not None)
            return True
        return False


    @staticmethod
    def _update_call(call: _Call, usage: dict, final: bool) -> None:
        """A later record of a call: the final one (with a stop_reason) says the call's figures;
        before it, the output only grows (streaming records count it up)."""
        rec = call.record
        output = _int(usage.get("output_tokens"))
        if final:
            rec.output = output
            rec.input_uncached = _int(usage.get("input_tokens")) or rec.input_uncached
            rec.cache_write = _int(usage.get("cache_creation_input_tokens")) or rec.cache_write
            rec.cache_read = _int(usage.get("cache_read_input_tokens")) or rec.cache_read
            call.all_null = False
        elif call.all_null and output > rec.output:
            rec.output = output

    def _usage(self, message, api_id, request_id, uuid, line_no, model, agent, ts) -> None:
        usage = message.get("usage")
        if usage.__class__ is not dict:
            return
        final = message.get("stop_reason") is not None
        key = (api_id, request_id)
        call = self.calls.get(key)
        output = _int(usage.get("output_tokens"))
        if call is not None:
            self._update_call(call, usage, final)
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


# -- what each request carried (2.1.3xx) ----------------------------------------------------------

# Records that tell what a request carried: ``api-request`` (the request: ``keep`` messages of the
# previous request, then the ``tail``, each by the hash of the message as sent), ``api-request-blob``
# (a message as sent where it differs from the transcript's line: the rendered reminders, the
# environment, a task notification as the model got it), ``api-request-shape`` (system prompt and
# tools by hash). Bookkeeping: no message, no tokens.
REQUEST_TYPES = frozenset({"api-request", "api-request-blob", "api-request-shape", "api-request-resumed"})
MAX_RENDERED_CHARS = 200_000  # a rendered message longer than this is kept by hash only


def _canonical(value: Any) -> str:
    """JSON with sorted keys and no spaces: how Claude Code hashes a message it sent."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class _Requests:
    """The messages each request carried, from the api-request records: every entry is the hash of
    one message as sent, resolved to the transcript lines it came from (consecutive user lines, or
    the lines of one assistant response, merge into one message: their uuids) or to the rendered
    message an ``api-request-blob`` keeps. ``take()`` gives a call its request, as the change from the
    request given to the call before it (``keep`` entries of that one, then ``tail``)."""

    def __init__(self):
        self.blobs: dict[str, dict] = {}  # hash -> {"role", "content"} as sent
        self.runs: dict[str, list[str]] = {}  # hash -> uuids of the transcript lines of that message
        self.run: list | None = None  # [role, message id, hash state, uuids]
        self.last: list[str] = []  # the hashes the last api-request carried
        self.pending: list[str] | None = None  # an api-request no call took yet
        self.given: list[str] = []  # the hashes of the request given to the last call

    def note(self, kind: str, obj: dict) -> None:
        if kind == "api-request-blob":
            h, message = obj.get("hash"), obj.get("message")
            if h.__class__ is str and message.__class__ is dict and message.get("role").__class__ is str:
                content = message.get("content")
                if len(_canonical(content)) <= MAX_RENDERED_CHARS:
                    self.blobs[h] = {"role": message["role"], "content": secrets.mask_value(content)}
        elif kind == "api-request":
            keep, tail = obj.get("keep"), obj.get("tail")
            if keep.__class__ is not int or tail.__class__ is not list:
                return
            hashes = self.last[:max(0, keep)] + [h for h in tail if h.__class__ is str]
            self.last = self.pending = hashes

    def message(self, kind: str, message: dict, uuid: str | None) -> None:
        """A user or assistant line: the message it joins (or starts), hashed as Claude Code does."""
        content = message.get("content")
        if content is None or message.get("role").__class__ is not str:
            self.run = None
            return
        role = message["role"]
        msg_id = message.get("id") if message.get("id").__class__ is str else None
        run = self.run
        if run is None or run[0] != role or (role != "user" and (msg_id is None or run[1] != msg_id)):
            run = self.run = [role, msg_id, hashlib.sha256(b'{"content":['), [], 0]
        blocks = [{"type": "text", "text": content}] if content.__class__ is str else content if content.__class__ is list else [content]
        for block in blocks:
            if block.__class__ is dict and "cache_control" in block:
                block = {k: v for k, v in block.items() if k != "cache_control"}
            if run[4]:
                run[2].update(b",")
            run[2].update(_canonical(block).encode("utf-8", "surrogatepass"))  # a lone surrogate (a hostile line) hashes, never raises
            run[4] += 1
        if uuid is not None:
            run[3].append(uuid)
        h = run[2].copy()
        h.update(f'],"role":{json.dumps(role)}}}'.encode())
        self.runs[h.hexdigest()] = list(run[3])

    def boundary(self) -> None:
        self.run = None

    def entry(self, h: str) -> dict:
        if h in self.blobs:
            return {"hash": h, **self.blobs[h]}
        if h in self.runs:
            return {"hash": h, "uuids": self.runs[h]}
        return {"hash": h}

    def take(self) -> dict | None:
        """The request of the call being read: {"keep": n, "tail": [entries]}, n entries of the
        request given to the call before it in this file, then the tail; None without a request."""
        hashes, self.pending = self.pending, None
        if hashes is None:
            return None
        keep = 0
        for a, b in zip(self.given, hashes):
            if a != b:
                break
            keep += 1
        self.given = hashes
        return {"keep": keep, "tail": [self.entry(h) for h in hashes[keep:]]}


# -- the format ---------------------------------------------------------------------------------


# -- a message's content, by its type -------------------------------------------------------------
# Each reader: (role, record_type, blocks, subtype, model, api message id) of a line.


def _user_content(obj: dict, kind: str, message: dict | None) -> tuple:
    """A user line: a prompt, or tool results only (role "tool")."""
    blocks = content_blocks(message.get("content")) if message else []
    role = "tool" if blocks and all(b.kind == "tool_result" for b in blocks) else "user"
    return role, kind, blocks, None, None, None


def _assistant_content(obj: dict, kind: str, message: dict | None) -> tuple:
    """An assistant line: one content block of an API response, with its model and message id."""
    blocks = content_blocks(message.get("content")) if message else []
    if message:
        return "assistant", "assistant", blocks, None, _str(message.get("model")), _str(message.get("id"))
    return "assistant", "assistant", blocks, None, None, None


def _system_content(obj: dict, kind: str, message: dict | None) -> tuple:
    """A system line: its subtype (a compaction boundary, an API error, ...) and content."""
    subtype = _str(obj.get("subtype"))
    return "system", "system", content_blocks(obj.get("content")), subtype, None, None


def _other_content(obj: dict, kind: Any, message: dict | None) -> tuple:
    """A line of another type (or none): role "other", its raw type kept."""
    if kind is None:
        record_type = "(none)"
    elif kind.__class__ is str:
        record_type = kind or "(none)"
    else:
        record_type = _compact(kind)[:80] or "(none)"
    blocks = content_blocks(message.get("content")) if message else []
    return "other", record_type, blocks, None, None, None


_CONTENT_READERS = {"user": _user_content, "assistant": _assistant_content, "system": _system_content}


def _parse(source: ParseInput) -> Iterator[Record]:
    return parse(
        source.stream,
        start_offset=source.start_offset,
        start_line=source.start_line,
        agent_id=source.agent_id,
        agent_type=source.agent_type,
        max_line_bytes=source.max_line_bytes,
        max_decompressed_bytes=source.max_decompressed_bytes,
    )


# -- a tool result's extra: its run and its clip --------------------------------------------------

# Claude Code cuts a Bash output at 30,000 characters and ends what the model gets with this
# marker; a result over 50,000 characters is saved to a file and the model gets a 2 KB preview
# inside <persisted-output> (docs/policy-lab.md §3.5, §1.1). The line's toolUseResult keeps the
# output the harness had, where it is longer than what the model got.
TRUNCATED_RE = re.compile(r"\.\.\. \[(\d+) lines truncated\] \.\.\.\s*$")
PERSISTED_RE = re.compile(r"<persisted-output>")


def clip_marker(text: str) -> str | None:
    """The marker of a tool result Claude Code cut before the model saw it, or None."""
    if "truncated]" in text and (m := TRUNCATED_RE.search(text)):
        return m.group(0).strip()
    if "<persisted-output>" in text:
        return next((ln for ln in text.splitlines() if ln.startswith("Output too large")), "<persisted-output>")
    return None


def original_output(result: Any) -> str | None:
    """The whole output a line's toolUseResult keeps: a string as is, a command's stdout (and
    stderr after it), a search's content, a read file's content."""
    if result.__class__ is str:
        return result or None
    if result.__class__ is not dict:
        return None
    stdout, stderr = result.get("stdout"), result.get("stderr")
    if stdout.__class__ is str:
        if stderr.__class__ is str and stderr:
            return f"{stdout}\n{stderr}" if stdout else stderr
        return stdout
    if result.get("content").__class__ is str:
        return result["content"]
    file = result.get("file")
    if file.__class__ is dict and file.get("content").__class__ is str:
        return file["content"]
    return None


def _run(result: Any) -> dict:
    """How a command ran, from a line's toolUseResult, in the shape every format's result extra
    has (core/records.py Block.extra): stdout and stderr apart, interrupted, the harness's note on
    the return code, the background task it became."""
    run: dict[str, Any] = {}
    if result.__class__ is not dict:
        return run
    stdout, stderr = result.get("stdout"), result.get("stderr")
    if stdout.__class__ is str and stderr.__class__ is str:
        run["stdout"], run["stderr"] = stream_text(stdout), stream_text(stderr)
    if result.get("interrupted") is True:
        run["interrupted"] = True
    note = result.get("returnCodeInterpretation")
    if note.__class__ is str and note:
        run["note"] = note
    task = result.get("backgroundTaskId")
    if task.__class__ is str:
        run["background_task"] = task
    return run


def result_extra(result: Any, text: str) -> dict | None:
    """A tool result's extra (Block.extra): its run (``_run``) and, where the harness cut what the
    model got (``clip_marker``), ``clip``: the marker and the original where the line holds a
    longer one. ``result`` is the line's toolUseResult (None without one), ``text`` the result's."""
    extra = _run(result)
    if extra.get("stdout") is not None and extra["stdout"].strip() == text.strip():
        del extra["stdout"]  # the result's own text: stored once (the page reads it as stdout)
    marker = clip_marker(text)
    if marker is not None:
        clip: dict[str, Any] = {"marker": marker}
        original = original_output(result)
        if original is not None and len(original) > len(text):
            clip["original"] = original
        extra["clip"] = clip
    return extra or None


def fill_extras(raw: str, blocks: list) -> list | None:
    """The stored blocks of a line imported before its tool results carried their extra, with it
    read from the stored line (a data migration); None when nothing changes."""
    if blocks.__class__ is not list or not any(b.__class__ is dict and b.get("kind") == "tool_result" for b in blocks):
        return None
    obj = raw_json(raw)
    result = obj.get("toolUseResult") if obj.__class__ is dict else None
    return stored_extras(blocks, functools.partial(result_extra, result))


def _content(obj: Any) -> Any:
    message = obj.get("message") if isinstance(obj, dict) else None
    return message.get("content") if isinstance(message, dict) else None


def _image_source(node: dict) -> list | None:
    """An Anthropic-shaped ``{"type": "image", "source": {...}}`` part's source."""
    if node.get("type") == "image" and isinstance(node.get("source"), dict):
        return [node["source"]]
    return None


def images(raw: str) -> list[dict]:
    """The base64 image sources of a line: its message content first (toolUseResult may repeat them)."""
    obj = raw_json(raw)
    if obj is None:
        return []
    found: list[dict] = []
    content = _content(obj)
    collect_images(content if content is not None else obj, found, _image_source)
    return found


def enrich(d: dict) -> dict:
    """Put back what the stored blocks leave in the raw line: thinking signatures, image data,
    a tool result's own content (its images). Blocks align with the raw content items."""
    raw = d.get("raw")
    blocks = d.get("blocks") or []
    if not raw or not any(b.get("kind") in ("thinking", "image") or b.get("images") for b in blocks):
        return d
    try:
        obj = json.loads(raw)
    except ValueError:
        return d
    content = _content(obj)
    if not isinstance(content, list):
        return d
    items = [c for c in content if c is not None]
    if len(items) != len(blocks):
        return d
    out = []
    for b, item in zip(blocks, items):
        if isinstance(item, dict):
            if b.get("kind") == "thinking" and isinstance(item.get("signature"), str) and item["signature"]:
                b = {**b, "signature": item["signature"]}
            elif b.get("kind") == "image" and isinstance(item.get("source"), dict):
                if not left_out_data(item):  # data left out of an over-cap line is not an image
                    b = {**b, "data": item["source"].get("data"), "media_type": item["source"].get("media_type")}
            elif b.get("kind") == "tool_result" and b.get("images") and isinstance(item.get("content"), list):
                parts = [{"type": "text", "text": left_out_data(p)} if left_out_data(p) else p for p in item["content"]]
                b = {**b, "content": parts}
        out.append(b)
    return {**d, "blocks": out}


# The harness's rules (core/harness.py; policy-lab 3.1): effective window = window - min(max output,
# 20,000) (MAX_OUTPUT_TOKENS_FOR_SUMMARY); auto-compact at the effective window - 13,000
# (AUTOCOMPACT_BUFFER_TOKENS: 167,000 on 200k); runs Anthropic models in a 200k window unless the
# user opted into 1M; chars/4. It leaves its system prompt and tools out of the log: captured
# requests lie under <schemas>/claude-code/captured/ (core/captured.py).
OUTPUT_RESERVE = 20_000
AUTOCOMPACT_BUFFER = 13_000
DEFAULT_WINDOW = 200_000
# The auto-compact rule per version, bisected on the real clients (`manage.py agent_thresholds
# --claude var/agents/claude-code-X` for the thresholds; `--models` for which models compact on
# them; the versions between by installing npm's releases: docs/policy-lab.md "Each version's own
# rule"). The first is the lab's default, the policy's own params: a version none covers is
# replayed with it, and the lab page says so.
# From 2.1.163 the client compacts on its threshold only the models it has an auto-compact window
# for, in the window it has it for; the others only reactively, when the API answers "prompt too long".
AUTO_WINDOWS_2_1_163 = (("claude-opus-4-6", 200_000), ("claude-sonnet-4-6", 200_000), ("claude-sonnet-5", 1_000_000))
VERSION_RULES = (
    VersionRule("2.1", "2.1.39 and 2.1.152", (),
                "window − min(max output, 20,000) − 13,000 for every model: 167,000 on 200k, 967,000 on 1M",
                until="2.1.152"),
    VersionRule("2.1", "2.1.163, 2.1.197 and 2.1.332", (("auto_windows", AUTO_WINDOWS_2_1_163),),
                "167,000 on 200k for claude-opus-4-6 and claude-sonnet-4-6, 967,000 for claude-sonnet-5 on 1M; "
                "any other model, and claude-opus-4-6 on 1M, only when the prompt passes the window",
                since="2.1.163"),
    # 2.1.153 to 2.1.162, offline: no model compacted on a threshold (their auto-compact windows come
    # from the server's config, which a run here cannot reach).
    VersionRule("2.1", "2.1.153 and 2.1.162", (("auto_windows", ()),),
                "no model on a threshold (offline; the windows come from the server's config): only when the "
                "prompt passes the window", since="2.1.153", until="2.1.162"),
    # 2.0.57's bundle: effective = window − min(CLAUDE_CODE_MAX_OUTPUT_TOKENS or 32,000, the model's max
    # output); the client compacted at a last usage of 155,000 on claude-opus-4-6, not at 154,999.
    VersionRule("2.0", "2.0.57", (("reserve_cap", 32_000), ("max_output", 32_000)),
                "window − min(max output, 32,000) − 13,000: 155,000 on 200k"),
)
HARNESS = Harness(
    fold_label="Claude Code auto-compact",
    fold_margin=AUTOCOMPACT_BUFFER,
    reserve_cap=OUTPUT_RESERVE,
    default_window=DEFAULT_WINDOW,
    default_window_provider="anthropic",
    own_policy="claude_code",
    captured_prompt="claude-code",
    usual_for=("anthropic",),
    version_rules=VERSION_RULES,
)

FORMAT = ENTRY.format(
    parse=_parse,
    group=claude_code_layout.group,
    companions=claude_code_layout.companions,
    images=images,
    enrich=enrich,
    fill_extras=fill_extras,
    harness=HARNESS,
    # Its own session file, which `claude --resume` reads (core/export_claude.py writes it).
    export=Target("claude-code", "Claude Code JSONL", "application/x-ndjson", export_claude.claude_code_session, agent_session=True,
                  resume_help=export_claude.RESUME_HELP, continue_commands=export_claude.claude_code_commands),
)
