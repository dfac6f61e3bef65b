"""mini-swe-agent trajectories (``*.traj.json``) -> normalized records (pure, no Django).

A trajectory is one JSON document ``{info, messages, trajectory_format, instance_id?}`` written
whole after every step (storage DOCUMENT). ``info`` holds ``exit_status``, ``submission``,
``model_stats{instance_cost, api_calls}``, ``mini_version`` and ``config{agent, model,
environment, *_type}``. Two layouts of ``messages``:

- ``mini-swe-agent-1`` (mini ≤ 1.x): chat messages ``{role, content, extra?}``. An assistant
  message carries ``extra.response`` (the provider's raw chat.completion, its ``usage`` included);
  its action is the one ```bash block of its text. The harness answers with a ``user`` message:
  the observation (``<returncode>…</returncode><output>…``), a format error ("Please always
  provide EXACTLY ONE action…", when the text had no or several bash blocks), a timeout ("The
  last command <command>…</command> timed out…"), or, at the end, the submission (the output of
  the command that printed ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``);
- ``mini-swe-agent-1.1`` (mini 2.x): an assistant message is the model's message as the provider
  returns it (``tool_calls`` where the model calls tools) with ``extra{actions, response, cost,
  timestamp}``; observations are ``tool`` messages (``tool_call_id``) or ``user`` messages with
  ``extra{raw_output, returncode, exception_info?}``; a format error is a ``user`` message with
  ``extra.interrupt_type = "FormatError"``; the run ends with an ``exit`` message
  (``extra{exit_status, submission}``).

Mapping: the system prompt -> ``system`` (``system_prompt``); each action -> a ``tool_call``
(``tool_calls`` as written; else one ``bash`` call per ``extra.actions`` entry or per the single
bash block, id ``action-<message>``) and its observation -> a ``tool`` message with the
``tool_result`` (``extra``: exit_code, interrupted for a timeout). A format error is a ``user``
message flagged ``format_error`` that answers no call (the turn had none); a timeout answers its
call and is flagged ``timeout``. The submission (v1 last user message, v1.1 ``exit`` message)
answers the submitting call when one is open, else it is an ``other`` message. Once the run has an
exit status, ``info`` ends the conversation as one ``other`` message (exit status, model stats,
submission); uuids are ``message:<n>`` (the file only grows), so a run read mid-way and again later
stores each message once.

Usage: one ``UsageRecord`` per message with ``extra.response.usage`` (measured): chat completions
``prompt_tokens`` less ``prompt_tokens_details.cached_tokens`` (cache reads) and
``cache_creation_input_tokens`` / ``prompt_tokens_details.cache_write_tokens`` (cache writes);
``completion_tokens`` as output (reasoning included). Responses-API usage (``input_tokens``,
``output_tokens``) is read the same way. ``info.model_stats.api_calls`` is kept on the first
message's flags (the check).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextviewer.core.records import BadLine, Block, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import (
    said_bad,
    TimeSpan,
    as_list,
    compact_json,
    content_blocks,
    json_arguments,
    json_kind,
    pos_int,
    str_or_none,
    timestamp,
    tool_call,
)
from contextviewer.importers.driver import guarded, read_objects
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.jsondoc import read_source
from contextviewer.importers.mini_swe_agent.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    NAME,
    _FORMAT_KEY,
    _INFO,
    _INFO_FIRST,
    _MESSAGES,
    _MINI_MARK,
    sniff,
)

WHAT = "a mini-swe-agent trajectory"

# v1: the action is the one ```bash block of the assistant's text (agents/default.py parse_action).
_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
FORMAT_ERROR_PREFIX = "Please always provide EXACTLY ONE action"
TIMEOUT_PREFIX = "The last command <command>"


def _session_id(path: Path, doc: dict) -> str:
    """The instance (or file) name plus a digest of the first model message: several runs write the
    same instance, and the first answer does not change as the file grows."""
    messages = as_list(doc.get("messages"))
    seed: Any = next((m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"), None)
    if seed is None:
        seed = messages[:2]
    elif isinstance(seed, dict):
        seed = {k: v for k, v in seed.items() if k in ("content", "tool_calls")}
    digest = hashlib.sha256(json.dumps(seed, sort_keys=True, ensure_ascii=False, default=str)
                            .encode("utf-8", "surrogatepass")).hexdigest()[:10]
    stem = str_or_none(doc.get("instance_id")) or path.name.removesuffix(".gz").removesuffix(".json").removesuffix(".traj")
    return f"{stem}-{digest}"


def _dict(value: Any) -> dict:
    return value if value.__class__ is dict else {}


def _model_name(info: dict) -> str | None:
    config = _dict(info.get("config"))
    model = config.get("model")
    if isinstance(model, dict):
        return str_or_none(model.get("model_name")) or str_or_none(model.get("name"))
    return str_or_none(model)


def _templates(info: dict) -> tuple[str, str]:
    """The prefixes the run's own format-error and timeout templates start with (the config may
    replace the defaults)."""
    agent = _dict(_dict(info.get("config")).get("agent"))
    model = _dict(_dict(info.get("config")).get("model"))

    def prefix(value: Any, default: str) -> str:
        if isinstance(value, str) and value.strip():
            head = re.split(r"\{[{%]", value.strip(), maxsplit=1)[0].strip()
            if len(head) >= 12:
                return head
        return default

    fmt = agent.get("format_error_template") or model.get("format_error_template")
    return prefix(fmt, FORMAT_ERROR_PREFIX), prefix(agent.get("timeout_template"), TIMEOUT_PREFIX)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.text for b in content_blocks(content) if b.kind == "text" and b.text)


def _usage(response: dict) -> tuple[int, int, int, int] | None:
    """(input uncached, cache write, cache read, output) of a raw response's usage, or None."""
    usage = _dict(response.get("usage"))
    if not usage:
        return None
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        prompt = pos_int(usage.get("prompt_tokens"))
        output = pos_int(usage.get("completion_tokens"))
        details = _dict(usage.get("prompt_tokens_details"))
        read = pos_int(details.get("cached_tokens")) or pos_int(usage.get("cache_read_input_tokens"))
        write = pos_int(usage.get("cache_creation_input_tokens")) or pos_int(details.get("cache_write_tokens"))
    elif "input_tokens" in usage or "output_tokens" in usage:  # Responses API
        prompt = pos_int(usage.get("input_tokens"))
        output = pos_int(usage.get("output_tokens"))
        read = pos_int(_dict(usage.get("input_tokens_details")).get("cached_tokens"))
        write = 0
    else:
        return None
    read = min(read, prompt)
    write = min(write, prompt - read)
    return prompt - read - write, write, read, output


