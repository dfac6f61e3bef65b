"""Mistral Vibe session folders (PyPI ``mistral-vibe`` 3.0, its "unified session store") -> normalized
records. Checked against what Vibe 3.0.3 wrote and sent, run offline against a scripted model server
(ops/drivers/vibe.py). The store is written by Vibe's native harness; what it holds, as that run
showed it (keys as written):

- ``meta.json``: ``session_id``, ``parent_session_id``, ``environment.working_directory``,
  ``title``, ``start_time``, ``end_time``, ``config.model_name``;
- ``CURRENT``: ``{"generation": "<n>", ...}``; ``generations/<n>/manifest.json`` names the chunks of
  that generation: ``projection_state.chunks`` (the session's history as its UI shows it: a list
  of entries, in order) and ``checkpoint.chunks`` (the model's context now: a list of
  ``{message, source: "history"|"injection", turn_index}``); ``generations/<n>/checkpoint.json``
  has ``last_reported_context_tokens`` (the last call's input + output);
- ``chunks/<sha256>.json``: content-addressed chunks, older generations' ones left beside;
- ``journal/<n>.jsonl``: the recovery journal since the generation before the current one (Vibe
  drops older segments when it writes a generation, at the end of each turn and when a sub-agent
  starts): ``action_intent``
  (``kind: "completion"``, ``request.purpose: "agent"`` for a main call; ``kind: "tool"`` with
  ``call_id``) and ``action_result`` (``completion_succeeded``: ``parts`` and ``usage {input_tokens,
  output_tokens, cached_input_tokens, cache_write_tokens}``).

History entries: ``type: "message"`` (``role`` user/assistant, ``content`` text parts; an
assistant's id is ``assistant-<the completion's action id>``); ``type: "effect"`` (``detail.kind:
"tool"``, ``detail.toolName`` like ``file_system.bash``, ``detail.input``, ``state.output``
``{content, structured_content, type}``; its id is ``effect-<the tool action's id>``);
``type: "checkpoint"``, ``kind: "compaction"`` (``details.trigger``: ``automatic``/``manual``).

Mapping: a user message is a user record. Each model call that asked for tools is an assistant
record holding its tool calls (the model's own ids and names, from the journal or the context
chunks; grouped as the context shows them, else one call per tool) followed by one tool record per
result (the structured output as the compact sorted JSON Vibe sends). An assistant text is the
call that answered. A compaction is a fold: a ``compact_boundary`` marker, then a summary message
holding what Vibe injects in its place (its "continuing a trajectory" preamble, the earlier user
messages it re-sends, the ``<compaction_summary>``), and the messages it kept (preserved, in the
order it sends them). Usage is measured only for the calls whose journal is still in the folder
(the last turn's): earlier calls are unmeasured (Vibe keeps no per-call usage elsewhere). A fold's
tokens_before is the last call's input + output where the folder still holds it (the journal, or
the generation before it: ``last_reported_context_tokens``); the compaction call's usage is its
cost. A sub-agent (``tools.agents.spawn`` in ``run_typescript`` code: an ``effect`` of kind
``subagent`` with ``childSessionId``) is the session folder ``child-<id>/`` beside (``group``),
linked to the ``run_typescript`` call, which the history leaves out and the context gives; the
runtime's notifications (a child's answer) are put back where the context had them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextviewer.core.records import AgentLink, BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import TimeSpan, compact_json, int_or_none, json_kind, pos_int, str_or_none, timestamp, tool_call
from contextviewer.importers.driver import guarded
from contextviewer.importers.formats import ParseInput, SessionFiles, SubagentFile
from contextviewer.importers.jsondoc import Document, read_json_file
from contextviewer.importers.vibe.entry import CURRENT, ENTRY, LABEL, META, NAME, session_folder, sniff  # noqa: F401

WHAT = f"a {LABEL} session folder"
TRIGGERS = {"automatic": "auto", "manual": "manual"}


def _dict(value: Any) -> dict:
    return value if value.__class__ is dict else {}


def _list(value: Any) -> list:
    return value if value.__class__ is list else []


def _texts(content: Any) -> list[str]:
    if content.__class__ is str:
        return [content] if content else []
    return [p["text"] for p in _list(content) if _dict(p).get("type") == "text" and p.get("text").__class__ is str and p["text"]]


def _result_text(output: dict) -> tuple[str, bool]:
    """A tool's output as Vibe sends it back: its structured content as compact sorted JSON, else its
    text parts; and whether it failed."""
    failed = output.get("type") not in (None, "success")
    structured = output.get("structured_content")
    if structured is not None:
        return json.dumps(structured, sort_keys=True, separators=(",", ":"), ensure_ascii=False), failed
    texts = _texts(output.get("content"))
    if texts:
        return "\n".join(texts), failed
    return str_or_none(output.get("message")) or "", failed


def _run_of(structured: Any) -> dict | None:
    """How a command ran, where the result is bash's ``{command, returncode, stdout, stderr, timed_out}``
    (Block.extra: the streams apart, the exit code, a timeout as interrupted); None otherwise."""
    run = _dict(structured)
    if not (isinstance(run.get("stdout"), str) or isinstance(run.get("stderr"), str)):
        return None
    extra: dict[str, Any] = {"stdout": run.get("stdout") or "", "stderr": run.get("stderr") or ""}
    code = int_or_none(run.get("returncode"))
    if code is not None:
        extra["exit_code"] = code
    if run.get("timed_out") is True:
        extra["interrupted"] = True
    return extra


def _plain_name(name: Any) -> bool:
    """A generation's or a chunk's name as Vibe writes them (digits, a hex digest): a file name, nothing else."""
    return name.__class__ is str and 0 < len(name) <= 128 and name.isascii() and name.isalnum()


def _short_name(name: str | None) -> str | None:
    """``file_system.bash`` -> ``bash``: the store names a tool with its group, the model without."""
    return (name.partition(".")[2] or name) if name else name


class _Store:
    """What the folder holds, read once."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.bad: list[BadLine] = []
        self.meta: dict = {}
        self.entries: list[dict] = []  # the history (projection state), in order
        self.context: list[dict] = []  # the model's context now (checkpoint)
        self.chunks: list[list] = []  # every context chunk in the folder (older generations' too)
        self.journal: list[dict] = []
        self.generations: dict[int, dict] = {}  # snapshot sequence -> checkpoint.json

    def json(self, path: Path, *, required: bool) -> Any:
        if not path.is_file():
            if required:
                self.bad.append(BadLine(0, 0, f"{LABEL}: {path.relative_to(self.folder)} is missing from the session folder"))
            return None
        doc = read_json_file(path)
        if not isinstance(doc, Document):
            self.bad.append(BadLine(0, 0, f"{LABEL}: {path.relative_to(self.folder)}: {doc.reason}", size=doc.size))
            return None
        return doc.value

    def chunk_list(self, names: Any, what: str) -> list:
        out: list = []
        for name in _list(names):
            if not _plain_name(name):
                self.bad.append(BadLine(0, 0, f"{LABEL}: a {what} chunk's name is not a file name ({json_kind(name)}): left out"))
                continue
            value = self.json(self.folder / "chunks" / f"{name}.json", required=True)
            if value is None:
                continue
            if value.__class__ is not list:
                self.bad.append(BadLine(0, 0, f"{LABEL}: the {what} chunk {name[:12]} is {json_kind(value)}, not a list"))
                continue
            out.extend(value)
        return out

    def read(self, sub_agent: bool = False) -> None:
        meta = self.json(self.folder / META, required=not sub_agent)
        self.meta = _dict(meta)
        if meta is not None and meta.__class__ is not dict:
            self.bad.append(BadLine(0, 0, f"{LABEL}: meta.json is {json_kind(meta)}, not the session's metadata object"))
        current = _dict(self.json(self.folder / CURRENT, required=True))
        generation = current.get("generation")
        if not _plain_name(generation) or not (self.folder / "generations" / generation / "manifest.json").is_file():
            newest = self._newest_generation()
            said = "names no generation" if not _plain_name(generation) else f"names generation {generation}, which has no manifest"
            self.bad.append(BadLine(0, 0, f"{LABEL}: CURRENT {said}"
                                          + (f": read the newest generation there is, {newest}" if newest else ": nothing to read")))
            generation = newest
        if generation is not None:
            manifest = _dict(self.json(self.folder / "generations" / generation / "manifest.json", required=True))
            self.entries = [e for e in self.chunk_list(_dict(manifest.get("projection_state")).get("chunks"), "history") if e.__class__ is dict]
            self.context = [e for e in self.chunk_list(_dict(manifest.get("checkpoint")).get("chunks"), "context") if e.__class__ is dict]
        self._chunks()
        self._generations()
        self._journal()

    def _newest_generation(self) -> str | None:
        folder = self.folder / "generations"
        found = [p.name for p in folder.iterdir() if p.name.isdigit() and (p / "manifest.json").is_file()] if folder.is_dir() else []
        return max(found, key=int, default=None)

    def _chunks(self) -> None:
        folder = self.folder / "chunks"
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            doc = read_json_file(path)
            value = doc.value if isinstance(doc, Document) else None
            if value.__class__ is list and value and all(_dict(m).get("message").__class__ is dict for m in value):
                self.chunks.append(value)
        self.chunks.sort(key=len, reverse=True)

    def _generations(self) -> None:
        folder = self.folder / "generations"
        for sub in sorted(folder.iterdir()) if folder.is_dir() else ():
            if sub.name.isdigit() and (sub / "checkpoint.json").is_file():
                doc = read_json_file(sub / "checkpoint.json")
                if isinstance(doc, Document) and doc.value.__class__ is dict:
                    self.generations[int(sub.name)] = doc.value

    def _journal(self) -> None:
        folder = self.folder / "journal"
        for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else ():
            try:
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError as exc:
                self.bad.append(BadLine(0, 0, f"{LABEL}: journal/{path.name} could not be read ({exc.strerror})"))
                continue
            for n, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    self.bad.append(BadLine(n, 0, f"{LABEL}: journal/{path.name} line {n} is not JSON"))
                    continue
                if record.__class__ is dict:
                    self.journal.append(record)


