"""LangGraph checkpointer databases (``SqliteSaver``), as deepagents writes them -> normalized records.

Pure (no Django). See ../shared/docs/formats.md §5. The database is opened read-only and never
written. One thread is one conversation (the file holds several: each ends with its
``SessionInfo``); a sub-graph namespace of a thread (``tools:<task id>``: a deepagents sub-agent
run by the ``task`` tool) is an inline sub-agent of that thread.

How the history is rebuilt:

- The checkpoints of one (thread, namespace) are walked parents first. The ``messages`` of each
  checkpoint are its ``channel_values["messages"]`` (a list, or a delta snapshot, msgpack ext 7);
  where a checkpoint has none (a 2026 delta channel) they are its parent's messages with the
  parent's ``writes`` rows of channel ``messages`` applied, as LangGraph's reducer does (replace
  by id, ``RemoveMessage``, ``REMOVE_ALL``). Writes of the last checkpoints (tasks that finished
  after it) are applied too.
- Every message id ever seen is kept, in the order first seen: a message later removed or
  rewritten stays in the history (the first version wins, so a later truncation of old tool-call
  arguments does not hide the original).
- A summarization is a fold. deepagents >= 0.4 records ``_summarization_event`` (cutoff index,
  summary message, offload file); older versions and LangChain's own middleware rewrite the list
  (``REMOVE_ALL`` + summary + kept tail). Either way a ``system`` marker (``compact_boundary``) is
  emitted where the summarization happened in time (after every message seen so far), followed
  by the summary message; the messages it kept (``messages[cutoff:]``, or the rewritten list's
  tail) are the fold's ``preserved_uuids``. Placing the marker at the end of what was seen (not
  back at the cutoff index) gives the same positions whether the database is read in one go or
  re-read after it grew, since stored positions never move.
- ``AIMessage.usage_metadata`` is one model call (LangChain's normalized figures:
  ``input_tokens`` includes cache reads and writes, so the uncached input is the difference).

Uuids: the LangChain message id (stable); messages without one get ``<thread>:<hash>:<n>``; the
markers ``<thread>:<namespace>:fold:<checkpoint id>``. Timestamps are those of the checkpoint that
first held a message. ``line_no`` is the row id of that checkpoint (in ``checkpoints``), ``offset``
the message's index in its list.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import msgpack

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
    TimeSpan,
    anthropic_block,
    compact_json,
    escape_surrogates,
    json_kind,
    langchain_usage,
    parse_timestamp,
    result_content,
    str_or_none,
    text_of,
    tool_call,
)
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.sqlite_db import columns as _columns
from contextviewer.importers.langgraph.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    _NEEDED,
    connect,
    sniff,
)

MESSAGES = "messages"
EVENT_SUFFIX = "_summarization_event"
REMOVE_ALL = "__remove_all__"
TASK_TOOL = "task"
# LangChain message "type" -> role
ROLES = {"human": "user", "ai": "assistant", "AIMessageChunk": "assistant", "tool": "tool", "system": "system",
         "HumanMessageChunk": "user", "ToolMessageChunk": "tool", "SystemMessageChunk": "system"}
# Class names of LangChain's JSON ("lc": 1) serialization -> the "type" of a model dump.
LC_TYPES = {"HumanMessage": "human", "AIMessage": "ai", "AIMessageChunk": "AIMessageChunk", "ToolMessage": "tool",
            "SystemMessage": "system", "RemoveMessage": "remove", "ChatMessage": "chat", "FunctionMessage": "function"}


# -- decoding the blobs ---------------------------------------------------------------------------


class Snapshot:
    """A delta channel's snapshot (msgpack ext 7): the channel's whole value at that checkpoint."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


class BlobError(ValueError):
    pass


# Bounds on nested extension types. msgpack's C unpacker keeps a ~40 KB context on the C stack for
# every nested ``unpackb`` an ext hook starts, so ~200 nested ext values overflow an 8 MB stack and
# the process dies (SIGSEGV, nothing to catch). LangGraph nests a few levels (a delta snapshot
# holding messages holding a UUID); a value nested deeper is refused as a bad record. The byte
# budget bounds the work: each level decodes its payload again.
MAX_EXT_DEPTH = 32
EXT_BYTES_PER_BLOB_BYTE = 16
EXT_BYTES_SLACK = 1 << 20


