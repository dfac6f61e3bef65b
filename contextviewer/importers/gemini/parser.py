"""Gemini CLI chats -> normalized records. See ../shared/docs/formats.md §3 (and §7 for tokens).

Pure (no Django); never raises: every problem becomes a ``BadLine``. Shapes read:

- legacy ``session-*.json``: one ``ConversationRecord`` document
  ``{sessionId, projectHash, startTime, lastUpdated, summary?, kind?, messages: [MessageRecord]}``;
- ``session-*.jsonl`` (2026+): a metadata line, then ``MessageRecord`` lines, ``{"$set": {...}}``
  metadata updates and ``{"$rewindTo": "<id>"}`` lines;
- checkpoints (``/chat save``: ``checkpoint-<tag>.json``): the raw API history ``Content[]``
  (``{role: "user"|"model", parts: [...]}``), bare or as ``{history: [...]}``.

Decisions worth knowing:

- Storage is DOCUMENT, for ``.jsonl`` too: a message is re-appended with the same id whenever it
  changes (tokens, tool calls, results), ``$rewindTo`` and ``$set.messages`` change earlier
  messages, so a grown file is read again in full; the message id is the stable uuid, so what is
  already stored is not stored twice. The format ``rewrites`` records (the legacy ``.json`` is
  written whole again as the session goes): a message stored before it changed (re-appended, or
  rewritten in the document: its text, tool results, tokens) is updated in place by the ingest.
- Duplicate ids: the later line updates the earlier message (last write wins) and the message
  keeps the place where its id first appeared, as Gemini CLI's own loader does; every superseded
  line is counted in ``SessionInfo.duplicate_uuids``.
- ``$rewindTo``: the target message and every message after it in the current view leave the
  view, as in Gemini CLI (an unknown target empties the view, as its loader does). Nothing is
  dropped: rewound messages are stored in place with ``flags["rewound"] = True`` and
  ``flags["rewound_at_line"]`` (the line of the rewind). A rewound id appended again later is
  live again (the flag is cleared).
- ``$set.messages`` (the recorder's rewrite of the in-memory history: compression, masking):
  messages of the new list not seen before are appended there (``flags["history_rewrite"]``);
  messages seen before keep the content first read (a rewrite may mask tool output). When the new
  list leaves out messages of the current view, it is a fold: a ``system`` marker
  (``subtype="compact_boundary"``, raw = the ``$set`` line) and a ``FoldRecord`` whose summary is
  the first new ``user`` message of the list (flagged ``is_compact_summary``) and whose preserved
  messages are the ones the list kept.
- Roles: ``user`` -> user (tool if it only carries ``functionResponse`` parts); ``gemini`` (and
  ``model``) -> assistant with thinking blocks from ``thoughts``, text from ``content`` and one
  ``tool_call`` block per ``toolCalls`` entry; ``info``/``error``/``warning`` -> system with that
  subtype; anything else -> other, with its raw kept.
- Tool results live inside the calling message in Gemini CLI: each ``toolCalls`` entry with a
  ``result`` (or only a ``resultDisplay``) becomes a ``tool`` message right after its call, uuid
  ``<message id>/tool/<call id>``, raw = that ``toolCalls`` entry. A call with neither gets no
  result message (nothing is invented). ``status`` ``error``/``cancelled`` marks the result an
  error.
- Usage: one ``UsageRecord`` per ``gemini`` message with a ``tokens`` object (key = the message
  id): ``input_uncached = input - cached``, ``cache_read = cached``, ``output = output +
  thoughts``. §7 lists ``thoughts`` apart from ``output`` (``candidatesTokenCount`` excludes the
  thinking tokens; the real fixture's ``total = input + output + thoughts``), while the other
  formats' output includes reasoning: adding them keeps "output" the tokens the model generated.
  ``tool`` (``toolUsePromptTokenCount``) is not added to the input.
- raw: the element as read, re-serialized as compact JSON (a document has no lines); for JSONL,
  the line itself. ``line_no`` is the line (JSONL) or the element number (documents).
- ``kind: "subagent"`` chats (``chats/<parentSessionId>/<sessionId>.jsonl``) are sub-agent
  conversations of the parent session; a tool call with an ``agentId`` links its sub-agent.
"""

from __future__ import annotations

import json
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
from contextviewer.core.secrets import mask_text
from contextviewer.importers.common import (
    said_bad,
    OpenCalls,
    collect_images,
    compact_json,
    file_stem,
    image_data,
    json_kind,
    part_blocks,
    pos_int,
    raw_json,
    str_or_none,
    text_of,
    timestamp,
    tool_call,
)
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.driver import guarded
from contextviewer.importers.jsondoc import json_error, read_text
from contextviewer.importers.gemini.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    MESSAGE_TYPES,
    _CHECKPOINT_NAME,
    _SESSION_NAME,
    _is_content,
    _is_message,
    sniff,
)