class _Reader:
    def __init__(self, session_id: str, model: str | None, info: dict):
        self.session_id = session_id
        self.model = model
        self.info = info
        self.format_error, self.timeout = _templates(info)
        self.records: list[MessageRecord] = []
        self.usage: list[UsageRecord] = []
        self.pending: list[str] = []  # open call ids, oldest first
        self.call_ids: set[str] = set()
        self.span = TimeSpan()
        self.models: list[str] = []
        self.last = 0  # the number of the last message (v1: the submission is the last user message)

    def add(self, n: int, role: str, record_type: str, m: dict, blocks: list[Block], **fields: Any) -> MessageRecord:
        extra = _dict(m.get("extra"))
        ts = timestamp(extra.get("timestamp")) or timestamp(_dict(extra.get("response")).get("created"))
        record = MessageRecord(line_no=n, offset=n, role=role, record_type=record_type[:60], raw=compact_json(m),
                               blocks=blocks, uuid=f"message:{n}", session_id=self.session_id,
                               timestamp=self.span.saw(ts), **fields)
        self.records.append(record)
        return record

    def _call_usage(self, record: MessageRecord, m: dict, n: int) -> None:
        response = _dict(_dict(m.get("extra")).get("response"))
        figures = _usage(response)
        if figures is None:
            return
        model = str_or_none(response.get("model")) or self.model
        if model and model not in self.models:
            self.models.append(model)
        call_id = str_or_none(response.get("id")) or f"call-{n}"
        if call_id in self.call_ids:
            call_id = f"{call_id}:{n}"
        self.call_ids.add(call_id)
        record.api_message_id = call_id
        uncached, write, read, output = figures
        self.usage.append(UsageRecord(api_message_id=call_id, request_id=None, message_uuid=record.uuid, line_no=n,
                                      model=model, input_uncached=uncached, cache_write=write, cache_read=read,
                                      output=output, timestamp=record.timestamp))

    def message(self, m: dict, n: int) -> None:
        role = m.get("role")
        extra = _dict(m.get("extra"))
        if role == "system":
            self.add(n, "system", "system_prompt", m, content_blocks(m.get("content")))
        elif role == "assistant":
            self.assistant(m, n, extra)
        elif role == "tool":
            self.observation(m, n, extra, str_or_none(m.get("tool_call_id")))
        elif role == "user":
            self.user(m, n, extra)
        elif role == "exit":
            self.exit(m, n, extra)
        else:
            self.add(n, "other", str(role or "(none)"), m, content_blocks(m.get("content")))

    def assistant(self, m: dict, n: int, extra: dict) -> None:
        blocks: list[Block] = []
        response = _dict(extra.get("response"))
        choice = next((c for c in as_list(response.get("choices")) if isinstance(c, dict)), {})
        reasoning = m.get("reasoning_content") or _dict(choice.get("message")).get("reasoning")
        if isinstance(reasoning, str) and reasoning.strip():
            blocks.append(Block("thinking", text=reasoning))
        blocks.extend(content_blocks(m.get("content")))
        flags: dict[str, Any] = {}
        calls = [c for c in as_list(m.get("tool_calls")) if isinstance(c, dict)]
        for call in calls:
            function = _dict(call.get("function"))
            tool_id = str_or_none(call.get("id")) or f"action-{n}-{len(blocks)}"
            blocks.append(tool_call(tool_id, str_or_none(function.get("name")), json_arguments(function.get("arguments"))))
            self.pending.append(tool_id)
        if not calls:
            actions = [a for a in as_list(extra.get("actions")) if isinstance(a, dict)]
            if "actions" in extra:
                commands = [a.get("command") for a in actions if isinstance(a.get("command"), str)]
            else:
                commands = [a.strip() for a in _BASH_BLOCK.findall(_text(m.get("content")))]
                flags["bash_blocks"] = len(commands)
                if len(commands) != 1:
                    commands = []  # not an action: the harness answers with a format error
            for i, command in enumerate(commands):
                tool_id = f"action-{n}" if len(commands) == 1 else f"action-{n}-{i + 1}"
                blocks.append(tool_call(tool_id, "bash", {"command": command}))
                self.pending.append(tool_id)
        cost = extra.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            flags["cost"] = cost
        model = str_or_none(response.get("model")) or self.model
        record = self.add(n, "assistant", "assistant", m, blocks, model=model, flags=flags)
        self._call_usage(record, m, n)

    def _result(self, m: dict, n: int, tool_id: str, record_type: str, text: str, extra: dict,
                flags: dict | None = None) -> MessageRecord:
        if tool_id in self.pending:
            self.pending.remove(tool_id)
        code = extra.get("returncode")
        match = _RETURNCODE.search(text[:400]) if code is None else None
        code = int(match.group(1)) if match else code
        block_extra: dict[str, Any] = {}
        if isinstance(code, int) and not isinstance(code, bool):
            block_extra["exit_code"] = code
        flags = flags or {}
        if flags.get("timeout"):
            block_extra["interrupted"] = True
            block_extra["note"] = "timed out"
        exception = str_or_none(extra.get("exception_info"))
        if exception and "note" not in block_extra:
            block_extra["note"] = exception[:300]
        block = Block("tool_result", text=text, tool_id=tool_id, extra=block_extra or None)
        return self.add(n, "tool", record_type, m, [block], flags=flags)

    def _is_timeout(self, text: str, extra: dict) -> bool:
        if text.startswith(self.timeout) or text.startswith(TIMEOUT_PREFIX):
            return True
        kind = str(extra.get("exception_type") or "")
        info = str(extra.get("exception_info") or "")
        return "Timeout" in kind or "timed out" in info.lower()

    def observation(self, m: dict, n: int, extra: dict, tool_id: str | None) -> None:
        text = _text(m.get("content"))
        tool_id = tool_id or (self.pending[0] if self.pending else None)
        if tool_id is None:  # a tool message answering no call the log names
            self.add(n, "user", "observation", m, content_blocks(m.get("content")), is_meta=True)
            return
        timeout = self._is_timeout(text, extra)
        self._result(m, n, tool_id, "timeout" if timeout else "observation", text, extra,
                     {"timeout": True} if timeout else None)

    def user(self, m: dict, n: int, extra: dict) -> None:
        text = _text(m.get("content"))
        if not any(r.role == "user" for r in self.records):  # the task
            self.add(n, "user", "task", m, content_blocks(m.get("content")))
            return
        if extra.get("interrupt_type") == "FormatError" or text.startswith(self.format_error) \
                or text.startswith(FORMAT_ERROR_PREFIX):
            flags: dict[str, Any] = {"format_error": True}
            if isinstance(extra.get("n_actions"), int):
                flags["n_actions"] = extra["n_actions"]
            record = self.add(n, "user", "format_error", m, content_blocks(m.get("content")), is_meta=True, flags=flags)
            self._call_usage(record, m, n)  # a layout that keeps the rejected call's response
            return
        if self.pending and (self._is_timeout(text, extra) or "returncode" in extra or "raw_output" in extra
                             or _RETURNCODE.match(text.lstrip())):
            self.observation(m, n, extra, self.pending[0])
            return
        exit_status = str_or_none(self.info.get("exit_status"))
        if self.pending and n == self.last and exit_status:
            self._result(m, n, self.pending[0], "submission", text, extra, {"exit_status": exit_status})
            return
        self.add(n, "user", "user", m, content_blocks(m.get("content")), is_meta=n == self.last and bool(exit_status))

    def exit(self, m: dict, n: int, extra: dict) -> None:
        status = str_or_none(extra.get("exit_status")) or str_or_none(self.info.get("exit_status")) or "exit"
        text = _text(m.get("content"))
        if self.pending:
            self._result(m, n, self.pending[0], "exit", text, extra, {"exit_status": status})
        else:
            self.add(n, "other", "exit", m, content_blocks(m.get("content")), flags={"exit_status": status})