class _Unpacker:
    """One blob's decoding: jsonplus.py's ext types as plain data (LangChain objects become their
    ``model_dump()``), nested at most ``MAX_EXT_DEPTH`` levels and within a byte budget."""

    __slots__ = ("depth", "budget")

    def __init__(self, size: int):
        self.depth = 0
        self.budget = size * EXT_BYTES_PER_BLOB_BYTE + EXT_BYTES_SLACK

    def unpack(self, data: bytes) -> Any:
        return msgpack.unpackb(data, ext_hook=self.ext_hook, strict_map_key=False, raw=False, unicode_errors="replace")

    def ext_hook(self, code: int, data: bytes) -> Any:
        if self.depth >= MAX_EXT_DEPTH:
            raise BlobError(f"its msgpack value nests extension types deeper than the nesting limit of "
                            f"{MAX_EXT_DEPTH} levels, so it is not decoded")
        self.budget -= len(data)
        if self.budget < 0:
            raise BlobError("its msgpack extension types hold more nested data than the size limit "
                            f"({EXT_BYTES_PER_BLOB_BYTE} times the value's size), so it is not decoded")
        self.depth += 1
        try:
            value = self.unpack(data)
        finally:
            self.depth -= 1
        if code == 7:
            return Snapshot(value)
        if code in (0, 1, 2, 3, 4, 5) and isinstance(value, (list, tuple)) and len(value) >= 3:
            module, arg = value[0], value[2]
            if code == 0 and module == "uuid" and isinstance(arg, str) and len(arg) == 32:
                return f"{arg[:8]}-{arg[8:12]}-{arg[12:16]}-{arg[16:20]}-{arg[20:]}"
            return arg
        return {"__ext__": code}


def unpack(blob: bytes) -> Any:
    """A msgpack blob as plain data; raises BlobError (nesting or size limit) or msgpack's errors."""
    return _Unpacker(len(blob)).unpack(blob)


def _lc_hook(obj: dict) -> Any:
    """LangChain's JSON serialization (``"json"`` blobs of old checkpoints) to a model dump."""
    if obj.get("type") == "constructor" and obj.get("lc") in (1, 2) and isinstance(obj.get("id"), list):
        kwargs = obj.get("kwargs")
        if isinstance(kwargs, dict):
            name = obj["id"][-1] if obj["id"] else None
            out = dict(kwargs)
            if isinstance(name, str) and name in LC_TYPES:
                out.setdefault("type", LC_TYPES[name])
            return out
        args = obj.get("args")
        if isinstance(args, list) and len(args) == 1:
            return args[0]
    return obj


def decode(type_: Any, blob: Any) -> Any:
    """A checkpoint or write value as plain data; raises BlobError with a readable reason."""
    if type_ in (None, "null") or blob is None:
        return None
    if isinstance(blob, str):
        blob = blob.encode("utf-8", "surrogateescape")
    if type_ == "msgpack":
        try:
            return unpack(blob)
        except BlobError:
            raise
        except msgpack.StackError:
            raise BlobError("its msgpack value nests arrays or maps deeper than msgpack's nesting limit, "
                            "so it is not decoded") from None
        except Exception as exc:
            raise BlobError(f"its msgpack value cannot be decoded ({type(exc).__name__}: {str(exc)[:120]})") from None
    if type_ == "json":
        try:
            return json.loads(blob, object_hook=_lc_hook)
        except (ValueError, RecursionError) as exc:
            raise BlobError(f"its JSON value cannot be decoded ({str(exc)[:120]})") from None
    if type_ in ("bytes", "bytearray"):
        return bytes(blob)
    if type_ == "pickle":
        raise BlobError("its value is pickled, which is never unpickled here (it could run code)")
    raise BlobError(f"its value has the unknown serialization type {str(type_)[:40]!r}")


def _json_default(value: Any) -> Any:
    if isinstance(value, Snapshot):
        return value.value
    if isinstance(value, (bytes, bytearray)):
        return {"__bytes__": base64.b64encode(bytes(value)[:4096]).decode("ascii"), "size": len(value)}
    if isinstance(value, (set, frozenset)):
        return list(value)
    return repr(value)


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_json_default).encode


def to_json(value: Any) -> str:
    try:
        return escape_surrogates(_encode(value))
    except (ValueError, TypeError, RecursionError):
        pass
    try:
        return compact_json(repr(value))
    except RecursionError:  # repr of a value nested deeper than the recursion limit
        return compact_json(f"({json_kind(value)} nested too deeply to show)")


# -- the database ---------------------------------------------------------------------------------


# -- messages -------------------------------------------------------------------------------------


def _image_block(item: dict) -> Block:
    media_type = str_or_none(item.get("mime_type")) or str_or_none(item.get("media_type"))
    size = 0
    url = item.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if isinstance(url, str) and url.startswith("data:"):
        media_type = media_type or url[5:].split(";", 1)[0] or None
        size = len(url.partition(",")[2])
    data = item.get("base64") if isinstance(item.get("base64"), str) else item.get("data")
    if isinstance(data, str):
        size = len(data)
    return Block("image", media_type=media_type, data_size=size, raw_type=None if item.get("type") == "image" else item.get("type"))