SYSTEM_TYPES = frozenset({"info", "error", "warning"})
ERROR_STATUSES = frozenset({"error", "cancelled"})
WHAT = "a Gemini CLI chat"


# -- parts and blocks ----------------------------------------------------------------------------


def call_id(raw: Any, name: Any) -> str | None:
    """The id of a tool call as the model API carries it. Gemini CLI (0.4x+) keeps a call's id as
    ``<tool name>__<id the model gave>`` in its log and sends the model's own id back (the request's
    ``functionCall.id``): the prefix is taken off, so the call, its result and the request agree."""
    value = str_or_none(raw)
    if value is None:
        return None
    prefix = f"{name}__" if name.__class__ is str and name else None
    if prefix and value.startswith(prefix) and len(value) > len(prefix):
        return value[len(prefix):]
    return value



def _response_text(response: Any) -> tuple[str, bool]:
    """(text, is_error) of a functionResponse's ``response``."""
    if response.__class__ is str:
        return response, False
    if response.__class__ is dict:
        output = response.get("output")
        if output.__class__ is str:
            return output, False
        error = response.get("error")
        if error is not None:
            return (error if error.__class__ is str else compact_json(error)), True
        content = response.get("content")
        if content.__class__ is str:
            return content, False
    return compact_json(response) if response is not None else "", False


def _part_block(part: dict) -> Block:
    text = part.get("text")
    if text.__class__ is str:
        return Block("thinking" if part.get("thought") is True else "text", text=text)
    data = part.get("inlineData")
    if data.__class__ is dict:
        payload = data.get("data")
        return Block(
            "image",
            media_type=str_or_none(data.get("mimeType")),
            data_size=len(payload) if payload.__class__ is str else 0,
        )
    call = part.get("functionCall")
    if call.__class__ is dict:
        return tool_call(call_id(call.get("id"), call.get("name")), str_or_none(call.get("name")), call.get("args"))
    response = part.get("functionResponse")
    if response.__class__ is dict:
        text, is_error = _response_text(response.get("response"))
        return Block(
            "tool_result",
            text=text,
            tool_id=call_id(response.get("id"), response.get("name")),
            tool_name=str_or_none(response.get("name")),
            is_error=is_error,
        )
    for key in ("fileData", "executableCode", "codeExecutionResult"):
        value = part.get(key)
        if value is not None:
            shown = ""
            if value.__class__ is dict:
                shown = value.get("fileUri") or value.get("code") or value.get("output") or ""
            return Block("other", text=shown if shown.__class__ is str else "", raw_type=key)
    keys = [str(k) for k in part]
    return Block("other", text=compact_json(part), raw_type=keys[0] if keys else "(empty part)")


def _content_blocks(content: Any) -> list[Block]:
    return part_blocks(content, _part_block)


def _thought_blocks(thoughts: Any) -> list[Block]:
    if thoughts.__class__ is not list:
        return []
    out = []
    for t in thoughts:
        if t.__class__ is dict:
            subject = str_or_none(t.get("subject"))
            description = str_or_none(t.get("description"))
            text = "\n\n".join(x for x in (subject, description) if x)
            if text:
                out.append(Block("thinking", text=text))
        elif t.__class__ is str and t:
            out.append(Block("thinking", text=t))
    return out


def _result_block(call: dict, call_id: str) -> Block | None:
    """The tool_result of one ``toolCalls`` entry, or None when it has no result at all."""
    result = call.get("result")
    status = call.get("status")
    is_error = status in ERROR_STATUSES
    texts: list[str] = []
    images = 0
    if result is None or result == []:
        display = call.get("resultDisplay")
        if display.__class__ is str:
            texts.append(display)
        elif display is not None:
            texts.append(compact_json(display))
        else:
            return None
    else:
        parts = result if result.__class__ is list else [result]
        for part in parts:
            if part.__class__ is str:
                texts.append(part)
                continue
            if part.__class__ is not dict:
                texts.append(compact_json(part))
                continue
            response = part.get("functionResponse")
            if response.__class__ is dict:
                text, error = _response_text(response.get("response"))
                is_error = is_error or error
                if text:
                    texts.append(text)
            elif part.get("inlineData").__class__ is dict:
                images += 1
            elif part.get("text").__class__ is str:
                texts.append(part["text"])
            else:
                texts.append(compact_json(part))
    return Block("tool_result", text="\n".join(texts), tool_id=call_id, tool_name=str_or_none(call.get("name")),
                 is_error=is_error, images=images)