class _Calls:
    """The model's own tool call ids, names and grouping (which calls one response made), from the
    journal (exact, by the store's tool action id) and the context chunks (by name and input)."""

    def __init__(self, store: _Store):
        self.by_action: dict[str, str] = {}  # tool action id -> call id
        self.known: dict[str, tuple[str, dict, str]] = {}  # call id -> (name, arguments, first id of its response)
        self.results: dict[str, str] = {}  # call id -> the result text as sent
        self.used: set[str] = set()
        for record in store.journal:
            payload = _dict(record.get("payload"))
            if record.get("type") == "action_intent" and payload.get("kind") == "tool":
                call_id = str_or_none(_dict(payload.get("request")).get("call_id"))
                if call_id and str_or_none(payload.get("action_id")):
                    self.by_action[payload["action_id"]] = call_id
            if record.get("type") == "action_result":
                result = _dict(_dict(_dict(payload.get("result")).get("result")))
                parts = [p for p in _list(_dict(result.get("result")).get("parts")) if _dict(p).get("type") == "tool_call"]
                self._response([(str_or_none(p.get("id")), str_or_none(p.get("name")), p.get("arguments_json")) for p in parts])
        for chunk in store.chunks:
            for item in chunk:
                message = _dict(item.get("message"))
                if message.get("role") == "assistant":
                    parts = [p for p in _list(message.get("content")) if _dict(p).get("type") == "tool_call"]
                    self._response([(str_or_none(p.get("id")), str_or_none(p.get("name")), _dict(p.get("arguments")).get("value"))
                                    for p in parts])
                elif message.get("role") == "tool" and str_or_none(message.get("tool_call_id")):
                    self.results.setdefault(message["tool_call_id"], "\n".join(_texts(message.get("content"))))

    def _response(self, parts: list[tuple[str | None, str | None, Any]]) -> None:
        ids = [p[0] for p in parts if p[0]]
        for call_id, name, args in parts:
            if call_id and call_id not in self.known:
                if args.__class__ is str:
                    try:
                        args = json.loads(args)
                    except ValueError:
                        args = {}
                self.known[call_id] = (name or "", _dict(args), ids[0])

    def find(self, action_id: str, name: str | None, tool_input: dict) -> str | None:
        """The call id of the tool action ``action_id`` (the effect's id without ``effect-``)."""
        found = self.by_action.get(action_id)
        if found is None:
            short = _short_name(name)
            found = next((cid for cid, (n, args, _g) in self.known.items() if cid not in self.used and n == short
                          and all(tool_input.get(k) == v for k, v in args.items())), None)
        if found is not None:
            self.used.add(found)
        return found

    def group(self, call_id: str | None) -> str | None:
        return self.known[call_id][2] if call_id in self.known else None