def content_blocks(content: Any) -> list[Block]:
    """Blocks of a LangChain message's content: a string or a list of Anthropic-, OpenAI- or
    LangChain-standard content parts."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [Block("text", text=content)]
    items = content if isinstance(content, list) else [content]
    blocks: list[Block] = []
    for item in items:
        if isinstance(item, str):
            if item:
                blocks.append(Block("text", text=item))
        elif isinstance(item, dict):
            kind = item.get("type")
            if kind in ("image_url",) or (kind == "image" and not isinstance(item.get("source"), dict)):
                blocks.append(_image_block(item))
            elif kind == "reasoning":
                text = item.get("reasoning")
                if not isinstance(text, str):
                    summary = item.get("summary")
                    parts = summary if isinstance(summary, list) else []
                    text = "\n".join(p.get("text", "") for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))
                blocks.append(Block("thinking", text=text or "", raw_type="reasoning"))
            elif kind == "tool_call":
                blocks.append(tool_call(str_or_none(item.get("id")), str_or_none(item.get("name")), item.get("args")))
            else:
                blocks.append(anthropic_block(item))
        elif item is not None:
            blocks.append(Block("other", text=compact_json(item), raw_type=json_kind(item)))
    return blocks


def _assistant_blocks(msg: dict) -> list[Block]:
    blocks = content_blocks(msg.get("content"))
    calls: dict[str, dict] = {}
    order: list[tuple[dict, bool]] = []
    for key in ("tool_calls", "invalid_tool_calls"):
        for call in msg.get(key) or []:
            if isinstance(call, dict):
                order.append((call, key == "invalid_tool_calls"))
                if isinstance(call.get("id"), str):
                    calls.setdefault(call["id"], call)
    used: set[str] = set()
    for i, block in enumerate(blocks):
        # Anthropic content repeats each tool call as a tool_use part: one block, with the parsed args.
        if block.kind == "tool_call" and block.tool_id in calls:
            call = calls[block.tool_id]
            args = call.get("args")
            blocks[i] = Block("tool_call", text=args if isinstance(args, str) else compact_json(args),
                              tool_id=block.tool_id, tool_name=str_or_none(call.get("name")) or block.tool_name,
                              tool_input=args, raw_type=block.raw_type)
            used.add(block.tool_id)
    for call, invalid in order:
        call_id = str_or_none(call.get("id"))
        if call_id is not None and call_id in used:
            continue
        args = call.get("args")
        text = args if isinstance(args, str) else (compact_json(args) if args is not None else "")
        blocks.append(Block("tool_call", text=text, tool_id=call_id, tool_name=str_or_none(call.get("name")),
                            tool_input=args, raw_type="invalid_tool_call" if invalid else None))
        if call_id is not None:
            used.add(call_id)
    return blocks


def message_model(msg: dict) -> str | None:
    meta = msg.get("response_metadata")
    if isinstance(meta, dict):
        for key in ("model_name", "model", "model_id"):
            value = str_or_none(meta.get(key))
            if value:
                return value
    return None


def is_summary(msg: Any) -> bool:
    if not isinstance(msg, dict) or msg.get("type") not in ("human", "system"):
        return False
    extra = msg.get("additional_kwargs")
    if isinstance(extra, dict) and extra.get("lc_source") == "summarization":
        return True
    content = msg.get("content")
    return isinstance(content, str) and content.startswith(
        ("Here is a summary of the conversation to date:", "You are in the middle of a conversation that has been summarized")
    )


def _as_message(item: Any) -> dict | None:
    """A message-like value as a dict with a "type" (a model dump, a LangChain dict, a tuple)."""
    if isinstance(item, dict):
        if isinstance(item.get("type"), str):
            return item
        role = item.get("role")
        if isinstance(role, str):
            kind = {"user": "human", "assistant": "ai", "tool": "tool", "system": "system"}.get(role, role)
            return {**item, "type": kind}
        return None
    if isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
        kind = {"user": "human", "assistant": "ai"}.get(item[0], item[0])
        return {"type": kind, "content": item[1]}
    if isinstance(item, str):
        return {"type": "human", "content": item}
    return None


# -- one namespace of one thread ------------------------------------------------------------------


DERIVED_ID_MAX = 255  # what a stored message id holds


def derived_id(*parts: Any) -> str:
    """An id made of the thread's (``<thread>:<...>``): as is when it fits a stored message id,
    else a readable prefix, "~" and the sha256 of the whole (a thread id can be of any length)."""
    value = ":".join(str(p) for p in parts)
    if len(value) <= DERIVED_ID_MAX:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{value[:DERIVED_ID_MAX - len(digest) - 1]}~{digest}"


class _Seen:
    __slots__ = ("uuid", "msg", "line_no", "offset", "ts", "summary")

    def __init__(self, uuid, msg, line_no, offset, ts):
        self.uuid, self.msg, self.line_no, self.offset, self.ts = uuid, msg, line_no, offset, ts
        self.summary = False


class _Namespace(TimeSpan):
    """The rebuilt history of one (thread, namespace)."""

    def __init__(self, thread: str, ns: str):
        self.thread = thread
        self.ns = ns
        self.agent_id = ns or None
        self.entries: list[Any] = []  # _Seen or FoldRecord+marker, in order
        self.seen: dict[str, _Seen] = {}
        self.folds: list[FoldRecord] = []
        self.checkpoints = 0

    # ids of messages as they lie in a list; id-less ones are derived from their content
    def ids_of(self, items: list[dict]) -> list[str]:
        counts: dict[str, int] = {}
        out = []
        for msg in items:
            mid = str_or_none(msg.get("id"))
            if mid is None:
                digest = hashlib.sha1(to_json({k: msg.get(k) for k in ("type", "content", "tool_call_id")}).encode()).hexdigest()[:16]
                n = counts[digest] = counts.get(digest, 0) + 1
                mid = derived_id(self.thread, digest, n)
            out.append(mid)
        return out

    def transition(self, old: list[str], new: list[str], msgs: dict[str, dict], old_event, new_event,
                   cid: str, line_no: int, ts: datetime | None, files: Any, db_dir: Path) -> None:
        """What changed from ``old`` to ``new`` (message ids; ``msgs`` has the new ones' dicts)."""
        new_set = set(new)
        if new_event is not None and _event_key(new_event) != _event_key(old_event):
            self._event_fold(new_event, old, new, cid, line_no, ts, files, db_dir)
        dropped = bool(old) and any(i not in new_set for i in old)
        unseen = [i for i in new if i not in self.seen]
        summary_id = None
        for i in unseen:
            if is_summary(msgs.get(i)):
                summary_id = i
                break
        if summary_id is None and dropped and new and new[0] in unseen and msgs.get(new[0], {}).get("type") in ("human", "system"):
            summary_id = new[0]
        if summary_id is not None:
            preserved = [i for i in new if i in self.seen]
            self._fold(cid, line_no, ts, summary_id, msgs[summary_id], preserved,
                       {"how": "rewritten messages list" if dropped else "summary message"}, files, db_dir)
        for index, i in enumerate(new):
            if i not in self.seen:
                self._add(i, msgs[i], line_no, index, ts, summary=(i == summary_id))

    def _add(self, uuid: str, msg: dict, line_no: int, offset: int, ts, summary=False) -> _Seen:
        entry = _Seen(uuid, msg, line_no, offset, ts)
        entry.summary = summary
        self.seen[uuid] = entry
        self.entries.append(entry)
        return entry

    def _event_fold(self, event: dict, old: list[str], new: list[str], cid, line_no, ts, files, db_dir) -> None:
        cutoff = event.get("cutoff_index")
        cutoff = cutoff if isinstance(cutoff, int) and cutoff >= 0 else 0
        summary = _as_message(event.get("summary_message"))
        preserved = [i for i in new[cutoff:] if i in self.seen]
        meta = {"how": "_summarization_event", "cutoff_index": cutoff}
        file_path = str_or_none(event.get("file_path"))
        if file_path:
            meta["file_path"] = file_path
        summary_id = None
        if summary is not None:
            summary_id = str_or_none(summary.get("id")) or derived_id(self.thread, self.ns, "summary", cid)
        self._fold(cid, line_no, ts, summary_id, summary, preserved, meta, files, db_dir)
        if summary is not None and summary_id not in self.seen:
            self._add(summary_id, summary, line_no, -1, ts, summary=True)

    def _fold(self, cid, line_no, ts, summary_id, summary, preserved, meta, files, db_dir) -> None:
        file_path = meta.get("file_path") or _offload_path(summary)
        if file_path:
            meta["file_path"] = file_path
            text, where = _offloaded(file_path, files, db_dir)
            if where:
                meta["file_found"] = where
                if not any(isinstance(e, _Seen) for e in self.entries) and text:
                    # Nothing archived was ever checkpointed here: the offloaded history stands in.
                    uuid = derived_id(self.thread, self.ns, "offloaded", cid)
                    self._add(uuid, {"type": "offloaded_history", "file_path": file_path, "content": text}, line_no, -1, ts)
        marker = derived_id(self.thread, self.ns, "fold", cid)
        n = len(self.folds) + 1
        text = f"Conversation summarized (fold {n}): the messages before this point were replaced by the summary below"
        if preserved:
            text += f", keeping {len(preserved)} recent message{'s' if len(preserved) != 1 else ''} verbatim"
        if file_path:
            text += f"; full history offloaded to {file_path}"
        marker_msg = {"type": "compact_boundary", "checkpoint_id": cid, "checkpoint_ns": self.ns, **meta}
        entry = self._add(marker, marker_msg, line_no, -1, ts)
        entry.msg = marker_msg
        self.entries[-1] = ("marker", entry, text)
        summary_text = text_of(content_blocks(summary.get("content"))) if isinstance(summary, dict) else ""
        self.folds.append(FoldRecord(
            line_no=line_no, boundary_uuid=marker, kind="compact", trigger=None, tokens_before=None,
            preserved_uuids=preserved, summary_uuid=summary_id if summary is not None else None,
            summary_text=summary_text, timestamp=ts, agent_id=self.agent_id, metadata=meta,
        ))

    # -- records

    def records(self, session: str, usage: list[UsageRecord], models: dict[str, None]) -> Iterator[MessageRecord]:
        kind = "inline" if self.agent_id else None
        for entry in self.entries:
            if isinstance(entry, tuple):
                _, seen, text = entry
                yield MessageRecord(
                    line_no=seen.line_no, offset=max(seen.offset, 0), role="system", record_type="system",
                    raw=to_json(seen.msg), blocks=[Block("text", text=text)], uuid=seen.uuid, subtype="compact_boundary",
                    timestamp=seen.ts, session_id=session, agent_id=self.agent_id, agent_kind=kind,
                    flags={"marker": True},
                )
                continue
            yield self._message(entry, session, kind, usage, models)

    def _message(self, seen: _Seen, session: str, kind, usage, models) -> MessageRecord:
        msg = seen.msg
        mtype = msg.get("type") if isinstance(msg, dict) else None
        role = ROLES.get(mtype, "other") if isinstance(mtype, str) else "other"
        model = api_id = None
        flags: dict[str, Any] = {}
        if role == "assistant":
            blocks = _assistant_blocks(msg)
            model = message_model(msg)
            meta = msg.get("response_metadata") if isinstance(msg.get("response_metadata"), dict) else {}
            api_id = str_or_none(msg.get("id")) or str_or_none(meta.get("id")) or seen.uuid
            if model:
                models[model] = None
            self._usage(msg, api_id, seen, model, usage)
        elif role == "tool":
            text, images = result_content(msg.get("content"))
            if not isinstance(msg.get("content"), (str, list, dict)) and msg.get("content") is not None:
                text = compact_json(msg.get("content"))
            blocks = [Block("tool_result", text=text, tool_id=str_or_none(msg.get("tool_call_id")),
                            tool_name=str_or_none(msg.get("name")), is_error=msg.get("status") == "error", images=images)]
        elif mtype == "offloaded_history":
            blocks = [Block("text", text=msg.get("content") or "")]
            flags["offloaded_history"] = True
        else:
            blocks = content_blocks(msg.get("content")) if isinstance(msg, dict) else [
                Block("other", text=to_json(msg), raw_type=json_kind(msg))]
        if isinstance(msg, dict) and isinstance(msg.get("name"), str) and msg["name"] and role != "tool":
            flags["name"] = msg["name"]
        return MessageRecord(
            line_no=seen.line_no, offset=max(seen.offset, 0), role=role,
            record_type=mtype if isinstance(mtype, str) and mtype else "(none)", raw=to_json(msg), blocks=blocks,
            uuid=seen.uuid, timestamp=seen.ts, session_id=session, agent_id=self.agent_id, agent_kind=kind,
            is_compact_summary=seen.summary, model=model, api_message_id=api_id, flags=flags,
        )

    def _usage(self, msg: dict, api_id: str, seen: _Seen, model, usage: list[UsageRecord]) -> None:
        meta = msg.get("usage_metadata")
        if not isinstance(meta, dict):
            return
        uncached, write, read, output, five, one = langchain_usage(meta)
        usage.append(UsageRecord(
            api_message_id=api_id, request_id=None, message_uuid=seen.uuid, line_no=seen.line_no, model=model,
            input_uncached=uncached, cache_write=write, cache_read=read, output=output, cache_write_5m=five,
            cache_write_1h=one, agent_id=self.agent_id, timestamp=seen.ts,
        ))


def _event_key(event: Any) -> Any:
    if not isinstance(event, dict):
        return None
    summary = event.get("summary_message")
    sid = summary.get("id") if isinstance(summary, dict) else None
    return (event.get("cutoff_index"), sid or to_json(summary.get("content") if isinstance(summary, dict) else summary))


def _offload_path(summary: Any) -> str | None:
    if not isinstance(summary, dict) or not isinstance(summary.get("content"), str):
        return None
    text = summary["content"]
    marker = "has been saved to "
    at = text.find(marker)
    if at < 0:
        return None
    rest = text[at + len(marker):].split()
    return rest[0].rstrip(".,;:") if rest else None


def _offloaded(file_path: str, files: Any, db_dir: Path) -> tuple[str, str | None]:
    """The offloaded history's text and where it was found: in the agent's state (StateBackend's
    ``files`` channel) or beside the database (a FilesystemBackend rooted there)."""
    if isinstance(files, dict) and isinstance(files.get(file_path), dict):
        content = files[file_path].get("content")
        if isinstance(content, list):
            content = "\n".join(str(line) for line in content)
        if isinstance(content, str):
            return content, "agent state"
    candidate = (db_dir / file_path.lstrip("/")).resolve()
    try:
        if candidate.is_relative_to(db_dir.resolve()) and candidate.is_file():
            return candidate.read_text("utf-8", "replace")[:2_000_000], "beside the database"
    except OSError:
        pass
    return "", None


# -- reading the database -------------------------------------------------------------------------


def _apply(ids: list[str], msgs: dict[str, dict], values: list[Any], space: _Namespace) -> list[str]:
    """LangGraph's message reducer over write values (replace by id, RemoveMessage, REMOVE_ALL)."""
    out = list(ids)
    for value in values:
        items = value if isinstance(value, list) else [value]
        items = [m for m in (_as_message(i) for i in items) if m is not None]
        for msg, mid in zip(items, space.ids_of(items)):
            if msg.get("type") == "remove":
                if mid == REMOVE_ALL:
                    out = []
                elif mid in out:
                    out.remove(mid)
                continue
            msgs.setdefault(mid, msg)
            if mid not in out:
                out.append(mid)
    return out


def _parents_first(rows: list, parent_of: dict[str, str | None]) -> list[str]:
    """Checkpoint ids, each after its parent (ids are time-ordered only within one process)."""
    order: list[str] = []
    done: set[str] = set()
    for _, cid, _ in rows:
        stack = []
        node = cid
        while node is not None and node in parent_of and node not in done:
            stack.append(node)
            done.add(node)
            node = parent_of[node]
        order.extend(reversed(stack))
    return order


def _held_ids(explicit: Any, msgs: dict[str, dict], space: _Namespace) -> list[str]:
    """The ids of the messages a checkpoint holds (a value that is not a message is kept as one);
    the dicts of those not seen yet go in ``msgs``."""
    items = explicit if isinstance(explicit, list) else [explicit]
    good = []
    for item in items:
        msg = _as_message(item)
        if msg is None:
            msg = {"type": "(not a message)", "value": item}
        good.append(msg)
    new_ids = space.ids_of(good)
    for mid, msg in zip(new_ids, good):
        if mid not in space.seen:
            msgs.setdefault(mid, msg)
    return new_ids


class _Reader:
    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn = conn
        self.db_dir = path.parent
        self.has_task_path = "task_path" in _columns(conn, "writes")
        self.bad: list[BadLine] = []

    def _bad(self, line_no: int, what: str, reason: str) -> None:
        self.bad.append(BadLine(line_no=line_no, offset=0, reason=f"{what}: {reason}"))

    def writes(self, thread: str, ns: str, cid: str, line_no: int) -> tuple[list, list]:
        """(message write values, summarization event values) of one checkpoint, in replay order."""
        order = "task_path, task_id, idx" if self.has_task_path else "task_id, idx"
        rows = self.conn.execute(
            f"SELECT rowid, channel, type, value FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? "
            f"AND (channel = ? OR channel LIKE ?) AND idx >= 0 ORDER BY {order}",
            (thread, ns, cid, MESSAGES, f"%{EVENT_SUFFIX}"),
        )
        messages, events = [], []
        for rowid, channel, type_, blob in rows:
            try:
                value = decode(type_, blob)
            except BlobError as exc:
                self._bad(line_no, f"write {rowid} (channel {channel}) of checkpoint {cid} in thread {thread!r}", str(exc))
                continue
            (messages if channel == MESSAGES else events).append(value)
        return messages, events

    def namespace(self, thread: str, ns: str) -> _Namespace:
        """The history of one (thread, namespace): its checkpoints walked parents first, each one's
        messages a transition from its parent's; then the writes of tasks that finished after the
        last checkpoints."""
        space = _Namespace(thread, ns)
        rows = self.conn.execute(
            "SELECT rowid, checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
            "ORDER BY checkpoint_id",
            (thread, ns),
        ).fetchall()
        space.checkpoints = len(rows)
        parent_of = {cid: parent for _, cid, parent in rows}
        rowid_of = {cid: rowid for rowid, cid, _ in rows}
        children: dict[str, int] = {}
        for _, cid, parent in rows:
            if parent in parent_of:
                children[parent] = children.get(parent, 0) + 1
        order = _parents_first(rows, parent_of)
        state: dict[str, tuple[list[str], Any]] = {}  # cid -> (message ids, summarization event)
        msgs: dict[str, dict] = {}  # message dicts of ids not yet seen
        files: Any = None
        for cid in order:
            rowid = rowid_of[cid]
            values, ts = self._checkpoint(rowid, f"checkpoint {cid} of thread {thread!r}" + (f" (namespace {ns!r})" if ns else ""))
            space.saw(ts)
            if isinstance(values.get("files"), dict):
                files = values["files"]
            parent = parent_of.get(cid)
            old_ids, old_event = state.get(parent, ([], None)) if parent is not None else ([], None)
            parent_row = rowid_of[parent] if parent is not None and parent in parent_of else None
            new_ids, event = self._messages(space, values, parent, parent_row, old_ids, old_event, msgs)
            space.transition(old_ids, new_ids, msgs, old_event, event, cid, rowid, ts, files, self.db_dir)
            for mid in new_ids:
                msgs.pop(mid, None)
            state[cid] = (new_ids, event)
            if parent is not None and parent in children:
                children[parent] -= 1
                if children[parent] <= 0:
                    state.pop(parent, None)
        # Tasks that finished after the last checkpoints: their writes.
        for cid in order:
            if children.get(cid, 0) == 0 and cid in state:
                self._late_writes(space, cid, rowid_of[cid], state[cid], msgs, files)
        return space

    def _checkpoint(self, rowid: int, what: str) -> tuple[dict, datetime | None]:
        """(channel values, time) of one checkpoint row; a blob that cannot be read is a bad line,
        and the checkpoint's messages then come from its parent and writes."""
        row = self.conn.execute("SELECT type, checkpoint FROM checkpoints WHERE rowid = ?", (rowid,)).fetchone()
        values: dict = {}
        ts = None
        try:
            checkpoint = decode(row[0], row[1])
            if not isinstance(checkpoint, dict):
                raise BlobError(f"it is {json_kind(checkpoint)}, not a checkpoint")
            values = checkpoint.get("channel_values") if isinstance(checkpoint.get("channel_values"), dict) else {}
            ts = parse_timestamp(checkpoint.get("ts"))
        except BlobError as exc:
            self._bad(rowid, what, str(exc) + "; its messages are taken from its parent and writes")
        return values, ts

    def _messages(self, space: _Namespace, values: dict, parent: str | None, parent_row: int | None,
                  old_ids: list[str], old_event: Any, msgs: dict[str, dict]) -> tuple[list[str], dict | None]:
        """(message ids, summarization event) of a checkpoint: the ones it holds, else its parent's
        with the parent's writes applied (``parent_row``: the parent's row, when it is in the
        namespace), else its parent's as they were. New message dicts go in ``msgs``."""
        explicit = values.get(MESSAGES)
        if isinstance(explicit, Snapshot):
            explicit = explicit.value
        event = next((v for k, v in values.items() if isinstance(k, str) and k.endswith(EVENT_SUFFIX)), None)
        if isinstance(event, Snapshot):
            event = event.value
        if parent_row is not None and (explicit is None or event is None):
            w_msgs, w_events = self.writes(space.thread, space.ns, parent, parent_row)
            if explicit is None:
                new_ids = _apply(old_ids, msgs, w_msgs, space)
            if event is None:
                event = w_events[-1] if w_events else old_event
        elif explicit is None:
            new_ids = list(old_ids)
        if event is None:
            event = old_event
        if explicit is not None:
            new_ids = _held_ids(explicit, msgs, space)
        return new_ids, event if isinstance(event, dict) else None

    def _late_writes(self, space: _Namespace, cid: str, rowid: int, state: tuple[list[str], Any],
                     msgs: dict[str, dict], files: Any) -> None:
        """The writes of a last checkpoint (its tasks finished after it), applied as one more
        transition."""
        ids, event = state
        w_msgs, w_events = self.writes(space.thread, space.ns, cid, rowid)
        if not w_msgs and not w_events:
            return
        new_ids = _apply(ids, msgs, w_msgs, space)
        new_event = w_events[-1] if w_events and isinstance(w_events[-1], dict) else event
        space.transition(ids, new_ids, msgs, event, new_event, f"{cid}+writes", rowid, space.ended_at,
                         files, self.db_dir)

    def task_links(self, thread: str, spaces: dict[str, _Namespace]) -> list[AgentLink]:
        """Each sub-graph namespace ``<node>:<task id>`` linked to the tool call its task answered."""
        links = []
        calls: dict[str, dict] = {}  # tool call id -> call, over every namespace of the thread
        for space in spaces.values():
            for entry in space.entries:
                if isinstance(entry, _Seen) and isinstance(entry.msg, dict):
                    for call in entry.msg.get("tool_calls") or []:
                        if isinstance(call, dict) and isinstance(call.get("id"), str):
                            calls[call["id"]] = call
        used: set[str] = set()
        for ns, space in spaces.items():
            if not ns:
                continue
            parent_ns, _, last = ns.rpartition("|")
            task_id = last.partition(":")[2]
            tool_use_id = None
            if task_id:
                for type_, blob in self.conn.execute(
                    "SELECT type, value FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND task_id = ? AND channel = ?",
                    (thread, parent_ns, task_id, MESSAGES),
                ):
                    try:
                        value = decode(type_, blob)
                    except BlobError:
                        continue
                    for item in value if isinstance(value, list) else [value]:
                        if isinstance(item, dict) and item.get("type") == "tool" and isinstance(item.get("tool_call_id"), str):
                            tool_use_id = tool_use_id or item["tool_call_id"]
            if tool_use_id is None:
                first = next((e for e in space.entries if isinstance(e, _Seen) and isinstance(e.msg, dict)
                              and e.msg.get("type") == "human"), None)
                prompt = text_of(content_blocks(first.msg.get("content"))).strip() if first else ""
                for call_id, call in calls.items():
                    args = call.get("args") if isinstance(call.get("args"), dict) else {}
                    if call_id not in used and call.get("name") == TASK_TOOL and prompt and str(args.get("description", "")).strip() == prompt:
                        tool_use_id = call_id
                        break
            if tool_use_id is not None:
                used.add(tool_use_id)
            call = calls.get(tool_use_id or "", {})
            args = call.get("args") if isinstance(call.get("args"), dict) else {}
            first_line = space.entries[0].line_no if space.entries and isinstance(space.entries[0], _Seen) else 0
            links.append(AgentLink(agent_id=ns, tool_use_id=tool_use_id, line_no=first_line,
                                   agent_type=str_or_none(args.get("subagent_type")),
                                   description=str_or_none(args.get("description"))))
        return links

    def thread(self, thread: str) -> Iterator[Record]:
        namespaces = [r[0] for r in self.conn.execute(
            "SELECT checkpoint_ns FROM checkpoints WHERE thread_id = ? GROUP BY checkpoint_ns ORDER BY min(checkpoint_id)",
            (thread,),
        )]
        spaces: dict[str, _Namespace] = {}
        for ns in namespaces:
            try:
                spaces[ns] = self.namespace(thread, ns)
            except sqlite3.Error as exc:
                self._bad(0, f"thread {thread!r} namespace {ns!r}", f"cannot be read ({exc})")
        usage: list[UsageRecord] = []
        models: dict[str, None] = {}
        folds: list[FoldRecord] = []
        for space in spaces.values():
            yield from space.records(thread, usage, models)
            folds.extend(space.folds)
        yield from self.bad
        self.bad = []
        yield from usage
        yield from folds
        try:
            yield from self.task_links(thread, spaces)
        except sqlite3.Error:
            pass
        first = [s.started_at for s in spaces.values() if s.started_at]
        last = [s.ended_at for s in spaces.values() if s.ended_at]
        yield SessionInfo(
            external_id=thread, models=list(models), started_at=min(first) if first else None,
            ended_at=max(last) if last else None, lines=sum(s.checkpoints for s in spaces.values()),
        )


def parse(source: ParseInput) -> Iterator[Record]:
    """Records of every thread of a checkpointer database (see the module docstring)."""
    path = Path(source.path)
    try:
        conn = connect(path)
    except sqlite3.Error as exc:
        yield BadLine(line_no=0, offset=0, reason=f"the database cannot be opened: {exc}")
        return
    try:
        reader = _Reader(conn, path)
        # Threads in the order they began, so a database that gains threads keeps its first one first.
        # (as bytes: a thread whose id is not UTF-8 text is said, and the others read)
        threads = []
        for (raw,) in conn.execute(
            "SELECT CAST(thread_id AS BLOB) FROM checkpoints GROUP BY thread_id ORDER BY min(checkpoint_id), thread_id"
        ):
            try:
                threads.append(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
            except UnicodeDecodeError:
                shown = raw.decode("utf-8", "replace")[:80]
                yield BadLine(line_no=0, offset=0, reason=f"thread {shown!r}: its id is not UTF-8 text, so it was not read")
        for thread in threads:
            try:
                yield from reader.thread(str(thread))
            except Exception as exc:  # never raise: one thread's failure leaves the others
                yield BadLine(line_no=0, offset=0, reason=f"thread {thread!r} cannot be read: {type(exc).__name__}: {exc}")
    except sqlite3.Error as exc:
        yield BadLine(line_no=0, offset=0, reason=f"the database cannot be read: {exc}")
    finally:
        conn.close()


# The harness's rules (core/harness.py; deepagents, policy-lab 2.4): summarize at 85 % of
# max_input_tokens, or when the request is over int(0.95 * max_input) - max_output (its effective
# window); reserve = the model's max output; ceil(chars/4), 3.3 chars per token for Anthropic models.
HARNESS = Harness(
    label="deepagents",
    fold_label="deepagents summarize 85 %",
    fold_fraction=0.85,
    reserve_fraction=None,  # the model's whole max output
    usable_fraction=0.95,
    usable_less_reserve=True,
    anthropic_chars_per_token=3.3,
    rounding="ceil",
    own_policy="deepagents",
)

FORMAT = ENTRY.format(
    parse=parse,
    multi_session=True,
    ids_per_store=True,  # a thread id is the store's own ("1" in many apps): see ingest/row_maker.py
    harness=HARNESS,
)
