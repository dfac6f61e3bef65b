"""OpenHands sessions -> normalized records (pure, no Django). See ../shared/docs/formats.md §6.4.

Two layouts, one format ("openhands"):

- v0 (OpenHands ≤ 0.6x): a trajectory, one JSON array of events ``{id, timestamp, source, message,
  action | observation, args | content + extras, cause, tool_call_metadata, llm_metrics}``. Read
  whole (storage DOCUMENT).
- v1 (agent-sdk, CLI 1.x): a conversation folder ``<id>/base_state.json`` + ``<id>/events/
  event-<n>-<uuid>.json``, one event per file with a ``kind`` (MessageEvent, ActionEvent,
  ObservationEvent, Condensation, ...). ``parse`` reads the folder when ``source.path`` is one.

Mapping (one message per event, its uuid the event id; a few events write two):

- user messages -> ``user``; agent messages -> ``assistant``; the system prompt -> ``system``
  (``record_type="system_prompt"``) and its tool list -> ``system`` (``"tool_definitions"``);
- ``finish`` -> ``assistant`` text (its thought and the response's text), no tool call: OpenHands
  replays it that way (the call is never executed and never answered; its id stays in
  ``flags["tool_call"]`` and the raw);
- an action the model called a tool for -> ``assistant`` with the model's text (``thought``),
  its reasoning as ``thinking`` where logged, and a ``tool_call`` block (the log's tool_call_id);
  a v0 agent action without tool_call_metadata (non-function-calling agents) gets the id
  ``call-<event id>``, so its observation still pairs with it through ``cause``;
- an observation -> ``tool`` with a ``tool_result`` (paired by tool_call_id, else by ``cause``);
  an observation answering no call that the model sees (recall, an error) -> ``user`` with
  ``is_meta`` (it does not open a turn);
- bookkeeping events (agent state changes, recall requests, null events) and unknown kinds ->
  ``other`` with their raw kept;
- ``condensation`` -> a fold: a ``system`` marker (``subtype="compact_boundary"``, the event's id)
  that closes the archived segment, then the summary as a ``user`` message with
  ``is_compact_summary`` (uuid ``<event id>:summary``). The messages before the marker that the
  condensation did not forget (and no earlier one did) are the fold's ``preserved_uuids``; in v1
  the summary sits among them at its ``summary_offset`` (``Condensation.apply``), its trigger
  ``auto`` unless a ``CondensationRequest`` came first (then unknown: the user's /condense and a
  context-window error write the same request);
- v1 sub-agents (the CLI's ``task`` tool): each ``<id>/subagents/<sub id>/`` folder is read with its
  parent (``group``), linked to the task call whose prompt is its first message;
- a v1 terminal observation's text is what the model got (``TerminalObservation.to_llm_content``:
  the output, its suffix, then the working folder, Python interpreter and exit code lines).

Checked against what OpenHands CLI 1.16.0 (agent-sdk 1.21.0) wrote and sent, run offline against
the scripted model server (ops/drivers/openhands_cli.py, issue 39).

Usage (measured only): v0 ``tool_call_metadata.model_response.usage`` (LiteLLM's chat usage of the
call that produced the action) and ``llm_metrics.token_usages[]``; v1 ``base_state.json``
``stats.usage_to_metrics.*.token_usages[]`` matched to events by ``llm_response_id``. One
``UsageRecord`` per response id (the same response is repeated on every action it produced, on
their observations, and in every later cumulative ``llm_metrics``). LiteLLM's ``prompt_tokens``
is the whole input, cache reads and cache writes included (the fixtures show it: 3616 = 6 +
3471 read + 139 written), so ``input_uncached = prompt - cache_read - cache_write`` (when a
provider's prompt count leaves writes out, so the difference would go negative, writes are not
subtracted). Usage of the condenser (the summarizer's own calls) is not a call of the agent's
window: it goes in the fold marker's ``flags["condenser_usage"]``. v1 token usages that match no
event are not stored (there is no message to place them at).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from contextviewer.core.harness import Harness
from contextviewer.core.records import (
    AgentLink,
    BadLine,
    Block,
    FoldRecord,
    MessageRecord,
    Record,
    SessionInfo,
    UsageRecord,
)
from contextviewer.importers.common import (
    said_bad,
    as_list as _list,
    compact_json,
    int_or_none,
    json_arguments as _arguments,
    json_kind,
    parse_timestamp,
    pos_int,
    result_content,
    TimeSpan,
    str_or_none,
    tool_call as _tool_call,
)
from contextviewer.importers.driver import array_elements, guarded, read_objects
from contextviewer.importers.formats import ParseInput, SessionFiles, SubagentFile
from contextviewer.importers.jsondoc import read_json_file, read_source
from contextviewer.importers.openhands.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    NAME,
    SOURCES,
    V1_EVENT_FILE,
    _V0_HEAD,
    _V0_KIND,
    _V0_SOURCE,
    _is_v0_event,
    _v1_event_files,
    sniff,
)


# v0 actions that are the agent talking, not calling a tool.
V0_SPEECH_ACTIONS = frozenset({"message", "finish", "reject"})
# v0 events the model never sees: kept as "other".
V0_BOOKKEEPING_ACTIONS = frozenset({"change_agent_state", "recall", "null", "condensation_request", "pause", "resume"})
V0_BOOKKEEPING_OBSERVATIONS = frozenset({"agent_state_changed", "null", "condensation_request"})
# v0 action args that describe the event, not the tool call.
V0_NOT_INPUT = frozenset({"thought", "impl_source", "translated_ipython_code", "confirmation_state", "security_risk", "hidden", "blocking", "is_confirmed"})

V1_OBSERVATION_KINDS = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
# An observation's error header (sdk/tool/schema.py Observation.ERROR_MESSAGE_HEADER): its own text block.
TERMINAL_ERROR = "[An error occurred during execution.]"


# -- sniffing ------------------------------------------------------------------------------------


# -- the session builder --------------------------------------------------------------------------


def _text_parts(content: Any) -> tuple[list[Block], int]:
    """Blocks of an OpenHands/LiteLLM content list ({type: text|image|image_url, ...}) or string."""
    if content is None:
        return [], 0
    if content.__class__ is str:
        return ([Block("text", text=content)] if content else []), 0
    if content.__class__ is dict:
        content = [content]
    if content.__class__ is not list:
        return [Block("other", text=compact_json(content), raw_type=json_kind(content))], 0
    blocks: list[Block] = []
    images = 0
    for part in content:
        if part.__class__ is str:
            blocks.append(Block("text", text=part))
        elif part.__class__ is dict:
            kind = part.get("type")
            if kind == "text":
                text = part.get("text")
                blocks.append(Block("text", text=text if text.__class__ is str else ""))
            elif kind in ("image", "image_url"):
                urls = part.get("image_urls")
                if urls.__class__ is not list:
                    url = part.get("image_url")
                    url = url.get("url") if url.__class__ is dict else url
                    urls = [url]
                for url in urls:
                    blocks.append(_image_block(url))
                    images += 1
            else:
                text = part.get("text")
                blocks.append(Block("other", text=text if text.__class__ is str else compact_json(part), raw_type=str(kind or "(none)")))
        elif part is not None:
            blocks.append(Block("other", text=compact_json(part), raw_type=json_kind(part)))
    return blocks, images


_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?(?:;[^,]*)?,")


def _image_block(url: Any) -> Block:
    if url.__class__ is str:
        m = _DATA_URL.match(url)
        if m:
            # The base64 data stays in the raw record, never in blocks.
            return Block("image", media_type=m.group(1), data_size=len(url) - m.end())
        return Block("other", text=url, raw_type="image_url")
    return Block("other", text=compact_json(url), raw_type="image_url")


def _litellm_usage(usage: dict) -> tuple[int, int, int, int]:
    """(input_uncached, cache_write, cache_read, output) of a LiteLLM chat usage object."""
    prompt = pos_int(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details")
    read = pos_int(details.get("cached_tokens")) if details.__class__ is dict else 0
    read = read or pos_int(usage.get("cache_read_input_tokens"))
    write = pos_int(usage.get("cache_creation_input_tokens"))
    if not write and details.__class__ is dict:
        write = pos_int(details.get("cache_creation_tokens"))
    return _split(prompt, write, read) + (pos_int(usage.get("completion_tokens")),)


def _token_usage(entry: dict) -> tuple[int, int, int, int]:
    """The same for an OpenHands TokenUsage (llm_metrics.token_usages[])."""
    write = pos_int(entry.get("cache_write_tokens"))
    read = pos_int(entry.get("cache_read_tokens"))
    return _split(pos_int(entry.get("prompt_tokens")), write, read) + (pos_int(entry.get("completion_tokens")),)


def _split(prompt: int, write: int, read: int) -> tuple[int, int, int]:
    uncached = prompt - read - write
    if uncached < 0:  # this provider's prompt count leaves cache writes out
        uncached = max(0, prompt - read)
    return uncached, write, read


class _Call:
    __slots__ = ("record", "fallback_uuid")

    def __init__(self, record: UsageRecord, fallback_uuid: str | None):
        self.record = record
        self.fallback_uuid = fallback_uuid


class _Session(TimeSpan):
    """Events in, records out (both layouts). Keeps what pairing, folds and usage need."""

    def __init__(self, session_id: str):
        self.session_id = session_id
        self.records: list[Record] = []
        self.call_of_event: dict[str, str] = {}  # action event id -> its tool id
        self.first_of_response: dict[str, str] = {}  # response id -> first message uuid
        self.calls: dict[str, _Call] = {}  # response id (or token_usages index) -> call
        self.condenser_responses: set[str] = set()
        self.condenser_usage: dict[str, dict] = {}  # response id -> usage (for the fold marker)
        self.folds: list[FoldRecord] = []
        self.view: list[tuple[str, str]] = []  # (message uuid, event id) in the model's view
        self.forgotten: set[str] = set()
        self.seen_responses: set[str] = set()
        self.models: dict[str, None] = {}
        self.window: int | None = None
        self.cwd: str | None = None
        self.title: str | None = None
        self.cli_version: str | None = None
        self.markers: dict[str, MessageRecord] = {}
        self.requested = False  # a CondensationRequest since the last condensation (v1)

    # -- helpers

    def _ts(self, value: Any) -> datetime | None:
        return self.saw(parse_timestamp(value))

    def _message(self, *, line_no: int, role: str, record_type: str, raw: str, blocks: list[Block], uuid: str,
                 event_id: str, ts: datetime | None, in_view: bool = True, **fields: Any) -> MessageRecord:
        record = MessageRecord(
            line_no=line_no,
            offset=line_no,
            role=role,
            record_type=record_type[:60],
            raw=raw,
            blocks=blocks,
            uuid=uuid,
            timestamp=ts,
            session_id=self.session_id,
            **fields,
        )
        self.records.append(record)
        if in_view and role in ("user", "assistant", "tool", "system") and not record.is_compact_summary:
            self.view.append((uuid, event_id))
        if record.api_message_id:
            self.first_of_response.setdefault(record.api_message_id, uuid)
        if record.model and role == "assistant":
            self.models[record.model] = None
        return record

    def _usage(self, key: str, values: tuple[int, int, int, int], model: str | None, uuid: str, line_no: int,
               ts: datetime | None) -> None:
        if key in self.calls:
            return
        uncached, write, read, output = values
        if not (uncached or write or read or output):
            return  # a response that reported no tokens: nothing measured
        record = UsageRecord(
            api_message_id=key,
            request_id=None,
            message_uuid=None,
            line_no=line_no,
            model=model,
            input_uncached=uncached,
            cache_write=write,
            cache_read=read,
            output=output,
            timestamp=ts,
        )
        self.calls[key] = _Call(record, uuid)
        if model:
            self.models[model] = None

    def _metrics(self, metrics: Any, uuid: str | None, line_no: int, ts: datetime | None, *, condenser: bool = False) -> None:
        """token_usages[] of a Metrics object (v0 llm_metrics, v1 usage_to_metrics.*)."""
        if metrics.__class__ is not dict:
            return
        usages = metrics.get("token_usages")
        if usages.__class__ is not list:
            return
        for index, entry in enumerate(usages):
            if entry.__class__ is not dict:
                continue
            rid = str_or_none(entry.get("response_id")) or f"token_usages[{index}]"
            window = int_or_none(entry.get("context_window"))
            if window and window > 0:
                self.window = window
            model = str_or_none(entry.get("model")) or str_or_none(metrics.get("model_name"))
            if condenser:
                self.condenser_usage.setdefault(rid, {k: v for k, v in entry.items() if k != "response_id"})
                self.condenser_responses.add(rid)
                continue
            self._usage(rid, _token_usage(entry), model, uuid, line_no, ts)

    def fold(self, *, event_id: str, line_no: int, raw: str, ts: datetime | None, record_type: str,
             forgotten: set[str], forgotten_range: tuple[int, int] | None, summary: str | None,
             summary_offset: int | None, extra_flags: dict | None = None, forgot_all: bool = False,
             trigger: str | None = None, summary_at: int | None = None) -> None:
        """``forgot_all``: the log does not say what was forgotten (an old ``condense``
        observation): like any fold, it then archives everything before it. ``summary_at`` (v1, its
        ``summary_offset``): the summary goes among the kept events at that index (``Condensation.apply``: the kept
        events, the system prompt first, then the summary inserted at the offset), so the fold lists
        it among what it kept, and a later condensation may forget it (its event id
        ``<condensation id>-summary``)."""

        def is_forgotten(eid: str) -> bool:
            if forgot_all or eid in forgotten:
                return True
            if forgotten_range is not None and eid.isascii() and eid.isdigit():  # not "²": int() refuses it
                return forgotten_range[0] <= int(eid) <= forgotten_range[1]
            return False

        preserved = [(u, e) for u, e in self.view if not is_forgotten(e) and e not in self.forgotten]
        forgotten_now = {e for _u, e in self.view if is_forgotten(e)}
        if forgot_all:
            count = len(forgotten_now)
        elif forgotten_range is None:
            count = len(forgotten)
        else:
            count = forgotten_range[1] - forgotten_range[0] + 1
        self.forgotten |= forgotten_now | forgotten
        flags: dict[str, Any] = {"forgotten_events": count}
        if summary_offset is not None:
            flags["summary_offset"] = summary_offset
        if extra_flags:
            flags.update(extra_flags)
        text = f"Condensation: {count} earlier event{'' if count == 1 else 's'} forgotten"
        marker = self._message(
            line_no=line_no, role="system", record_type=record_type, raw=raw, blocks=[Block("text", text=text)],
            uuid=event_id, event_id=event_id, ts=ts, in_view=False, subtype="compact_boundary", flags=flags,
        )
        self.markers[event_id] = marker
        summary_uuid = None
        if summary:
            summary_uuid = f"{event_id}:summary"
            self._message(
                line_no=line_no, role="user", record_type=record_type, raw=raw, blocks=[Block("text", text=summary)],
                uuid=summary_uuid, event_id=event_id, ts=ts, is_compact_summary=True,
            )
            if summary_at is not None:
                preserved = _insert_at_event(preserved, (summary_uuid, f"{event_id}-summary"), summary_at)
        self.folds.append(
            FoldRecord(
                line_no=line_no,
                boundary_uuid=event_id,
                kind="compact",
                trigger=trigger,
                tokens_before=None,
                preserved_uuids=[u for u, _e in preserved],
                summary_uuid=summary_uuid,
                summary_text=summary or "",
                timestamp=ts,
                metadata=flags,
            )
        )
        self.view = preserved

    # -- the end

    def finish(self) -> Iterator[Record]:
        for marker in self.markers.values():
            rid = marker.flags.get("llm_response_id")
            if rid and rid in self.condenser_usage:
                marker.flags["condenser_usage"] = self.condenser_usage[rid]
        calls = []
        for key, call in self.calls.items():
            if key in self.condenser_responses:
                continue
            uuid = self.first_of_response.get(key) or call.fallback_uuid
            if uuid is None:
                continue
            call.record.message_uuid = uuid
            calls.append(call.record)
        # v1 events do not name their model, their usage does: the call's first message takes it
        # (the conversation's models, the gauge and the index read it from the messages).
        models = {c.message_uuid: c.model for c in calls if c.model}
        for record in self.records:
            if record.__class__ is MessageRecord and not record.model and record.uuid in models:
                record.model = models[record.uuid]
        yield from self.records
        yield from calls
        yield from self.folds

    def info(self, external_id: str | None) -> SessionInfo:
        return SessionInfo(
            external_id=external_id,
            title=self.title,
            cwd=self.cwd,
            cli_version=self.cli_version,
            models=list(self.models),
            started_at=self.started_at,
            ended_at=self.ended_at,
            window=self.window,
        )

    # -- v0 -----------------------------------------------------------------------------------

    def v0(self, obj: dict, line_no: int, raw: str) -> None:
        eid_value = obj.get("id")
        event_id = str(eid_value) if eid_value.__class__ in (int, str) and eid_value != "" else f"element-{line_no}"
        ts = self._ts(obj.get("timestamp"))
        source = obj.get("source")
        action = obj.get("action")
        observation = obj.get("observation")
        args = obj.get("args") if obj.get("args").__class__ is dict else {}
        tcm = obj.get("tool_call_metadata") if obj.get("tool_call_metadata").__class__ is dict else None
        response = tcm.get("model_response") if tcm and tcm.get("model_response").__class__ is dict else None
        rid = str_or_none(response.get("id")) if response else None
        model = str_or_none(response.get("model")) if response else None
        usage = response.get("usage") if response else None
        if rid and usage.__class__ is dict:
            self._usage(rid, _litellm_usage(usage), model, event_id, line_no, ts)
        self._metrics(obj.get("llm_metrics"), event_id, line_no, ts)
        flags: dict[str, Any] = {}

        if action.__class__ is str:
            self._v0_action(obj, action, source, args, tcm, response, rid, model, event_id, line_no, raw, ts, flags)
        elif observation.__class__ is str:
            self._v0_observation(obj, observation, tcm, event_id, line_no, raw, ts, flags)
        else:
            self._message(line_no=line_no, role="other", record_type="(none)", raw=raw,
                          blocks=_other_text(obj.get("message")), uuid=event_id, event_id=event_id, ts=ts)

    def _v0_action(self, obj, action, source, args, tcm, response, rid, model, event_id, line_no, raw, ts, flags) -> None:
        record_type = f"action:{action}"
        if action == "condensation":
            ids = args.get("forgotten_event_ids")
            forgotten = {str(i) for i in ids if i.__class__ in (int, str)} if ids.__class__ is list else set()
            start, end = int_or_none(args.get("forgotten_events_start_id")), int_or_none(args.get("forgotten_events_end_id"))
            self.fold(event_id=event_id, line_no=line_no, raw=raw, ts=ts, record_type=record_type, forgotten=forgotten,
                      forgotten_range=(start, end) if start is not None and end is not None and not forgotten else None,
                      summary=str_or_none(args.get("summary")), summary_offset=int_or_none(args.get("summary_offset")))
            return
        if action == "system":
            text = str_or_none(args.get("content")) or str_or_none(obj.get("message")) or ""
            self._message(line_no=line_no, role="system", record_type="system_prompt", raw=raw,
                          blocks=[Block("text", text=text)], uuid=event_id, event_id=event_id, ts=ts,
                          subtype="system", flags=flags)
            tools = args.get("tools")
            if tools:
                self._message(line_no=line_no, role="system", record_type="tool_definitions", raw=raw,
                              blocks=[Block("text", text=compact_json(tools))], uuid=f"{event_id}:tools",
                              event_id=event_id, ts=ts, subtype="tools")
            return
        if tcm is None and (action in V0_BOOKKEEPING_ACTIONS or source not in ("user", "agent")):
            self._message(line_no=line_no, role="other", record_type=record_type, raw=raw,
                          blocks=_other_text(obj.get("message")), uuid=event_id, event_id=event_id, ts=ts, flags=flags)
            return
        if source == "user" and tcm is None:
            blocks = _message_blocks(args, obj)
            self._message(line_no=line_no, role="user", record_type=record_type, raw=raw, blocks=blocks,
                          uuid=event_id, event_id=event_id, ts=ts, flags=flags)
            return
        # The agent: its words, maybe a tool call.
        blocks: list[Block] = []
        first_of_response = rid is None or rid not in self.seen_responses
        if rid:
            self.seen_responses.add(rid)
        choice_message = _choice_message(response)
        reasoning = str_or_none(args.get("reasoning_content")) or (
            str_or_none(choice_message.get("reasoning_content")) if choice_message else None
        )
        if reasoning and first_of_response:
            blocks.append(Block("thinking", text=reasoning))
        if action == "message":
            blocks.extend(_message_blocks(args, obj))
        elif action in ("finish", "reject"):
            # As OpenHands replays it (ConversationMemory): the thought and the response's text,
            # the finish call itself dropped (it is never executed, so it never has a result).
            thought = str_or_none(args.get("thought")) or str_or_none(args.get("final_thought"))
            content = str_or_none(choice_message.get("content")) if choice_message else None
            text = thought + "\n" + content if thought and content and content != thought else thought or content
            text = text or str_or_none(obj.get("message"))
            if text and first_of_response:
                blocks.append(Block("text", text=text))
            if tcm is not None:
                flags["tool_call"] = {"id": tcm.get("tool_call_id"), "name": tcm.get("function_name")}
                tcm = None
        elif first_of_response:
            # The model's own text before the call; for `think` the thought is the call's input.
            text = str_or_none(choice_message.get("content")) if choice_message else None
            if text is None and action != "think":
                text = str_or_none(args.get("thought"))
            if text:
                blocks.append(Block("text", text=text))
        if tcm is not None:
            tool_id = str_or_none(tcm.get("tool_call_id"))
            name = str_or_none(tcm.get("function_name"))
            tool_input = _call_arguments(choice_message, tool_id)
            if tool_input is None:
                tool_input = {k: v for k, v in args.items() if k not in V0_NOT_INPUT}
            blocks.append(_tool_call(tool_id, name, tool_input))
            if tool_id:
                self.call_of_event[event_id] = tool_id
        elif action not in V0_SPEECH_ACTIONS:
            tool_id = f"call-{event_id}"
            blocks.append(_tool_call(tool_id, action, {k: v for k, v in args.items() if k not in V0_NOT_INPUT}))
            self.call_of_event[event_id] = tool_id
        self._message(line_no=line_no, role="assistant", record_type=record_type, raw=raw, blocks=blocks,
                      uuid=event_id, event_id=event_id, ts=ts, model=model, api_message_id=rid, flags=flags)

    def _v0_observation(self, obj, observation, tcm, event_id, line_no, raw, ts, flags) -> None:
        record_type = f"observation:{observation}"
        content = obj.get("content")
        text = content if content.__class__ is str else (compact_json(content) if content is not None else "")
        if observation == "condense":  # AgentCondensationObservation: the summary, no forgotten list
            self.fold(event_id=event_id, line_no=line_no, raw=raw, ts=ts, record_type=record_type, forgotten=set(),
                      forgotten_range=None, summary=text or str_or_none(obj.get("message")), summary_offset=None,
                      forgot_all=True)
            return
        if observation in V0_BOOKKEEPING_OBSERVATIONS:
            self._message(line_no=line_no, role="other", record_type=record_type, raw=raw,
                          blocks=_other_text(text or obj.get("message")), uuid=event_id, event_id=event_id, ts=ts,
                          flags=flags)
            return
        tool_id = str_or_none(tcm.get("tool_call_id")) if tcm else None
        cause = obj.get("cause")
        if tool_id is None and cause.__class__ in (int, str):
            tool_id = self.call_of_event.get(str(cause))
        is_error = observation == "error" or obj.get("success") is False
        if tool_id is not None:
            self._message(line_no=line_no, role="tool", record_type=record_type, raw=raw,
                          blocks=[Block("tool_result", text=text, tool_id=tool_id, is_error=is_error)],
                          uuid=event_id, event_id=event_id, ts=ts, flags=flags)
            return
        # Seen by the model as a user message (recall context, an error), but written by no person.
        self._message(line_no=line_no, role="user", record_type=record_type, raw=raw,
                      blocks=[Block("text", text=text)] if text else [], uuid=event_id, event_id=event_id, ts=ts,
                      is_meta=True, flags=flags)

    # -- v1 -----------------------------------------------------------------------------------

    def v1(self, obj: dict, line_no: int, raw: str) -> None:
        """One v1 event, read by its ``kind`` (``V1_EVENTS``); a kind not known there is "other"."""
        kind = obj.get("kind")
        kind = kind if kind.__class__ is str and kind else "(none)"
        event_id = str_or_none(obj.get("id")) or f"event-{line_no}"
        ts = self._ts(obj.get("timestamp"))
        rid = str_or_none(obj.get("llm_response_id"))
        read = self.V1_EVENTS.get(kind, _Session._v1_other)
        read(self, obj, kind, event_id, line_no, raw, ts, rid)

    def _v1_message(self, obj: dict, kind: str, event_id: str, line_no: int, raw: str, ts: datetime | None,
                    rid: str | None) -> None:
        """A user or agent message (an agent's with its reasoning and tool calls)."""
        source = obj.get("source")
        message = obj.get("llm_message") if obj.get("llm_message").__class__ is dict else {}
        role = "user" if source == "user" or message.get("role") == "user" else "assistant"
        blocks = _reasoning_blocks(message) if role == "assistant" else []
        parts, _images = _text_parts(message.get("content"))
        blocks.extend(parts)
        extended, _ = _text_parts(obj.get("extended_content"))
        blocks.extend(extended)
        for call in _list(message.get("tool_calls")):
            if call.__class__ is dict:
                blocks.append(_v1_tool_call(call))
        flags = {"extended_content": len(extended)} if extended else {}
        if obj.get("activated_skills"):
            flags["activated_skills"] = obj.get("activated_skills")
        self._message(line_no=line_no, role=role, record_type=kind, raw=raw, blocks=blocks, uuid=event_id,
                      event_id=event_id, ts=ts, api_message_id=rid if role == "assistant" else None, flags=flags,
                      is_meta=role == "user" and source not in ("user", None))

    def _v1_action(self, obj: dict, kind: str, event_id: str, line_no: int, raw: str, ts: datetime | None,
                   rid: str | None) -> None:
        """An action: the agent's reasoning (once per response), its thought and the tool call."""
        blocks = []
        first = rid is None or rid not in self.seen_responses
        if rid:
            self.seen_responses.add(rid)
        if first:
            blocks.extend(_reasoning_blocks(obj))
        thought, _ = _text_parts(obj.get("thought"))
        blocks.extend(thought)
        call = obj.get("tool_call") if obj.get("tool_call").__class__ is dict else None
        if call is not None:
            block = _v1_tool_call(call)
        else:
            action = obj.get("action")
            block = _tool_call(str_or_none(obj.get("tool_call_id")), str_or_none(obj.get("tool_name")), action)
        block.tool_id = block.tool_id or str_or_none(obj.get("tool_call_id"))
        block.tool_name = block.tool_name or str_or_none(obj.get("tool_name"))
        blocks.append(block)
        flags = {"summary": obj["summary"]} if str_or_none(obj.get("summary")) else {}
        self._message(line_no=line_no, role="assistant", record_type=kind, raw=raw, blocks=blocks, uuid=event_id,
                      event_id=event_id, ts=ts, api_message_id=rid, flags=flags)

    def _v1_observation(self, obj: dict, kind: str, event_id: str, line_no: int, raw: str, ts: datetime | None,
                        rid: str | None) -> None:
        """A tool's result: an observation, a rejected action or an agent error."""
        tool_id = str_or_none(obj.get("tool_call_id"))
        if kind == "UserRejectObservation":
            text, is_error, images = f"Action rejected: {obj.get('rejection_reason') or ''}", True, 0
        elif kind == "AgentErrorEvent":
            text, is_error, images = str(obj.get("error") or ""), True, 0
        else:
            observation = obj.get("observation") if obj.get("observation").__class__ is dict else {}
            text, images = result_content(observation.get("content"))
            if not text and observation.get("content").__class__ is str:
                text = observation["content"]
            text = _terminal_text(observation, text)
            extended, _ = _text_parts(obj.get("extended_content"))
            if extended:
                text = "\n".join([text, *(b.text for b in extended if b.text)])
            is_error = observation.get("is_error") is True
        self._message(line_no=line_no, role="tool", record_type=kind, raw=raw,
                      blocks=[Block("tool_result", text=text, tool_id=tool_id, is_error=is_error, images=images)],
                      uuid=event_id, event_id=event_id, ts=ts)

    def _v1_system_prompt(self, obj: dict, kind: str, event_id: str, line_no: int, raw: str, ts: datetime | None,
                          rid: str | None) -> None:
        """The system prompt, then its tool list (a second message)."""
        prompt, _ = _text_parts(obj.get("system_prompt"))
        dynamic, _ = _text_parts(obj.get("dynamic_context"))
        self._message(line_no=line_no, role="system", record_type="system_prompt", raw=raw,
                      blocks=prompt + dynamic, uuid=event_id, event_id=event_id, ts=ts, subtype="system")
        tools = obj.get("tools")
        if tools:
            self._message(line_no=line_no, role="system", record_type="tool_definitions", raw=raw,
                          blocks=[Block("text", text=compact_json(tools))], uuid=f"{event_id}:tools",
                          event_id=event_id, ts=ts, subtype="tools")

    def _v1_condensation(self, obj: dict, kind: str, event_id: str, line_no: int, raw: str, ts: datetime | None,
                         rid: str | None) -> None:
        """A condensation: a fold (its summarizer's response is the condenser's, not the agent's)."""
        ids = obj.get("forgotten_event_ids")
        forgotten = {str(i) for i in ids if i.__class__ in (int, str)} if ids.__class__ is list else set()
        if rid:
            self.condenser_responses.add(rid)
        flags: dict[str, Any] = {"llm_response_id": rid} if rid else {}
        if self.requested:
            flags["requested"] = True
        self.fold(event_id=event_id, line_no=line_no, raw=raw, ts=ts, record_type=kind, forgotten=forgotten,
                  forgotten_range=None, summary=str_or_none(obj.get("summary")),
                  summary_offset=int_or_none(obj.get("summary_offset")), extra_flags=flags or None,
                  summary_at=int_or_none(obj.get("summary_offset")),
                  trigger=None if self.requested else "auto")
        self.requested = False

    def _v1_request(self, obj: dict, kind: str, event_id: str, line_no: int, raw: str, ts: datetime | None,
                    rid: str | None) -> None:
        """A CondensationRequest: the next condensation was asked for (the user's /condense, or the
        agent after the model refused a context too long: the log does not say which, so that fold's
        trigger stays unknown); without one, the condenser folded on its own (its event or token limit)."""
        self.requested = True
        self._v1_other(obj, kind, event_id, line_no, raw, ts, rid)

    def _v1_summary(self, obj: dict, kind: str, event_id: str, line_no: int, raw: str, ts: datetime | None,
                    rid: str | None) -> None:
        """A condensation's summary as its own event."""
        self._message(line_no=line_no, role="user", record_type=kind, raw=raw,
                      blocks=[Block("text", text=str(obj.get("summary") or ""))], uuid=event_id,
                      event_id=event_id, ts=ts, is_compact_summary=True)

    def _v1_other(self, obj: dict, kind: str, event_id: str, line_no: int, raw: str, ts: datetime | None,
                  rid: str | None) -> None:
        """State updates, pauses, condensation requests, kinds this reader does not know."""
        self._message(line_no=line_no, role="other", record_type=kind, raw=raw, blocks=[], uuid=event_id,
                      event_id=event_id, ts=ts)

    # v1 event kind -> its reader (an unknown kind: _v1_other)
    V1_EVENTS = {
        "MessageEvent": _v1_message,
        "ActionEvent": _v1_action,
        **dict.fromkeys(V1_OBSERVATION_KINDS, _v1_observation),
        "SystemPromptEvent": _v1_system_prompt,
        "Condensation": _v1_condensation,
        "CondensationRequest": _v1_request,
        "CondensationSummaryEvent": _v1_summary,
    }

    def base_state(self, state: dict) -> None:
        agent = state.get("agent") if state.get("agent").__class__ is dict else {}
        llm = agent.get("llm") if agent.get("llm").__class__ is dict else {}
        model = str_or_none(llm.get("model"))
        if model:
            self.models[model] = None
        workspace = state.get("workspace") if state.get("workspace").__class__ is dict else {}
        self.cwd = str_or_none(workspace.get("working_dir"))
        self.title = str_or_none(state.get("title"))
        stats = state.get("stats") if state.get("stats").__class__ is dict else {}
        usage = stats.get("usage_to_metrics") if stats.get("usage_to_metrics").__class__ is dict else {}
        for usage_id, metrics in usage.items():
            condenser = "condenser" in str(usage_id).lower()
            # Calls land on the first event of their response (matched in finish()).
            self._metrics(metrics, None, 0, None, condenser=condenser)


def _insert_at_event(view: list[tuple[str, str]], item: tuple[str, str], offset: int) -> list[tuple[str, str]]:
    """``view`` (message uuid, event id) with ``item`` before its ``offset``-th event (0-based; an
    event may be two messages: the system prompt and its tools), or at its end."""
    events = list(dict.fromkeys(e for _u, e in view))
    if offset >= len(events):
        return [*view, item]
    at = next(i for i, (_u, e) in enumerate(view) if e == events[offset])
    return [*view[:at], item, *view[at:]]


def _terminal_text(observation: dict, text: str) -> str:
    """A terminal observation as the model got it (tools/terminal/definition.py
    TerminalObservation.to_llm_content): the error header, the metadata's prefix, the output, its
    suffix ("[The command completed with exit code 0.]"), then the working folder, the Python
    interpreter and the exit code; any other observation as its content."""
    meta = observation.get("metadata")
    if observation.get("kind") != "TerminalObservation" or meta.__class__ is not dict:
        return text
    out = f"{str_or_none(meta.get('prefix')) or ''}{text}{str_or_none(meta.get('suffix')) or ''}"
    if str_or_none(meta.get("working_dir")):
        out += f"\n[Current working directory: {meta['working_dir']}]"
    if str_or_none(meta.get("py_interpreter_path")):
        out += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
    code = int_or_none(meta.get("exit_code"))
    if code is not None and code != -1:
        out += f"\n[Command finished with exit code {code}]"
    if observation.get("is_error") is True:
        out = f"{TERMINAL_ERROR}\n{out}"
    return out


def _other_text(value: Any) -> list[Block]:
    return [Block("text", text=value)] if value.__class__ is str and value else []


def _message_blocks(args: dict, obj: dict) -> list[Block]:
    text = args.get("content")
    if text.__class__ is not str:
        text = obj.get("message") if obj.get("message").__class__ is str else ""
    blocks = [Block("text", text=text)] if text else []
    for key in ("image_urls", "file_urls"):
        urls = args.get(key)
        if urls.__class__ is list:
            blocks.extend(_image_block(u) if key == "image_urls" else Block("other", text=str(u), raw_type="file_url")
                          for u in urls)
    return blocks


def _choice_message(response: dict | None) -> dict | None:
    if not response:
        return None
    choices = response.get("choices")
    if choices.__class__ is list and choices and choices[0].__class__ is dict:
        message = choices[0].get("message")
        return message if message.__class__ is dict else None
    return None


def _call_arguments(message: dict | None, tool_id: str | None) -> Any:
    if not message or tool_id is None:
        return None
    for call in _list(message.get("tool_calls")):
        if call.__class__ is dict and call.get("id") == tool_id:
            function = call.get("function")
            if function.__class__ is dict:
                return _arguments(function.get("arguments"))
    return None


def _v1_tool_call(call: dict) -> Block:
    function = call.get("function") if call.get("function").__class__ is dict else None
    name = str_or_none(call.get("name")) or (str_or_none(function.get("name")) if function else None)
    arguments = call.get("arguments") if "arguments" in call else (function.get("arguments") if function else None)
    return _tool_call(str_or_none(call.get("id")), name, _arguments(arguments))


def _reasoning_blocks(obj: dict) -> list[Block]:
    blocks: list[Block] = []
    thinking = obj.get("thinking_blocks")
    if thinking.__class__ is list:
        for item in thinking:
            if item.__class__ is dict:
                if item.get("type") == "redacted_thinking":
                    blocks.append(Block("thinking", raw_type="redacted_thinking"))
                else:
                    blocks.append(Block("thinking", text=str(item.get("thinking") or "")))
    reasoning = str_or_none(obj.get("reasoning_content"))
    if reasoning and not blocks:
        blocks.append(Block("thinking", text=reasoning))
    return blocks


# -- parse ----------------------------------------------------------------------------------------


def _session_id(path: Path, first: Any) -> str:
    """A v0 trajectory names no session: its file name, told apart from other trajectories of the
    same name by its first event (which does not change as the trajectory grows)."""
    seed = json.dumps(first, sort_keys=True, ensure_ascii=False, default=str) if first is not None else ""
    digest = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{path.stem}-{digest}"


def _parse_document(source: ParseInput) -> Iterator[Record]:
    doc = read_source(source, "an OpenHands trajectory")
    if isinstance(doc, BadLine):
        yield doc
        yield SessionInfo()
        return
    value = doc.value
    if isinstance(value, dict):  # some exports wrap the list
        for key in ("events", "trajectory", "history"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
    if not isinstance(value, list):
        yield BadLine(line_no=0, offset=0, reason=f"the file is {json_kind(value)} or object, not an OpenHands event list")
        yield SessionInfo()
        return
    try:
        spans = array_elements(doc.text)
    except (ValueError, RecursionError):
        spans = None  # a wrapped list: raw records re-encoded
    first = next((v for v in value if isinstance(v, dict)), None)
    session = _Session(_session_id(source.path, first))
    bad: list[BadLine] = []

    def read(element: dict, number: int) -> None:
        span = spans[number - 1] if spans is not None else None
        session.v0(element, number, doc.text[span[0]:span[1]] if span is not None else compact_json(element))

    read_objects(value, read, bad, name="element {n} of the trajectory", failed="event {n}", kind="not an event")
    yield from bad
    yield from session.finish()
    yield session.info(session.session_id)


def _parse_folder(source: ParseInput) -> Iterator[Record]:
    folder = source.path
    state: dict = {}
    bad: list[BadLine] = []
    state_path = folder / "base_state.json"
    if state_path.is_file():
        doc = read_json_file(state_path, max_bytes=source.max_line_bytes)
        if isinstance(doc, BadLine):
            bad.append(BadLine(line_no=0, offset=0, reason=f"base_state.json: {doc.reason}"))
        elif isinstance(doc.value, dict):
            state = doc.value
        else:
            bad.append(BadLine(line_no=0, offset=0, reason=f"base_state.json is {json_kind(doc.value)}, not an object"))
    external = str_or_none(state.get("id")) or folder.name
    session = _Session(external)
    events = _v1_event_files(folder / "events")
    for number, (_n, name) in enumerate(events, start=1):
        doc = read_json_file(folder / "events" / name, max_bytes=source.max_line_bytes)
        if isinstance(doc, BadLine):
            bad.append(BadLine(line_no=number, offset=number, reason=f"event file {name}: {doc.reason}"))
            continue
        if not isinstance(doc.value, dict):
            bad.append(BadLine(line_no=number, offset=number, reason=f"event file {name} is {json_kind(doc.value)}, not an event"))
            continue
        try:
            session.v1(doc.value, number, doc.text.strip())
        except Exception as exc:
            bad.append(BadLine(line_no=number, offset=number, reason=f"event file {name} could not be read ({exc.__class__.__name__}: {exc})"))
    if not events:
        bad.append(BadLine(line_no=0, offset=0, reason="the events/ folder holds no event-*.json files"))
    try:
        session.base_state(state)
    except Exception as exc:
        bad.append(BadLine(line_no=0, offset=0, reason=f"base_state.json could not be read ({exc.__class__.__name__}: {exc})"))
    yield from bad
    yield from session.finish()
    if source.agent_id is None:
        yield from _links(folder, session.records)
    yield session.info(external)


# -- sub-agents (v1) ---------------------------------------------------------------------------------

SUBAGENTS = "subagents"  # tools/task/manager.py _SUBAGENTS_DIR: <conversation>/subagents/<id>/
TASK_TOOL = "task"


def subagent_folders(folder: Path) -> list[Path]:
    """The conversation folders its ``task`` tool's sub-agents wrote (v1), by name."""
    subs = folder / SUBAGENTS
    try:
        return sorted(p for p in subs.iterdir() if p.is_dir() and (p / "events").is_dir()) if subs.is_dir() else []
    except OSError:
        return []


def _first_prompt(folder: Path) -> str | None:
    """The text of a sub-agent's first user message: the prompt its parent's task call gave it."""
    for _n, name in _v1_event_files(folder / "events"):
        doc = read_json_file(folder / "events" / name, max_bytes=4 * 1024 * 1024)
        event = doc.value if not isinstance(doc, BadLine) else None
        if event.__class__ is dict and event.get("kind") == "MessageEvent" and event.get("source") == "user":
            message = event.get("llm_message") if event.get("llm_message").__class__ is dict else {}
            parts, _ = _text_parts(message.get("content"))
            return "\n".join(b.text for b in parts if b.kind == "text")
    return None


def _links(folder: Path, records: list[Record]) -> list[AgentLink]:
    """Each sub-agent folder under the task call that started it: the call whose prompt is the
    sub-agent's first message (the manager keeps which task ran in which folder in memory only), else
    the first task call not yet taken."""
    calls = [(r, b) for r in records if r.__class__ is MessageRecord for b in r.blocks
             if b.kind == "tool_call" and b.tool_name == TASK_TOOL]
    taken: set[int] = set()
    out = []
    for sub in subagent_folders(folder):
        prompt = _first_prompt(sub)
        free = [k for k in range(len(calls)) if k not in taken]
        k = next((k for k in free if prompt is not None and (calls[k][1].tool_input or {}).get("prompt") == prompt), None)
        if k is None and free:
            k = free[0]
        if k is None:
            out.append(AgentLink(sub.name, None, 0, None, prompt.splitlines()[0][:200] if prompt else None))
            continue
        taken.add(k)
        record, block = calls[k]
        args = block.tool_input if block.tool_input.__class__ is dict else {}
        out.append(AgentLink(sub.name, block.tool_id, record.line_no, str_or_none(args.get("subagent_type")),
                             str_or_none(args.get("description"))))
    return out


def group(paths: list[Path]) -> list[SessionFiles]:
    """Each trajectory file alone; each v1 conversation folder with its sub-agents' folders
    (``subagents/<id>/``, read with it). A sub-agent's folder named alone is its own conversation."""
    out = []
    for path in sorted(paths):
        subs = [SubagentFile(sub, sub.name) for sub in subagent_folders(path)] if path.is_dir() else []
        out.append(SessionFiles(format=NAME, main=path, subagents=subs))
    return out


def parse(source: ParseInput) -> Iterator[Record]:
    """Records of a v0 trajectory file or a v1 conversation folder (never raises)."""
    yield from guarded(said_bad(_parse_folder(source) if source.path.is_dir() else _parse_document(source), "event",
                                ("source", "action", "observation", "kind")))


def images(raw: str) -> list[dict]:
    """The base64 images (data URLs) of a stored event, in block order."""
    found: list[dict] = []
    for url in re.findall(r'"(data:[\w.+-]+/[\w.+-]+;base64,[A-Za-z0-9+/=]+)"', raw or ""):
        media_type, _, data = url[5:].partition(";base64,")
        found.append({"media_type": media_type, "data": data})
    return found


# The harness's rules (core/harness.py; policy-lab 6): condensers count events, not tokens (app
# default: fold above 120 events, keep the first 4 + about 55): no token threshold.
HARNESS = Harness(fold_events=120, own_policy="openhands")

FORMAT = ENTRY.format(
    parse=parse,
    group=group,
    images=images,
    harness=HARNESS,
)
