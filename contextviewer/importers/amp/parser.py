"""Amp threads (``~/.local/share/amp/threads/T-<uuid>.json``) -> normalized records (pure, no Django).

No Amp CLI runs here (it needs an ampcode.com login; ../shared/docs/stack-notes.md), and no public
repository was found with thread files under an open license, so these facts come from other readers'
source (facts carry over, code does not; tests/amp_threads.py writes a sample from them):

- wesm/agentsview, ``internal/parser/amp.go`` and ``amp_test.go`` (commit 4737a42f), ``content.go`` and
  ``taxonomy.go`` (commit aea2eb12): one JSON document per thread at ``~/.local/share/amp/threads/T-*.json``;
  ``id`` (``T-<id>``, else the file's stem), ``created`` (epoch milliseconds), ``title``,
  ``env.initial.trees[0]`` (``displayName``, ``uri`` ``file:///...``), ``meta.traces[]``
  (``startTime``/``endTime``), ``messages[]`` of ``role`` ``user``/``assistant`` with Anthropic-shaped
  ``content`` (``text``, ``thinking``, ``tool_use`` {id, name, input}); Amp's tool names (``Bash`` with
  ``cmd``, ``Read`` with ``path``, ``edit_file``, ``create_file``, ``glob``, ``Grep``, ``finder``,
  ``look_at``, ``read_web_page``, ``undo_edit``, ``Task``...);
- ryoppippi/ccusage, ``apps/amp/CLAUDE.md`` (commit 32f9995d) and ``apps/amp/src/data-loader.ts`` (commit
  cc2e8488): an assistant message's ``usage`` {``model``, ``inputTokens`` (the uncached input),
  ``cacheCreationInputTokens``, ``cacheReadInputTokens``, ``totalInputTokens`` (their sum),
  ``outputTokens``, ``credits``, ``timestamp``} since about January 2026, and before it a thread-level
  ``usageLedger.events[]`` {``id``, ``timestamp``, ``model``, ``credits``, ``tokens`` {input, output},
  ``operationType``, ``fromMessageId``, ``toMessageId``}; ``messageId`` numbers the messages;
- jonathan-kellerai/cross_agent_session_resumer, ``src/providers/amp.rs`` (commit ec0eab96): a tool
  result is ``{"type": "tool_result", "toolUseID", "run": {"status": done | error | cancelled |
  rejected-by-user | blocked-on-user, "result", "error", "progress"}}``; a message's time is
  ``meta.sentAt`` (epoch milliseconds); ``env.initial.cwd`` where written; a role ``info`` message may
  hold ``{"type": "summary", "summary": {"type": "message", "summary": <text>}}`` (the thread's history
  summarized in place: a compaction) or ``{"type": "thread", "thread": <id>}`` (summarized into another
  thread); the legacy VS Code folder ``globalStorage/sourcegraph.amp/threads3``;
- a Rust crate of Amp's thread types in the code index (file 52828220926; the index does not name its
  repository): ``Thread``, ``Message``, ``ContentBlock``, ``ToolRun``, ``Usage``, ``MessageState``,
  ``Relationship``, in agreement with the readers above, and ``state`` {``type`` complete | cancelled |
  streaming, ``stopReason``}, ``redacted_thinking``, ``relationships[]`` {``threadID``, ``type`` handoff |
  fork | mention, ``role`` parent | child}, ``agentMode``, ``nextMessageId``.

Mapping: a thread is one conversation (uuid of a message: ``<thread>:<messageId>``, else its position).
Each assistant message is one model call, its usage the message's own ``usage``, else the ledger event
whose ``toMessageId`` is its number (input as the uncached input: the ledger has no cache figures), else
none (a call of zero usage flagged ``usage_unmeasured``, shown as estimated). A user message of tool
results only is a ``tool`` message; a result's text is its ``run.result`` (a string, or a Bash result's
``output`` with its ``exitCode`` on the block's extra), else its error, else its progress. An ``info``
message with a summary is a compaction: a ``system`` ``compact_boundary`` marker, then the summary as a
user message (``is_compact_summary``) and a ``FoldRecord`` (no trigger or token figures: Amp writes none).
Not read, because the thread does not hold them: a ``Task`` sub-agent's own messages (Amp keeps only its
result in the thread, so there is no sub-agent conversation to link), a handoff's other thread (a thread
of its own, named in ``relationships``, kept on the first message's flags). Nothing here raises.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from contextviewer.core.records import BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.amp.entry import ENTRY, NAME, is_thread_id, sniff  # noqa: F401 - the light part
from contextviewer.importers.common import (
    TimeSpan,
    anthropic_block,
    compact_json,
    json_kind,
    parse_timestamp,
    pos_int,
    str_or_none,
)
from contextviewer.importers.driver import unexpected
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.jsondoc import read_source

WHAT = "an Amp thread"
ERROR_STATUSES = frozenset({"error", "cancelled", "rejected-by-user"})


def _millis(value: Any) -> datetime | None:
    if value.__class__ is not int or value <= 0:
        return None
    try:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _dict(value: Any) -> dict:
    return value if value.__class__ is dict else {}


def _cwd(env: dict) -> str | None:
    """The thread's working folder: ``env.initial.cwd``, else its first tree's ``file://`` uri."""
    initial = _dict(env.get("initial"))
    cwd = str_or_none(initial.get("cwd"))
    if cwd:
        return cwd
    trees = initial.get("trees")
    for tree in trees if trees.__class__ is list else ():
        uri = tree.get("uri") if tree.__class__ is dict else None
        if uri.__class__ is str and uri.startswith("file://"):
            return unquote(urlparse(uri).path) or None
        if uri.__class__ is dict and str_or_none(uri.get("fsPath") or uri.get("path")):
            return str_or_none(uri.get("fsPath") or uri.get("path"))
    return None