class _Session:
    def __init__(self, store: _Store, agent_id: str | None = None):
        self.store = store
        self.agent_id = agent_id  # a sub-agent's folder: its child session id
        self.links: list[AgentLink] = []
        self.link_records: list[MessageRecord] = []  # the record each link's line is
        self.spawned: set[str] = set()  # run_typescript call ids already written
        self.calls = _Calls(store)
        self.session_id = str_or_none(store.meta.get("session_id")) or store.folder.name
        self.model = str_or_none(_dict(store.meta.get("config")).get("model_name"))
        self.span = TimeSpan()
        self.n = 0
        self.messages: list[MessageRecord] = []
        self.usage: list[UsageRecord] = []
        self.folds: list[FoldRecord] = []
        self.open_call: tuple[MessageRecord, str | None] | None = None  # the assistant record of the last tool call, its group
        self.measured = self._measured()

    def _measured(self) -> dict[str, dict]:
        """Usage of each main call the journal still holds, by the key the history gives the call: the
        assistant entry's id for an answer, the first tool call id for a response that asked for tools."""
        out: dict[str, dict] = {}
        intents = {}
        for record in self.store.journal:
            payload = _dict(record.get("payload"))
            if record.get("type") == "action_intent" and payload.get("kind") == "completion":
                intents[str_or_none(payload.get("action_id"))] = _dict(payload.get("request"))
            if record.get("type") != "action_result":
                continue
            outer = _dict(payload.get("result"))
            if outer.get("type") != "completion_succeeded":
                continue
            action = str_or_none(payload.get("action_id"))
            request = intents.get(action, {})
            result = _dict(outer.get("result"))
            usage = _dict(result.get("usage"))
            if request.get("purpose") not in (None, "agent"):
                continue  # a compaction or a side call (a title): not a main call
            tools = [str_or_none(p.get("id")) for p in _list(result.get("parts")) if _dict(p).get("type") == "tool_call"]
            out[tools[0] if tools and tools[0] else f"assistant-{action}"] = usage
        return out

    def record(self, entry: dict, role: str, blocks: list[Block], uuid: str, **extra: Any) -> MessageRecord:
        self.n += 1
        when = self.span.saw(timestamp(entry.get("createdAt")))
        rec = MessageRecord(line_no=self.n, offset=self.n, role=role, record_type=str(entry.get("type") or "(none)")[:60],
                            raw=compact_json(entry), blocks=blocks, uuid=uuid, timestamp=when, session_id=self.session_id,
                            agent_id=self.agent_id, is_sidechain=self.agent_id is not None, **extra)
        self.messages.append(rec)
        return rec

    def call(self, rec: MessageRecord, key: str) -> None:
        usage = self.measured.get(key) or {}
        cached = pos_int(usage.get("cached_input_tokens"))
        written = pos_int(usage.get("cache_write_tokens"))
        rec.api_message_id = f"call:{rec.uuid}"
        rec.model = self.model
        self.usage.append(UsageRecord(api_message_id=rec.api_message_id, request_id=None, message_uuid=rec.uuid, line_no=rec.line_no,
                                      model=self.model, input_uncached=max(0, pos_int(usage.get("input_tokens")) - cached - written),
                                      cache_write=written, cache_read=cached, output=pos_int(usage.get("output_tokens")),
                                      agent_id=self.agent_id, timestamp=rec.timestamp))

    def run(self) -> None:
        for index, entry in enumerate(self.store.entries):
            try:
                self.entry(entry)
            except Exception as exc:  # one odd entry must not stop the import
                self.store.bad.append(BadLine(index + 1, index + 1, f"{LABEL}: history entry {index + 1} could not be read "
                                                                    f"({exc.__class__.__name__}: {exc})"))
        self.notifications()

    def notifications(self) -> None:
        """What the runtime put in the context that the history does not show (a sub-agent's
        "Runtime notification" when it finished, with its answer: parts sent as one text, joined by a
        blank line): a user message (meta) after the message it followed
        in the context, from every context the folder still has (the current one, older generations'
        chunks left beside it)."""
        inserted, seen = False, set()
        for context in (self.store.context, *self.store.chunks):
            start = _fold_block_end(context)
            last: MessageRecord | None = None
            for k, item in enumerate(context[0 if start is None else start + 1:]):
                message = _dict(item.get("message"))
                if item.get("source") != "injection":
                    last = self._record_of(message) or last
                    continue
                texts = _message_texts(message)
                if not texts or last is None or (last.uuid, tuple(texts)) in seen:
                    last = next((r for r in self.messages if r.record_type == "injection" and r.parent_uuid == last.uuid), last) if last else last
                    continue
                seen.add((last.uuid, tuple(texts)))
                rec = MessageRecord(line_no=0, offset=0, role="user", record_type="injection", raw=compact_json(item),
                                    blocks=[Block("text", text="\n\n".join(texts))], uuid=f"{last.uuid}:injection:{hashlib.sha256(compact_json(texts).encode()).hexdigest()[:12]}",
                                    parent_uuid=last.uuid, timestamp=last.timestamp, session_id=self.session_id,
                                    agent_id=self.agent_id, is_sidechain=self.agent_id is not None, is_meta=True)
                self.messages.insert(self.messages.index(last) + 1, rec)
                last, inserted = rec, True
        if inserted:  # number them again in their order (a call's line is its first message's)
            for n, rec in enumerate(self.messages, 1):
                rec.line_no = rec.offset = n
            lines = {rec.uuid: rec.line_no for rec in self.messages}
            for usage in self.usage:
                usage.line_no = lines.get(usage.message_uuid, usage.line_no)
            for fold in self.folds:
                fold.line_no = lines.get(fold.boundary_uuid, fold.line_no)
            for link, rec in zip(self.links, self.link_records):
                link.line_no = rec.line_no

    def _record_of(self, message: dict) -> MessageRecord | None:
        """The record a context message is (by its tool ids, else its role and text), the latest first."""
        ids = [str_or_none(p.get("id")) for p in _list(message.get("content")) if _dict(p).get("type") == "tool_call"]
        if message.get("role") == "tool":
            ids.append(str_or_none(message.get("tool_call_id")))
        texts = _message_texts(message)
        for rec in reversed(self.messages):
            if ids and any(b.tool_id in ids for b in rec.blocks if b.kind in ("tool_call", "tool_result")):
                return rec
            if not ids and texts and rec.role == message.get("role") and [b.text for b in rec.blocks if b.kind == "text"] == texts:
                return rec
        return None

    def entry(self, entry: dict) -> None:
        kind, uuid = entry.get("type"), str_or_none(entry.get("id")) or f"{self.session_id}:{self.n + 1}"
        if kind == "message" and entry.get("role") in ("user", "assistant"):
            self.open_call = None
            blocks = [Block("text", text=t) for t in _texts(entry.get("content"))]
            rec = self.record(entry, entry["role"], blocks, uuid)
            if entry["role"] == "assistant":
                self.call(rec, uuid)
        elif kind == "effect" and _dict(entry.get("detail")).get("kind") == "tool":
            self.effect(entry, uuid)
        elif kind == "effect" and _dict(entry.get("detail")).get("kind") == "subagent":
            self.spawn(entry, uuid)
        elif kind == "checkpoint" and entry.get("kind") == "compaction":
            self.open_call = None
            self.fold(entry, uuid)
        else:
            self.record(entry, "other", [], uuid)

    def effect(self, entry: dict, uuid: str) -> None:
        detail, state = _dict(entry.get("detail")), _dict(entry.get("state"))
        tool_input = _dict(detail.get("input"))
        call_id = self.calls.find(uuid.removeprefix("effect-"), str_or_none(detail.get("toolName")), tool_input)
        name = _short_name(str_or_none(detail.get("toolName")))
        if call_id in self.calls.known:  # the model's own name and input (the store adds defaults)
            name = self.calls.known[call_id][0] or name
            tool_input = self.calls.known[call_id][1] or tool_input
        block = tool_call(call_id or uuid, name, tool_input)
        group = self.calls.group(call_id)
        if self.open_call is not None and group is not None and self.open_call[1] == group:
            self.open_call[0].blocks.append(block)  # another tool call of the same response
        else:
            rec = self.record(entry, "assistant", [block], f"{uuid}:call")
            self.call(rec, call_id or "")
            self.open_call = (rec, group or call_id)
        output = _dict(state.get("output"))
        text, failed = _result_text(output)
        if call_id in self.calls.results and not text:
            text = self.calls.results[call_id]
        self.record(entry, "tool", [Block("tool_result", text=text, tool_id=call_id or uuid, tool_name=name, is_error=failed,
                                          extra=_run_of(output.get("structured_content")))], f"{uuid}:result")

    def spawn(self, entry: dict, uuid: str) -> None:
        """A sub-agent started from ``run_typescript`` code (``tools.agents.spawn``): the history has
        the spawn, not the ``run_typescript`` call that made it; that call (from the spawn's
        ``spawnCallId``, ``typescript:<n>:<call id>:...``, else the one whose code holds the task) is
        written once, with the result it sent, and the child linked to it."""
        detail, state = _dict(entry.get("detail")), _dict(entry.get("state"))
        child = str_or_none(detail.get("childSessionId"))
        meta = _dict(_dict(_dict(state.get("output")).get("_meta")).get("mistral.vibe.subagent"))
        task = str_or_none(_dict(detail.get("input")).get("task")) or ""
        parts = (str_or_none(meta.get("spawnCallId")) or "").split(":")
        call_id = parts[2] if len(parts) > 2 and parts[0] == "typescript" and parts[2] in self.calls.known else None
        if call_id is None:
            call_id = next((cid for cid, (name, args, _g) in self.calls.known.items() if name == "run_typescript" and task
                            and task in str(args.get("code") or "")), None)
        if call_id is None or call_id in self.spawned:
            rec = self.record(entry, "other", [], uuid)
        else:
            self.spawned.add(call_id)
            self.calls.used.add(call_id)
            name, args, _group = self.calls.known[call_id]
            rec = self.record(entry, "assistant", [tool_call(call_id, name, args)], f"{uuid}:call")
            self.call(rec, call_id)
            self.open_call = None
            text = self.calls.results.get(call_id) or ""
            self.record(entry, "tool", [Block("tool_result", text=text, tool_id=call_id, tool_name=name)], f"{uuid}:result")
        if child:
            self.link_records.append(rec)
            self.links.append(AgentLink(agent_id=child, tool_use_id=call_id, line_no=rec.line_no,
                                        agent_type=str_or_none(detail.get("agentName")), description=task.splitlines()[0][:200] if task else None))

    def fold(self, entry: dict, uuid: str) -> None:
        details = _dict(entry.get("details"))
        marker = self.record(entry, "system", [Block("text", text=f"{LABEL} compacted the conversation")], uuid,
                             subtype="compact_boundary")
        before = list(self.messages[:-1])
        latest = not any(e.get("type") == "checkpoint" and e.get("kind") == "compaction"
                         for e in self.store.entries[self.store.entries.index(entry) + 1:])
        injected, kept = _after_fold(self.store.context, before) if latest else ([], [])
        summary_text = _summary_of(injected)
        holder = self.record(entry, "user", [Block("text", text=t) for t in injected], f"{uuid}:summary", is_meta=True,
                             is_compact_summary=True, parent_uuid=marker.uuid)
        trigger = str_or_none(details.get("trigger"))
        cost, asked = self._compaction_call(uuid.removeprefix("checkpoint-compaction-"))
        summary_text = summary_text or asked
        self.folds.append(FoldRecord(line_no=marker.line_no, boundary_uuid=marker.uuid, kind="compact",
                                     trigger=TRIGGERS.get(trigger or "", trigger), tokens_before=self._before(uuid),
                                     summary_uuid=holder.uuid, summary_text=summary_text,
                                     preserved_uuids=[r.uuid for r in kept if r.uuid], timestamp=marker.timestamp,
                                     metadata={"attempt": int_or_none(details.get("attempt")), "summary_length": int_or_none(details.get("summaryLength"))},
                                     cost=cost))

    def _compaction_call(self, compaction_id: str) -> tuple[dict | None, str]:
        """The compaction call's usage (the fold's cost) and the summary it answered, where the journal
        still holds it (``request.purpose: "compaction"``, ``compaction_id``)."""
        action = None
        for record in self.store.journal:
            payload = _dict(record.get("payload"))
            request = _dict(payload.get("request"))
            if record.get("type") == "action_intent" and request.get("purpose") == "compaction" and request.get("compaction_id") == compaction_id:
                action = payload.get("action_id")
            elif record.get("type") == "action_result" and action is not None and payload.get("action_id") == action:
                result = _dict(_dict(payload.get("result")).get("result"))
                usage = _dict(result.get("usage"))
                cached, written = pos_int(usage.get("cached_input_tokens")), pos_int(usage.get("cache_write_tokens"))
                cost = {"calls": 1, "input_uncached": max(0, pos_int(usage.get("input_tokens")) - cached - written),
                        "cache_write": written, "cache_read": cached, "output": pos_int(usage.get("output_tokens")), "model": self.model}
                return (cost if usage else None), "\n".join(_texts(result.get("parts")))
        return None, ""

    def _before(self, uuid: str) -> int | None:
        """The last main call's input + output before this compaction, where the folder still has it:
        the journal's last main completion before it, else the checkpoint of the generation the
        journal starts after (its ``last_reported_context_tokens``); None when the journal does not
        reach back to the compaction."""
        last, first_seq, purposes = None, None, {}
        for record in self.store.journal:
            first_seq = record.get("sequence") if first_seq is None else first_seq
            payload = _dict(record.get("payload"))
            if record.get("type") == "action_intent" and payload.get("kind") == "completion":
                purposes[payload.get("action_id")] = _dict(payload.get("request")).get("purpose")
            elif record.get("type") == "action_result" and purposes.get(payload.get("action_id")) == "agent":
                usage = _dict(_dict(_dict(payload.get("result")).get("result")).get("usage"))
                if usage:
                    last = pos_int(usage.get("input_tokens")) + pos_int(usage.get("output_tokens"))
            elif record.get("type") == "projection_delta" and any(
                _dict(d.get("entry")).get("id") == uuid for d in _list(payload.get("delta"))
            ):
                if last is not None:
                    return last
                checkpoint = self.store.generations.get(first_seq - 1) if first_seq.__class__ is int else None
                value = _dict(checkpoint).get("last_reported_context_tokens")
                return value if value.__class__ is int and value > 0 else None
        return None