def _parse(source: ParseInput) -> Iterator[Record]:
    doc = read_source(source, WHAT)
    if isinstance(doc, BadLine):
        yield doc
        yield SessionInfo()
        return
    value = doc.value
    if not isinstance(value, dict):
        yield BadLine(0, 0, f"the file is {json_kind(value)}, not {WHAT} (a JSON object)")
        yield SessionInfo()
        return
    info = _dict(value.get("info"))
    session_id = _session_id(source.path, value)
    model = _model_name(info)
    reader = _Reader(session_id, model, info)
    bad: list[BadLine] = []
    messages = value.get("messages")
    if not isinstance(messages, list):
        bad.append(BadLine(0, 0, "the trajectory has no messages list: nothing to import"))
        messages = []
    reader.last = len(messages)
    read_objects(messages, reader.message, bad, name="message {n}")
    stats = _dict(info.get("model_stats"))
    if stats and reader.records:
        reader.records[0].flags["model_stats"] = stats
    exit_status = str_or_none(info.get("exit_status"))
    if exit_status:  # written once the run has ended (a stored message is not rewritten)
        lines = [f"exit status: {exit_status}"]
        if stats:
            lines.append("model stats: " + ", ".join(f"{k} {v}" for k, v in stats.items()))
        submission = str_or_none(info.get("submission"))
        if submission:
            lines += ["submission:", submission]
        rest = {k: v for k, v in value.items() if k != "messages"}
        record = MessageRecord(line_no=len(messages) + 1, offset=len(messages) + 1, role="other", record_type="info",
                               raw=compact_json(rest), blocks=[Block("text", text="\n".join(lines))], uuid="info",
                               session_id=session_id, flags={"exit_status": exit_status})
        reader.records.append(record)
    models = reader.models or ([model] if model else [])
    yield from bad
    yield from reader.records
    yield from reader.usage
    yield SessionInfo(
        external_id=session_id,
        title=str_or_none(value.get("instance_id")) or source.path.name.removesuffix(".gz").removesuffix(".json").removesuffix(".traj"),
        cwd=str_or_none(_dict(_dict(info.get("config")).get("environment")).get("cwd")),
        cli_version=str_or_none(info.get("mini_version")),
        models=models,
        started_at=reader.span.started_at,
        ended_at=reader.span.ended_at,
    )


def parse(source: ParseInput) -> Iterator[Record]:
    """Records of one trajectory (never raises)."""
    yield from guarded(said_bad(_parse(source), "message", ("role",)))


# The harness's rules (core/harness.py): the default; mini-swe-agent keeps the whole history (no
# automatic fold of the window).
FORMAT = ENTRY.format(
    parse=parse,
)