def _parts(obj: dict) -> list:
    content = obj.get("content") if "content" in obj else obj.get("parts")
    if content.__class__ is str:
        return [{"text": content}] if content else []
    return [p for p in content if p.__class__ is dict] if content.__class__ is list else []


def _response_ids(obj: dict) -> set[str]:
    """The call ids a message's functionResponse parts answer."""
    out = set()
    for part in _parts(obj):
        response = part.get("functionResponse")
        if response.__class__ is dict:
            cid = call_id(response.get("id"), response.get("name"))
            if cid:
                out.add(cid)
    return out


def _signature(obj: dict) -> tuple | None:
    """What a message says, whatever its shape: its type, its text, the ids of its tool calls (from
    ``toolCalls`` or functionCall parts) and results. A compression's copy of a message has the same."""
    texts, calls = [], []
    for part in _parts(obj):
        if part.get("text").__class__ is str and part.get("thought") is not True:
            texts.append(part["text"])
        call = part.get("functionCall")
        if call.__class__ is dict:
            calls.append(call_id(call.get("id"), call.get("name")))
    for call in obj.get("toolCalls") if obj.get("toolCalls").__class__ is list else []:
        if call.__class__ is dict:
            calls.append(call_id(call.get("id"), call.get("name")))
    kind = obj.get("type") or obj.get("role")
    if kind == "model":
        kind = "gemini"
    text = "".join(texts).strip()
    responses = tuple(sorted(_response_ids(obj)))
    if not (text or calls or responses):
        return None
    return (kind, text, tuple(calls), responses)


def _trigger(last: _Entry | None) -> str | None:
    """Gemini CLI writes no trigger: a compression is automatic when it comes inside a turn (after
    the user's prompt, or after a call that asked for tools: it runs before the next request), and
    manual (``/compress``) after a finished answer."""
    if last is None:
        return None
    kind = last.obj.get("type")
    if kind == "user":
        return "auto"
    if kind in ("gemini", "model"):
        calls = last.obj.get("toolCalls")
        has_calls = calls.__class__ is list and bool(calls)
        return "auto" if has_calls or any("functionCall" in p for p in _parts(last.obj)) else "manual"
    return None


# -- the chat ------------------------------------------------------------------------------------


class _Entry:
    __slots__ = ("id", "obj", "raw", "line_no", "offset", "rewound_at", "rewrite", "summary")

    def __init__(self, mid: str, obj: dict, raw: str, line_no: int, offset: int):
        self.id = mid
        self.obj = obj
        self.raw = raw
        self.line_no = line_no
        self.offset = offset
        self.rewound_at: int | None = None
        self.rewrite = False
        self.summary = False


class _Marker:
    __slots__ = ("uuid", "raw", "line_no", "offset", "text", "timestamp")

    def __init__(self, uuid, raw, line_no, offset, text, ts):
        self.uuid, self.raw, self.line_no, self.offset, self.text, self.timestamp = uuid, raw, line_no, offset, text, ts


