"""SWE-agent trajectories (``.traj``) -> normalized records (pure, no Django). See
../shared/docs/formats.md §6.5.

A ``.traj`` file is one JSON object: ``trajectory[]`` steps ``{thought, action, observation,
response, query|messages, state, execution_time}``, ``history[]`` (OpenAI-style messages
``{role, content, agent, message_type, thought, action, tool_calls, tool_call_ids}``),
``info{submission, exit_status, model_stats{instance_cost, tokens_sent, tokens_received,
api_calls}}``, ``replay_config``, ``environment``. Read whole (storage DOCUMENT).

Mapping:

- messages come from ``history`` where present (it is what the model saw), else from the
  trajectory: the first step's ``query``/``messages`` before its first assistant message (system
  prompt, instance prompt), then per step an assistant message and the observation;
- the system prompt -> ``system`` with ``record_type="system_prompt"``; demonstrations -> ``user``
  with ``is_meta`` (the harness put them there, no person wrote them);
- an assistant action -> a ``tool_call`` per entry of ``tool_calls`` (function calling), else one
  ``tool_call`` for the action text: tool name = its first word, input = the action text, id
  ``step-<n>`` (the log has none); the observation that follows -> ``tool`` with its
  ``tool_result`` (the history's ``tool_call_ids``, else the pending call's id). Tool call ids are
  kept as the log writes them, even when a log reuses one (each call is answered before the next
  with the same id, so pairs stay in order);
- ``info`` (exit status, submission, model stats) -> one ``other`` message at the end, written
  once the run has an exit status, its raw holding every top-level key but the messages.

Usage: the log records only totals (``info.model_stats``), never per call. One model call per
trajectory step (per assistant message when there is no trajectory) is emitted with ZERO usage
(``api_message_id`` ``step-<n>``) and its assistant message flagged ``usage_unmeasured``: the
calls are real, their sizes are not in the log. The totals go in the first message's
``flags["model_stats"]``. (EMIT_UNMEASURED_CALLS switches the zero-usage calls off.)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextviewer.core.records import BadLine, Block, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import (
    said_bad,
    as_list as _list,
    compact_json,
    content_blocks,
    json_arguments as _arguments,
    json_kind,
    str_or_none,
    tool_call as _tool_call,
)
from contextviewer.importers.driver import guarded, read_objects
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.jsondoc import read_source
from contextviewer.importers.swe_agent.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    NAME,
    _MODEL_STATS,
    _STEP_KEYS,
    _TRAJ_KEYS,
    sniff,
)

EMIT_UNMEASURED_CALLS = True


def _session_id(path: Path, doc: dict) -> str:
    """A trajectory is named after its instance, and several runs write the same instance: the
    name plus a digest of the run's first model response (it does not change as the file grows)."""
    history = doc.get("history") if isinstance(doc.get("history"), list) else []
    steps = doc.get("trajectory") if isinstance(doc.get("trajectory"), list) else []
    seed: Any = next((m for m in history if isinstance(m, dict) and m.get("role") == "assistant"), None)
    if seed is None and steps:
        seed = {k: v for k, v in steps[0].items() if k in ("action", "response", "thought")} if isinstance(steps[0], dict) else steps[0]
    if seed is None:
        seed = history[:2]
    text = json.dumps(seed, sort_keys=True, ensure_ascii=False, default=str)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    stem = path.name.removesuffix(".gz").removesuffix(".traj").removesuffix(".json")
    return f"{stem}-{digest}"


def _text_blocks(content: Any) -> list[Block]:
    if isinstance(content, list):  # [{type: text, text, cache_control?}, ...]
        return content_blocks(content)
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [Block("text", text=content)]
    return [Block("other", text=compact_json(content), raw_type=json_kind(content))]


def _text(content: Any) -> str:
    return "\n".join(b.text for b in _text_blocks(content) if b.text)


def _action_call(action: str, step: int) -> Block:
    words = action.strip().split(None, 1)
    return _tool_call(f"step-{step}", words[0] if words else "action", action)