def _message_texts(message: dict) -> list[str]:
    return _texts(message.get("content"))


def _after_fold(context: list[dict], before: list[MessageRecord]) -> tuple[list[str], list[MessageRecord]]:
    """What Vibe sends in place of what it folded (the texts of its injected messages and of the user
    messages it re-sends between them, in order), and the messages before the fold it kept (sent after
    them, in order), from the model's context now."""
    last_injection = _fold_block_end(context)
    if last_injection is None:
        return [], []
    injected = [t for item in context[: last_injection + 1] for t in _message_texts(_dict(item.get("message")))]
    kept: list[MessageRecord] = []
    start = 0
    for item in context[last_injection + 1:]:
        message = _dict(item.get("message"))
        texts = _message_texts(message)
        ids = [str_or_none(p.get("id")) for p in _list(message.get("content")) if _dict(p).get("type") == "tool_call"]
        ids += [str_or_none(message.get("tool_call_id"))] if message.get("role") == "tool" else []
        match = None
        for k in range(start, len(before)):
            rec = before[k]
            if rec.role != message.get("role") and not (rec.role == "tool" and message.get("role") == "tool"):
                continue
            if ids and any(b.tool_id in ids for b in rec.blocks):
                match = k
                break
            if texts and [b.text for b in rec.blocks if b.kind == "text"] == texts:
                match = k
                break
        if match is None:
            break
        kept.append(before[match])
        start = match + 1
    return injected, kept


