"""Normalized transcript records: what every importer yields and the ingest service stores.

Pure data (no Django). Names follow DESIGN.md: message, block, model call, fold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# Block kinds shown in the viewer; anything else is kept as "other" with its raw type.
BLOCK_KINDS = ("text", "thinking", "tool_call", "tool_result", "image", "other")
ROLES = ("user", "assistant", "system", "tool", "other")


def text_of_blocks(blocks) -> str:
    """The searchable text of a message (its blocks as stored: dicts): text, thinking, tool input
    and output, tool names. What the search index holds (conversations/search.py); made where the
    message is prepared (ingest/prepare.py); pure, so the parsing process may import it."""
    parts: list[str] = []
    for block in blocks or ():
        if not isinstance(block, dict):
            continue
        if block.get("tool_name"):
            parts.append(str(block["tool_name"]))
        text = block.get("text")
        if isinstance(text, str) and text:
            parts.append(text)
    return "\n".join(parts)


@dataclass(slots=True)
class Block:
    kind: str  # one of BLOCK_KINDS
    text: str = ""  # text, thinking text, tool_result text (images excluded), tool input as JSON text
    tool_id: str | None = None  # tool_call id, or the call id a tool_result answers
    tool_name: str | None = None
    tool_input: Any = None  # parsed tool input (tool_call)
    is_error: bool = False  # tool_result
    media_type: str | None = None  # image
    data_size: int = 0  # image: length of the base64 data (the data stays in the raw record)
    images: int = 0  # tool_result: number of image parts inside it
    raw_type: str | None = None  # the original block type when it differs (redacted_thinking, document, ...)
    width: int | None = None  # image: pixels, from the image's header (core/images.py)
    height: int | None = None
    image_sizes: list | None = None  # tool_result: [width, height] of its images whose header was read
    # tool_result: what the log records beside the text, read by the format's importer so nothing
    # above the importers reads a raw record for it; shown, not counted. How a command ran:
    # exit_code, duration_seconds, stdout and stderr apart (stdout left out where it is the text itself), interrupted, note (the harness's word
    # on the return code), background_task. A result the harness cut before the model saw it:
    # clip = {"marker": the marker text, "omitted_tokens": what the marker says was left out,
    # "original": the whole output, where the log keeps it} (each key only where known).
    extra: dict | None = None

    def as_dict(self) -> dict:
        d: dict[str, Any] = {"kind": self.kind}
        for name in ("text", "tool_id", "tool_name", "tool_input", "media_type", "raw_type"):
            value = getattr(self, name)
            if value not in (None, ""):
                d[name] = value
        if self.is_error:
            d["is_error"] = True
        if self.data_size:
            d["data_size"] = self.data_size
        if self.images:
            d["images"] = self.images
        if self.width and self.height:
            d["width"], d["height"] = self.width, self.height
        if self.image_sizes:
            d["image_sizes"] = self.image_sizes
        if self.extra:
            d["extra"] = self.extra
        return d


@dataclass(slots=True)
class MessageRecord:
    """One conversational line (user, assistant, system) or one line of an unknown record type."""

    line_no: int  # 1-based line number in the source file
    offset: int  # byte offset of the line start in the (decompressed) file
    role: str  # one of ROLES
    record_type: str  # the line's raw "type"
    raw: str  # the original line, decoded, exactly as read (invariant 1); a line over the cap: its reduced JSON, markers included (importers/longline.py)
    blocks: list[Block] = field(default_factory=list)
    uuid: str | None = None
    parent_uuid: str | None = None
    logical_parent_uuid: str | None = None
    subtype: str | None = None
    timestamp: datetime | None = None
    session_id: str | None = None
    is_sidechain: bool = False
    agent_id: str | None = None  # sub-agent the line belongs to (file's agentId, or an inline sidechain's)
    is_meta: bool = False
    is_compact_summary: bool = False
    model: str | None = None
    # How agent_id relates to the file: None (the file's own lines; a set agent_id then makes the
    # whole file that sub-agent), "inline" (a sub-agent run written inside this file: it becomes a
    # child conversation), "compaction" (the file is a compaction run: the summarizer's own call).
    agent_kind: str | None = None
    api_message_id: str | None = None  # assistant: message.id
    request_id: str | None = None  # assistant: requestId
    flags: dict[str, Any] = field(default_factory=dict)  # api_error, synthetic, visible_in_transcript_only, ...


@dataclass(slots=True)
class UsageRecord:
    """Measured usage of one model call, after dedupe by (message.id, requestId)."""

    api_message_id: str
    request_id: str | None
    message_uuid: str | None  # first line of the call
    line_no: int
    model: str | None
    input_uncached: int = 0
    cache_write: int = 0
    cache_write_5m: int | None = None
    cache_write_1h: int | None = None
    cache_read: int = 0
    output: int = 0
    output_is_lower_bound: bool = False  # streaming value seen with stop_reason null
    reasoning: int | None = None  # of `output`, the reasoning tokens, where the log records them apart
    agent_id: str | None = None
    timestamp: datetime | None = None

    @property
    def context_size(self) -> int:
        return self.input_uncached + self.cache_write + self.cache_read


@dataclass(slots=True)
class FoldRecord:
    """A compaction found in the log: compact_boundary (+ isCompactSummary) or microcompact_boundary."""

    line_no: int
    boundary_uuid: str | None
    kind: str  # "compact" | "microcompact"
    trigger: str | None  # auto | manual
    tokens_before: int | None  # compactMetadata.preTokens
    tokens_after: int | None = None  # compactMetadata.postTokens where given
    logical_parent_uuid: str | None = None  # last message of the archived history
    preserved_uuids: list[str] = field(default_factory=list)
    summary_uuid: str | None = None  # the isCompactSummary line that heads the loaded segment
    summary_text: str = ""
    timestamp: datetime | None = None
    agent_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # The compaction call's own usage, where the log keeps it beside the fold (Codex 0.171's
    # latest_token_usage_record, opencode's compaction message): Fold.cost's shape, {"calls",
    # "input_uncached", "cache_write", "cache_read", "output", "model"}. It is the fold's cost, not
    # a model call of the conversation.
    cost: dict[str, Any] | None = None


@dataclass(slots=True)
class AgentLink:
    """A sub-agent run linked to the tool call that started it."""

    agent_id: str
    tool_use_id: str | None
    line_no: int
    agent_type: str | None = None
    description: str | None = None


@dataclass(slots=True)
class BadLine:
    line_no: int
    offset: int
    reason: str  # a sentence a person can read
    size: int = 0


@dataclass(slots=True)
class SessionInfo:
    """What the file says about its session; emitted once, after the last line (a file holding
    several sessions emits one after each session's records)."""

    external_id: str | None = None  # sessionId
    title: str | None = None  # ai-title/custom-title/summary record
    cwd: str | None = None
    git_branch: str | None = None
    cli_version: str | None = None
    models: list[str] = field(default_factory=list)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    agent_id: str | None = None  # set for a sub-agent file
    agent_type: str | None = None  # from agent-*.meta.json
    window: int | None = None  # the context window the log says the harness ran with
    lines: int = 0  # complete lines consumed
    bytes_consumed: int = 0  # offset after the last complete line (resume point)
    duplicate_uuids: int = 0


@dataclass(slots=True)
class ImportProgress:
    bytes_read: int
    lines: int


Record = MessageRecord | UsageRecord | FoldRecord | AgentLink | BadLine | SessionInfo | ImportProgress