class _Chat:
    def __init__(self, path: Path, agent_id: str | None = None):
        self.path = path
        self.stem = file_stem(path)
        self.meta: dict[str, Any] = {}
        self.entries: dict[str, _Entry] = {}
        self.sequence: list[_Entry | _Marker] = []  # output order: first appearance
        self.view: list[str] = []  # the current view (what Gemini CLI would load)
        self.folds: list[FoldRecord] = []
        self.bad: list[BadLine] = []
        self.duplicates = 0
        self.lines = 0
        self.size = 0
        self.agent_id = agent_id
        self.headers = 0  # metadata lines read: every process that opens the chat writes one
        self.restarting = False  # a later metadata line, until the next message line: a resume
        self.alias: dict[str, str] = {}  # a compression's copy of a kept message -> the message
        self.skipped = 0  # a resume's copies of tool results already stored (not stored again)
        self.last: _Entry | None = None  # the last message line read
        self.last_input: int | None = None  # the input of the last model call read

    # -- input

    def metadata(self, patch: dict) -> None:
        for key, value in patch.items():
            if key != "messages":
                self.meta[key] = value

    def header(self, obj: dict) -> None:
        """A metadata line: the first opens the chat; a later one is a process resuming it (0.61
        writes it, then its fresh history, then the history it resumed, as ``$set.messages``)."""
        self.headers += 1
        if self.headers > 1:
            self.restarting = True
        self.metadata(obj)

    def message(self, obj: dict, line_no: int, offset: int, raw: str) -> None:
        self.restarting = False
        tokens = obj.get("tokens")
        if obj.get("type") in ("gemini", "model") and tokens.__class__ is dict and pos_int(tokens.get("input")):
            self.last_input = pos_int(tokens.get("input"))
        mid = str_or_none(obj.get("id")) or f"{self.stem}:{line_no}"
        mid = self.alias.get(mid, mid)
        entry = self.entries.get(mid)
        if entry is not None:
            self.duplicates += 1
            entry.obj, entry.raw, entry.line_no, entry.offset = obj, raw, line_no, offset
            if entry.rewound_at is not None or mid not in self.view:
                entry.rewound_at = None
                self.view.append(mid)
            self.last = entry
            return
        entry = self.entries[mid] = _Entry(mid, obj, raw, line_no, offset)
        self.sequence.append(entry)
        self.view.append(mid)
        self.last = entry

    def rewind(self, target: str, line_no: int) -> None:
        if target in self.view:
            index = self.view.index(target)
            removed, self.view = self.view[index:], self.view[:index]
        else:
            removed, self.view = self.view, []
        for mid in removed:
            self.entries[mid].rewound_at = line_no

    def rewrite(self, items: list, line_no: int, offset: int, raw: str) -> None:
        """``$set.messages``: the recorder's new history list.

        - A list that leaves out nothing of the view, or one written while a resume opens the chat
          (after a later metadata line: the history the new process starts from, then the one it
          resumed), is not a fold: the view becomes it. A resumed list repeats each earlier tool
          result as ``<message id>_response`` (0.61 sends both copies from then on): a copy of a
          result already stored is not stored again (``skipped``).
        - Otherwise a list that leaves out messages of the view is a fold (a compression): its
          first new user message is the summary; the messages it keeps come back under new ids
          (same content), which are the kept messages themselves (``alias``), not new ones.
        """
        before = set(self.entries)
        new_ids: list[str] = []
        fresh: list[tuple[str, dict]] = []
        for i, item in enumerate(items):
            if item.__class__ is not dict:
                self.bad.append(BadLine(line_no, offset, f"line {line_no}: message {i + 1} of $set.messages is {json_kind(item)}, not a JSON object"))
                continue
            mid = str_or_none(item.get("id")) or f"{self.stem}:{line_no}.{i + 1}"
            mid = self.alias.get(mid, mid)
            if mid in new_ids:
                continue
            new_ids.append(mid)
            if mid not in before:
                fresh.append((mid, item))
        kept = set(new_ids)
        archived = [mid for mid in self.view if mid not in kept]
        if self.restarting or not archived:
            self._adopt(fresh, new_ids, line_no, offset)
            return
        if archived and fresh:
            fresh = self._copies(fresh, archived)
            new_ids = [self.alias.get(mid, mid) for mid in new_ids]
        marker = None
        if archived:
            preserved = [mid for mid in new_ids if mid in before]
            text = (
                f"History rewritten by Gemini CLI: {sum(1 for m in archived if m not in preserved)} message(s) "
                f"folded away, {len(preserved)} kept, {len(fresh)} new"
            )
            ts = timestamp(self.meta.get("lastUpdated"))
            marker = _Marker(f"{self.stem}:set:{line_no}", raw, line_no, offset, text, ts)
            self.sequence.append(marker)
        summary: _Entry | None = None
        for mid, item in fresh:
            entry = self.entries[mid] = _Entry(mid, item, compact_json(item), line_no, offset)
            entry.rewrite = True
            self.sequence.append(entry)
            if marker is not None and summary is None and item.get("type") == "user":
                entry.summary = True
                summary = entry
        last = self.last
        self._set_view(new_ids)
        if marker is not None:
            self.folds.append(self._fold_record(marker, line_no, last, new_ids, summary, len(archived)))

    def _adopt(self, fresh: list[tuple[str, dict]], new_ids: list[str], line_no: int, offset: int) -> None:
        """A new history list that is no fold: the view becomes it; a resumed list's copy of a
        result already stored (``<message id>_response``) is not stored again (``skipped``)."""
        answered = self._answered()
        for mid, item in fresh:
            if item.get("type") == "user" and _response_ids(item) and _response_ids(item) <= answered:
                self.skipped += 1
                new_ids.remove(mid)
                continue
            entry = self.entries[mid] = _Entry(mid, item, compact_json(item), line_no, offset)
            entry.rewrite = True
            self.sequence.append(entry)
        self._set_view(new_ids)

    def _fold_record(self, marker, line_no: int, last, new_ids: list[str], summary, archived: int) -> FoldRecord:
        before_tokens = self.last_input
        return FoldRecord(
            line_no=line_no,
            boundary_uuid=marker.uuid,
            kind="compact",
            trigger=_trigger(last),
            tokens_before=before_tokens,
            # The new list in its order (the summary where it stands: after the session
            # context, before the model's "Got it"): what the next request carries first.
            preserved_uuids=[mid for mid in new_ids if mid in self.entries],
            summary_uuid=summary.id if summary else None,
            summary_text=text_of(_content_blocks(summary.obj.get("content"))) if summary else "",
            timestamp=marker.timestamp,
            agent_id=self.agent_id,
            metadata={"source": "$set.messages", "archived": archived,
                      "tokens_before": "the last call's input before the compression" if before_tokens else None,
                      "trigger": "inferred: a compression within a turn is automatic"},
        )

    def _set_view(self, ids: list[str]) -> None:
        for mid in ids:
            entry = self.entries.get(mid)
            if entry is not None and entry.rewound_at is not None:
                entry.rewound_at = None
        self.view = [mid for mid in ids if mid in self.entries]

    def _copies(self, fresh: list[tuple[str, dict]], archived: list[str]) -> list[tuple[str, dict]]:
        """The fresh items of a compression list that are copies of messages of the view (same
        type, same text, same tool call or result ids), in order: noted in ``alias``; the rest."""
        candidates = [mid for mid in self.view if mid in archived]
        at = 0
        rest = []
        for mid, item in fresh:
            sig = _signature(item)
            match = None
            if sig is not None:
                for k in range(at, len(candidates)):
                    if _signature(self.entries[candidates[k]].obj) == sig:
                        match = k
                        break
            if match is None:
                rest.append((mid, item))
                continue
            self.alias[mid] = candidates[match]
            at = match + 1
        return rest

    def _answered(self) -> set[str]:
        """The tool call ids the stored user messages answer (functionResponse parts)."""
        out: set[str] = set()
        for entry in self.entries.values():
            if entry.obj.get("type") == "user":
                out |= _response_ids(entry.obj)
        return out

    def content_list(self, items: list, base_line: int = 0) -> None:
        """A checkpoint's ``Content[]``: {role, parts} turns without ids."""
        for i, item in enumerate(items):
            number = base_line + i + 1
            if item.__class__ is not dict:
                self.bad.append(BadLine(number, 0, f"element {number} of the history is {json_kind(item)}, not a JSON object"))
                continue
            self.message(item, number, 0, compact_json(item))

    def message_list(self, items: list) -> None:
        for i, item in enumerate(items):
            number = i + 1
            if item.__class__ is not dict:
                self.bad.append(BadLine(number, 0, f"message {number} is {json_kind(item)}, not a JSON object"))
                continue
            self.message(item, number, 0, compact_json(item))

    # -- output

    def session_id(self) -> str:
        return str_or_none(self.meta.get("sessionId")) or self.stem

    def records(self) -> Iterator[Record]:
        yield from self.bad
        session = self.session_id()
        agent_id = self.agent_id
        is_subagent = self.meta.get("kind") == "subagent"
        if is_subagent and agent_id is None:
            parent = self.path.parent.name
            if parent and parent != "chats":
                agent_id = session
                session = parent
        out = _Output(session, agent_id)
        out.answered = self._answered()
        for item in self.sequence:
            if isinstance(item, _Marker):
                yield MessageRecord(
                    line_no=item.line_no,
                    offset=item.offset,
                    role="system",
                    record_type="$set",
                    raw=item.raw,
                    blocks=[Block("text", text=item.text)],
                    uuid=item.uuid,
                    subtype="compact_boundary",
                    timestamp=item.timestamp,
                    session_id=session,
                    agent_id=agent_id,
                    is_sidechain=agent_id is not None,
                    is_meta=True,
                )
                continue
            yield from self._message_records(item, out)
        yield from out.usage
        for fold in self.folds:
            fold.agent_id = agent_id
        yield from self.folds
        yield from out.links
        yield self.info(agent_id, out.models)

    def _message_records(self, entry: _Entry, out: _Output) -> Iterator[MessageRecord]:
        """The message of an entry, then one ``tool`` message per tool call of it that has a result."""
        obj = entry.obj
        ts = timestamp(obj.get("timestamp") if "timestamp" in obj else obj.get("ts"))
        calls: list[tuple[dict, Block]] = []
        record = _message(entry, ts, out, calls)
        yield record
        for call, block in calls:
            if block.tool_id in out.answered:
                continue  # 0.61 records the result as its own user message too: that one is it
            result = _result_block(call, block.tool_id or "")
            if result is None:
                continue
            yield MessageRecord(
                line_no=entry.line_no,
                offset=entry.offset,
                role="tool",
                record_type="toolCall",
                raw=compact_json(call),
                blocks=[result],
                uuid=f"{entry.id}/tool/{block.tool_id}",
                timestamp=timestamp(call.get("timestamp")) or ts,
                session_id=out.session,
                agent_id=out.agent_id,
                is_sidechain=out.agent_id is not None,
                flags=dict(record.flags),
            )

    def info(self, agent_id: str | None, models: dict[str, None]) -> SessionInfo:
        meta = self.meta
        stamps = [timestamp(e.obj.get("timestamp")) for e in self.entries.values()]
        stamps = [s for s in stamps if s is not None]
        started = timestamp(meta.get("startTime")) or timestamp(meta.get("start_time")) or (min(stamps) if stamps else None)
        ended: datetime | None = timestamp(meta.get("lastUpdated"))
        if stamps and (ended is None or max(stamps) > ended):
            ended = max(stamps)
        directories = meta.get("directories")
        cwd = directories[0] if directories.__class__ is list and directories and directories[0].__class__ is str else None
        summary = meta.get("summary")
        return SessionInfo(
            external_id=str_or_none(meta.get("sessionId")),
            # Masked before the cut: a secret cut in two would no longer be recognised (ingest masks too).
            title=mask_text(summary.strip())[:200] if summary.__class__ is str and summary.strip() else None,
            cwd=cwd,
            models=list(models),
            started_at=started,
            ended_at=ended,
            agent_id=agent_id,
            lines=self.lines,
            bytes_consumed=self.size,
            duplicate_uuids=self.duplicates,
        )