def _result(item: dict) -> Block:
    """A tool result: Amp's ``{toolUseID, run}``, or an Anthropic-shaped ``{tool_use_id, content}``."""
    run = item.get("run")
    if run.__class__ is not dict:
        return anthropic_block(item)
    status = str_or_none(run.get("status")) or ""
    result, extra = run.get("result"), None
    if result.__class__ is dict and "output" in result:
        if result.get("exitCode").__class__ is int:
            extra = {"exit_code": result["exitCode"]}
        result = result.get("output")
    if result is None and run.get("error") is not None:
        error = run["error"]
        result = error.get("message") if error.__class__ is dict and error.get("message").__class__ is str else error
    if result is None and run.get("progress") is not None:
        result = run["progress"]
    if result is None:
        text = f"[{status or 'no result'}]"
    elif result.__class__ is str:
        text = result
    elif result.__class__ is list and all(r.__class__ is dict and r.get("type") == "text" for r in result):
        text = "\n".join(str(r.get("text") or "") for r in result)
    else:
        text = compact_json(result)
    tool_id = str_or_none(item.get("toolUseID")) or str_or_none(item.get("tool_use_id"))
    block = Block("tool_result", text=text, tool_id=tool_id, is_error=status in ERROR_STATUSES or item.get("is_error") is True)
    block.extra = extra
    return block


def _summary(item: dict) -> str | None:
    """The text of an ``info`` message's summary block (or where another thread holds it), else None."""
    summary = _dict(item.get("summary"))
    if summary.get("type") == "message":
        return summary.get("summary") if summary.get("summary").__class__ is str else ""
    if summary.get("type") == "thread":
        return f"[the summary is thread {str_or_none(summary.get('thread')) or '?'}]"
    return None


