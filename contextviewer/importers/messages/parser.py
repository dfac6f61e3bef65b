"""Plain message arrays -> normalized records. See ../shared/docs/formats.md §4.

Pure (no Django); never raises. One file is one conversation (session id = the file stem), read
whole (DOCUMENT): a top-level JSON array of messages, or an object body holding them in
``messages`` (Chat Completions, Anthropic Messages) or ``input`` (Responses API). Shapes, per
element (they may mix):

- OpenAI Chat Completions: ``{role, content, tool_calls?, tool_call_id?, name?, function_call?,
  reasoning_content?}``; content a string, null, or parts (``text``, ``image_url``, ...);
- Anthropic Messages: ``{role, content}`` with content blocks (``common.content_blocks``); a user
  message made only of ``tool_result`` blocks is a ``tool`` message;
- OpenAI Responses items: ``message``, ``function_call``, ``function_call_output``,
  ``custom_tool_call(_output)``, ``reasoning``; other item types are kept as "other";
- LangChain: ``dumpd`` form ``{lc: 1, type: "constructor", id: [..., "AIMessage"], kwargs}``,
  ``message_to_dict`` form ``{type: "human"|"ai"|"tool"|"system", data: {...}}`` and the flat
  ``{type: "human", content}`` form; AIMessage ``tool_calls``, ToolMessage ``tool_call_id``.

Decisions worth knowing:

- A request body's ``system`` (Anthropic) or ``instructions`` (Responses) becomes a ``system``
  message (record type ``system_prompt``) whose raw is the body without its message list (so its
  other fields survive); its ``tools`` a ``system`` message of record type ``tools`` (one block per
  tool definition). System/developer messages inside the list are ``system_prompt`` too.
- uuid: the element's own id (LangChain ``kwargs.id``, a Responses item ``id``, a message ``id``)
  where it has one, else ``<file stem>:<element number>``; an id met twice keeps the first
  element and the later one is counted as a duplicate.
- Usage: only where the log has it. One ``UsageRecord`` per AI message with ``usage_metadata``
  (LangChain, normalized: ``input_uncached = input_tokens - cache_read - cache_creation``), or an
  assistant message carrying a ``usage`` object (Chat: ``prompt_tokens - cached_tokens``;
  Anthropic: as written; Responses: ``input_tokens - cached_tokens``). The call's key is the
  provider's response id where the log has it (``response_metadata.id``), else the message uuid.
- A tool call written both as a content block and in ``tool_calls`` (LangChain AIMessage with
  Anthropic content) is one tool call. Calls without ids (legacy ``function_call``) get one
  derived from their position, and the ``function`` result that follows takes it.
- raw: each element re-serialized as compact JSON (nothing of it is dropped).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextviewer.core.harness import Harness
from contextviewer.core.records import BadLine, Block, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import (
    said_bad,
    OpenCalls,
    TimeSpan,
    JSON_DEPTH,
    anthropic_block,
    collect_images,
    compact_json,
    data_url,
    file_stem,
    image_block,
    json_kind,
    langchain_usage,
    part_blocks,
    pos_int,
    put_back_images,
    raw_json,
    result_content,
    str_or_none,
    timestamp,
    tool_call,
)
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.driver import guarded
from contextviewer.importers.jsondoc import json_error, read_text
from contextviewer.importers.messages.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    CHAT_ROLES,
    FOREIGN_BODY_KEYS,
    FOREIGN_KEYS,
    LC_CLASSES,
    LC_TYPES,
    RESPONSES_CALLS,
    RESPONSES_OUTPUTS,
    RESPONSES_TYPES,
    _lc_form,
    _message_list,
    shape,
    sniff,
)

WHAT = "a message array"


# -- parts ---------------------------------------------------------------------------------------


def _part(part: dict) -> Block:
    """One content part of any of the shapes (OpenAI chat/Responses, Anthropic, LangChain)."""
    kind = part.get("type")
    if kind in ("text", "input_text", "output_text", "summary_text", "reasoning_text"):
        text = part.get("text")
        return Block("thinking" if kind in ("summary_text", "reasoning_text") else "text",
                     text=text if text.__class__ is str else "")
    if kind == "refusal":
        text = part.get("refusal")
        return Block("text", text=text if text.__class__ is str else "", raw_type="refusal")
    if kind in ("image_url", "input_image"):
        value = part.get("image_url")
        url = value.get("url") if value.__class__ is dict else value
        if url.__class__ is str:
            found = data_url(url)
            if found is not None:
                return image_block(found[0], found[1])
            return Block("other", text=url, raw_type=kind)
        return Block("other", text=compact_json(part), raw_type=kind)
    if kind == "reasoning":  # LangChain standard block
        text = part.get("reasoning")
        return Block("thinking", text=text if text.__class__ is str else "")
    if kind == "tool_call":  # LangChain standard block
        return tool_call(str_or_none(part.get("id")), str_or_none(part.get("name")), part.get("args"))
    if kind == "image" and part.get("source").__class__ is not dict:  # LangChain standard image
        data = part.get("base64") or part.get("data")
        if data.__class__ is str:
            return image_block(str_or_none(part.get("mime_type")), data)
        url = part.get("url")
        return Block("other", text=url if url.__class__ is str else compact_json(part), raw_type="image")
    if kind in (None, "") and part.get("text").__class__ is str:
        return Block("text", text=part["text"])
    return anthropic_block(part)


def _blocks(content: Any) -> list[Block]:
    return part_blocks(content, _part)


def _result_text(content: Any) -> tuple[str, int]:
    if content.__class__ is list:
        texts, images = [], 0
        for block in _blocks(content):
            if block.kind == "image":
                images += 1
            elif block.text:
                texts.append(block.text)
        return "\n".join(texts), images
    if content.__class__ is str:
        return content, 0
    if content.__class__ is dict:
        return result_content(content)
    return (compact_json(content) if content is not None else ""), 0


def _arguments(value: Any) -> tuple[Any, str]:
    """(parsed input, text) of tool-call arguments (a JSON string in OpenAI shapes)."""
    if value.__class__ is str:
        try:
            return json.loads(value), value
        except (ValueError, RecursionError):
            return value, value
    return value, compact_json(value) if value is not None else ""


def _call(tool_id: Any, name: Any, arguments: Any) -> Block:
    tool_input, text = _arguments(arguments)
    return Block("tool_call", text=text, tool_id=str_or_none(tool_id), tool_name=str_or_none(name), tool_input=tool_input)


# -- shapes --------------------------------------------------------------------------------------


def _usage(usage: dict) -> tuple[int, int, int, int, int | None, int | None] | None:
    """(input_uncached, cache_write, cache_read, output, 5m, 1h) of a provider usage object."""
    if "prompt_tokens" in usage or "completion_tokens" in usage:  # OpenAI Chat
        details = usage.get("prompt_tokens_details")
        cached = pos_int(details.get("cached_tokens")) if details.__class__ is dict else 0
        cached = cached or pos_int(usage.get("prompt_cache_hit_tokens"))
        return max(pos_int(usage.get("prompt_tokens")) - cached, 0), 0, cached, pos_int(usage.get("completion_tokens")), None, None
    if "input_tokens" in usage or "output_tokens" in usage:
        details = usage.get("input_tokens_details")
        if details.__class__ is dict:  # Responses: input includes the cached tokens
            cached = pos_int(details.get("cached_tokens"))
            return max(pos_int(usage.get("input_tokens")) - cached, 0), 0, cached, pos_int(usage.get("output_tokens")), None, None
        split = usage.get("cache_creation")
        five = one = None
        if split.__class__ is dict:
            five = pos_int(split.get("ephemeral_5m_input_tokens"))
            one = pos_int(split.get("ephemeral_1h_input_tokens"))
        return (pos_int(usage.get("input_tokens")), pos_int(usage.get("cache_creation_input_tokens")),
                pos_int(usage.get("cache_read_input_tokens")), pos_int(usage.get("output_tokens")), five, one)
    return None


class _Conversation(TimeSpan):
    def __init__(self, path: Path):
        self.stem = file_stem(path)
        self.records: list[Record] = []
        self.usage: list[UsageRecord] = []
        self.seen: dict[str, int] = {}  # id -> the element it was first read from
        self.duplicates = 0
        self.models: dict[str, None] = {}
        self.body_model: str | None = None
        self.open_calls = OpenCalls()  # tool calls without ids

    def add(self, number: int, obj: Any, body_model: str | None) -> None:
        if obj.__class__ is not dict:
            self.records.append(BadLine(number, 0, f"element {number} is {json_kind(obj)}, not a JSON object"))
            return
        kind = shape(obj)
        raw = compact_json(obj)
        if kind == "langchain":
            self._langchain(number, obj, raw)
        elif kind == "responses":
            self._responses(number, obj, raw)
        elif kind == "chat":
            self._chat(number, obj, raw, body_model)
        else:
            keys = ", ".join(list(map(str, obj))[:4])
            self._emit(number, obj, raw, "other", str_or_none(obj.get("type")) or "(unknown)", [],
                       uuid=str_or_none(obj.get("id")), flags={"keys": keys})

    def _uuid(self, own: Any, number: int) -> str | None:
        uuid = str_or_none(own) if own.__class__ is str else None
        uuid = uuid or f"{self.stem}:{number}"
        if uuid in self.seen:  # said, never dropped without a word (the first element keeps the id)
            self.duplicates += 1
            shown = uuid if len(uuid) <= 80 else uuid[:80] + "…"
            self.records.append(BadLine(number, 0, f"element {number}: its id {shown!r} is the id of element "
                                                   f"{self.seen[uuid]}, so it was not kept"))
            return None
        self.seen[uuid] = number
        return uuid

    def _emit(self, number, obj, raw, role, record_type, blocks, *, uuid=None, model=None, api_id=None,
              flags=None, subtype=None, ts=None) -> str | None:
        uuid = self._uuid(uuid, number)
        if uuid is None:
            return None
        for block in blocks:
            if block.kind == "tool_call" and block.tool_id is None:
                self.open_calls.open(block, f"{uuid}:call{self.open_calls.count(block.tool_name) + 1}")
            elif block.kind == "tool_result" and block.tool_id is None:
                self.open_calls.answer(block)
        if role == "user" and blocks and all(b.kind == "tool_result" for b in blocks):
            role = "tool"
        if model:
            self.models[model] = None
        self.saw(ts)
        self.records.append(
            MessageRecord(
                line_no=number,
                offset=0,
                role=role,
                record_type=record_type[:60],
                raw=raw,
                blocks=blocks,
                uuid=uuid,
                subtype=subtype,
                timestamp=ts,
                session_id=self.stem,
                model=model if role == "assistant" else None,
                api_message_id=api_id if role == "assistant" else None,
                flags=flags or {},
            )
        )
        return uuid

    def _call_usage(self, uuid: str | None, number: int, api_id: str | None, model, figures, ts) -> None:
        if uuid is None or figures is None:
            return
        uncached, write, read, output, five, one = figures
        self.usage.append(UsageRecord(api_message_id=api_id or uuid, request_id=None, message_uuid=uuid, line_no=number,
                                      model=model, input_uncached=uncached, cache_write=write, cache_read=read,
                                      output=output, cache_write_5m=five, cache_write_1h=one, timestamp=ts))

    # -- shapes

    def _chat(self, number: int, obj: dict, raw: str, body_model: str | None) -> None:
        role = obj.get("role")
        content = obj.get("content")
        ts = timestamp(obj.get("timestamp") or obj.get("created_at"))
        if role in ("tool", "function"):
            text, images = _result_text(content)
            block = Block("tool_result", text=text, tool_id=str_or_none(obj.get("tool_call_id")),
                          tool_name=str_or_none(obj.get("name")), images=images,
                          is_error=obj.get("is_error") is True or obj.get("status") == "error")
            self._emit(number, obj, raw, "tool", role, [block], uuid=obj.get("id"), ts=ts)
            return
        if role in ("system", "developer"):
            self._emit(number, obj, raw, "system", "system_prompt", _blocks(content), uuid=obj.get("id"), subtype=role, ts=ts)
            return
        blocks: list[Block] = []
        reasoning = obj.get("reasoning_content") or obj.get("reasoning")
        if reasoning.__class__ is str and reasoning:
            blocks.append(Block("thinking", text=reasoning))
        blocks += _blocks(content)
        known = {b.tool_id for b in blocks if b.kind == "tool_call" and b.tool_id}
        calls = obj.get("tool_calls")
        if calls.__class__ is list:
            for call in calls:
                if call.__class__ is not dict:
                    continue
                function = call.get("function")
                if function.__class__ is dict:
                    block = _call(call.get("id"), function.get("name"), function.get("arguments"))
                else:
                    block = _call(call.get("id"), call.get("name"), call.get("args", call.get("arguments")))
                if block.tool_id is None or block.tool_id not in known:
                    blocks.append(block)
        legacy = obj.get("function_call")
        if legacy.__class__ is dict:
            blocks.append(_call(None, legacy.get("name"), legacy.get("arguments")))
        model = str_or_none(obj.get("model")) or (body_model if role == "assistant" else None)
        usage = obj.get("usage")
        figures = _usage(usage) if usage.__class__ is dict and role == "assistant" else None
        api_id = str_or_none(obj.get("response_id")) or (str_or_none(obj.get("id")) if figures else None)
        uuid = self._emit(number, obj, raw, role if role in ("user", "assistant") else "other", role, blocks,
                          uuid=obj.get("id"), model=model, api_id=api_id if figures else None, ts=ts)
        self._call_usage(uuid, number, api_id, model, figures, ts)

    def _responses(self, number: int, obj: dict, raw: str) -> None:
        kind = obj.get("type")
        ts = timestamp(obj.get("timestamp") or obj.get("created_at"))
        if kind == "message":
            role = obj.get("role")
            blocks = _blocks(obj.get("content"))
            if role in ("system", "developer"):
                self._emit(number, obj, raw, "system", "system_prompt", blocks, uuid=obj.get("id"), subtype=role, ts=ts)
            else:
                self._emit(number, obj, raw, role if role in ("user", "assistant") else "other", "message", blocks,
                           uuid=obj.get("id"), ts=ts)
        elif kind in RESPONSES_CALLS:
            block = _call(obj.get("call_id") or obj.get("id"), obj.get("name"), obj.get("arguments", obj.get("input")))
            self._emit(number, obj, raw, "assistant", kind, [block], uuid=obj.get("id"), ts=ts)
        elif kind in RESPONSES_OUTPUTS:
            text, images = _result_text(obj.get("output"))
            block = Block("tool_result", text=text, tool_id=str_or_none(obj.get("call_id")), images=images)
            self._emit(number, obj, raw, "tool", kind, [block], uuid=obj.get("id"), ts=ts)
        elif kind == "reasoning":
            blocks = _blocks(obj.get("summary")) + _blocks(obj.get("content"))
            for b in blocks:
                if b.kind == "text":
                    b.kind = "thinking"
            if not blocks and obj.get("encrypted_content"):
                blocks = [Block("thinking", raw_type="encrypted_reasoning")]
            self._emit(number, obj, raw, "assistant", kind, blocks, uuid=obj.get("id"), ts=ts)
        else:
            self._emit(number, obj, raw, "other", kind, [Block("other", text=compact_json(obj)[:2000], raw_type=kind)],
                       uuid=obj.get("id"), ts=ts)

    def _langchain(self, number: int, obj: dict, raw: str) -> None:
        kind, fields = _lc_form(obj)
        role = LC_TYPES.get(kind) or (fields.get("role") if fields.get("role") in ("user", "assistant", "system") else "other")
        content = fields.get("content")
        meta = fields.get("response_metadata")
        meta = meta if meta.__class__ is dict else {}
        if role == "tool":
            text, images = _result_text(content)
            block = Block("tool_result", text=text, tool_id=str_or_none(fields.get("tool_call_id")),
                          tool_name=str_or_none(fields.get("name")), images=images,
                          is_error=fields.get("status") == "error")
            self._emit(number, obj, raw, "tool", kind, [block], uuid=fields.get("id"))
            return
        if role == "system":
            self._emit(number, obj, raw, "system", "system_prompt", _blocks(content), uuid=fields.get("id"), subtype=kind)
            return
        blocks = _blocks(content)
        model = None
        api_id = None
        figures = None
        if role == "assistant":
            known = {b.tool_id for b in blocks if b.kind == "tool_call" and b.tool_id}
            for key in ("tool_calls", "invalid_tool_calls"):
                calls = fields.get(key)
                if calls.__class__ is not list:
                    continue
                for call in calls:
                    if call.__class__ is not dict:
                        continue
                    block = _call(call.get("id"), call.get("name"), call.get("args"))
                    if key == "invalid_tool_calls":
                        block = Block("other", text=compact_json(call), raw_type="invalid_tool_call")
                    elif block.tool_id is not None and block.tool_id in known:
                        continue
                    blocks.append(block)
            model = str_or_none(meta.get("model_name")) or str_or_none(meta.get("model"))
            usage = fields.get("usage_metadata")
            if usage.__class__ is dict:
                figures = langchain_usage(usage)
                api_id = str_or_none(meta.get("id"))
        uuid = self._emit(number, obj, raw, role, kind, blocks, uuid=fields.get("id"), model=model, api_id=api_id)
        self._call_usage(uuid, number, api_id, model, figures, None)

    # -- a body's system prompt and tools

    def body(self, body: dict, key: str) -> int:
        """System prompt and tool definitions of a request body, as system messages (element
        number 0, before the list's elements); returns how many it made."""
        made = 0
        system = body.get("system", body.get("instructions"))
        rest = {k: v for k, v in body.items() if k != key}
        if system is not None:
            blocks = _blocks(system)
            self._emit(0, body, compact_json(rest), "system", "system_prompt", blocks,
                       uuid=f"{self.stem}:system", subtype="system" if "system" in body else "instructions")
            made += 1
        tools = body.get("tools")
        if tools.__class__ is list and tools:
            blocks = []
            for tool in tools:
                name = None
                if tool.__class__ is dict:
                    function = tool.get("function")
                    name = str_or_none(tool.get("name")) or (str_or_none(function.get("name")) if function.__class__ is dict else None)
                blocks.append(Block("other", text=compact_json(tool), tool_name=name, raw_type="tool_definition"))
            self._emit(0, body, compact_json({"tools": tools}), "system", "tools", blocks, uuid=f"{self.stem}:tools")
            made += 1
        return made

    def info(self, size: int) -> SessionInfo:
        return SessionInfo(
            external_id=self.stem,
            models=list(self.models),
            started_at=self.started_at,
            ended_at=self.ended_at,
            bytes_consumed=size,
            duplicate_uuids=self.duplicates,
        )


# -- parse ---------------------------------------------------------------------------------------


def parse(source: ParseInput) -> Iterator[Record]:
    conv = _Conversation(Path(source.path))
    yield from guarded(said_bad(_parse(source, conv), "element", ("role", "type", "data", "lc", "kwargs")), lambda: SessionInfo(external_id=conv.stem))


def _parse(source: ParseInput, conv: _Conversation) -> Iterator[Record]:
    text, problems = read_text(source, WHAT)
    if text is None:
        yield from problems
        yield SessionInfo()
        return
    try:
        doc = json.loads(text)
    except RecursionError:
        yield BadLine(0, 0, f"a JSON document nested deeper than {JSON_DEPTH} levels: not imported")
        yield SessionInfo()
        return
    except ValueError as exc:
        yield BadLine(0, 0, f"the file is not valid JSON ({json_error(exc)}): not imported")
        yield SessionInfo()
        return
    items, key = _message_list(doc)
    if items is None:
        yield BadLine(0, 0, f"the file is {json_kind(doc) if doc.__class__ is not dict else 'a JSON object'} "
                            "with no messages (or input) list: not a message array")
        yield SessionInfo()
        return
    body_model = None
    if key is not None:
        body_model = str_or_none(doc.get("model"))
        conv.body(doc, key)
    for index, item in enumerate(items):
        try:
            conv.add(index + 1, item, body_model)
        except Exception as exc:  # one odd element must not stop the import
            conv.records.append(BadLine(index + 1, 0, f"element {index + 1} could not be read ({exc.__class__.__name__}: {exc})"))
    yield from conv.records
    yield from conv.usage
    yield conv.info(len(text.encode("utf-8", "surrogatepass")))


# -- the format ----------------------------------------------------------------------------------


def _image_source(obj: dict) -> list | None:
    """An image of any of the shapes: an Anthropic source, a data URL, a LangChain standard image."""
    source = obj.get("source")
    if obj.get("type") == "image" and source.__class__ is dict and source.get("data").__class__ is str:
        return [{"media_type": source.get("media_type"), "data": source["data"]}]
    url = obj.get("image_url")
    found = data_url(url.get("url") if url.__class__ is dict else url)
    if found is not None:
        return [{"media_type": found[0], "data": found[1]}]
    if obj.get("type") == "image" and (obj.get("base64") or obj.get("data")).__class__ is str:
        return [{"media_type": obj.get("mime_type"), "data": obj.get("base64") or obj.get("data")}]
    return None


def images(raw: str) -> list[dict]:
    found: list[dict] = []
    collect_images(raw_json(raw), found, _image_source)
    return found


def enrich(d: dict) -> dict:
    """Image data put back on image blocks (in order)."""
    return put_back_images(d, images)


# The harness's rules (core/harness.py): a plain message array has no harness: no automatic fold.
HARNESS = Harness(label="message array")

FORMAT = ENTRY.format(
    parse=parse,
    images=images,
    enrich=enrich,
    harness=HARNESS,
)