# -- messages ------------------------------------------------------------------------------------


class _Output:
    """What the records of a chat gather across its messages: the session and sub-agent they
    belong to, the usage, sub-agent links and models met, and (checkpoints) the tool calls without
    ids still waiting for their response."""

    __slots__ = ("session", "agent_id", "usage", "links", "models", "open_calls", "answered")

    def __init__(self, session: str, agent_id: str | None):
        self.session = session
        self.agent_id = agent_id
        self.usage: list[UsageRecord] = []
        self.links: list[AgentLink] = []
        self.models: dict[str, None] = {}
        self.open_calls = OpenCalls()  # checkpoints: tool calls without ids
        self.answered: set[str] = set()  # call ids a user message's functionResponse answers


def _message(entry: _Entry, ts: datetime | None, out: _Output, calls: list[tuple[dict, Block]]) -> MessageRecord:
    """The message of an entry, by its type (or, without one, its role): a model turn (its tool
    calls go in ``calls``), a user turn, a system notice, or "other"."""
    obj = entry.obj
    kind = obj.get("type")
    role_name = obj.get("role")
    content = obj.get("content") if "content" in obj else obj.get("parts")
    flags = _entry_flags(entry)
    model = api_id = subtype = None
    if kind in ("gemini", "model") or (kind is None and role_name in ("model", "gemini", "assistant")):
        role = "assistant"
        record_type = kind if kind.__class__ is str else "model"
        blocks, model, api_id = _model_turn(entry, content, ts, out, calls)
    elif kind == "user" or (kind is None and role_name == "user"):
        role, blocks = _user_turn(content, out)
        record_type = "user"
    elif kind.__class__ is str and kind in SYSTEM_TYPES:  # a list or an object is "other", never a TypeError
        role = "system"
        record_type = subtype = kind
        blocks = _content_blocks(content)
        if kind == "error":
            flags["api_error"] = True
    else:
        role = "other"
        record_type = (kind if kind.__class__ is str and kind else None) or (
            f"role:{role_name}" if role_name.__class__ is str and role_name else "(none)"
        )
        blocks = _content_blocks(content)
    return MessageRecord(
        line_no=entry.line_no,
        offset=entry.offset,
        role=role,
        record_type=record_type[:60],
        raw=entry.raw,
        blocks=blocks,
        uuid=entry.id,
        subtype=subtype,
        timestamp=ts,
        session_id=out.session,
        agent_id=out.agent_id,
        is_sidechain=out.agent_id is not None,
        is_compact_summary=entry.summary,
        model=model,
        api_message_id=api_id,
        flags=flags,
    )


