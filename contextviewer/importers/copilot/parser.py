"""GitHub Copilot CLI session logs (``events.jsonl``) -> normalized records. Checked against what
Copilot CLI 1.0.102 wrote and sent, run offline in its bring-your-own-key mode against a scripted
model server (ops/drivers/copilot.py); the event shapes are those of the schema the CLI ships
(``schemas/session-events.schema.json``, ``copilot-sdk/generated/session-events.d.ts``).

Pure. Each line is one event ``{type, data, id, timestamp, parentId}`` (``agentId`` on a
sub-agent's events, which are written in its parent's file):

- ``session.start`` / ``session.resume``: ``sessionId``, ``copilotVersion``, ``selectedModel``,
  ``context {cwd, branch}``; ``session.title_changed``: ``title``. No message.
- ``user.message``: the prompt. ``content`` is what the user typed, ``transformedContent`` what the
  model was sent: the same prompt after a ``<current_datetime>...</current_datetime>`` line Copilot
  adds. The message holds the prompt as typed (the title and the page read it; the added line, about
  20 tokens, stays in the raw event and the call's measured input).
- ``system.message``: the system prompt (role system: stored, not a window item).
- ``assistant.message``: one message of a model call: ``content`` (text), ``reasoningText`` (else the
  ``assistant.reasoning`` event written before it, the same thinking for Copilot's timeline),
  ``toolRequests [{toolCallId, name, arguments}]``; ``apiCallId`` names the call (a response split
  in chunks writes several messages with one ``apiCallId``).
- ``session.usage_record``: the usage of one call (``usage.apiCallId``): ``inputTokens`` is the
  whole input, cached tokens included (run here: a response reporting prompt_tokens 1,000 with 600
  cached was logged as inputTokens 1,000, cacheReadTokens 600), so the uncached input is
  ``inputTokens - cacheReadTokens - cacheWriteTokens``. The compaction call has none: its usage is
  ``compactionTokensUsed`` on ``session.compaction_complete``, the fold's cost.
- ``tool.execution_complete``: a tool's result: ``result.content`` (what the model is sent), or
  ``error.message``; ``success``.
- ``subagent.started``: a sub-agent (``agentId`` on this and every event of its run) started by the
  ``task`` tool call ``toolCallId``: ``agentName`` (its type), ``agentDescription``.
- ``session.compaction_start`` / ``session.compaction_complete`` (one ``compactionAttemptId``):
  Copilot compacts in the background. The history at ``compaction_start`` is summarized; what was
  written while the summary was made is kept verbatim after it, and calls made before
  ``compaction_complete`` still carried the whole history. So a completed compaction (``success``)
  is a fold at the ``compaction_complete`` line: a ``system`` marker (``compact_boundary``), the
  summary (``summaryContent``, a user message: Copilot sends it wrapped in "Some of the conversation
  history has been summarized..." with the user's earlier prompts), the messages written between the
  two events as its preserved tail. ``trigger``: ``threshold`` -> ``auto``, ``manual``, and
  Copilot's others as written (``context_limit_retry``, ``memory_pressure``, ``model_switch``).
  ``tokens_before`` is Copilot's own ``currentTokens`` at compaction start (system + conversation +
  tool definitions). A failed or cancelled compaction (the process ended first) is no fold.
- ``session.truncation`` (Copilot dropped messages to fit, no summary: ``messagesRemovedDuringTruncation``,
  ``tokensRemovedDuringTruncation``): a ``system`` note where it happened, not a fold (the log does
  not say which messages went). Not seen in the runs here.
- Bookkeeping (turn and tool starts, shutdown, model.* internals of a manual compaction, hooks...):
  no message. Any type this parser does not know: an ``other`` message (its raw kept).

Storage is ``DOCUMENT``: a fold is written after the messages it kept, so the file is read whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from contextviewer.core.harness import Harness
from contextviewer.core.records import AgentLink, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import (
    TimeSpan,
    compact_json,
    json_arguments,
    parse_timestamp,
    pos_int,
    str_or_none,
    tool_call,
)
from contextviewer.importers.copilot.entry import ENTRY, FILE_NAME, sniff  # noqa: F401 - the light part
from contextviewer.importers.driver import JsonParser
from contextviewer.importers.formats import ParseInput

# Events that are no message: lifecycle, progress, and the internals of a compaction call.
BOOKKEEPING_PREFIXES = ("assistant.turn_", "assistant.streaming", "assistant.message_", "assistant.reasoning_delta",
                        "assistant.tool_call_delta", "assistant.idle", "assistant.intent", "assistant.usage",
                        "tool.execution_start", "tool.execution_p", "tool.shell_output", "hook.", "model.",
                        "permission.", "pending_messages.", "skill.", "subagent.configured", "subagent.completed",
                        "subagent.failed", "subagent.selected", "subagent.deselected", "tool_search.")
SESSION_BOOKKEEPING = frozenset({
    "session.shutdown", "session.idle", "session.info", "session.warning", "session.model_change",
    "session.mode_changed", "session.usage_info", "session.usage_checkpoint", "session.context_changed",
    "session.todos_changed", "session.plan_changed", "session.workspace_file_changed", "session.permissions_changed",
    "session.remote_steerable_changed", "session.session_limits_changed", "session.quota_observation",
    "session.indexed_search", "session.binary_asset", "session.completion_receipt", "session.mode_notice_delivered",
})
TRIGGERS = {"threshold": "auto", "manual": "manual"}


@dataclass
class _Compaction:
    """A compaction under way: where it started, and the messages written since."""

    attempt: str | None
    start: dict
    line_no: int
    kept: list[str] = field(default_factory=list)


def _dict(value) -> dict:
    return value if value.__class__ is dict else {}


def _int(value) -> int | None:
    return value if value.__class__ is int and value >= 0 else None


def _truncation_note(data: dict) -> str:
    removed, tokens = _int(data.get("messagesRemovedDuringTruncation")), _int(data.get("tokensRemovedDuringTruncation"))
    said = [f"{removed} messages" if removed is not None else "", f"{tokens} tokens" if tokens is not None else ""]
    said = [x for x in said if x]
    return "GitHub Copilot CLI truncated the conversation" + (f" ({', '.join(said)} removed)" if said else "")


class _Parser(JsonParser, TimeSpan):
    what = "a GitHub Copilot CLI events.jsonl"

    def __init__(self, source: ParseInput):
        super().__init__(max_line_bytes=source.max_line_bytes, max_decompressed_bytes=source.max_decompressed_bytes)
        self.session_id: str | None = None
        # Without a session.start (a file cut at its start): the session's folder, or an older
        # version's session-state/<id>.jsonl name.
        path = source.path
        self.path_id = (path.parent.name if path.name == FILE_NAME else path.name.removesuffix(".jsonl")) if path else None
        self.cwd: str | None = None
        self.branch: str | None = None
        self.version: str | None = None
        self.title: str | None = None
        self.models: dict[str, None] = {}
        self.out: list[Record] = []
        self.calls: dict[str, UsageRecord] = {}  # apiCallId -> the call (its first message)
        self.usage: dict[str, dict] = {}  # apiCallId -> usage_record's usage
        self.folds: list[FoldRecord] = []
        self.links: list[AgentLink] = []
        self.pending: dict[str | None, _Compaction] = {}  # agentId (None: main) -> compaction under way
        self.seen: set[str] = set()
        self.reasoning: dict[str | None, str] = {}  # agentId -> an assistant.reasoning not yet in a message
        self.duplicates = 0

    def run(self, stream, start_offset: int, start_line: int) -> Iterator[Record]:
        for record in super().run(stream, start_offset, start_line):
            if self.out:
                out, self.out = self.out, []
                yield from out
            yield record

    def finish(self) -> Iterator[Record]:
        out, self.out = self.out, []
        yield from out
        for api_id, call in self.calls.items():
            usage = self.usage.get(api_id)
            if usage is not None:
                cache_read, cache_write = pos_int(usage.get("cacheReadTokens")), pos_int(usage.get("cacheWriteTokens"))
                call.input_uncached = max(0, pos_int(usage.get("inputTokens")) - cache_read - cache_write)
                call.cache_read, call.cache_write = cache_read, cache_write
                call.output = pos_int(usage.get("outputTokens"))
                call.model = str_or_none(usage.get("model")) or call.model
            yield call
        yield from self.links
        yield from self.folds
        self.finished = True
        yield self.session_info()

    # -- one line

    def process(self, obj: dict, line_no: int, offset: int, raw: str) -> None:
        kind = obj.get("type") if obj.get("type").__class__ is str else ""
        data = _dict(obj.get("data"))
        ts = self.saw(parse_timestamp(obj.get("timestamp")))
        agent = str_or_none(obj.get("agentId"))
        event_id = str_or_none(obj.get("id")) or f"{self.session_id or self.path_id or 'copilot'}:{line_no}"
        if event_id in self.seen:  # an event written twice: the first is kept
            self.duplicates += 1
            return None
        self.seen.add(event_id)
        if kind in ("session.start", "session.resume"):
            self._session(kind, data)
            return None
        session_id = self.session_id or self.path_id
        if kind == "session.title_changed":
            self.title = str_or_none(data.get("title")) or self.title
            return None
        if kind == "session.usage_record":
            usage = _dict(data.get("usage"))
            api_id = str_or_none(usage.get("apiCallId"))
            if api_id:
                self.usage.setdefault(api_id, usage)
            return None
        if kind == "session.compaction_start":
            self.pending[agent] = _Compaction(str_or_none(data.get("compactionAttemptId")), data, line_no)
            return None
        if kind == "subagent.started":
            self._subagent(data, agent, line_no)
            return None
        if kind == "assistant.reasoning":  # the thinking, for the timeline: given to the message it belongs to
            if data.get("content").__class__ is str and data["content"]:
                self.reasoning[agent] = data["content"]
            return None
        if kind in SESSION_BOOKKEEPING or kind.startswith(BOOKKEEPING_PREFIXES):
            return None
        record = MessageRecord(
            line_no=line_no,
            offset=offset,
            role="other",
            record_type=kind[:60] or "(none)",
            raw=raw,
            uuid=event_id,
            parent_uuid=str_or_none(obj.get("parentId")),
            timestamp=ts,
            session_id=session_id,
            agent_id=agent,
            agent_kind="inline" if agent else None,
        )
        if kind == "session.compaction_complete":
            self._compaction(record, data, agent, line_no, ts)
            return None
        if kind == "user.message":
            text = data.get("content") if data.get("content").__class__ is str else data.get("transformedContent")
            record.role = "user"
            record.blocks = [Block("text", text=text)] if text.__class__ is str and text else []
            if data.get("transformedContent").__class__ is str and data["transformedContent"] != text:
                record.flags["sent_as"] = "transformedContent"
        elif kind == "system.message":
            record.role = "system"
            content = data.get("content")
            record.blocks = [Block("text", text=content)] if content.__class__ is str and content else []
        elif kind == "assistant.message":
            self._assistant(record, data, line_no, ts)
        elif kind == "tool.execution_complete":
            self._tool_result(record, data)
        elif kind == "abort":
            record.role, record.subtype = "system", "abort"
            record.blocks = [Block("text", text=str_or_none(data.get("reason")) or "aborted")]
        elif kind == "session.truncation":
            record.role, record.subtype = "system", "truncation"
            record.blocks = [Block("text", text=_truncation_note(data))]
        self.out.append(record)
        pending = self.pending.get(agent)
        if pending is not None and record.role in ("user", "assistant", "tool"):
            pending.kept.append(record.uuid)
        return None

    def _session(self, kind: str, data: dict) -> None:
        if kind == "session.start":
            self.session_id = self.session_id or str_or_none(data.get("sessionId"))
            self.version = str_or_none(data.get("copilotVersion")) or self.version
        context = _dict(data.get("context"))
        self.cwd = self.cwd or str_or_none(context.get("cwd"))
        self.branch = str_or_none(context.get("branch")) or self.branch
        model = str_or_none(data.get("selectedModel"))
        if model:
            self.models[model] = None

    def _assistant(self, record: MessageRecord, data: dict, line_no: int, ts) -> None:
        record.role = "assistant"
        blocks: list[Block] = []
        reasoning = self.reasoning.pop(record.agent_id, None)
        if data.get("reasoningText").__class__ is str and data["reasoningText"]:
            reasoning = data["reasoningText"]
        if reasoning:
            blocks.append(Block("thinking", text=reasoning))
        if data.get("content").__class__ is str and data["content"]:
            blocks.append(Block("text", text=data["content"]))
        for request in data.get("toolRequests") if data.get("toolRequests").__class__ is list else ():
            request = _dict(request)
            blocks.append(tool_call(str_or_none(request.get("toolCallId")), str_or_none(request.get("name")),
                                    json_arguments(request.get("arguments"))))
        record.blocks = blocks
        record.model = str_or_none(data.get("model"))
        if record.model:
            self.models[record.model] = None
        api_id = str_or_none(data.get("apiCallId")) or str_or_none(data.get("messageId")) or record.uuid
        record.api_message_id = api_id
        record.request_id = str_or_none(data.get("requestId"))
        if api_id not in self.calls:
            self.calls[api_id] = UsageRecord(
                api_message_id=api_id,
                request_id=record.request_id,
                message_uuid=record.uuid,
                line_no=line_no,
                model=record.model,
                agent_id=record.agent_id,
                timestamp=ts,
            )

    def _tool_result(self, record: MessageRecord, data: dict) -> None:
        record.role = "tool"
        result, error = _dict(data.get("result")), _dict(data.get("error"))
        text = result.get("content") if result.get("content").__class__ is str else None
        if data.get("result").__class__ is str:  # an older log's result as plain text
            text = data["result"]
        if text is None:
            text = str_or_none(error.get("message")) or (compact_json(data["result"]) if "result" in data else "")
        record.blocks = [Block("tool_result", text=text, tool_id=str_or_none(data.get("toolCallId")),
                               is_error=data.get("success") is False)]

    def _subagent(self, data: dict, agent: str | None, line_no: int) -> None:
        if not agent:
            return
        self.links.append(AgentLink(
            agent_id=agent,
            tool_use_id=str_or_none(data.get("toolCallId")),
            line_no=line_no,
            agent_type=str_or_none(data.get("agentName")) or str_or_none(data.get("agentType")),
            description=str_or_none(data.get("agentDescription")) or str_or_none(data.get("agentDisplayName")),
        ))

    def _compaction(self, marker: MessageRecord, data: dict, agent: str | None, line_no: int, ts) -> None:
        pending = self.pending.pop(agent, None)
        attempt = str_or_none(data.get("compactionAttemptId"))
        if pending is not None and attempt and pending.attempt and attempt != pending.attempt:
            pending = None  # another attempt's end: what it kept is not known
        if data.get("success") is not True:
            return  # cancelled or failed: the history is unchanged
        start = pending.start if pending is not None else {}
        summary = data.get("summaryContent") if data.get("summaryContent").__class__ is str else ""
        trigger = str_or_none(data.get("trigger")) or str_or_none(start.get("trigger"))
        marker.role, marker.subtype = "system", "compact_boundary"
        marker.blocks = [Block("text", text="GitHub Copilot CLI compacted the conversation")]
        holder = MessageRecord(
            line_no=line_no,
            offset=marker.offset,
            role="user",
            record_type="session.compaction_complete:summary",
            raw=marker.raw,
            blocks=[Block("text", text=summary)] if summary else [],
            uuid=f"{marker.uuid}:summary",
            parent_uuid=marker.uuid,
            timestamp=ts,
            session_id=marker.session_id,
            agent_id=agent,
            agent_kind=marker.agent_kind,
            is_meta=True,
            is_compact_summary=True,
        )
        self.out.extend([marker, holder])
        used = _dict(data.get("compactionTokensUsed"))
        cost = None
        if used:
            cache_read, cache_write = pos_int(used.get("cacheReadTokens")), pos_int(used.get("cacheWriteTokens"))
            cost = {
                "calls": pos_int(used.get("requestCount")) or 1,
                "input_uncached": max(0, pos_int(used.get("inputTokens")) - cache_read - cache_write),
                "cache_write": cache_write,
                "cache_read": cache_read,
                "output": pos_int(used.get("outputTokens")),
                "model": str_or_none(used.get("model")),
            }
        self.folds.append(FoldRecord(
            line_no=line_no,
            boundary_uuid=marker.uuid,
            kind="compact",
            trigger=TRIGGERS.get(trigger, trigger) if trigger else None,
            tokens_before=_int(start.get("currentTokens")) or _int(data.get("preCompactionTokens")),
            summary_uuid=holder.uuid,
            summary_text=summary,
            preserved_uuids=list(pending.kept) if pending is not None else [],
            timestamp=ts,
            agent_id=agent,
            metadata={
                "attempt": attempt,
                "started_line": pending.line_no if pending is not None else None,
                "messages_removed": _int(data.get("messagesRemoved")),
                "pre_compaction_tokens": _int(data.get("preCompactionTokens")),
                "post_compaction_tokens": _int(data.get("postCompactionTokens")),
                "token_limit": _int(data.get("tokenLimit")) or _int(start.get("tokenLimit")),
                "checkpoint": _int(data.get("checkpointNumber")),
            },
            cost=cost,
        ))

    def session_info(self) -> SessionInfo:
        return SessionInfo(
            external_id=self.session_id or self.path_id,
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


def parse(source: ParseInput) -> Iterator[Record]:
    yield from _Parser(source).parse(source.stream, source.start_offset, source.start_line)


# The harness's rules (Copilot CLI 1.0.102, run here with a prompt limit of 50,000): it starts a
# background compaction when its count of the context (the last call's reported input + its output
# and what followed: `currentTokens`) reaches 80 % of the model's prompt limit: a reported input of
# 40,100 (currentTokens 40,134) compacted, 39,900 (39,934) did not. It keeps working meanwhile.
HARNESS = Harness(fold_label="Copilot compact 80 %", fold_fraction=0.80)

FORMAT = ENTRY.format(parse=parse, harness=HARNESS)
