"""Factory Droid session files (JSONL) -> normalized records. Checked against what Droid 0.225 (npm
``@factory/cli`` 0.225.1, its linux-x64 binary 0.225.2) wrote and sent, run offline here with a
custom model (``~/.factory/settings.json`` ``customModels``: provider ``generic-chat-completion-api``,
``baseUrl`` a local scripted Chat Completions server, ``maxContextLimit``; ``compactionTokenLimit``)
through ``droid exec --auto high --input-format stream-json``; the record shapes read in its bundled
source (``saveCompactionSummary``, the ``compaction_state`` line).

Pure. A session is ``~/.factory/sessions/<cwd, / as ->/<id>.jsonl``:

- ``session_start``: ``id``, ``title``, ``cwd``, ``version``, ``owner``.
- ``message``: ``{id, parentId, timestamp, message: {role, content}}`` with Anthropic-shaped blocks
  (``text``, ``thinking``, ``tool_use {id, name, input}``, ``tool_result {tool_use_id, is_error,
  content}``, ``image``). An ``assistant`` message is one model call (``openaiMessageId``,
  ``modelId``); a ``user`` message of tool results only -> role tool. A ``user`` message whose id is
  ``context-<the prompt's id>`` holds the system reminders Droid sends before a prompt (tools,
  connectors, system info): a meta user message.
- ``compaction_state``: a fold. ``summaryText``, ``summaryTokens`` (Droid's count of the summary),
  ``summaryKind`` (``llm_summary``; ``provider_switch_serialization`` when the model's provider
  changed), ``anchorMessage {id, index}`` (the last message the summary replaced), ``removedCount``.
  The next request carries the summary (a user message: "A previous instance of Droid has summarized
  the conversation..."), then the messages after the anchor, kept. It becomes a ``system`` marker
  (``compact_boundary``), a user message holding the summary (``is_compact_summary``), a meta user
  message of its ``systemInfoText`` (sent with the summary) and a ``FoldRecord`` whose preserved
  messages are that one, then those after the anchor. After a fold Droid also re-renders its
  reminders (tools, skills, sub-agents, connectors) in the next request, which its file does not
  hold. Droid logs neither the
  trigger (its threshold, or ``/compact``) nor the tokens before: both left empty. The summarization
  call is not logged.
- ``agent_turn_outcome``: the end of a prompt's turn (bookkeeping).

Usage: the session file keeps no usage per call. ``<id>.settings.json`` beside it holds the
session's totals (``tokenUsage``) and the last call's (``lastCallTokenUsage``: ``inputTokens``,
``outputTokens``, ``cacheReadTokens``): the last call gets those, measured; the others are calls of
zero usage (as Goose's old session files), and the totals are kept in the first message's flags.

Storage is ``DOCUMENT`` (read whole each time; the settings file is its companion).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from contextviewer.core.records import BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import (
    KeptIds,
    TimeSpan,
    content_blocks,
    parse_timestamp,
    pos_int,
    str_or_none,
)
from contextviewer.importers.driver import JsonParser
from contextviewer.importers.droid.entry import ENTRY, sniff  # noqa: F401 - the light part
from contextviewer.importers.formats import ParseInput

BOOKKEEPING = frozenset({"session_start", "agent_turn_outcome"})


def settings_path(path: Path) -> Path:
    """``<id>.settings.json`` beside ``<id>.jsonl``."""
    return path.with_name(path.name.removesuffix(".jsonl") + ".settings.json")


def companions(path: Path) -> list[Path]:
    found = settings_path(path)
    return [found] if path.name.endswith(".jsonl") and found.is_file() else []


def read_settings(path: str | None) -> dict:
    """The session's settings file, or {} when it is absent or unreadable (the log is read anyway)."""
    if not path:
        return {}
    try:
        data = json.loads(settings_path(Path(path)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if data.__class__ is dict else {}


class _Parser(JsonParser, TimeSpan):
    what = "a Factory Droid session file"

    def __init__(self, source: ParseInput):
        super().__init__(max_line_bytes=source.max_line_bytes, max_decompressed_bytes=source.max_decompressed_bytes)
        self.settings = read_settings(source.path)
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.title: str | None = None
        self.version: str | None = None
        self.models: dict[str, None] = {}
        self.out: list[Record] = []
        self.calls: list[UsageRecord] = []
        self.folds: list[FoldRecord] = []
        self.made: list[str] = []  # the message ids, in file order
        self.first: MessageRecord | None = None
        self.last_id: str | None = None
        self.duplicates = 0
        self.kept = KeptIds("id")

    def run(self, stream, start_offset: int, start_line: int) -> Iterator[Record]:
        for record in super().run(stream, start_offset, start_line):
            if self.out:
                out, self.out = self.out, []
                yield from out
            yield record

    def finish(self) -> Iterator[Record]:
        self._measured()
        out, self.out = self.out, []
        yield from out
        yield from self.calls
        yield from self.folds
        self.finished = True
        yield self.session_info()

    def _measured(self) -> None:
        """The settings file's last call usage on the last call; its totals on the first message."""
        last = self.settings.get("lastCallTokenUsage")
        if self.calls and last.__class__ is dict:
            call = self.calls[-1]
            call.input_uncached = pos_int(last.get("inputTokens"))
            call.cache_read = pos_int(last.get("cacheReadTokens"))
            call.output = pos_int(last.get("outputTokens"))
        totals = self.settings.get("tokenUsage")
        if self.first is not None and totals.__class__ is dict:
            self.first.flags["session_totals"] = totals

    # -- one line

    def process(self, obj: dict, line_no: int, offset: int, raw: str) -> BadLine | None:
        kind = obj.get("type")
        ts = self.saw(parse_timestamp(obj.get("timestamp")))
        if kind == "session_start":
            self.session_id = self.session_id or str_or_none(obj.get("id"))
            self.cwd = self.cwd or str_or_none(obj.get("cwd"))
            self.title = str_or_none(obj.get("title")) or self.title
            version = obj.get("version")
            self.version = str(version) if version.__class__ in (int, str) else self.version
            return None
        if kind in BOOKKEEPING:
            return None
        entry_id = str_or_none(obj.get("id")) or f"{self.session_id or 'droid'}:{line_no}"
        if entry_id in self.kept:  # a line written twice: the first is kept
            self.duplicates += 1
            return self.kept.collision(entry_id, line_no, offset, raw, obj.get("timestamp"))
        self.kept.add(entry_id, line_no, raw, obj.get("timestamp"))
        parent = str_or_none(obj.get("parentId")) if "parentId" in obj else self.last_id
        record = MessageRecord(
            line_no=line_no,
            offset=offset,
            role="other",
            record_type=kind[:60] if kind.__class__ is str and kind else "(none)",
            raw=raw,
            uuid=entry_id,
            parent_uuid=parent,
            timestamp=ts,
            session_id=self.session_id,
        )
        if kind == "compaction_state":
            self._compaction(record, obj, line_no, ts)
            return None
        self.last_id = entry_id
        if kind == "message":
            self._message(record, obj.get("message") if obj.get("message").__class__ is dict else {}, line_no, ts)
        self.out.append(record)
        if record.role in ("user", "assistant", "tool"):
            self.made.append(record.uuid)
            self.first = self.first or record
        return None

    def _message(self, record: MessageRecord, message: dict, line_no: int, ts) -> None:
        role = message.get("role")
        record.record_type = f"message:{role}"[:60] if role.__class__ is str else "message"
        blocks = content_blocks(message.get("content"))
        record.blocks = blocks
        if role == "assistant":
            record.role = "assistant"
            record.model = str_or_none(message.get("modelId"))
            if record.model:
                self.models[record.model] = None
            record.api_message_id = record.uuid
            record.request_id = str_or_none(message.get("openaiMessageId"))
            self.calls.append(
                UsageRecord(
                    api_message_id=record.uuid,
                    request_id=record.request_id,
                    message_uuid=record.uuid,
                    line_no=line_no,
                    model=record.model,
                    timestamp=ts,
                )
            )
        elif role == "user":
            record.role = "tool" if blocks and all(b.kind == "tool_result" for b in blocks) else "user"
            record.is_meta = record.uuid.startswith("context-")

    def _compaction(self, marker: MessageRecord, obj: dict, line_no: int, ts) -> None:
        summary = obj.get("summaryText") if obj.get("summaryText").__class__ is str else ""
        marker.role, marker.subtype = "system", "compact_boundary"
        marker.record_type = "compaction_state"
        marker.parent_uuid = self.last_id
        marker.blocks = [Block("text", text="Factory Droid compacted the conversation")]
        holder = MessageRecord(
            line_no=line_no,
            offset=marker.offset,
            role="user",
            record_type="compaction_state:summary",
            raw=marker.raw,
            blocks=[Block("text", text=summary)] if summary else [],
            uuid=f"{marker.uuid}:summary",
            parent_uuid=marker.uuid,
            timestamp=ts,
            session_id=self.session_id,
            is_meta=True,
            is_compact_summary=True,
        )
        self.out.extend([marker, holder])
        anchor = obj.get("anchorMessage") if obj.get("anchorMessage").__class__ is dict else {}
        anchor_id = str_or_none(anchor.get("id"))
        preserved = self.made[self.made.index(anchor_id) + 1:] if anchor_id in self.made else []
        info = obj.get("systemInfoText")
        if info.__class__ is str and info:  # sent with the summary, before what the fold kept
            self.out.append(MessageRecord(
                line_no=line_no, offset=marker.offset, role="user", record_type="compaction_state:system_info",
                raw=marker.raw, blocks=[Block("text", text=info)], uuid=f"{marker.uuid}:system-info",
                parent_uuid=holder.uuid, timestamp=ts, session_id=self.session_id, is_meta=True,
            ))
            preserved = [f"{marker.uuid}:system-info", *preserved]
        self.folds.append(
            FoldRecord(
                line_no=line_no,
                boundary_uuid=marker.uuid,
                kind="compact",
                trigger=None,  # Droid does not log it
                tokens_before=None,  # nor the context it replaced
                logical_parent_uuid=anchor_id,
                summary_uuid=holder.uuid,
                summary_text=summary,
                preserved_uuids=preserved,
                timestamp=ts,
                metadata={
                    "summary_kind": str_or_none(obj.get("summaryKind")),
                    "summary_tokens": obj.get("summaryTokens") if obj.get("summaryTokens").__class__ is int else None,
                    "removed_count": obj.get("removedCount") if obj.get("removedCount").__class__ is int else None,
                    "anchor_index": anchor.get("index") if anchor.get("index").__class__ is int else None,
                },
            )
        )

    def session_info(self) -> SessionInfo:
        return SessionInfo(
            external_id=self.session_id,
            title=self.title,
            cwd=self.cwd,
            models=list(self.models),
            started_at=self.started_at,
            ended_at=self.ended_at,
            lines=self.consumed_lines,
            bytes_consumed=self.consumed_offset,
            duplicate_uuids=self.duplicates,
        )


def parse(source: ParseInput) -> Iterator[Record]:
    yield from _Parser(source).parse(source.stream, source.start_offset, source.start_line)


FORMAT = ENTRY.format(parse=parse, companions=companions)