def _entry_flags(entry: _Entry) -> dict[str, Any]:
    """Flags of what became of a message later: rewound (and by which line), or added by a rewrite
    of the history."""
    flags: dict[str, Any] = {}
    if entry.rewound_at is not None:
        flags["rewound"] = True
        flags["rewound_at_line"] = entry.rewound_at
    if entry.rewrite:
        flags["history_rewrite"] = True
    return flags


def _user_turn(content: Any, out: _Output) -> tuple[str, list[Block]]:
    """(role, blocks) of a user turn: "tool" when it only answers tool calls (a checkpoint's
    responses without ids find their calls here)."""
    blocks = _content_blocks(content)
    for block in blocks:
        if block.kind == "tool_result" and block.tool_id is None:
            out.open_calls.answer(block)
    return ("tool" if blocks and all(b.kind == "tool_result" for b in blocks) else "user"), blocks


def _model_turn(entry: _Entry, content: Any, ts: datetime | None, out: _Output,
                calls: list[tuple[dict, Block]]) -> tuple[list[Block], str | None, str | None]:
    """(blocks, model, api message id) of a model turn: its thoughts, its content, a tool_call per
    ``toolCalls`` entry; its model and usage are noted in ``out``."""
    obj = entry.obj
    blocks = _thought_blocks(obj.get("thoughts")) + _content_blocks(content)
    model = str_or_none(obj.get("model"))
    if model:
        out.models[model] = None
    tool_calls = obj.get("toolCalls")
    if tool_calls.__class__ is list:
        _tool_calls(entry, tool_calls, blocks, calls, out.links)
    # Checkpoint turns: functionCall parts without ids get one, for their responses to find.
    for n, block in enumerate(blocks):
        if block.kind == "tool_call" and block.tool_id is None:
            out.open_calls.open(block, f"{entry.id}:fc{n + 1}")
    return blocks, model, _usage(entry, model, ts, out)


