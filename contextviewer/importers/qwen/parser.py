"""Qwen Code chat logs (JSONL) -> normalized records. Checked against what Qwen Code 0.24.4 wrote and
sent, run offline against a scripted model server (ops/drivers/qwen.py, issue 33).

Pure and streaming. A line is one record of Qwen Code's envelope (``uuid``, ``parentUuid``,
``sessionId``, ``timestamp``, ``type``, ``cwd``, ``version``):

- ``user``: a prompt, ``message.parts`` (``provenance: real_user``). What Qwen Code sends beside it
  (``<system-reminder>`` parts: the skills, the date, the environment) is not logged.
- ``assistant``: ``message.parts`` of the model (``text``, ``thought``, ``functionCall``) and its
  ``usageMetadata`` (``promptTokenCount`` = the whole input, ``cachedContentTokenCount`` of it,
  ``candidatesTokenCount``, ``thoughtsTokenCount``). One model call per line with usage; a line
  without usage right after one belongs to the same call (a sub-agent writes its round's usage on a
  line of its own, then the round's function calls).
- ``tool_result``: ``message.parts`` of ``functionResponse`` (``response.output`` or
  ``response.error``) and ``toolCallResult`` (the harness's view: status, a shell's exit code, a
  sub-agent's ``task_execution`` with its resolved name).
- ``system``: ``subtype`` ``ui_telemetry`` (the CLI's events: an ``api_response`` per model call of
  any kind, tool calls), ``attribution_snapshot``: bookkeeping, no message. ``chat_compression``:
  a fold (below). Other subtypes: a ``system`` message with no text.
- Any other type: an ``other`` message with no text (its raw kept).

Usage: ``input_uncached = promptTokenCount - cachedContentTokenCount``, ``cache_read = cached``,
``output = candidatesTokenCount + thoughtsTokenCount``.

A compression (``system``/``chat_compression``) holds ``info`` (``originalTokenCount``,
``newTokenCount``, their ``...IsEstimated`` flags, ``triggerReason`` ``token_limit`` or ``manual``)
and ``compressedHistory``: the history Qwen Code goes on with, which is what the next request
carries: the summary as a user message (``<state_snapshot>…`` + "Resume the prior task…"), the
model's "Got it. Thanks for the additional context!", files it restores ("Recently accessed file…")
and, when the compression ran as a new prompt was sent, that prompt. It becomes:
a ``system`` marker (subtype ``compact_boundary``, the line's uuid), the summary (a user message,
``is_compact_summary``), one message per other entry of the history (flagged
``compressed_history``), then the prompt. Qwen Code writes the prompt line BEFORE the compression
line, and sends it after the summary: a user line is held until the next line that is not
bookkeeping, and a compression that comes before any other puts its messages before the held
prompt (its copy in ``compressedHistory`` is not emitted twice). ``tokens_before`` is the input
measured on the last call before the fold (Qwen Code's ``originalTokenCount`` is its estimate of
that plus the new prompt: kept in the fold's metadata with ``newTokenCount``); ``tokens_after`` is
left to ingest (the first call after). The compaction call(s) are only in the telemetry (an
``api_response`` with no assistant line after it): their usage is the fold's ``cost``.

Sub-agents: ``subagents/<sessionId>/agent-<agentId>.jsonl`` (lines with ``agentId`` and
``isSidechain``), ``agentId = <resolved agent name>-<tool call id>``; the parent's ``agent`` tool
result names the resolved agent (``toolCallResult.resultDisplay.subagentName``): that gives the
``AgentLink``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from contextviewer.core.harness import Harness
from contextviewer.core.records import AgentLink, BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
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
from contextviewer.importers.qwen.entry import ENTRY, group, meta_path, safe_id, sniff  # noqa: F401 - the light part

BOOKKEEPING = frozenset({"ui_telemetry", "attribution_snapshot"})
TRIGGERS = {"token_limit": "auto", "manual": "manual"}
SUMMARY_ROLE = "user"


def part_blocks(parts: Any) -> list[Block]:
    """Blocks of a Gemini-style ``parts`` list: text, thought, functionCall, functionResponse, inlineData."""
    blocks: list[Block] = []
    for part in parts if parts.__class__ is list else ():
        if part.__class__ is not dict:
            blocks.append(Block("other", text=compact_json(part)[:200], raw_type="part"))
            continue
        text = part.get("text")
        if text.__class__ is str:
            if part.get("thought") is True:
                blocks.append(Block("thinking", text=text))
            elif text:
                blocks.append(Block("text", text=text))
            continue
        call = part.get("functionCall")
        if call.__class__ is dict:
            blocks.append(tool_call(str_or_none(call.get("id")), str_or_none(call.get("name")), json_arguments(call.get("args"))))
            continue
        response = part.get("functionResponse")
        if response.__class__ is dict:
            body = response.get("response")
            if body.__class__ is dict and body.get("output").__class__ is str and len(body) == 1:
                out, error = body["output"], False
            elif body.__class__ is dict and body.get("error").__class__ is str:
                out, error = body["error"], True
            else:
                out, error = (body if body.__class__ is str else compact_json(body)), False
            blocks.append(
                Block(
                    "tool_result",
                    text=out,
                    tool_id=str_or_none(response.get("id")),
                    tool_name=str_or_none(response.get("name")),
                    is_error=error,
                )
            )
            continue
        data = part.get("inlineData")
        if data.__class__ is dict:
            blocks.append(image_block(str_or_none(data.get("mimeType")), str_or_none(data.get("data"))))
            continue
        keys = sorted(part)
        blocks.append(Block("other", text="", raw_type=keys[0] if keys else "(empty part)"))
    return blocks


def _texts(entry: Any) -> list[str]:
    parts = entry.get("parts") if entry.__class__ is dict else None
    return [p["text"] for p in parts or () if p.__class__ is dict and p.get("text").__class__ is str and p["text"]]


def _usage_of(meta: Any) -> tuple[int, int, int] | None:
    """(input, cached, output) of a ``usageMetadata``, or None."""
    if meta.__class__ is not dict or "promptTokenCount" not in meta:
        return None
    return (
        pos_int(meta.get("promptTokenCount")),
        pos_int(meta.get("cachedContentTokenCount")),
        pos_int(meta.get("candidatesTokenCount")) + pos_int(meta.get("thoughtsTokenCount")),
    )


class _Parser(JsonParser, TimeSpan):
    what = "a Qwen Code chat log"

    def __init__(self, source: ParseInput):
        super().__init__(max_line_bytes=source.max_line_bytes, max_decompressed_bytes=source.max_decompressed_bytes)
        self.agent_id = source.agent_id
        self.agent_type = source.agent_type
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.version: str | None = None
        self.models: dict[str, None] = {}
        self.out: list[Record] = []  # records made by the line just read
        self.held: list[MessageRecord] = []  # user lines not yet emitted (a compression may come first)
        self.calls: list[UsageRecord] = []
        self.open_call: str | None = None  # the call an assistant line without usage belongs to
        self.last_input: int | None = None  # measured input of the last call
        self.side_calls: list[dict] = []  # api_response telemetry since the last assistant line
        self.folds: list[FoldRecord] = []
        self.links: dict[str, AgentLink] = {}
        self.kept = KeptIds()  # the uuids of the lines kept
        self.duplicates = 0

    # -- the driver

    def run(self, stream, start_offset: int, start_line: int) -> Iterator[Record]:
        for record in super().run(stream, start_offset, start_line):
            if self.out:
                yield from self._drain()
            yield record

    def _drain(self) -> Iterator[Record]:
        out, self.out = self.out, []
        yield from out

    def _release(self) -> None:
        self.out.extend(self.held)
        self.held = []

    def finish(self) -> Iterator[Record]:
        self._release()
        yield from self._drain()
        yield from self.calls
        yield from self.folds
        yield from self.links.values()
        self.finished = True
        yield self.session_info()

    # -- one line

    def process(self, obj: dict, line_no: int, offset: int, raw: str) -> BadLine | None:
        kind = obj.get("type")
        uuid = str_or_none(obj.get("uuid"))
        if uuid is not None:
            if uuid in self.kept:  # a line written twice (said when it is another record): the first is kept
                self.duplicates += 1
                return self.kept.collision(uuid, line_no, offset, raw, obj.get("sessionId"), obj.get("timestamp"))
            self.kept.add(uuid, line_no, raw, obj.get("sessionId"), obj.get("timestamp"))
        self.session_id = self.session_id or str_or_none(obj.get("sessionId"))
        self.cwd = self.cwd or str_or_none(obj.get("cwd"))
        self.version = str_or_none(obj.get("version")) or self.version
        ts = self.saw(parse_timestamp(obj.get("timestamp")))
        message = obj.get("message") if obj.get("message").__class__ is dict else {}
        if kind == "system":
            self._system(obj, line_no, offset, raw, ts)
            return None
        record = self._message(obj, line_no, offset, raw, ts)
        if kind == "user":
            record.blocks = part_blocks(message.get("parts"))
            if record.blocks and all(b.kind == "tool_result" for b in record.blocks):
                record.role = "tool"
            self.open_call = None
            self.held.append(record)
            return None
        self._release()
        if kind == "assistant":
            record.role = "assistant"
            record.blocks = part_blocks(message.get("parts"))
            record.model = str_or_none(obj.get("model"))
            if record.model:
                self.models[record.model] = None
            self._call(record, obj, line_no, ts)
        elif kind == "tool_result":
            record.role = "tool"
            record.blocks = part_blocks(message.get("parts"))
            self._tool_result(record, obj, line_no)
            self.open_call = None
        else:
            record.role = "other"
            self.open_call = None
        self.out.append(record)
        return None

    def _message(self, obj: dict, line_no: int, offset: int, raw: str, ts) -> MessageRecord:
        kind = obj.get("type")
        agent_id = self.agent_id or (str_or_none(obj.get("agentId")) if obj.get("isSidechain") is True else None)
        if agent_id and self.agent_id is None:
            self.agent_id = agent_id
        return MessageRecord(
            line_no=line_no,
            offset=offset,
            role="user",
            record_type=kind[:60] if kind.__class__ is str and kind else "(none)",
            raw=raw,
            uuid=str_or_none(obj.get("uuid")) or f"{self.session_id or 'qwen'}:{line_no}",
            parent_uuid=str_or_none(obj.get("parentUuid")),
            timestamp=ts,
            session_id=self.session_id,
            is_sidechain=agent_id is not None,
            agent_id=agent_id,
            flags={"provenance": obj["provenance"]} if obj.get("provenance").__class__ is str else {},
        )

    def _call(self, record: MessageRecord, obj: dict, line_no: int, ts) -> None:
        usage = _usage_of(obj.get("usageMetadata"))
        if usage is None and self.open_call is not None:
            record.api_message_id = self.open_call  # the rest of the call whose usage line came first
            return
        record.api_message_id = self.open_call = record.uuid
        self.side_calls = []
        prompt, cached, output = usage or (0, 0, 0)
        if usage is not None:
            self.last_input = prompt
        self.calls.append(
            UsageRecord(
                api_message_id=record.uuid,
                request_id=None,
                message_uuid=record.uuid,
                line_no=line_no,
                model=record.model,
                input_uncached=max(prompt - cached, 0),
                cache_read=cached,
                output=output,
                agent_id=record.agent_id,
                timestamp=ts,
            )
        )

    def _tool_result(self, record: MessageRecord, obj: dict, line_no: int) -> None:
        result = obj.get("toolCallResult") if obj.get("toolCallResult").__class__ is dict else {}
        display = result.get("resultDisplay")
        failed = result.get("status") == "error"
        for block in record.blocks:
            if block.kind != "tool_result":
                continue
            block.is_error = block.is_error or failed
            if display.__class__ is dict and display.get("type") == "shell_result" and display.get("exitCode").__class__ is int:
                block.extra = {"exit_code": display["exitCode"]}
        if display.__class__ is dict and display.get("type") == "task_execution":
            call_id = str_or_none(result.get("callId")) or next((b.tool_id for b in record.blocks if b.tool_id), None)
            name = str_or_none(display.get("subagentName"))
            if call_id and name:
                agent_id = safe_id(f"{name}-{call_id}")
                self.links[agent_id] = AgentLink(
                    agent_id=agent_id,
                    tool_use_id=call_id,
                    line_no=line_no,
                    agent_type=name,
                    description=str_or_none(display.get("taskDescription")),
                )

    # -- system lines

    def _system(self, obj: dict, line_no: int, offset: int, raw: str, ts) -> None:
        subtype = str_or_none(obj.get("subtype"))
        payload = obj.get("systemPayload") if obj.get("systemPayload").__class__ is dict else {}
        if subtype == "ui_telemetry":
            event = payload.get("uiEvent") if payload.get("uiEvent").__class__ is dict else {}
            if event.get("event.name") == "qwen-code.api_response" and not event.get("subagent_id"):
                self.side_calls.append(
                    {
                        "response_id": str_or_none(event.get("response_id")),
                        "input": pos_int(event.get("input_token_count")),
                        "cache_read": pos_int(event.get("cached_content_token_count")),
                        "output": pos_int(event.get("output_token_count")) + pos_int(event.get("thoughts_token_count")),
                        "model": str_or_none(event.get("model")),
                    }
                )
            return
        if subtype in BOOKKEEPING:
            return
        record = self._message(obj, line_no, offset, raw, ts)
        record.role, record.subtype = "system", subtype
        if subtype == "chat_compression":
            self._compression(record, payload, line_no, ts)
            return
        self._release()
        self.out.append(record)

    def _compression(self, marker: MessageRecord, payload: dict, line_no: int, ts) -> None:
        info = payload.get("info") if payload.get("info").__class__ is dict else {}
        history = payload.get("compressedHistory") if payload.get("compressedHistory").__class__ is list else []
        reason = str_or_none(info.get("triggerReason"))
        trigger = TRIGGERS.get(reason or "", reason)
        marker.subtype = "compact_boundary"
        marker.blocks = [Block("text", text=f"Qwen Code compressed the conversation ({reason or 'no reason given'})")]
        held_texts = {b.text for m in self.held for b in m.blocks if b.kind == "text" and b.text}
        records = [marker]
        summary_uuid, summary_text = None, ""
        for i, entry in enumerate(history):
            if entry.__class__ is not dict:
                continue
            texts = _texts(entry)
            if i > 0 and entry.get("role") == "user" and held_texts and held_texts & set(texts):
                continue  # the prompt the compression ran for: its own line follows
            blocks = part_blocks(entry.get("parts"))
            msg = MessageRecord(
                line_no=line_no,
                offset=marker.offset,
                role="assistant" if entry.get("role") == "model" else "user",
                record_type="compressed_history",
                raw=marker.raw,
                blocks=blocks,
                uuid=f"{marker.uuid}:{i}",
                timestamp=ts,
                session_id=self.session_id,
                is_sidechain=marker.is_sidechain,
                agent_id=marker.agent_id,
                is_meta=True,
                flags={"compressed_history": i},
            )
            if msg.role == "user" and blocks and all(b.kind == "tool_result" for b in blocks):
                msg.role = "tool"
            if summary_uuid is None and msg.role == "user" and texts:
                msg.is_compact_summary = True
                summary_uuid, summary_text = msg.uuid, "\n".join(texts)
            records.append(msg)
        estimated_before = info.get("originalTokenCountIsEstimated") is True
        estimated_after = info.get("newTokenCountIsEstimated") is True
        metadata: dict[str, Any] = {
            "qwen_original_tokens": info.get("originalTokenCount"),
            "qwen_original_tokens_estimated": estimated_before,
            "qwen_new_tokens": info.get("newTokenCount"),
            "qwen_new_tokens_estimated": estimated_after,
            "compression_status": info.get("compressionStatus"),
        }
        cost = self._side_cost()
        before = self.last_input
        if before is None and info.get("originalTokenCount").__class__ is int and not estimated_before:
            before = info["originalTokenCount"]
        after = info.get("newTokenCount") if info.get("newTokenCount").__class__ is int and not estimated_after else None
        fold = FoldRecord(
            line_no=line_no,
            boundary_uuid=marker.uuid,
            kind="compact",
            trigger=trigger,
            tokens_before=before,
            tokens_after=after,
            summary_uuid=summary_uuid,
            summary_text=summary_text,
            timestamp=ts,
            agent_id=marker.agent_id,
            metadata=metadata,
        )
        fold.cost = cost  # the compaction call's usage: the fold's cost, not a call of the conversation
        self.folds.append(fold)
        self.out.extend(records)
        self._release()
        self.open_call = None

    def _side_cost(self) -> dict | None:
        """The usage of the calls made since the last main call (the compression's own): Fold.cost."""
        calls, self.side_calls = self.side_calls, []
        if not calls:
            return None
        return {
            "calls": len(calls),
            "input_uncached": sum(max(c["input"] - c["cache_read"], 0) for c in calls),
            "cache_write": 0,
            "cache_read": sum(c["cache_read"] for c in calls),
            "output": sum(c["output"] for c in calls),
            "model": calls[0]["model"],
        }

    def session_info(self) -> SessionInfo:
        return SessionInfo(
            external_id=self.session_id,
            cwd=self.cwd,
            cli_version=self.version,
            models=list(self.models),
            started_at=self.started_at,
            ended_at=self.ended_at,
            agent_id=self.agent_id,
            agent_type=self.agent_type,
            lines=self.consumed_lines,
            bytes_consumed=self.consumed_offset,
            duplicate_uuids=self.duplicates,
        )


def parse(source: ParseInput) -> Iterator[Record]:
    yield from _Parser(source).parse(source.stream, source.start_offset, source.start_line)


# The harness's rules (Qwen Code 0.24.4, packages/core/src/services/chatCompressionService.ts,
# computeThresholds): it reserves COMPACT_MAX_OUTPUT_TOKENS = 20,000 for the summary and compresses
# at min(0.85 x window, window - 20,000 - 13,000) of the last reported input (plus the new message):
# 167,000 on a 200k window (its window for a model it does not know).
HARNESS = Harness(
    fold_label="Qwen Code compress",
    fold_fraction=0.85,
    fold_margin=13_000,
    reserve_cap=20_000,
    default_window=200_000,
)

FORMAT = ENTRY.format(
    parse=parse,
    group=group,
    harness=HARNESS,
    companions=lambda path: [meta_path(path)] if path.name.startswith("agent-") else [],
)
