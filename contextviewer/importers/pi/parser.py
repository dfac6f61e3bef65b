"""pi session files (JSONL) -> normalized records. Checked against what pi 0.73.1 wrote and sent, run
offline against a scripted model server (ops/drivers/pi.py, issue 33).

Pure. A session is a header line (``type: "session"``: ``id``, ``version``, ``timestamp``, ``cwd``)
and entries ``{type, id, parentId, timestamp, ...}`` forming a tree by ``parentId`` (one branch per
file unless the user went back with ``/tree``):

- ``message``: ``message.role`` ``user`` (``content``: a string or text/image blocks), ``assistant``
  (``text``, ``thinking``, ``toolCall`` blocks; ``usage {input, output, cacheRead, cacheWrite}``,
  ``model``, ``responseId``, ``stopReason``: one model call per assistant message),
  ``toolResult`` (``toolCallId``, ``toolName``, ``content``, ``isError``) -> role tool,
  ``bashExecution`` (a ``!command`` the user ran: ``command``, ``output``) and ``custom`` /
  ``branchSummary`` / ``compactionSummary`` (sent as user messages) -> role user.
- ``compaction``: a fold. ``summary``, ``firstKeptEntryId``, ``tokensBefore`` (pi's own count of the
  context it replaced: the last call's input + output), ``details``. What the next request carries:
  the summary (as a user message: "The conversation history before this point was compacted into
  the following summary: <summary>…</summary>"), then the entries from ``firstKeptEntryId`` on the
  compaction's branch (kept verbatim: they lie BEFORE the compaction line), then what follows. It
  becomes a ``system`` marker (subtype ``compact_boundary``, the entry's id), a user message holding
  the summary (``is_compact_summary``), and a ``FoldRecord`` whose preserved messages are the kept
  entries. pi does not log what triggered a compaction (its threshold after a call, an overflow
  error, or ``/compact``): the trigger is left empty. Nor does it log the summarization call.
- ``model_change``, ``thinking_level_change``, ``label``, ``custom`` (an extension's state),
  ``session_info`` (its ``name`` is the title): bookkeeping, no message. ``branch_summary`` and
  ``custom_message`` are sent to the model: user messages. Any other type: an ``other`` message
  with no text (its raw kept).

Storage is ``DOCUMENT``: pi migrates an older session file in place when it loads it (v1 -> v3), so
a file is read whole each time; entry ids are the message uuids (v1 entries have none:
``<session>:<line>``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from contextviewer.core.harness import Harness
from contextviewer.core.records import BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import (
    KeptIds,
    TimeSpan,
    compact_json,
    image_block,
    json_arguments,
    parse_timestamp,
    pos_int,
    str_or_none,
    tool_call,
)
from contextviewer.importers.driver import JsonParser
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.pi.entry import ENTRY, sniff  # noqa: F401 - the light part

BOOKKEEPING = frozenset({"model_change", "thinking_level_change", "label", "custom", "session_info"})
USER_ROLES = frozenset({"user", "custom", "branchSummary", "compactionSummary", "bashExecution"})


def content_blocks(content: Any) -> list[Block]:
    """Blocks of a pi message's ``content``: a string, or text / thinking / toolCall / image blocks."""
    if content.__class__ is str:
        return [Block("text", text=content)] if content else []
    blocks: list[Block] = []
    for item in content if content.__class__ is list else ():
        if item.__class__ is not dict:
            blocks.append(Block("other", text=compact_json(item)[:200], raw_type="content"))
            continue
        kind = item.get("type")
        if kind == "text":
            if item.get("text").__class__ is str and item["text"]:
                blocks.append(Block("text", text=item["text"]))
        elif kind == "thinking":
            blocks.append(Block("thinking", text=item.get("thinking") if item.get("thinking").__class__ is str else ""))
        elif kind == "toolCall":
            blocks.append(
                tool_call(str_or_none(item.get("id")), str_or_none(item.get("name")), json_arguments(item.get("arguments")))
            )
        elif kind == "image":
            blocks.append(image_block(str_or_none(item.get("mimeType")), str_or_none(item.get("data"))))
        else:
            blocks.append(Block("other", text="", raw_type=str_or_none(kind) or "(none)"))
    return blocks


