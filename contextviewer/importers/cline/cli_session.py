"""Cline CLI session folders (npm ``cline`` 3.x, the ``@cline/sdk`` runtime) -> normalized records
(pure, no Django).

The CLI keeps each run in ``~/.cline/data/sessions/<id>/`` (``<id>`` like ``1796623490567_ct9y3``):

- ``<id>.json``: the session manifest: ``{version, session_id, source: "cli", started_at,
  ended_at, status, provider, model, cwd, prompt, metadata{title, usage, aggregateUsage, ...}}``;
- ``<id>.messages.json``: the lead agent's conversation, ``{version, updated_at, agent: "lead",
  sessionId, origin{source, mode, version}, messages[], system_prompt}``; each message
  ``{id, role: "user"|"assistant", content[], ts (epoch ms), modelInfo{id, provider},
  metrics{inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens}}`` with Anthropic-shaped
  blocks (text, tool_use, tool_result{tool_use_id, name, content}); a user's prompt is stored
  wrapped in ``<user_input mode="act">...</user_input>``, which the runtime takes off before it
  sends the text (what the model got is the inner text);
- ``agent_<agentId>.messages.json``: one per ``spawn_agent`` sub-agent, the same shape with
  ``agent: "subagent"`` and ``origin{mode: "subagent", parentThreadId, subagent: <agentId>}``; its
  first user text is the ``task`` of the ``spawn_agent`` call that started it.

Mapping: the folder is one session (the lead's messages); each sub-agent's messages carry its
agent id (a child conversation linked to the ``spawn_agent`` call by an ``AgentLink``). A user
message made only of tool results is a ``tool`` message. A tool result whose content is a list of
result objects (``read_files``, ``run_commands``: ``[{query, result, success}]``) is shown as the
compact JSON the runtime sends. Each assistant message with ``metrics`` is one model call
(measured): ``inputTokens`` counts cached tokens too (the runtime's own cost formula takes
``cacheReadTokens`` and ``cacheWriteTokens`` out of it), so input = inputTokens - reads - writes.
No fold: the CLI's compaction did not run on the usage a model reported (nothing in the folder
records one).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextviewer.core.records import AgentLink, BadLine, Block, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import (
    TimeSpan,
    compact_json,
    content_item,
    json_kind,
    pos_int,
    str_or_none,
    timestamp,
)
from contextviewer.importers.cline.entry import CLI_MESSAGES as MESSAGES_SUFFIX
from contextviewer.importers.cline.entry import CLI_SUBAGENT as SUBAGENT_PREFIX
from contextviewer.importers.cline.entry import is_cli_session as is_session_folder  # noqa: F401 - re-exported
from contextviewer.importers.jsondoc import Document, read_json_file

SPAWN_TOOL = "spawn_agent"
_USER_INPUT = re.compile(r"<user_input\b[^>]*>([\s\S]*?)</user_input>")


def lead_file(folder: Path) -> Path:
    return folder / f"{folder.name}{MESSAGES_SUFFIX}"


def manifest_file(folder: Path) -> Path:
    return folder / f"{folder.name}.json"


def subagent_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir()
                      if p.name.startswith(SUBAGENT_PREFIX) and p.name.endswith(MESSAGES_SUFFIX) and p.is_file())
    except OSError:
        return []


def unwrap_user_input(text: str) -> str:
    """The prompt as sent: the runtime takes the ``<user_input mode=...>`` wrapper off."""
    if "<user_input" not in text:
        return text
    return _USER_INPUT.sub(r"\1", text).strip()


def _dict(value: Any) -> dict:
    return value if value.__class__ is dict else {}


def _result_text(content: Any) -> tuple[str, int]:
    """A tool result's text as the runtime sends it (and its number of images): a string as is,
    text parts joined, anything else (the result objects) as compact JSON."""
    if content is None:
        return "", 0
    if content.__class__ is str:
        return content, 0
    if content.__class__ is list and content and all(_dict(p).get("type") in ("text", "image") for p in content):
        texts = [p.get("text") for p in content if p.get("type") == "text" and isinstance(p.get("text"), str)]
        return "\n".join(texts), sum(1 for p in content if p.get("type") == "image")
    return compact_json(content), 0


def _block(part: Any, role: str) -> Block:
    if part.__class__ is dict and part.get("type") == "tool_result":
        text, images = _result_text(part.get("content"))
        return Block("tool_result", text=text, tool_id=str_or_none(part.get("tool_use_id")), tool_name=str_or_none(part.get("name")),
                     is_error=part.get("is_error") is True, images=images)
    block = content_item(part)
    if role == "user" and block.kind == "text" and block.text:
        block.text = unwrap_user_input(block.text)
    return block


def _blocks(content: Any, role: str) -> list[Block]:
    if content is None:
        return []
    if content.__class__ is str:
        return [_block({"type": "text", "text": content}, role)]
    if content.__class__ is not list:
        return [_block(content, role)]
    return [_block(p, role) for p in content if p is not None]


class _Conversation:
    """One messages file: the lead's or a sub-agent's."""

    def __init__(self, path: Path, agent_id: str | None, value: dict):
        self.path = path
        self.agent_id = agent_id
        self.value = value
        self.records: list[MessageRecord] = []
        self.usage: list[UsageRecord] = []


class _Session:
    def __init__(self, folder: Path):
        self.folder = folder
        self.session_id = folder.name
        self.bad: list[BadLine] = []
        self.n = 0  # running record number across the folder's files (line_no / offset)
        self.span = TimeSpan()
        self.models: list[str] = []
        self.uuids: set[str] = set()

    def read(self, path: Path, *, required: bool) -> dict | None:
        if not path.is_file():
            if required:
                self.bad.append(BadLine(0, 0, f"{path.name} is missing from the session folder"))
            return None
        doc = read_json_file(path)
        if not isinstance(doc, Document):
            self.bad.append(BadLine(0, 0, f"{path.name}: {doc.reason}", size=doc.size))
            return None
        if doc.value.__class__ is not dict:
            self.bad.append(BadLine(0, 0, f"{path.name} is {json_kind(doc.value)}, not a Cline CLI messages object"))
            return None
        return doc.value

    def conversation(self, path: Path, agent_id: str | None, value: dict) -> _Conversation:
        conv = _Conversation(path, agent_id, value)
        messages = value.get("messages")
        if messages.__class__ is not list:
            self.bad.append(BadLine(0, 0, f"{path.name} has no message array ({json_kind(messages)})"))
            return conv
        for index, m in enumerate(messages):
            self.n += 1
            if m.__class__ is not dict:
                self.bad.append(BadLine(self.n, self.n, f"{path.name} message {index + 1} is {json_kind(m)}, not a message"))
                continue
            try:
                self._message(conv, index, m)
            except Exception as exc:  # one odd message must not stop the import
                self.bad.append(BadLine(self.n, self.n, f"{path.name} message {index + 1} could not be read ({exc.__class__.__name__}: {exc})"))
        return conv

    def _uuid(self, conv: _Conversation, index: int, m: dict) -> str:
        uuid = str_or_none(m.get("id")) or f"{conv.path.name}:{index + 1}"
        if uuid in self.uuids:
            uuid = f"{conv.agent_id or 'lead'}:{uuid}:{index + 1}"
        self.uuids.add(uuid)
        return uuid

    def _message(self, conv: _Conversation, index: int, m: dict) -> None:
        role = m.get("role")
        blocks = _blocks(m.get("content"), role if role.__class__ is str else "")
        if role == "assistant":
            kind = "assistant"
        elif role == "user":
            kind = "tool" if blocks and all(b.kind == "tool_result" for b in blocks) else "user"
        else:
            kind = "other"
        model_info = _dict(m.get("modelInfo"))
        model = str_or_none(model_info.get("id"))
        when = self.span.saw(timestamp(m.get("ts")))
        uuid = self._uuid(conv, index, m)
        record = MessageRecord(line_no=self.n, offset=self.n, role=kind, record_type=str(role or "(none)")[:60], raw=compact_json(m),
                               blocks=blocks, uuid=uuid, timestamp=when, session_id=self.session_id, agent_id=conv.agent_id,
                               is_sidechain=conv.agent_id is not None, model=model)
        conv.records.append(record)
        metrics = m.get("metrics")
        if kind != "assistant" or metrics.__class__ is not dict:
            return
        if model and model not in self.models:
            self.models.append(model)
        read, write = pos_int(metrics.get("cacheReadTokens")), pos_int(metrics.get("cacheWriteTokens"))
        call_id = f"call:{uuid}"
        record.api_message_id = call_id
        conv.usage.append(UsageRecord(api_message_id=call_id, request_id=None, message_uuid=uuid, line_no=self.n, model=model,
                                      input_uncached=max(0, pos_int(metrics.get("inputTokens")) - read - write),
                                      cache_write=write, cache_read=read, output=pos_int(metrics.get("outputTokens")),
                                      agent_id=conv.agent_id, timestamp=when))


def _first_user_text(conv: _Conversation) -> str:
    for r in conv.records:
        if r.role == "user":
            return "\n".join(b.text for b in r.blocks if b.kind == "text").strip()
    return ""


def _links(lead: _Conversation, subs: list[_Conversation]) -> list[AgentLink]:
    """Each sub-agent under the ``spawn_agent`` call that started it: the call whose ``task`` is the
    sub-agent's first user text, else the latest call not yet taken that went out before it."""
    calls: list[tuple[MessageRecord, Block]] = [(r, b) for r in lead.records for b in r.blocks
                                                 if b.kind == "tool_call" and b.tool_name == SPAWN_TOOL]
    taken: set[int] = set()
    out: list[AgentLink] = []
    for sub in subs:
        text = _first_user_text(sub)
        start = sub.records[0].timestamp if sub.records else None
        found = next((k for k, (_r, b) in enumerate(calls) if k not in taken
                      and str(_dict(b.tool_input).get("task") or "").strip() == text and text), None)
        if found is None:
            before = [k for k, (r, _b) in enumerate(calls) if k not in taken
                      and (start is None or r.timestamp is None or r.timestamp <= start)]
            found = before[-1] if before else None
        if found is None:
            out.append(AgentLink(agent_id=sub.agent_id or "", tool_use_id=None, line_no=sub.records[0].line_no if sub.records else 0,
                                 description=text.splitlines()[0][:200] if text else None))
            continue
        taken.add(found)
        record, block = calls[found]
        out.append(AgentLink(agent_id=sub.agent_id or "", tool_use_id=block.tool_id, line_no=record.line_no,
                             description=text.splitlines()[0][:200] if text else None))
    return out