class _Reader:
    def __init__(self, session_id: str, model: str | None):
        self.session_id = session_id
        self.model = model
        self.records: list[MessageRecord] = []
        self.pending: list[str] = []  # open tool ids, oldest first
        self.assistants: list[MessageRecord] = []

    def add(self, *, line_no: int, role: str, record_type: str, raw: str, blocks: list[Block], uuid: str,
            **fields: Any) -> MessageRecord:
        record = MessageRecord(line_no=line_no, offset=line_no, role=role, record_type=(record_type or "(none)")[:60],
                               raw=raw, blocks=blocks, uuid=uuid, session_id=self.session_id, **fields)
        self.records.append(record)
        if role == "assistant":
            self.assistants.append(record)
        return record

    def _flags(self, m: dict) -> dict:
        flags: dict[str, Any] = {}
        agent = m.get("agent")
        if isinstance(agent, str) and agent and agent != "main":
            flags["agent"] = agent
        return flags

    def history_message(self, m: dict, index: int) -> None:
        role = m.get("role")
        message_type = str_or_none(m.get("message_type")) or ""
        raw = compact_json(m)
        uuid = f"history:{index}"
        flags = self._flags(m)
        if role == "system":
            self.add(line_no=index, role="system", record_type="system_prompt" if message_type == "system_prompt" else message_type or "system",
                     raw=raw, blocks=_text_blocks(m.get("content")), uuid=uuid, flags=flags)
        elif role == "assistant":
            blocks: list[Block] = []
            for item in _list(m.get("thinking_blocks")):
                if isinstance(item, dict):
                    blocks.append(Block("thinking", text=str(item.get("thinking") or ""),
                                        raw_type="redacted_thinking" if item.get("type") == "redacted_thinking" else None))
            blocks.extend(_text_blocks(m.get("content")))
            calls = [c for c in _list(m.get("tool_calls")) if isinstance(c, dict)]
            step = len(self.assistants) + 1
            for call in calls:
                function = call.get("function") if isinstance(call.get("function"), dict) else {}
                block = _tool_call(str_or_none(call.get("id")), str_or_none(function.get("name")), _arguments(function.get("arguments")))
                blocks.append(block)
                if block.tool_id:
                    self.pending.append(block.tool_id)
            action = m.get("action")
            if not calls and isinstance(action, str) and action.strip():
                block = _action_call(action, step)
                blocks.append(block)
                self.pending.append(block.tool_id)
            self.add(line_no=index, role="assistant", record_type=message_type or "assistant", raw=raw, blocks=blocks,
                     uuid=uuid, model=self.model, flags=flags)
        elif role == "tool" or (role == "user" and message_type == "observation" and self.pending):
            ids = [i for i in _list(m.get("tool_call_ids")) if isinstance(i, str) and i]
            if not ids and self.pending:
                ids = [self.pending[0]]
            text = _text(m.get("content"))
            blocks = [Block("tool_result", text=text if n == 0 else "", tool_id=i) for n, i in enumerate(ids)]
            for i in ids:
                if i in self.pending:
                    self.pending.remove(i)
            if not blocks:  # a tool message answering nothing the log names
                blocks = _text_blocks(m.get("content"))
            self.add(line_no=index, role="tool" if ids else "user", record_type=message_type or str(role), raw=raw,
                     blocks=blocks, uuid=uuid, is_meta=not ids, flags=flags)
        elif role == "user":
            demo = m.get("is_demo") is True or message_type == "demonstration"
            self.add(line_no=index, role="user", record_type=message_type or "user", raw=raw,
                     blocks=_text_blocks(m.get("content")), uuid=uuid, is_meta=demo, flags=flags)
        else:
            self.add(line_no=index, role="other", record_type=str(role or "(none)"), raw=raw,
                     blocks=_text_blocks(m.get("content")), uuid=uuid, flags=flags)

    def step(self, s: dict, index: int) -> None:
        raw = compact_json(s)
        step = len(self.assistants) + 1
        blocks = _text_blocks(s.get("response") if s.get("response") not in (None, "") else s.get("thought"))
        action = s.get("action")
        flags = {k: s[k] for k in ("state", "execution_time") if k in s and s[k] not in (None, "")}
        if isinstance(action, str) and action.strip():
            call = _action_call(action, step)
            blocks.append(call)
        else:
            call = None
        self.add(line_no=index, role="assistant", record_type="step", raw=raw, blocks=blocks, uuid=f"step:{index}",
                 model=self.model, flags=flags)
        if call is not None or s.get("observation") not in (None, ""):
            text = _text(s.get("observation"))
            result = [Block("tool_result", text=text, tool_id=call.tool_id)] if call is not None else _text_blocks(text)
            self.add(line_no=index, role="tool" if call is not None else "user", record_type="observation", raw=raw,
                     blocks=result, uuid=f"step:{index}:observation", is_meta=call is None)