def _text(blocks: list[Block]) -> str:
    return "\n".join(b.text for b in blocks if b.kind == "text")


class _Parser(JsonParser, TimeSpan):
    what = "a pi session file"

    def __init__(self, source: ParseInput):
        super().__init__(max_line_bytes=source.max_line_bytes, max_decompressed_bytes=source.max_decompressed_bytes)
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.title: str | None = None
        self.version: int | None = None
        self.models: dict[str, None] = {}
        self.out: list[Record] = []
        self.calls: list[UsageRecord] = []
        self.folds: list[FoldRecord] = []
        # Every entry in file order: (id, parentId, the message uuid it made or None)
        self.entries: list[tuple[str, str | None, str | None]] = []
        self.parents: dict[str, str | None] = {}
        self.made: dict[str, str] = {}  # entry id -> message uuid (sent roles only)
        self.last_id: str | None = None
        self.duplicates = 0
        self.kept = KeptIds("id")  # the entry ids kept

    def run(self, stream, start_offset: int, start_line: int) -> Iterator[Record]:
        for record in super().run(stream, start_offset, start_line):
            if self.out:
                out, self.out = self.out, []
                yield from out
            yield record

    def finish(self) -> Iterator[Record]:
        out, self.out = self.out, []
        yield from out
        yield from self.calls
        yield from self.folds
        self.finished = True
        yield self.session_info()

    # -- one line

    def process(self, obj: dict, line_no: int, offset: int, raw: str) -> BadLine | None:
        kind = obj.get("type")
        ts = self.saw(parse_timestamp(obj.get("timestamp")))
        if kind == "session":
            self.session_id = self.session_id or str_or_none(obj.get("id"))
            self.cwd = self.cwd or str_or_none(obj.get("cwd"))
            self.version = obj.get("version") if obj.get("version").__class__ is int else self.version
            return None
        entry_id = str_or_none(obj.get("id")) or f"{self.session_id or 'pi'}:{line_no}"
        if entry_id in self.kept:  # an entry written twice (said when it is another record): the first is kept
            self.duplicates += 1
            return self.kept.collision(entry_id, line_no, offset, raw, obj.get("timestamp"))
        self.kept.add(entry_id, line_no, raw, obj.get("timestamp"))
        # v1 entries have no parentId: each follows the one before.
        parent = str_or_none(obj.get("parentId")) if "parentId" in obj else self.last_id
        self.parents[entry_id] = parent
        self.last_id = entry_id
        if kind in BOOKKEEPING:
            if kind == "model_change" and str_or_none(obj.get("modelId")):
                self.models[obj["modelId"]] = None
            if kind == "session_info" and str_or_none(obj.get("name")):
                self.title = obj["name"]
            return None
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
        if kind == "message":
            self._message(record, obj.get("message") if obj.get("message").__class__ is dict else {}, line_no, ts)
        elif kind == "compaction":
            self._compaction(record, obj, line_no, ts)
            return None
        elif kind in ("branch_summary", "custom_message"):
            record.role = "user"
            text = obj.get("summary") if kind == "branch_summary" else obj.get("content")
            record.blocks = content_blocks(text)
            record.is_meta = True
        self.out.append(record)
        if record.role in ("user", "assistant", "tool"):
            self.made[entry_id] = record.uuid
        return None

    def _message(self, record: MessageRecord, message: dict, line_no: int, ts) -> None:
        role = message.get("role")
        record.record_type = f"message:{role}"[:60] if role.__class__ is str else "message"
        if role == "assistant":
            record.role = "assistant"
            record.blocks = content_blocks(message.get("content"))
            record.model = str_or_none(message.get("model"))
            if record.model:
                self.models[record.model] = None
            record.api_message_id = record.uuid
            record.request_id = str_or_none(message.get("responseId"))
            if message.get("stopReason").__class__ is str:
                record.flags["stop_reason"] = message["stopReason"]
            usage = message.get("usage") if message.get("usage").__class__ is dict else {}
            self.calls.append(
                UsageRecord(
                    api_message_id=record.uuid,
                    request_id=record.request_id,
                    message_uuid=record.uuid,
                    line_no=line_no,
                    model=record.model,
                    input_uncached=pos_int(usage.get("input")),
                    cache_write=pos_int(usage.get("cacheWrite")),
                    cache_read=pos_int(usage.get("cacheRead")),
                    output=pos_int(usage.get("output")),
                    timestamp=ts,
                )
            )
        elif role == "toolResult":
            record.role = "tool"
            blocks = content_blocks(message.get("content"))
            images = sum(1 for b in blocks if b.kind == "image")
            record.blocks = [
                Block(
                    "tool_result",
                    text=_text(blocks),
                    tool_id=str_or_none(message.get("toolCallId")),
                    tool_name=str_or_none(message.get("toolName")),
                    is_error=message.get("isError") is True,
                    images=images,
                )
            ]
        elif role == "bashExecution":
            record.role = "user"
            command, output = str_or_none(message.get("command")) or "", message.get("output")
            text = f"$ {command}\n{output}" if output.__class__ is str and output else f"$ {command}"
            record.blocks = [Block("text", text=text)]
            record.is_meta = True
        elif role in USER_ROLES:
            record.role = "user"
            record.blocks = content_blocks(message.get("content") if role != "branchSummary" else message.get("summary"))
            record.is_meta = role != "user"

    def _compaction(self, marker: MessageRecord, obj: dict, line_no: int, ts) -> None:
        summary = obj.get("summary") if obj.get("summary").__class__ is str else ""
        marker.role, marker.subtype = "system", "compact_boundary"
        marker.blocks = [Block("text", text="pi compacted the conversation")]
        holder = MessageRecord(
            line_no=line_no,
            offset=marker.offset,
            role="user",
            record_type="compaction:summary",
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
        first_kept = str_or_none(obj.get("firstKeptEntryId"))
        self.folds.append(
            FoldRecord(
                line_no=line_no,
                boundary_uuid=marker.uuid,
                kind="compact",
                trigger=None,  # pi does not log it
                tokens_before=obj["tokensBefore"] if obj.get("tokensBefore").__class__ is int else None,
                summary_uuid=holder.uuid,
                summary_text=summary,
                preserved_uuids=self._kept(marker.parent_uuid, first_kept),
                timestamp=ts,
                metadata={
                    "first_kept_entry": first_kept,
                    "details": obj.get("details") if obj.get("details").__class__ is dict else None,
                    "from_extension": obj.get("fromHook") is True,
                },
            )
        )

    def _kept(self, parent: str | None, first_kept: str | None) -> list[str]:
        """The messages from ``first_kept`` to ``parent`` on the compaction's branch, in order (none
        when ``first_kept`` is not on it)."""
        chain: list[str] = []
        seen: set[str] = set()
        node = parent
        while node is not None and node not in seen:
            seen.add(node)
            chain.append(node)
            if node == first_kept:
                return [self.made[n] for n in reversed(chain) if n in self.made]
            node = self.parents.get(node)
        return []

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


# The harness's rules (pi 0.73.1, docs/compaction.md and core/agent-session.js _checkCompaction): it
# compacts after a call when the context (that call's input + output) passes contextWindow -
# reserveTokens, reserveTokens = 16,384 by default (settings compaction.reserveTokens), kept for
# the response; it estimates tokens as characters / 4.
HARNESS = Harness(
    fold_label="pi compact",
    fold_at_effective=True,
    reserve_cap=16_384,
)

FORMAT = ENTRY.format(parse=parse, harness=HARNESS)