def _fold_block_end(context: list[dict]) -> int | None:
    """The index of the last item of what a fold put at the head of the context: its injected
    messages (the one holding ``<compaction_summary>`` ends it) and the user messages re-sent between
    them; None when the context starts with no injection (no fold)."""
    if not context or context[0].get("source") != "injection":
        return None
    for i, item in enumerate(context):
        if "<compaction_summary>" in "".join(_message_texts(_dict(item.get("message")))):
            return i
    return 0


def _summary_of(injected: list[str]) -> str:
    for text in injected:
        if "<compaction_summary>" in text:
            inner = text.split("<compaction_summary>", 1)[1]
            return inner.split("</compaction_summary>", 1)[0].strip()
    return "\n\n".join(injected)


def parse_session(folder: Path, agent_id: str | None = None, agent_type: str | None = None) -> Iterator[Record]:
    store = _Store(folder)
    store.read(sub_agent=agent_id is not None)
    session = _Session(store, agent_id)
    session.run()
    yield from store.bad
    if not store.entries and not store.bad:
        yield BadLine(0, 0, f"{LABEL}: the session's history is empty (no entry in its current generation)")
    yield from session.messages
    yield from session.usage
    yield from session.folds
    yield from session.links
    meta = store.meta
    first_user = next((r for r in session.messages if r.role == "user" and not r.is_meta and r.blocks), None)
    title = str_or_none(meta.get("title")) or (first_user.blocks[0].text.splitlines()[0][:200] if first_user else None)
    yield SessionInfo(
        external_id=session.session_id,
        title=title,
        cwd=str_or_none(_dict(meta.get("environment")).get("working_directory")) or str_or_none(meta.get("origin_directory")),
        git_branch=str_or_none(meta.get("git_branch")),
        models=[session.model] if session.model else [],
        started_at=timestamp(meta.get("start_time")) or session.span.started_at,
        ended_at=timestamp(meta.get("end_time")) or session.span.ended_at,
        agent_id=agent_id,
        agent_type=agent_type,
    )


