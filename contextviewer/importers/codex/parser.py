"""OpenAI Codex CLI rollouts (JSONL) -> normalized records.

Pure and streaming, like ``claude_code.py``; see ../shared/docs/formats.md §2 (and §7 for the
token semantics). Every line is ``{"timestamp", "type", "payload"}`` with ``type`` one of
``session_meta``, ``turn_context``, ``response_item``, ``event_msg``, ``compacted`` (newer:
``world_state``, ``inter_agent_communication_metadata``). Mid-2025 rollouts had no envelope (a
bare meta object, then bare response items): a line without a ``payload`` is read as a bare item.

What becomes what:

- ``session_meta`` (the first one) -> ``SessionInfo`` (id, cwd, cli_version, git branch, start);
  its ``base_instructions`` text (the system prompt) -> a ``system`` message, record type
  ``system_prompt``, so the window shows the system prompt as measured text. A later
  ``session_meta`` (resume/fork) is kept as an ``other`` message.
- ``turn_context`` -> the model of the calls and messages that follow (no message).
- ``response_item`` ``message`` -> a user / assistant message; ``developer`` and ``system`` roles
  -> a ``system`` message, record type ``instructions`` (harness instructions). User items that
  the harness injects (``<environment_context>``, AGENTS.md instructions, ...) are ``is_meta``.
- ``reasoning`` -> an assistant message of thinking blocks: one per readable summary/content
  part, plus one ``redacted_thinking`` block when ``encrypted_content`` is there.
- ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` / ``web_search_call`` (any
  ``*_call``) -> an assistant message with one ``tool_call`` block (``tool_id`` = ``call_id``);
  ``*_output`` -> a ``tool`` message with one ``tool_result`` block, paired by ``call_id``.
- ``compacted`` / a ``compaction`` item (0.6x: ``compaction_summary``) / ``event_msg``
  ``context_compacted`` -> one fold per
  compaction (the three written back to back for one compaction are one fold): a ``system``
  marker message (subtype ``compact_boundary``) is the boundary; a non-empty ``message`` is the
  summary (a user message, ``is_compact_summary``); else the summary text is a rendering of what
  ``replacement_history`` kept (a ``ghost_snapshot`` there is an undo snapshot, not context: left
  out). ``preserved_uuids``: the earlier messages that ``replacement_history`` repeats verbatim.
- ``event_msg`` ``token_count`` -> model calls: one ``UsageRecord`` per distinct cumulative
  ``total_token_usage`` (a repeated total is the same call; ``info: null`` and a zero
  ``last_token_usage`` are not calls). Usage is ``last_token_usage``: uncached input =
  ``input_tokens - cached_input_tokens``, cache read = ``cached_input_tokens``, cache write =
  ``cache_write_input_tokens`` where the build writes it, output = ``output_tokens``.
  ``model_context_window`` -> ``SessionInfo.window``. A ``token_count`` whose ``info`` is not in
  this shape is kept as an ``other`` message (nothing measured is invented from it).
- ``event_msg`` ``user_message`` / ``agent_message`` / ``agent_reasoning`` repeat response items
  (the human transcript of the same turn): they are left out of the messages, so nothing is
  counted twice. The first ``user_message`` is the title. Other bookkeeping events
  (``task_started``, ``task_complete``) are left out too; every other event (errors, command ends,
  review mode, ...) and every unknown line type is an ``other`` message with its raw line.
- ``event_msg`` ``exec_command_end`` (written before the output of the call it ends) stays an
  ``other`` message too; its ``exit_code``, ``duration`` and ``stdout`` / ``stderr`` apart (masked,
  capped) also go on the ``extra`` of that call's ``tool_result`` block, so the viewer can show
  the two streams apart (the output the model saw has them together).

Which messages a model call wrote: Codex writes one call's items (reasoning, text, tool calls) as
a run, and the ``token_count`` either right after the run (0.104+) or right before it (0.39). A
call takes the run that is open and unclaimed when its ``token_count`` comes, else the next run to
start; ``message_uuid`` is that run's first message. A call with no run at all falls back to the
message before it (or after it). Messages carry no ``api_message_id`` (a call is only known after
its messages in newer builds).

Uuids are ``<session id>:<line number>`` (rollouts are append-only), the summary of a compaction
``<session id>:<line number>:summary``. Reading a grown file from where the last import stopped
first replays the lines before that point (state only, no records) so that uuids, call numbers,
the deduplication of ``token_count`` and fold matching continue where they were.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from contextviewer.core import export_codex
from contextviewer.core.export import Target
from contextviewer.core.harness import BYTES, Harness, VersionRule
from contextviewer.core.records import (
    AgentLink,
    Block,
    FoldRecord,
    MessageRecord,
    Record,
    SessionInfo,
    UsageRecord,
)
from contextviewer.core.secrets import mask_text
from contextviewer.core.window import ENCRYPTED
from contextviewer.importers.common import (
    collect_images,
    compact_json as _compact,
    content_blocks as _content_blocks,
    data_url,
    image_block,
    parse_timestamp,
    pos_int as _int,
    TimeSpan,
    put_back_images,
    raw_json,
    str_or_none as _str,
    strip_suffixes,
    text_of as _joined,
)
from contextviewer.importers.driver import JsonParser
from contextviewer.importers.formats import ParseInput, SessionFiles, SubagentFile
from contextviewer.importers.lines import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_LINE_BYTES,
)
from contextviewer.importers.codex.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    ENVELOPE_TYPES,
    ROLLOUT_NAME,
    sniff,
)

# event_msg types that repeat a response item or only mark progress: no message.
SKIPPED_EVENTS = frozenset(
    {"user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content",
     "agent_reasoning_section_break", "task_started", "task_complete"}
)
# Bare (pre-envelope) item types read as response items.
ITEM_TYPES = frozenset(
    {"message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
     "custom_tool_call_output", "local_shell_call", "local_shell_call_output", "web_search_call",
     "tool_search_call", "tool_search_output", "image_generation_call", "compaction", "compaction_summary",
     "ghost_snapshot"}
)
# The encrypted summary of a remote compaction: ``compaction_summary`` in 0.6x, ``compaction`` later.
COMPACTION_ITEMS = frozenset({"compaction", "compaction_summary"})
# Items of a replacement history that are not context: ``ghost_snapshot`` is an undo snapshot (a
# git commit the harness can restore), never sent to the model.
NOT_CONTEXT_ITEMS = frozenset({"ghost_snapshot"})
# User items the harness writes (not typed by a person): is_meta, never a title or a turn start.
META_PREFIXES = (
    "<environment_context",
    "<user_instructions",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<permissions instructions",
    "<collaboration_mode",
    "<skill",
    "<turn_aborted",
    "<user_shell_command",
    "<subagent_notification",
)
CALL_NAMES = {"local_shell_call": "local_shell", "web_search_call": "web_search",
              "tool_search_call": "tool_search", "image_generation_call": "image_generation"}
IDE_REQUEST = "## My request for Codex:"
RENDER_CAP = 200_000  # characters of a replacement_history rendering
EXEC_ENDS_KEPT = 64  # exec_command_end results waiting for their call's output
EXEC_STREAM_CAP = 20_000  # characters of a command's stdout / stderr kept on its result block
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

DEFAULT_PROGRESS_EVERY_BYTES = 8 * 1024 * 1024


class _Several(tuple):
    """Records one line gave (a compaction's marker and its summary); ``parse`` flattens them."""


def parse(
    stream: IO[bytes],
    *,
    path: Path | None = None,
    start_offset: int = 0,
    start_line: int = 0,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    progress_every_bytes: int = DEFAULT_PROGRESS_EVERY_BYTES,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> Iterator[Record]:
    """Records of one rollout stream positioned at ``start_offset`` (``path``: the file, read again
    up to ``start_offset`` to restore the state when resuming, and the fallback session id)."""
    parser = _Parser(
        fallback_id=_fallback_id(path),
        max_line_bytes=max_line_bytes,
        progress_every_bytes=progress_every_bytes,
        max_decompressed_bytes=max_decompressed_bytes,
        chunk_size=chunk_size,
    )
    if start_offset > 0 and path is not None:
        parser.replay(path, start_offset)
    for record in parser.parse(stream, start_offset, start_line):
        if record.__class__ is _Several:
            yield from record
        else:
            yield record


def _fallback_id(path: Path | None) -> str:
    """The session id when no session_meta says it: the uuid of a rollout-*.jsonl name, else the stem."""
    if path is None:
        return "codex"
    match = ROLLOUT_NAME.match(path.name)
    if match:
        return match.group(1)
    return strip_suffixes(path.name) or "codex"


class _Limited(io.RawIOBase):
    """The first ``limit`` bytes of a file."""

    def __init__(self, fh, limit: int):
        self.fh = fh
        self.left = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.left <= 0:
            return 0
        n = self.fh.readinto(memoryview(buffer)[: min(len(buffer), self.left)])
        self.left -= n or 0
        return n or 0


# -- the parser ---------------------------------------------------------------------------------


class _Call:
    __slots__ = ("record", "prev_uuid", "after_uuid")

    def __init__(self, record: UsageRecord, prev_uuid: str | None):
        self.record = record
        self.prev_uuid = prev_uuid
        self.after_uuid: str | None = None


class _Parser(JsonParser, TimeSpan):
    what = "a Codex rollout"

    def __init__(self, *, fallback_id: str, **kwargs):
        super().__init__(**kwargs)
        self.fallback_id = fallback_id
        self.replaying = False
        self.calls_before = self.folds_before = 0  # calls and folds read while replaying
        # session info
        self.session_id: str | None = None
        self.key: str | None = None  # uuid prefix, fixed at the first message
        self.cwd: str | None = None
        self.git_branch: str | None = None
        self.cli_version: str | None = None
        self.models: dict[str, None] = {}
        self.model: str | None = None
        self.window: int | None = None
        self.title: str | None = None
        self.fallback_title: str | None = None
        self.meta_seen = False
        # model calls
        self.calls: list[_Call] = []
        self.totals: set[tuple] = set()
        self.pending: list[_Call] = []  # calls waiting for their run
        self.run_first: str | None = None  # first message of the open assistant run
        self.run_claimed = False
        # 0.171+: a token_usage_record right after a response's items (before its tool outputs)
        # names that run for the token_count that comes after the outputs
        self.reserved_run: str | None = None
        self.last_uuid: str | None = None
        self.last_input: int | None = None  # input tokens of the last call since the last fold (a fold's tokens_before)
        # folds
        self.folds: list[FoldRecord] = []
        self.fold_open: FoldRecord | None = None  # the last fold, while no message followed it
        self.fold_parts: set[str] = set()  # which records of a compaction it has had (compacted, event, item)
        self.seen_texts: dict[tuple[str, bytes], list[str]] = {}  # (role, digest) -> uuids
        self.exec_ends: dict[str, dict] = {}  # call_id -> the run an exec_command_end recorded
        # sub-agents: this thread's parent (a sub-agent's rollout), and the agents it spawned
        self.parent_thread: str | None = None
        self.agent_role: str | None = None
        self.spawns: dict[str, Any] = {}  # spawn_agent call_id -> its input
        self.links: dict[str, AgentLink] = {}  # spawned thread id -> its link
        self.links_before: set[str] = set()
        # turns: a fold in a turn that has no prompt of its own is a manual /compact (else auto)
        self.turns_seen = False
        self.turn_prompted = False
        self.turn_folds: list[FoldRecord] = []

    # ---- resuming ----

    def replay(self, path: Path, limit: int) -> None:
        """Read the first ``limit`` bytes again for their state only (no records)."""
        try:
            with open(path, "rb") as fh:
                self.replaying = True
                for _ in self.run(io.BufferedReader(_Limited(fh, limit)), 0, 0):
                    pass
        except OSError:
            pass
        finally:
            self.replaying = False
            self.finished = False
            # What the earlier import stored is not written again.
            self.calls_before, self.folds_before = len(self.calls), len(self.folds)
            self.links_before = set(self.links)

    def finish(self) -> Iterator[Record]:
        if self.replaying:
            return
        for call in self.pending:
            self._settle(call)
        self.pending = []
        for call in self.calls[self.calls_before:]:
            rec = call.record
            if rec.message_uuid is None:
                rec.message_uuid = call.prev_uuid or call.after_uuid
            if rec.message_uuid is not None:
                yield rec
        self._end_turn()
        yield from self.folds[self.folds_before:]
        for agent_id, link in self.links.items():
            if agent_id not in self.links_before:
                yield link
        self.finished = True
        yield self.session_info()

    # ---- helpers ----

    def _envelope(self, obj: dict) -> datetime | None:
        return self.saw(parse_timestamp(obj.get("timestamp")))

    def _message(self, line_no: int, offset: int, raw: str, role: str, record_type: str,
                 blocks: list[Block], ts, *, suffix: str = "", fold_part: bool = False, **fields) -> MessageRecord:
        if self.key is None:
            self.key = self.session_id or self.fallback_id
        uuid = f"{self.key}:{line_no}{suffix}"
        record = MessageRecord(
            line_no=line_no,
            offset=offset,
            role=role,
            record_type=record_type,
            raw=raw,
            blocks=blocks,
            uuid=uuid,
            timestamp=ts,
            session_id=self.session_id or self.key,
            model=self.model if role == "assistant" else None,
            **fields,
        )
        for call in self.calls[-4:]:
            if call.after_uuid is None and call.record.message_uuid is None:
                call.after_uuid = uuid
        if role == "assistant":
            if self.run_first is None:
                self.run_first, self.run_claimed = uuid, False
                if self.pending:
                    for call in self.pending:
                        call.record.message_uuid = uuid
                    self.pending = []
                    self.run_claimed = True
        elif role != "other":
            self.run_first = None
        if not fold_part and role != "other":
            self.fold_open = None
        self.last_uuid = uuid
        if role in ("user", "assistant", "system") and not record.is_compact_summary:
            text = _joined(blocks)
            if text:
                self.seen_texts.setdefault((role, _digest(text)), []).append(uuid)
        return record

    def _settle(self, call: _Call) -> None:
        """A pending call no run claimed: the message before it (else the one after it)."""
        if call.record.message_uuid is None:
            call.record.message_uuid = call.prev_uuid or call.after_uuid

    # ---- one line ----

    def process(self, obj: dict, line_no: int, offset: int, raw: str) -> Record | None:
        ts = self._envelope(obj)
        kind = obj.get("type")
        payload = obj.get("payload")
        if kind.__class__ is str and kind in ENVELOPE_TYPES and payload.__class__ is dict:
            if kind == "response_item":
                return self._item(payload, line_no, offset, raw, ts)
            if kind == "event_msg":
                return self._event(payload, line_no, offset, raw, ts)
            if kind == "turn_context":
                model = _str(payload.get("model"))
                if model:
                    self.model = model
                    self.models[model] = None
                if self.cwd is None:
                    self.cwd = _str(payload.get("cwd"))
                return None
            if kind == "session_meta":
                return self._session_meta(payload, line_no, offset, raw, ts)
            if kind == "compacted":
                return self._compacted(payload, line_no, offset, raw, ts)
            if kind == "token_usage_record":
                return self._usage_record(payload)
            return self._other(kind, payload, line_no, offset, raw, ts)
        if payload is None:
            # A bare (pre-envelope) line: the first one may be the session's meta object.
            if not self.meta_seen and kind is None and _str(obj.get("id")) and "instructions" in obj:
                return self._session_meta(obj, line_no, offset, raw, ts)
            if (kind.__class__ is str and kind in ITEM_TYPES) or (kind is None and "role" in obj):
                return self._item(obj, line_no, offset, raw, ts)
            if kind in ("function_result", "tool_result"):
                return self._output(obj, line_no, offset, raw, ts, kind)
            if kind == "tool_call":
                return self._call(obj, "tool_call", line_no, offset, raw, ts)
        return self._other(kind, payload if payload.__class__ is dict else obj, line_no, offset, raw, ts)

    def _other(self, kind, payload: dict, line_no, offset, raw, ts, *, text: str = "", flags=None) -> MessageRecord:
        if kind.__class__ is str and kind:
            record_type = kind
        else:
            record_type = "(none)" if kind is None else (_compact(kind)[:60] or "(none)")
        sub = payload.get("type") if payload.__class__ is dict else None
        if not text and payload.__class__ is dict:
            for name in ("message", "text", "reason"):
                value = payload.get(name)
                if value.__class__ is str and value:
                    text = value
                    break
                if value.__class__ is dict and (value.get("message").__class__ is str):
                    text = value["message"]
                    break
        label = f"{record_type}/{sub}" if sub.__class__ is str and sub else record_type
        blocks = [Block("other", text=text, raw_type=label[:60])]
        return self._message(line_no, offset, raw, "other", record_type, blocks, ts,
                             subtype=sub[:60] if sub.__class__ is str and sub else None, flags=flags or {})

    def _session_meta(self, payload: dict, line_no, offset, raw, ts) -> MessageRecord | None:
        if self.meta_seen:
            text = "session_meta " + (_str(payload.get("id")) or "")
            forked = _str(payload.get("forked_from_id"))
            if forked:
                text += f" (forked from {forked})"
            return self._other("session_meta", payload, line_no, offset, raw, ts, text=text)
        self.meta_seen = True
        if self.key is None:
            self.session_id = _str(payload.get("id")) or _str(payload.get("session_id"))
        self.cwd = _str(payload.get("cwd")) or self.cwd
        self.parent_thread, self.agent_role = _spawned_by(payload)
        version = payload.get("cli_version")
        if version.__class__ is str and version[:1].isdigit():
            self.cli_version = version
        git = payload.get("git")
        if git.__class__ is dict:
            self.git_branch = _str(git.get("branch"))
        started = parse_timestamp(payload.get("timestamp"))
        if started is not None and (self.started_at is None or started < self.started_at):
            self.started_at = started
        instructions = payload.get("base_instructions")
        text = instructions.get("text") if instructions.__class__ is dict else payload.get("instructions")
        if text.__class__ is not str or not text.strip():
            return None
        return self._message(line_no, offset, raw, "system", "system_prompt", [Block("text", text=text)], ts,
                             is_meta=True)

    # ---- response items ----

    def _item(self, item: dict, line_no, offset, raw, ts) -> Record | None:
        kind = item.get("type")
        if kind == "message" or (kind is None and "role" in item):
            return self._chat(item, line_no, offset, raw, ts)
        if kind == "reasoning":
            return self._reasoning(item, line_no, offset, raw, ts)
        if kind in COMPACTION_ITEMS:
            return self._compaction_item(item, line_no, offset, raw, ts)
        if kind.__class__ is str:
            if kind.endswith("_output") or kind in ("tool_result", "function_result"):
                return self._output(item, line_no, offset, raw, ts, kind)
            if kind.endswith("_call"):
                return self._call(item, kind, line_no, offset, raw, ts)
        return self._other("response_item", item, line_no, offset, raw, ts)

    def _chat(self, item: dict, line_no, offset, raw, ts) -> MessageRecord:
        role = item.get("role")
        content = item.get("content")
        if content is None:
            content = item.get("message")
        blocks = content_blocks(content)
        flags: dict[str, Any] = {}
        phase = _str(item.get("phase"))
        if phase:
            flags["phase"] = phase
        if role == "user":
            text = _joined(blocks)
            is_meta = bool(text) and text.lstrip().startswith(META_PREFIXES)
            if not is_meta and self.fallback_title is None and text.strip():
                self.fallback_title = _title(text)
            if not is_meta and text.strip():
                self.turn_prompted = True
            return self._message(line_no, offset, raw, "user", "message", blocks, ts, is_meta=is_meta, flags=flags)
        if role == "assistant":
            return self._message(line_no, offset, raw, "assistant", "message", blocks, ts, flags=flags)
        if role in ("developer", "system"):
            flags["codex_role"] = role
            return self._message(line_no, offset, raw, "system", "instructions", blocks, ts, flags=flags)
        flags["codex_role"] = role if role.__class__ is str else _compact(role)[:60]
        return self._message(line_no, offset, raw, "other", "message", blocks, ts, flags=flags)

    def _reasoning(self, item: dict, line_no, offset, raw, ts) -> MessageRecord:
        blocks: list[Block] = []
        for name in ("summary", "content"):
            parts = item.get(name)
            if parts.__class__ is str and parts:
                blocks.append(Block("thinking", text=parts))
            elif parts.__class__ is list:
                for part in parts:
                    text = part.get("text") if part.__class__ is dict else part
                    if text.__class__ is str and text:
                        blocks.append(Block("thinking", text=text))
        if _str(item.get("encrypted_content")):
            blocks.append(Block("thinking", raw_type="redacted_thinking"))
        if not blocks:
            blocks.append(Block("thinking"))  # reasoning happened; the log keeps none of it
        return self._message(line_no, offset, raw, "assistant", "reasoning", blocks, ts)

    def _call(self, item: dict, kind: str, line_no, offset, raw, ts) -> MessageRecord:
        name = _str(item.get("name"))
        function = item.get("function")
        if name is None and function.__class__ is dict:
            name = _str(function.get("name"))
        namespace = _str(item.get("namespace"))
        if name and namespace and not name.startswith(namespace):
            name = f"{namespace}.{name}"
        name = name or CALL_NAMES.get(kind) or kind.removesuffix("_call") or "tool"
        if "arguments" in item:
            value = item.get("arguments")
        elif "input" in item:
            value = item.get("input")
        else:
            value = item.get("action")
        if value.__class__ is str:
            text = value
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            tool_input = parsed if parsed.__class__ in (dict, list) else value
        else:
            tool_input = value
            text = _compact(value) if value is not None else ""
        tool_id = _str(item.get("call_id")) or _str(item.get("id"))
        if tool_id and name.rsplit(".", 1)[-1] == "spawn_agent":
            self.spawns[tool_id] = tool_input
        block = Block("tool_call", text=text, tool_id=tool_id, tool_name=name, tool_input=tool_input,
                      raw_type=None if kind == "function_call" else kind)
        flags = {"status": item["status"]} if _str(item.get("status")) else {}
        return self._message(line_no, offset, raw, "assistant", kind, [block], ts, flags=flags)

    def _output(self, item: dict, line_no, offset, raw, ts, kind: str) -> MessageRecord:
        tool_id = _str(item.get("call_id")) or _str(item.get("id"))
        if "output" in item:
            value = item.get("output")
        elif "result" in item:
            value = item.get("result")
        elif "tools" in item:
            value = item.get("tools")
        else:
            value = None
        text, images, is_error = _output_text(value)
        if tool_id in self.spawns:
            self._spawned(tool_id, text, line_no)
        if item.get("success") is False or item.get("status") in ("failed", "error"):
            is_error = True
        block = Block("tool_result", text=text, tool_id=tool_id, is_error=is_error, images=images,
                      raw_type=None if kind == "function_call_output" else kind,
                      extra=self.exec_ends.pop(tool_id, None) if tool_id else None)
        return self._message(line_no, offset, raw, "tool", kind, [block], ts)

    # ---- compaction ----

    def _fold(self, line_no, ts, boundary_uuid: str, **metadata) -> FoldRecord:
        fold = FoldRecord(
            line_no=line_no,
            boundary_uuid=boundary_uuid,
            kind="compact",
            trigger=None,
            tokens_before=self.last_input,
            timestamp=ts,
            metadata=metadata,
        )
        if self.turns_seen:  # auto until its turn ends without a prompt of its own (a manual /compact)
            fold.trigger = "auto"
            self.turn_folds.append(fold)
        self.folds.append(fold)
        # The window after the fold is unknown until a call measures it: a second fold with no
        # call between them has no window before it, not the one measured before the first.
        self.last_input = None
        return fold

    def _marker(self, line_no, offset, raw, ts, record_type: str, text: str) -> MessageRecord:
        return self._message(line_no, offset, raw, "system", record_type, [Block("text", text=text)], ts,
                             subtype="compact_boundary", is_meta=True, fold_part=True)

    def _compacted(self, payload: dict, line_no, offset, raw, ts) -> Record:
        message = payload.get("message")
        message = message if message.__class__ is str and message.strip() else ""
        history = payload.get("replacement_history")
        history = history if history.__class__ is list else None
        encrypted = bool(history) and any(
            i.__class__ is dict and i.get("type") in COMPACTION_ITEMS for i in history
        )
        preserved = self._preserved(history or [])
        if encrypted and message:
            # A remote compaction's summary is its encrypted item; a message beside it (a placeholder
            # where a log was trimmed for sharing) is not what the model wrote: kept as a detail.
            message, ignored = "", message
        else:
            ignored = ""
        if message:
            summary_text = message
        elif history is not None:
            summary_text = render_history(history)
        else:
            summary_text = ""
        meta = {"source": "compacted", "remote": encrypted, "replacement_items": len(history or [])}
        if ignored:
            meta["message"] = ignored[:500]
        if encrypted and history[-1].__class__ is dict and history[-1].get("type") in COMPACTION_ITEMS:
            # The new window is the replacement history in its order: the kept messages (as listed,
            # not in file order), THEN the encrypted summary (0.171: it comes last).
            meta["summary_after_preserved"] = True
        for name in ("window_number", "window_id", "previous_window_id", "first_window_id", "compaction_response_id"):
            if payload.get(name) is not None:
                meta[name] = payload[name]
        usage = _compaction_usage(payload)
        if usage:
            meta["compaction_usage"] = usage  # the compaction call's own usage (0.171+): the fold's cost
        fold = self.fold_open if "compacted" not in self.fold_parts else None
        records: list[Record] = []
        if fold is None:
            what = "remote compaction: the summary is encrypted" if encrypted else "compaction"
            marker = self._marker(line_no, offset, raw, ts, "compacted", f"Context compacted ({what})")
            records.append(marker)
            fold = self._fold(line_no, ts, marker.uuid)
            self.fold_parts = set()
        else:  # the same compaction, written after its context_compacted event
            records.append(self._other("compacted", payload, line_no, offset, raw, ts,
                                       text=f"compaction details ({len(history or [])} items kept)"))
        fold.metadata.update(meta)
        fold.preserved_uuids = preserved or fold.preserved_uuids
        if message:
            summary = self._message(line_no, offset, raw, "user", "compacted", [Block("text", text=message)], ts,
                                    suffix=":summary", is_compact_summary=True, fold_part=True)
            records.append(summary)
            fold.summary_uuid = summary.uuid
        elif encrypted and fold.summary_uuid is None:
            summary = self._encrypted_summary(line_no, offset, raw, ts, "compacted")
            records.append(summary)
            fold.summary_uuid = summary.uuid
        if usage:
            fold.cost = _fold_cost(usage, self.model)
        if summary_text:
            fold.summary_text = summary_text
        self.fold_open = fold
        self.fold_parts.add("compacted")
        return records[0] if len(records) == 1 else _Several(records)

    def _compaction_item(self, item: dict, line_no, offset, raw, ts) -> Record | None:
        if self.fold_open is not None and "item" not in self.fold_parts:
            self.fold_open.metadata["remote"] = True
            self.fold_parts.add("item")
            return self._other("response_item", item, line_no, offset, raw, ts, text="encrypted compaction summary")
        marker = self._marker(line_no, offset, raw, ts, "compaction",
                              "Context compacted (remote compaction: the summary is encrypted)")
        fold = self._fold(line_no, ts, marker.uuid, source="compaction", remote=True)
        fold.summary_text = "[encrypted compaction summary: not readable]"
        summary = self._encrypted_summary(line_no, offset, raw, ts, "response_item")
        fold.summary_uuid = summary.uuid
        self.fold_open, self.fold_parts = fold, {"item"}
        return _Several((marker, summary))

    def _encrypted_summary(self, line_no, offset, raw, ts, record_type: str) -> MessageRecord:
        """The summary a remote compaction sent back: an opaque ``encrypted_content`` the log keeps
        as it came. It heads the new window, so it is a message; its text cannot be shown (no
        text, nothing estimated: the window says it is encrypted)."""
        block = Block("other", text="", raw_type=ENCRYPTED)
        return self._message(line_no, offset, raw, "user", record_type, [block], ts, suffix=":summary",
                             is_compact_summary=True, fold_part=True, is_meta=True)

    def _preserved(self, history: list) -> list[str]:
        """Earlier messages that the replacement history repeats verbatim (same role and text)."""
        out: list[str] = []
        used: set[str] = set()
        for item in history:
            if item.__class__ is not dict or item.get("type") != "message":
                continue
            role = item.get("role")
            role = "system" if role in ("developer", "system") else role
            text = _joined(content_blocks(item.get("content")))
            if not text or role not in ("user", "assistant", "system"):
                continue
            for uuid in reversed(self.seen_texts.get((role, _digest(text)), ())):
                if uuid not in used:
                    used.add(uuid)
                    out.append(uuid)
                    break
        return out

    # ---- events ----

    def _event(self, payload: dict, line_no, offset, raw, ts) -> Record | None:
        kind = payload.get("type")
        if kind == "token_count":
            return self._token_count(payload, line_no, offset, raw, ts)
        if kind == "context_compacted":
            if self.fold_open is not None and "event" not in self.fold_parts:
                self.fold_open.metadata["event_line"] = line_no
                self.fold_parts.add("event")
                return None
            marker = self._marker(line_no, offset, raw, ts, "event_msg", "Context compacted")
            self.fold_open = self._fold(line_no, ts, marker.uuid, source="context_compacted")
            self.fold_parts = {"event"}
            return marker
        if kind == "exec_command_end":
            self._exec_end(payload)
        if kind in ("task_started", "task_complete", "turn_aborted"):
            self._end_turn()
            if kind == "task_started":
                self.turns_seen, self.turn_prompted = True, False
        if kind == "collab_agent_spawn_end":
            self._spawned(_str(payload.get("call_id")), None, line_no, _str(payload.get("new_thread_id")),
                          _str(payload.get("new_agent_nickname")), _str(payload.get("new_agent_role")))
        if kind.__class__ is str and kind in SKIPPED_EVENTS:
            if kind == "user_message" and self.title is None:
                text = payload.get("message")
                if text.__class__ is str and text.strip() and not text.lstrip().startswith(META_PREFIXES):
                    self.title = _title(text)
            elif kind == "task_started":
                window = _int(payload.get("model_context_window"))
                if window:
                    self.window = window
            return None
        return self._other("event_msg", payload, line_no, offset, raw, ts)

    def _end_turn(self) -> None:
        """The turn that held folds ended: a fold in a turn without a prompt was asked for (/compact)."""
        if not self.turn_prompted:
            for fold in self.turn_folds:
                fold.trigger = "manual"
        self.turn_folds = []

    def _spawned(self, call_id: str | None, output: str | None, line_no: int, agent_id: str | None = None,
                 nickname: str | None = None, role: str | None = None) -> None:
        """A sub-agent started by a spawn_agent call: its thread id (the call's output
        ``{"agent_id", "nickname"}``, or a collab_agent_spawn_end event) links its rollout to the call."""
        if output is not None:
            try:
                parsed = json.loads(output)
            except ValueError:
                parsed = None
            if parsed.__class__ is dict:
                agent_id = agent_id or _str(parsed.get("agent_id"))
                nickname = nickname or _str(parsed.get("nickname"))
        if not agent_id or agent_id in self.links:
            return
        spec = self.spawns.get(call_id or "")
        spec = spec if spec.__class__ is dict else {}
        role = role or _str(spec.get("agent_type")) or _str(spec.get("agent_role"))
        task = _str(spec.get("message"))
        self.links[agent_id] = AgentLink(agent_id, call_id, line_no, agent_type=role,
                                         description=nickname or (_title(task) if task else None))

    def _exec_end(self, payload: dict) -> None:
        """Keep how a command ended for the output of its call, which comes next."""
        call_id = _str(payload.get("call_id"))
        if not call_id:
            return
        run: dict[str, Any] = {}
        code = payload.get("exit_code")
        if code.__class__ is int:
            run["exit_code"] = code
        seconds = _duration(payload.get("duration"))
        if seconds is not None:
            run["duration_seconds"] = seconds
        stdout, stderr = payload.get("stdout"), payload.get("stderr")
        if stdout.__class__ is str and stderr.__class__ is str:
            run["stdout"], run["stderr"] = _stream(stdout), _stream(stderr)
        if not run:
            return
        self.exec_ends.pop(call_id, None)
        self.exec_ends[call_id] = run
        while len(self.exec_ends) > EXEC_ENDS_KEPT:
            del self.exec_ends[next(iter(self.exec_ends))]

    def _usage_record(self, payload: dict) -> None:
        """0.171+: one response's usage, written right after its items (the token_count of the same
        call comes after the tool outputs): the open run is that call's. Its figures are the
        token_count's (read there); a compaction call's record names no run (its usage is the
        fold's: ``compacted.latest_token_usage_record``). No message: it repeats token_count."""
        usage = payload.get("usage")
        if usage.__class__ is dict and (_int(usage.get("input_tokens")) or _int(usage.get("output_tokens"))):
            if self.run_first is not None and not self.run_claimed:
                self.reserved_run, self.run_claimed = self.run_first, True
        return None

    def _token_count(self, payload: dict, line_no, offset, raw, ts) -> Record | None:
        info = payload.get("info")
        if info is None:
            return None  # rate limits only
        total = info.get("total_token_usage") if info.__class__ is dict else None
        last = info.get("last_token_usage") if info.__class__ is dict else None
        if total.__class__ is not dict or last.__class__ is not dict:
            return self._other("event_msg", payload, line_no, offset, raw, ts,
                               text="token_count in an unknown shape (not read as a model call)",
                               flags={"unread_usage": True})
        window = _int(info.get("model_context_window"))
        if window:
            self.window = window
        key = tuple(sorted((k, v) for k, v in total.items() if v.__class__ in (int, float)))
        if key in self.totals:
            return None  # the same call written again
        self.totals.add(key)
        inp, cached, out = _int(last.get("input_tokens")), _int(last.get("cached_input_tokens")), _int(last.get("output_tokens"))
        if inp == 0 and out == 0:
            return None  # not a request (written after a remote compaction, or an empty total)
        rec = UsageRecord(
            api_message_id=f"{self.session_id or self.key or self.fallback_id}:call:{len(self.calls) + 1}",
            request_id=None,
            message_uuid=None,
            line_no=line_no,
            model=self.model,
            input_uncached=max(0, inp - cached),
            cache_write=_int(last.get("cache_write_input_tokens")),
            cache_read=cached,
            output=out,
            reasoning=_int(last["reasoning_output_tokens"]) if "reasoning_output_tokens" in last else None,
            timestamp=ts,
        )
        self.last_input = inp
        call = _Call(rec, self.last_uuid)
        self.calls.append(call)
        for waiting in self.pending:  # a newer call came first: the older one had no run of its own
            self._settle(waiting)
        self.pending = []
        if self.reserved_run is not None:
            rec.message_uuid, self.reserved_run = self.reserved_run, None
        elif self.run_first is not None and not self.run_claimed:
            rec.message_uuid = self.run_first
            self.run_claimed = True
        else:
            self.pending.append(call)
        return None

    def session_info(self) -> SessionInfo:
        return SessionInfo(
            external_id=self.session_id or self.key or self.fallback_id,
            title=self.title or self.fallback_title,
            cwd=self.cwd,
            git_branch=self.git_branch,
            cli_version=self.cli_version,
            models=list(self.models),
            started_at=self.started_at,
            ended_at=self.ended_at,
            lines=self.consumed_lines,
            bytes_consumed=self.consumed_offset,
            window=self.window,
            agent_id=(self.session_id or self.key) if self.parent_thread else None,
            agent_type=self.agent_role,
        )


# -- content ------------------------------------------------------------------------------------


def _compaction_usage(payload: dict) -> dict | None:
    """The compaction call's usage a ``compacted`` record holds (``latest_token_usage_record`` whose
    ``response_id`` is the ``compaction_response_id``)."""
    record = payload.get("latest_token_usage_record")
    if record.__class__ is not dict:
        return None
    wanted = _str(payload.get("compaction_response_id"))
    if wanted and _str(record.get("response_id")) not in (None, wanted):
        return None
    usage = record.get("usage")
    if usage.__class__ is not dict:
        return None
    return {k: v for k, v in usage.items() if v.__class__ is int}


def _fold_cost(usage: dict, model: str | None) -> dict:
    """Fold.cost from a Responses usage: Codex's input_tokens includes the cached ones."""
    cached = usage.get("cached_input_tokens") or 0
    cost = {"calls": 1, "input_uncached": max(0, (usage.get("input_tokens") or 0) - cached), "cache_write": 0,
            "cache_read": cached, "output": usage.get("output_tokens") or 0}
    if model:
        cost["model"] = model
    return cost


def _spawned_by(meta: dict) -> tuple[str | None, str | None]:
    """(parent thread id, agent role) of a sub-agent's session_meta (``parent_thread_id``, or
    ``source.subagent.thread_spawn``); (None, None) for a thread a person started."""
    parent = _str(meta.get("parent_thread_id"))
    role = _str(meta.get("agent_role"))
    source = meta.get("source")
    sub = source.get("subagent") if source.__class__ is dict else None
    spawn = sub.get("thread_spawn") if sub.__class__ is dict else None
    if spawn.__class__ is dict:
        parent = parent or _str(spawn.get("parent_thread_id"))
        role = role or _str(spawn.get("agent_role"))
    return parent, role


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _duration(value: Any) -> float | None:
    """Seconds of a Rust Duration (``{"secs", "nanos"}``) or a number."""
    if value.__class__ is dict:
        secs, nanos = value.get("secs"), value.get("nanos", 0)
        if secs.__class__ is int and nanos.__class__ is int and secs >= 0 and nanos >= 0:
            return round(secs + nanos / 1e9, 3)
        return None
    if value.__class__ in (int, float) and value >= 0:
        return float(value)
    return None


def _stream(text: str) -> str:
    """A command's stdout or stderr as stored beside its result: capped, storable, masked (it comes
    from another line than the result's, so the result line's own masking may not see it)."""
    if len(text) > EXEC_STREAM_CAP:
        text = text[:EXEC_STREAM_CAP] + "\n[…]"
    return mask_text(_UNSTORABLE.sub("\ufffd", text))


def _title(text: str) -> str:
    if IDE_REQUEST in text:  # the VS Code extension wraps the prompt in IDE context
        text = text.split(IDE_REQUEST, 1)[1]
    # Masked before the cut: a secret cut in two would no longer be recognised (ingest masks too).
    return " ".join(mask_text(text).split())[:120]


def _data_url(url: Any) -> tuple[str | None, str | None]:
    """(media type, base64 data) of a ``data:`` URL."""
    found = data_url(url)
    if found is None:
        return None, None
    media, data, base64 = found
    return media, data if base64 else None


def content_part(part: Any) -> Block:
    if part.__class__ is str:
        return Block("text", text=part)
    if part.__class__ is not dict:
        return Block("other", text=_compact(part), raw_type="value")
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text", "Text", "summary_text", "reasoning_text"):
        text = part.get("text")
        return Block("text", text=text if text.__class__ is str else "")
    if kind == "refusal":
        text = part.get("refusal")
        return Block("text", text=text if text.__class__ is str else "", raw_type="refusal")
    if kind in ("input_image", "image"):
        return image_block(*_data_url(part.get("image_url")))
    text = part.get("text")
    return Block("other", text=text if text.__class__ is str else "",
                 raw_type=kind if kind.__class__ is str and kind else "(none)")


def content_blocks(content: Any) -> list[Block]:
    return _content_blocks(content, content_part)


def _output_text(value: Any) -> tuple[str, int, bool]:
    """(text, image parts, is_error) of a tool output: a string (0.39: a JSON string with
    ``output`` and ``metadata.exit_code``), a content list, or an object."""
    if value is None:
        return "", 0, False
    if value.__class__ is str:
        is_error = False
        if value.startswith('{"output"'):
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            if parsed.__class__ is dict and parsed.get("metadata").__class__ is dict:
                code = parsed["metadata"].get("exit_code")
                is_error = code.__class__ is int and code != 0
        return value, 0, is_error
    if value.__class__ is dict:
        if "content" in value and ("success" in value or len(value) == 1):
            text, images, _ = _output_text(value.get("content"))
            return text, images, value.get("success") is False
        if value.get("type") in ("input_text", "output_text", "text", "input_image"):
            value = [value]
        else:
            return _compact(value), 0, False
    if value.__class__ is list:
        texts, images = [], 0
        for part in value:
            block = content_part(part)
            if block.kind == "image":
                images += 1
            elif block.kind == "text" and block.text:
                texts.append(block.text)
            elif part.__class__ is dict and block.kind == "other":
                texts.append(_compact(part))
        return "\n".join(texts), images, False
    return _compact(value), 0, False


def render_history(history: list) -> str:
    """A readable rendering of what a replacement history kept (the summary of a compaction
    whose own summary is encrypted or absent)."""
    parts: list[str] = []
    encrypted = 0
    for item in history:
        if item.__class__ is not dict:
            continue
        kind = item.get("type")
        if kind in COMPACTION_ITEMS:
            encrypted += len(item.get("encrypted_content") or "") or 1
            continue
        if kind in NOT_CONTEXT_ITEMS:
            continue
        if kind == "message":
            role = str(item.get("role") or "message").upper()
            text = _joined(content_blocks(item.get("content")))
            images = sum(1 for b in content_blocks(item.get("content")) if b.kind == "image")
            if images:
                text += f"{chr(10) if text else ''}[{images} image{'s' if images > 1 else ''}]"
            parts.append(f"{role}: {text}")
        else:
            content = item.get("content")
            text = _joined(content_blocks(content)) if content is not None else ""
            parts.append(f"{str(kind or 'item').upper()}: {text}".rstrip())
    head = f"[The new context keeps these {len(parts)} items"
    head += "; the compaction summary itself is encrypted]" if encrypted else "]"
    out = head + "\n\n" + "\n\n".join(parts)
    return out if len(out) <= RENDER_CAP else out[:RENDER_CAP] + "\n[…]"


# -- the format ---------------------------------------------------------------------------------


META_LINE_CAP = 4 * 1024 * 1024  # bytes of a first line read for its session_meta (base_instructions are long)


def rollout_meta(path: Path) -> dict:
    """The session_meta payload of a rollout's first line ({} when it has none or cannot be read)."""
    try:
        if path.name.endswith(".gz"):
            import gzip  # noqa: PLC0415

            with gzip.open(path, "rb") as fh:
                line = fh.readline(META_LINE_CAP)
        else:
            with open(path, "rb") as fh:
                line = fh.readline(META_LINE_CAP)
        obj = json.loads(line)
    except (OSError, ValueError, EOFError):
        return {}
    if obj.__class__ is not dict or obj.get("type") != "session_meta" or obj.get("payload").__class__ is not dict:
        return {}
    return obj["payload"]


def group(paths: list[Path]) -> list[SessionFiles]:
    """Each rollout is one session (sessions/YYYY/MM/DD/ and archived_sessions/ alike), except a
    sub-agent's: its session_meta names the thread that spawned it (``parent_thread_id``), so it is
    read after that thread's rollout, as its sub-agent (a sub-agent of a sub-agent goes under the
    first thread a person started). A sub-agent whose parent is not among ``paths`` is linked to the
    parent imported before (or stands alone when there is none)."""
    out: list[SessionFiles] = []
    sessions: dict[str, SessionFiles] = {}  # thread id -> its (first) session
    children: list[tuple[Path, str, str, str | None]] = []  # (path, own id, parent id, role)
    parents: dict[str, str] = {}
    for p in sorted(paths):
        meta = rollout_meta(p)
        own = _str(meta.get("id")) or _fallback_id(p)
        parent, role = _spawned_by(meta)
        if parent and parent != own:
            children.append((p, own, parent, role))
            parents[own] = parent
        else:
            out.append(SessionFiles(format="codex", main=p, session_id=own))
            sessions.setdefault(own, out[-1])
    for p, own, parent, role in children:
        root, seen = parent, {own}
        while root in parents and root not in seen:  # up to the thread a person started
            seen.add(root)
            root = parents[root]
        entry = sessions.get(root)
        if entry is None:
            entry = sessions[root] = SessionFiles(format="codex", main=None, session_id=root)
            out.append(entry)
        entry.subagents.append(SubagentFile(p, own, role))
    return out


def _parse(source: ParseInput) -> Iterator[Record]:
    return parse(
        source.stream,
        path=source.path,
        start_offset=source.start_offset,
        start_line=source.start_line,
        max_line_bytes=source.max_line_bytes,
        max_decompressed_bytes=source.max_decompressed_bytes,
    )


def _image_part(node: dict) -> list | None:
    if node.get("type") in ("input_image", "image"):
        media, data = _data_url(node.get("image_url"))
        return [{"type": "base64", "media_type": media, "data": data}] if data is not None else []
    return None


def images(raw: str) -> list[dict]:
    """The base64 images (``data:`` URLs) of a line's item, in order."""
    obj = raw_json(raw)
    payload = obj.get("payload") if isinstance(obj, dict) else None
    item = payload if isinstance(payload, dict) else obj
    found: list[dict] = []
    if isinstance(item, dict):
        collect_images(item.get("content") if "content" in item else item.get("output"), found, _image_part)
    return found


def enrich(d: dict) -> dict:
    """Image blocks get their data back from the raw line (blocks and data: URLs in the same order)."""
    return put_back_images(d, images, lambda b: b.get("kind") == "image" and b.get("data_size"))


# The harness's rules (core/harness.py; policy-lab 4.1): auto-compact at 90 % of the context window
# (auto_compact_token_limit; the model's input limit: 272k -> 244,800, also when the conversation's
# window is the usable 95 % a rollout logs, 258,400); usable window 95 %
# (effective_context_window_percent); the output lies outside an input window (no reserve in it);
# bytes/4.
COMPACT_AT = 0.90
USABLE = 0.95
# The auto-compact rule per version, bisected on the real client (docs/policy-lab.md "Each version's
# own rule"). 0.171.0: `manage.py agent_thresholds` on a resumed rollout (pre-turn) and mid-turn.
# 0.58.0: mid-turn only, after a response that calls a tool, from a response total of 244,800 (gpt-5
# and gpt-5-codex; not at 244,799); resumed with any last usage up to 500,000 it never compacted
# before the new turn.
VERSION_RULES = (
    VersionRule("0.171", "0.171.0", (), "90 % of the window Codex keeps for the model (its log's model_context_window "
                "÷ 0.95): 244,800 for 272,000, 450,000 for gpt-6.2-sol's 500,000"),
    VersionRule("0.58", "0.58.0", (("pre_turn", False),),
                "90 % of the model's input limit, 244,800 for gpt-5 and gpt-5-codex, checked mid-turn only"),
)
HARNESS = Harness(
    fold_label=f"Codex compact {round(COMPACT_AT * 100)} %",
    fold_fraction=COMPACT_AT,
    usable_fraction=USABLE,
    fractions_of_model_input=True,
    units=BYTES,
    own_policy="codex",
    usual_for=("openai",),
    version_rules=VERSION_RULES,
)

FORMAT = ENTRY.format(
    parse=_parse,
    group=group,
    images=images,
    enrich=enrich,
    harness=HARNESS,
    # Its own session file, which `codex resume` reads (core/export_codex.py writes it).
    export=Target("codex", "Codex rollout", "application/x-ndjson", export_codex.codex_session, agent_session=True,
                  resume_help=export_codex.RESUME_HELP, continue_commands=export_codex.codex_commands),
)