def _blocks(content: Any) -> list[Block]:
    if content.__class__ is str:
        return [Block("text", text=content)] if content else []
    blocks: list[Block] = []
    for item in content if content.__class__ is list else ():
        if item.__class__ is not dict:
            blocks.append(Block("other", text=compact_json(item)[:200], raw_type=json_kind(item)))
        elif item.get("type") == "tool_result":
            blocks.append(_result(item))
        elif item.get("type") == "summary":
            blocks.append(Block("text", text=_summary(item) or ""))
        else:
            block = anthropic_block(item)
            if block.kind == "other" and not block.text:
                block.text = compact_json(item)[:200]
            blocks.append(block)
    return blocks


def _ledger(thread: dict) -> dict[int, dict]:
    """The legacy ``usageLedger`` events by the message they ended at (``toMessageId``)."""
    events = _dict(thread.get("usageLedger")).get("events")
    out: dict[int, dict] = {}
    for event in events if events.__class__ is list else ():
        if event.__class__ is dict and event.get("toMessageId").__class__ is int:
            out.setdefault(event["toMessageId"], event)
    return out


class _Thread:
    """The records of one thread, message by message."""

    def __init__(self, sid: str, ledger: dict[int, dict]):
        self.sid, self.ledger = sid, ledger
        self.span = TimeSpan()
        self.records: list[MessageRecord] = []
        self.calls: list[UsageRecord] = []
        self.folds: list[FoldRecord] = []
        self.models: dict[str, None] = {}

    def _add(self, **kwargs) -> MessageRecord:
        record = MessageRecord(line_no=len(self.records) + 1, session_id=self.sid, **kwargs)
        self.records.append(record)
        return record

    def message(self, index: int, msg: dict) -> BadLine | None:
        role = str_or_none(msg.get("role")) or ""
        number = msg.get("messageId") if msg.get("messageId").__class__ is int else None
        uuid = f"{self.sid}:{number if number is not None else f'#{index}'}"
        usage = _dict(msg.get("usage"))
        ts = self.span.saw(_millis(_dict(msg.get("meta")).get("sentAt")) or parse_timestamp(usage.get("timestamp")))
        content, bad = msg.get("content"), None
        if content is not None and content.__class__ not in (list, str):
            bad = BadLine(index, 0, f"Amp thread message {index}: its content is {json_kind(content)}, not a list")
            content = None
        blocks, raw = _blocks(content), compact_json(msg)
        summaries = [s for s in (_summary(i) for i in content if i.__class__ is dict and i.get("type") == "summary")
                     if s is not None] if content.__class__ is list else []  # fmt: skip
        if role == "info" and summaries:
            marker = self._add(offset=index, role="system", record_type="compaction", subtype="compact_boundary",
                               raw=compact_json({"summary_message": uuid}), uuid=f"{uuid}:boundary", timestamp=ts,
                               blocks=[Block("text", text="Conversation compacted")])
            self._add(offset=index, role="user", record_type="info", raw=raw, blocks=blocks, uuid=uuid, timestamp=ts,
                      is_compact_summary=True)
            self.folds.append(FoldRecord(line_no=marker.line_no, boundary_uuid=marker.uuid, kind="compact", trigger=None,
                                         tokens_before=None, timestamp=ts, summary_uuid=uuid,
                                         summary_text="\n".join(summaries)))
            return bad
        tool_only = role == "user" and bool(blocks) and all(b.kind == "tool_result" for b in blocks)
        record = self._add(offset=index, raw=raw, blocks=blocks, uuid=uuid, timestamp=ts, record_type=role or "(none)",
                           role="tool" if tool_only else role if role in ("user", "assistant") else "other")
        state = _dict(msg.get("state"))
        if str_or_none(state.get("type")) not in (None, "complete"):
            record.flags["state"] = state.get("type")
        if role == "assistant":
            self._call(record, usage, self.ledger.get(number) if number is not None and not usage else None, state)
        return bad

    def _call(self, record: MessageRecord, usage: dict, event: dict | None, state: dict) -> None:
        """The model call an assistant message is: its own usage, else its ledger event, else unmeasured."""
        model = str_or_none(usage.get("model")) or (str_or_none(event.get("model")) if event else None)
        call = UsageRecord(api_message_id=record.uuid, request_id=None, message_uuid=record.uuid, line_no=record.line_no,
                           model=model, timestamp=record.timestamp or (parse_timestamp(event.get("timestamp")) if event else None))
        if any(k in usage for k in ("inputTokens", "outputTokens", "cacheReadInputTokens")):
            call.input_uncached = pos_int(usage.get("inputTokens"))
            call.cache_write = pos_int(usage.get("cacheCreationInputTokens"))
            call.cache_read = pos_int(usage.get("cacheReadInputTokens"))
            call.output = pos_int(usage.get("outputTokens"))
        elif event is not None:
            tokens = _dict(event.get("tokens"))
            call.input_uncached, call.output = pos_int(tokens.get("input")), pos_int(tokens.get("output"))
            record.flags["usage_from"] = "usageLedger"
        else:
            record.flags["usage_unmeasured"] = True
        call.output_is_lower_bound = state.get("type") == "streaming"
        record.api_message_id, record.model = record.uuid, model
        self.calls.append(call)
        if model:
            self.models[model] = None