def _tool_calls(entry: _Entry, tool_calls: list, blocks: list[Block], calls: list[tuple[dict, Block]],
                links: list[AgentLink]) -> None:
    """A model turn's ``toolCalls``: a tool_call block each (in ``blocks``, with its entry in
    ``calls``, for its result), and a link to the sub-agent a call runs."""
    for n, call in enumerate(tool_calls):
        if call.__class__ is not dict:
            blocks.append(Block("other", text=compact_json(call), raw_type="toolCall"))
            continue
        cid = call_id(call.get("id"), call.get("name")) or f"{entry.id}:call{n + 1}"
        block = tool_call(cid, str_or_none(call.get("name")), call.get("args"))
        blocks.append(block)
        calls.append((call, block))
        linked = str_or_none(call.get("agentId"))
        if linked:
            links.append(AgentLink(agent_id=linked, tool_use_id=cid, line_no=entry.line_no,
                                   description=str_or_none(call.get("description"))))


def _usage(entry: _Entry, model: str | None, ts: datetime | None, out: _Output) -> str | None:
    """The model call of a turn with ``tokens`` (in ``out.usage``), keyed by the message id; that
    id, or None without tokens."""
    tokens = entry.obj.get("tokens")
    if tokens.__class__ is not dict:
        return None
    input_tokens = pos_int(tokens.get("input"))
    cached = pos_int(tokens.get("cached"))
    out.usage.append(
        UsageRecord(
            api_message_id=entry.id,
            request_id=None,
            message_uuid=entry.id,
            line_no=entry.line_no,
            model=model,
            input_uncached=max(input_tokens - cached, 0),
            cache_read=cached,
            output=pos_int(tokens.get("output")) + pos_int(tokens.get("thoughts")),
            reasoning=pos_int(tokens.get("thoughts")) if "thoughts" in tokens else None,
            agent_id=out.agent_id,
            timestamp=ts,
        )
    )
    return entry.id


# -- parse ---------------------------------------------------------------------------------------


def parse(source: ParseInput) -> Iterator[Record]:
    chat = _Chat(Path(source.path), agent_id=source.agent_id)
    place = "line" if Path(source.path).name.removesuffix(".gz").endswith(".jsonl") else "message"
    yield from guarded(said_bad(_parse(source, chat), place, ("type",)), lambda: SessionInfo(external_id=str_or_none(chat.meta.get("sessionId"))))


def _parse(source: ParseInput, chat: _Chat) -> Iterator[Record]:
    text, problems = read_text(source, WHAT)
    if text is None:
        yield from problems
        yield SessionInfo()
        return
    first = text.lstrip().split("\n", 1)[0].strip()
    lines_mode = False
    if first.startswith("{"):
        try:
            lines_mode = json.loads(first).__class__ is dict and text.strip() != first
        except (ValueError, RecursionError):
            lines_mode = False
    if lines_mode:
        _read_lines(text, chat)
    else:
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:
            yield BadLine(0, 0, f"the file is not valid JSON ({json_error(exc)}): not imported")
            yield SessionInfo()
            return
        _read_document(doc, chat)
    # The whole file was read: a changed file is read again in full (and its errors said anew).
    chat.size = len(text.encode("utf-8", "surrogatepass"))
    yield from chat.records()


def _read_document(doc: Any, chat: _Chat) -> None:
    if doc.__class__ is list:
        if any(item.__class__ is dict and "parts" in item and "type" not in item for item in doc):
            chat.content_list(doc)
        else:
            chat.message_list(doc)
        return
    if doc.__class__ is not dict:
        chat.bad.append(BadLine(0, 0, f"the file is {json_kind(doc)}, not {WHAT}"))
        return
    chat.metadata(doc)
    messages = doc.get("messages")
    history = doc.get("history")
    if messages.__class__ is list:
        chat.message_list(messages)
    elif history.__class__ is list:
        chat.content_list(history)
    elif "sessionId" not in doc:  # a chat's metadata alone is an empty chat
        chat.bad.append(BadLine(0, 0, f"the file has no messages list: not {WHAT}"))