def _sub_agent_id(path: Path, value: dict) -> str:
    origin = _dict(value.get("origin"))
    return str_or_none(origin.get("subagent")) or path.name[: -len(MESSAGES_SUFFIX)]


def parse_session_folder(folder: Path) -> Iterator[Record]:
    """Records of one CLI session folder (the lead and its sub-agents)."""
    session = _Session(folder)
    manifest = session.read(manifest_file(folder), required=False) or {}
    value = session.read(lead_file(folder), required=True)
    lead = session.conversation(lead_file(folder), None, value) if value is not None else None
    subs: list[_Conversation] = []
    for path in subagent_files(folder):
        value = session.read(path, required=True)
        if value is not None:
            subs.append(session.conversation(path, _sub_agent_id(path, value), value))
    yield from session.bad
    convs = ([lead] if lead is not None else []) + subs
    for conv in convs:
        yield from conv.records
    for conv in convs:
        yield from conv.usage
    if lead is not None:
        yield from _links(lead, subs)
    meta = _dict(manifest.get("metadata"))
    origin = _dict(lead.value.get("origin")) if lead is not None else {}
    title = str_or_none(meta.get("title"))
    if title is None and lead is not None:
        text = _first_user_text(lead)
        title = text.splitlines()[0][:200] if text else None
    started = timestamp(manifest.get("started_at")) or session.span.started_at
    ended = timestamp(manifest.get("ended_at")) or session.span.ended_at
    model = str_or_none(manifest.get("model"))
    yield SessionInfo(
        external_id=str_or_none(manifest.get("session_id")) or (str_or_none(lead.value.get("sessionId")) if lead else None) or folder.name,
        title=title,
        cwd=str_or_none(manifest.get("cwd")),
        cli_version=str_or_none(origin.get("version")),
        models=session.models or ([model] if model else []),
        started_at=started,
        ended_at=ended,
    )