def parse(source: ParseInput) -> Iterator[Record]:
    """Records of one session folder (or of the folder one of its files is in); never raises."""
    path = Path(source.path)
    folder = session_folder(path)
    if folder is None:
        yield BadLine(0, 0, f"{path.name} is not {WHAT} (CURRENT beside generations/)")
        yield SessionInfo()
        return
    yield from guarded(parse_session(folder, source.agent_id, source.agent_type))


_CHILD = re.compile(rb'"childSessionId"\s*:\s*"([A-Za-z0-9_.-]{1,200})"')


def children(folder: Path) -> list[str]:
    """The child sessions (sub-agents) a session's history names, in order."""
    found: dict[str, None] = {}
    for path in sorted((folder / "chunks").glob("*.json")) if (folder / "chunks").is_dir() else ():
        try:
            found.update(dict.fromkeys(m.decode() for m in _CHILD.findall(path.read_bytes())))
        except OSError:
            continue
    return list(found)


def group(paths: list[Path]) -> list[SessionFiles]:
    """Each path as its session folder; a sub-agent's folder (``child-<id>/`` beside its parent)
    under the session whose history names it, else on its own."""
    folders = list(dict.fromkeys(session_folder(p) or p for p in paths))
    subs: dict[Path, list[SubagentFile]] = {}
    taken: set[Path] = set()
    for folder in folders:
        if not (folder / META).is_file():
            continue
        for child in children(folder):
            path = folder.parent / child
            if path not in taken and session_folder(path) == path:
                subs.setdefault(folder, []).append(SubagentFile(path=path, agent_id=child))
                taken.add(path)
    return [SessionFiles(format=NAME, main=f, subagents=subs.get(f, [])) for f in sorted(folders) if f not in taken]


FORMAT = ENTRY.format(parse=parse, group=group, rewrites=True)