def _read_lines(text: str, chat: _Chat) -> None:
    offset = 0
    for number, line in enumerate(text.split("\n"), 1):
        start = offset
        offset += len(line.encode("utf-8", "surrogatepass")) + 1
        stripped = line.strip()
        if not stripped:
            continue
        chat.lines = number
        try:
            obj = json.loads(stripped)
        except (ValueError, RecursionError) as exc:
            chat.bad.append(BadLine(number, start, f"line {number} is not valid JSON ({json_error(exc)})", size=len(line)))
            continue
        if obj.__class__ is not dict:
            chat.bad.append(BadLine(number, start, f"line {number} is {json_kind(obj)}, not a JSON object", size=len(line)))
            continue
        try:
            _line(obj, number, start, stripped, chat)
        except Exception as exc:  # one odd line must not stop the import
            chat.bad.append(BadLine(number, start, f"line {number} could not be read ({exc.__class__.__name__}: {exc})"))


def _line(obj: dict, number: int, offset: int, raw: str, chat: _Chat) -> None:
    if "$rewindTo" in obj:
        target = obj["$rewindTo"]
        if target.__class__ is str:
            chat.rewind(target, number)
        else:
            chat.bad.append(BadLine(number, offset, f"line {number}: $rewindTo is {json_kind(target)}, not a message id"))
        return
    if "$set" in obj:
        patch = obj["$set"]
        if patch.__class__ is not dict:
            chat.bad.append(BadLine(number, offset, f"line {number}: $set is {json_kind(patch)}, not a JSON object"))
            return
        chat.metadata(patch)
        messages = patch.get("messages")
        if messages.__class__ is list and messages:
            chat.rewrite(messages, number, offset, raw)
        return
    if str_or_none(obj.get("id")) is not None or obj.get("type") in MESSAGE_TYPES:
        chat.message(obj, number, offset, raw)
        return
    if "sessionId" in obj or "projectHash" in obj or "startTime" in obj:
        chat.header(obj)
        messages = obj.get("messages")
        if messages.__class__ is list and messages:
            chat.message_list(messages)
        return
    # An unknown record kind: kept as an "other" message.
    chat.message(obj, number, offset, raw)


# -- the format ----------------------------------------------------------------------------------


def _inline_data(node: dict) -> list | None:
    data = node.get("inlineData")
    if data.__class__ is dict and data.get("data").__class__ is str:
        return [{"media_type": data.get("mimeType"), "data": data["data"]}]
    return None


def images(raw: str) -> list[dict]:
    """The base64 images (``inlineData`` parts) of a stored record, in order."""
    obj = raw_json(raw)
    found: list[dict] = []
    if obj.__class__ is dict:
        content = obj.get("content") if "content" in obj else obj.get("parts")
        collect_images(content if content is not None else obj.get("result"), found, _inline_data)
    return found


def enrich(d: dict) -> dict:
    """Image data put back on image blocks, and a tool result's images as its content."""
    blocks = d.get("blocks") or []
    if not d.get("raw") or not any(b.get("kind") == "image" or b.get("images") for b in blocks):
        return d
    found = images(d["raw"])
    if not found:
        return d
    sources = iter(found)
    out = []
    for b in blocks:
        if b.get("kind") == "image":
            b = image_data(b, next(sources, None))
        elif b.get("kind") == "tool_result" and b.get("images"):
            content: list[dict] = [{"type": "text", "text": b.get("text") or ""}]
            for _ in range(int(b["images"])):
                src = next(sources, None)
                if src is not None:
                    content.append({"type": "image", "source": {"type": "base64", "media_type": src.get("media_type"), "data": src["data"]}})
            b = {**b, "content": content}
        out.append(b)
    return {**d, "blocks": out}


# The harness's rules (core/harness.py; not in the policy docs): Gemini CLI's chatCompressionService
# compresses at 50 % of the model's token limit (DEFAULT_COMPRESSION_TOKEN_THRESHOLD = 0.5, keeping
# the last 30 %).
HARNESS = Harness(fold_label="Gemini CLI compress 50 %", fold_fraction=0.50, usual_for=("google",))

FORMAT = ENTRY.format(
    parse=parse,
    rewrites=True,  # the chat file is written again as messages change (text, tool results, tokens)
    images=images,
    enrich=enrich,
    harness=HARNESS,
)