def _model_name(doc: dict) -> str | None:
    config = doc.get("replay_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except (ValueError, RecursionError):
            config = None
    if not isinstance(config, dict):
        return None
    agent = config.get("agent")
    model = agent.get("model") if isinstance(agent, dict) else None
    if isinstance(model, dict):
        return str_or_none(model.get("name")) or str_or_none(model.get("model_name"))
    return str_or_none(model)


def _parse(source: ParseInput) -> Iterator[Record]:
    doc = read_source(source, "a SWE-agent trajectory")
    if isinstance(doc, BadLine):
        yield doc
        yield SessionInfo()
        return
    value = doc.value
    if not isinstance(value, dict):
        yield BadLine(line_no=0, offset=0, reason=f"the file is {json_kind(value)}, not a SWE-agent trajectory (a JSON object)")
        yield SessionInfo()
        return
    session_id = _session_id(source.path, value)
    model = _model_name(value)
    reader = _Reader(session_id, model)
    bad: list[BadLine] = []
    history = value.get("history") if isinstance(value.get("history"), list) else []
    steps = value.get("trajectory") if isinstance(value.get("trajectory"), list) else []
    if history:
        read_objects(history, reader.history_message, bad, name="history message {n}")
    else:
        first = steps[0] if steps and isinstance(steps[0], dict) else {}
        query = first.get("query") if isinstance(first.get("query"), list) else first.get("messages")
        for index, m in enumerate(query if isinstance(query, list) else [], start=1):
            if not isinstance(m, dict) or m.get("role") == "assistant":
                break
            reader.history_message(m, index)
            reader.records[-1].uuid = f"prompt:{index}"
        read_objects(steps, reader.step, bad, name="trajectory step {n}")
    if not history and not steps:
        bad.append(BadLine(line_no=0, offset=0, reason="the trajectory has neither history nor trajectory steps"))

    info = value.get("info") if isinstance(value.get("info"), dict) else {}
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else None
    if stats is not None and reader.records:
        reader.records[0].flags["model_stats"] = stats
    # One model call per step: the trajectory's steps, else the assistant messages.
    calls = len(steps) if steps and history else len(reader.assistants)
    usage: list[UsageRecord] = []
    for n, message in enumerate(reader.assistants[:calls], start=1):
        message.api_message_id = f"step-{n}"
        if EMIT_UNMEASURED_CALLS:
            message.flags["usage_unmeasured"] = True
            usage.append(UsageRecord(api_message_id=f"step-{n}", request_id=None, message_uuid=message.uuid,
                                     line_no=message.line_no, model=model))
    exit_status = str_or_none(info.get("exit_status"))
    if exit_status:
        lines = [f"exit status: {exit_status}"]
        if stats:
            lines.append("model stats: " + ", ".join(f"{k} {v}" for k, v in stats.items()))
        submission = str_or_none(info.get("submission"))
        if submission:
            lines += ["submission:", submission]
        rest = {k: v for k, v in value.items() if k not in ("history", "trajectory")}
        reader.add(line_no=len(history or steps) + 1, role="other", record_type="info", raw=compact_json(rest),
                   blocks=[Block("text", text="\n".join(lines))], uuid="info", flags={"exit_status": exit_status})
    yield from bad
    yield from reader.records
    yield from usage
    yield SessionInfo(
        external_id=session_id,
        title=source.path.name.removesuffix(".gz").removesuffix(".traj"),
        models=[model] if model else [],
    )


def parse(source: ParseInput) -> Iterator[Record]:
    """Records of one trajectory (never raises)."""
    yield from guarded(said_bad(_parse(source), "element", ("role", "message_type")))


# The harness's rules (core/harness.py): the default, no automatic fold of the window is recorded
# (SWE-agent's history processors are not logged).
FORMAT = ENTRY.format(
    parse=parse,
)