def _ended(thread: dict) -> datetime | None:
    """The last ``meta.traces`` entry's ``endTime`` that is set."""
    traces = _dict(thread.get("meta")).get("traces")
    for trace in reversed(traces) if traces.__class__ is list else ():
        ended = parse_timestamp(trace.get("endTime")) if trace.__class__ is dict else None
        if ended is not None:
            return ended
    return None


def _records(thread: dict, path: Path) -> Iterator[Record]:
    sid = str_or_none(thread.get("id"))
    if not is_thread_id(sid):
        stem = path.name.removesuffix(".json")
        sid = stem if is_thread_id(stem) else (sid or stem)
    messages = thread.get("messages")
    if messages is not None and messages.__class__ is not list:
        yield BadLine(0, 0, f"the Amp thread's messages are {json_kind(messages)}, not a list")
    reader = _Thread(sid, _ledger(thread))
    for index, msg in enumerate(messages if messages.__class__ is list else [], start=1):
        bad = reader.message(index, msg) if msg.__class__ is dict else \
            BadLine(index, 0, f"Amp thread message {index}: {json_kind(msg)}, not a message object")
        if bad is not None:
            yield bad
    extras = {k: thread[k] for k in ("agentMode", "relationships") if thread.get(k)}
    first = next((r for r in reader.records if r.subtype != "compact_boundary"), None)
    if extras and first is not None:
        first.flags.update(extras)
    yield from reader.records
    yield from reader.calls
    yield from reader.folds
    env = _dict(thread.get("env"))
    ended = [t for t in (reader.span.ended_at, _ended(thread)) if t is not None]
    yield SessionInfo(
        external_id=sid,
        title=str_or_none(thread.get("title")),
        cwd=_cwd(env),
        cli_version=str_or_none(_dict(_dict(env.get("initial")).get("platform")).get("clientVersion")),
        models=list(reader.models),
        started_at=_millis(thread.get("created")) or reader.span.started_at,
        ended_at=max(ended, default=None),
    )


def parse(source: ParseInput) -> Iterator[Record]:
    """Records of one Amp thread file. Never raises."""
    try:
        doc = read_source(source, WHAT)
        if isinstance(doc, BadLine):
            yield doc
            yield SessionInfo()
            return
        if doc.value.__class__ is not dict:
            yield BadLine(0, 0, f"the file is {json_kind(doc.value)}, not {WHAT} (a JSON object with its T- id and messages)")
            yield SessionInfo()
            return
        yield from _records(doc.value, Path(source.path))
    except Exception as exc:  # a last resort: never raise
        yield BadLine(0, 0, unexpected(exc))
        yield SessionInfo()


FORMAT = ENTRY.format(
    parse=parse,
    rewrites=True,  # Amp writes the whole thread again as it goes (its ``v`` counts the writes): a message read again may have changed
)
