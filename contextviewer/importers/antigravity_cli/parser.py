"""Antigravity CLI trajectories (``~/.gemini/antigravity-cli/conversations/<uuid>.trajectory.json``) ->
normalized records (pure, no Django).

The CLI does not run here (it needs a Google login; ../shared/docs/stack-notes.md; npm's
``antigravity-cli`` is a 0.0.1 placeholder, and ``@google/antigravity-cli`` does not exist), and no public
trajectory files under an open license were found, so these facts come from other readers' source (facts
carry over, code does not; tests/antigravity_trajectories.py writes a sample from them):

- wesm/agentsview, ``internal/parser/antigravity_cli.go`` (commit a5de5dac): the CLI's folder
  ``~/.gemini/antigravity-cli/`` with ``conversations/<uuid>.db`` (SQLite, protobuf steps; read there by a
  heuristic string decode), ``conversations/<uuid>.pb`` and ``implicit/<uuid>.pb`` (AES-encrypted),
  ``brain/<uuid>/*.md`` (task and plan documents), ``history.jsonl`` (rows ``{display, workspace,
  timestamp (ms), conversationId}``), ``cache/last_conversations.json`` (``{workspace: conversationId}``);
  and ``<uuid>.trajectory.json``, agy-reader's decode of the trajectory, preferred by that reader as the
  one with structured tool calls: ``{trajectoryId, cascadeId, steps[], generatorMetadata[], agyReader:
  {parentCascadeId}}``; a step ``{type, status, metadata: {createdAt, executionId}}`` with one payload by
  type: ``CORTEX_STEP_TYPE_USER_INPUT`` ``userInput.userResponse``; ``PLANNER_RESPONSE``
  ``plannerResponse {thinking, response, toolCalls[{id, name, argumentsJson}]}``; ``RUN_COMMAND``
  ``runCommand {commandLine, cwd, exitCode, combinedOutput (a string, or {stdout, stderr, output,
  text, full})}``; ``VIEW_FILE`` ``viewFile {absolutePathUri, content}``; ``CODE_ACTION`` ``codeAction
  {description, actionResult (edit.diff.unifiedDiff.lines[{text, type UNIFIED_DIFF_LINE_TYPE_INSERT |
  _DELETE | ...}], or a string)}``; ``GREP_SEARCH`` ``grepSearch {query, searchPathUri}``;
  ``LIST_DIRECTORY`` ``listDirectory.directoryPathUri``; ``ERROR_MESSAGE`` ``errorMessage.error
  {userErrorMessage, modelErrorMessage}``; ``SYSTEM_MESSAGE`` ``systemMessage.message``; ``CHECKPOINT``
  ``checkpoint {userRequests[], sessionSummary}``; a tool step's ``metadata.executionId`` is the ``id`` of
  the call it answers; ``generatorMetadata[]`` is one model call each: ``stepIndices`` (the first a
  ``PLANNER_RESPONSE``, no planner step in two generations), ``chatModel {model, usage {model,
  inputTokens, outputTokens (thinking included), thinkingOutputTokens, cacheReadTokens}, chatStartMetadata
  {createdAt}}``, counts written as JSON strings; an empty ``usage`` is a failed or retried generation;
  ``agyReader.parentCascadeId`` makes the trajectory a sub-agent of that cascade; the tool names
  (``run_command``, ``view_file``, ``write_to_file``, ``replace_file_content``, ``invoke_subagent`` with
  ``name``/``TypeName``...);
- wk23aau/GPI, ``trajectory/README.md`` (commit 369235a3): the language server's trajectory of a cascade
  (``trajectoryId``, ``cascadeId``, ``CORTEX_TRAJECTORY_TYPE_CASCADE``, steps such as ``PLANNER_RESPONSE``,
  ``USER_INPUT``, ``RUN_COMMAND``, ``EPHEMERAL_MESSAGE``);
- volcanlock/antigravity2api-nodejs, ``src/utils/trajectory.js`` (commit 2f2fd97e): a
  ``generatorMetadata`` entry's ``chatModel.chatStartMetadata`` holds ``createdAt`` (RFC 3339, nanoseconds),
  ``checkpointIndex`` and ``contextWindowMetadata.estimatedTokensUsed``; ``chatModel.model`` is a
  ``MODEL_PLACEHOLDER_M..`` name.

Mapping: a trajectory is one conversation (its ``cascadeId``, else the file's uuid); a message's uuid is
``<cascade>:<step index>``. A user input is a user message; a planner response an assistant message
(thinking, text, tool calls, the input from ``argumentsJson``); each tool step a ``tool`` message whose
result answers the call named by its ``executionId`` (a command's exit code on the block's extra, an error
step's text an error). A generation with usage is one model call (input = ``inputTokens`` uncached,
``cacheReadTokens`` read from the cache, ``outputTokens``, its reasoning apart), over the planner messages
of its ``stepIndices``; a planner message no such generation claims is a call of its own with no usage
(flagged ``usage_unmeasured``). A checkpoint is a compaction: a ``system`` ``compact_boundary`` marker,
then its summary as a user message and a ``FoldRecord`` (no trigger or token figures: none is written). A
system message is a ``system`` message; a step of another type an ``other`` message with its payload. A
trajectory whose ``agyReader.parentCascadeId`` names another in the same folder is its sub-agent (group),
linked to the parent's ``invoke_subagent`` calls in order when their numbers agree. The working folder is
the conversation's ``workspace`` in ``cache/last_conversations.json`` or ``history.jsonl``, else a
command's ``cwd``; the title is the first prompt's first line. Not read: the ``.db``/``.pb`` files (their
protobuf and encryption are the CLI's own), the ``brain/`` documents (artifacts, not turns), a tool
call's arguments written other than as a JSON object (kept as text). Nothing here raises.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
from contextviewer.importers.antigravity_cli.entry import ENTRY, NAME, STEP_PREFIX, SUFFIX, sniff  # noqa: F401
from contextviewer.importers.common import TimeSpan, compact_json, json_kind, parse_timestamp, str_or_none, tool_call
from contextviewer.importers.driver import unexpected
from contextviewer.importers.formats import ParseInput, SessionFiles, SubagentFile
from contextviewer.importers.jsondoc import read_json_file, read_source

WHAT = "an Antigravity CLI trajectory"
SPAWN = frozenset({"invoke_subagent"})
TOOL_STEPS = frozenset({"RUN_COMMAND", "VIEW_FILE", "CODE_ACTION", "GREP_SEARCH", "LIST_DIRECTORY", "ERROR_MESSAGE"})
MAX_SIDE_FILE = 8 << 20  # history.jsonl, last_conversations.json, a sibling trajectory read for its parent


def _dict(value: Any) -> dict:
    return value if value.__class__ is dict else {}


def _count(value: Any) -> int:
    """A token count, written as a JSON string (``"19733"``) or a number; anything else (or negative) 0."""
    if value.__class__ is str:
        value = value.strip()
        return int(value) if value.isdigit() and len(value) < 19 else 0
    if value.__class__ is int:
        return max(value, 0)
    if value.__class__ is float and value == value and 0 < value < 1e18:
        return int(value)
    return 0


def _uuid_or_none(value: Any) -> str | None:
    """A cascade id as agentsview takes it: 36 characters, dashes at 8, 13, 18, 23, hex elsewhere (lower)."""
    if value.__class__ is not str or len(value) != 36:
        return None
    for i, c in enumerate(value):
        if (c != "-") if i in (8, 13, 18, 23) else c not in "0123456789abcdefABCDEF":
            return None
    return value.lower()


def _stem(path: Path) -> str:
    return path.name.removesuffix(SUFFIX).removesuffix(".json")


def _short(kind: Any) -> str:
    return kind.removeprefix(STEP_PREFIX) if kind.__class__ is str else ""


def _output(value: Any) -> str:
    """A command's ``combinedOutput``: a string, or an object of ``stdout``/``stderr``/... strings."""
    if value is None:
        return ""
    if value.__class__ is str:
        return value
    if value.__class__ is dict:
        parts = [value[k] for k in ("stdout", "stderr", "output", "text", "full") if str_or_none(value.get(k))]
        if parts:
            return "\n".join(parts)
    return compact_json(value)


def _diff(result: Any) -> str | None:
    """A code action's ``actionResult.edit.diff.unifiedDiff.lines`` as a unified diff, else None."""
    lines = _dict(_dict(_dict(_dict(result).get("edit")).get("diff")).get("unifiedDiff")).get("lines")
    if lines.__class__ is not list or not lines:
        return None
    marks = {"UNIFIED_DIFF_LINE_TYPE_INSERT": "+", "UNIFIED_DIFF_LINE_TYPE_DELETE": "-"}
    return "\n".join(marks.get(line.get("type"), " ") + str(line.get("text") or "") for line in lines if line.__class__ is dict)


def _result(kind: str, step: dict) -> tuple[str, bool, dict | None]:
    """(the text of a tool step's result, whether it is an error, what the block's extra holds)."""
    if kind == "RUN_COMMAND":
        run = _dict(step.get("runCommand"))
        code = run.get("exitCode")
        return _output(run.get("combinedOutput")), False, {"exit_code": code} if code.__class__ is int else None
    if kind == "VIEW_FILE":
        content = _dict(step.get("viewFile")).get("content")
        return content if content.__class__ is str else "", False, None
    if kind == "CODE_ACTION":
        result = _dict(step.get("codeAction")).get("actionResult")
        diff = _diff(result)
        if diff is not None:
            return diff, False, None
        return (result if result.__class__ is str else "" if result is None else compact_json(result)), False, None
    if kind == "GREP_SEARCH":
        grep = _dict(step.get("grepSearch"))
        return f"[searched {grep.get('query')!r} in {grep.get('searchPathUri') or '?'}]", False, None
    if kind == "LIST_DIRECTORY":
        return f"[listed {_dict(step.get('listDirectory')).get('directoryPathUri') or '?'}]", False, None
    error = _dict(_dict(step.get("errorMessage")).get("error"))
    parts = [str_or_none(error.get("userErrorMessage")), str_or_none(error.get("modelErrorMessage"))]
    return "\n".join(p for p in parts if p) or "[error]", True, None


def _arguments(raw: Any) -> Any:
    if raw.__class__ is not str:
        return raw if raw is not None else {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"arguments": raw}
    return value if value.__class__ is dict else {"arguments": raw}


class _Trajectory:
    """The records of one trajectory, step by step."""

    def __init__(self, sid: str):
        self.sid = sid
        self.span = TimeSpan()
        self.records: list[MessageRecord] = []
        self.folds: list[FoldRecord] = []
        self.bad: list[BadLine] = []
        self.planners: dict[int, MessageRecord] = {}  # step index -> its assistant message
        self.commands_cwd: str | None = None

    def _add(self, index: int, **kwargs) -> MessageRecord:
        record = MessageRecord(line_no=len(self.records) + 1, offset=index, session_id=self.sid, **kwargs)
        self.records.append(record)
        return record

    def step(self, index: int, step: dict) -> None:
        kind = _short(step.get("type"))
        ts = self.span.saw(parse_timestamp(_dict(step.get("metadata")).get("createdAt")))
        uuid, raw = f"{self.sid}:{index}", compact_json(step)
        if kind == "USER_INPUT":
            text = _dict(step.get("userInput")).get("userResponse")
            self._add(index, role="user", record_type=kind, raw=raw, uuid=uuid, timestamp=ts,
                      blocks=[Block("text", text=text)] if str_or_none(text) else [])
        elif kind == "PLANNER_RESPONSE":
            self.planner(index, step, uuid, raw, ts)
        elif kind in TOOL_STEPS:
            text, is_error, extra = _result(kind, step)
            tool_id = str_or_none(_dict(step.get("metadata")).get("executionId"))
            block = Block("tool_result", text=text, tool_id=tool_id, is_error=is_error)
            block.extra = extra
            self._add(index, role="tool", record_type=kind, raw=raw, uuid=uuid, timestamp=ts, blocks=[block])
            if kind == "RUN_COMMAND" and self.commands_cwd is None:
                self.commands_cwd = str_or_none(_dict(step.get("runCommand")).get("cwd"))
        elif kind == "CHECKPOINT":
            self.checkpoint(index, step, uuid, raw, ts)
        elif kind == "SYSTEM_MESSAGE":
            text = _dict(step.get("systemMessage")).get("message")
            self._add(index, role="system", record_type=kind, raw=raw, uuid=uuid, timestamp=ts,
                      blocks=[Block("text", text=text)] if str_or_none(text) else [])
        else:
            payload = {k: v for k, v in step.items() if k not in ("type", "status", "metadata")}
            self._add(index, role="other", record_type=kind or "(none)", raw=raw, uuid=uuid, timestamp=ts,
                      blocks=[Block("other", text=compact_json(payload)[:200], raw_type=kind or json_kind(step.get("type")))])

    def planner(self, index: int, step: dict, uuid: str, raw: str, ts: datetime | None) -> None:
        response = _dict(step.get("plannerResponse"))
        blocks: list[Block] = []
        if str_or_none(response.get("thinking")):
            blocks.append(Block("thinking", text=response["thinking"]))
        if str_or_none(response.get("response")):
            blocks.append(Block("text", text=response["response"]))
        calls = response.get("toolCalls")
        for n, call in enumerate(calls if calls.__class__ is list else (), start=1):
            call = _dict(call)
            blocks.append(tool_call(str_or_none(call.get("id")) or f"{uuid}:{n}", str_or_none(call.get("name")),
                                    _arguments(call.get("argumentsJson"))))
        self.planners[index] = self._add(index, role="assistant", record_type="PLANNER_RESPONSE", raw=raw, uuid=uuid,
                                         timestamp=ts, blocks=blocks)

    def checkpoint(self, index: int, step: dict, uuid: str, raw: str, ts: datetime | None) -> None:
        point = _dict(step.get("checkpoint"))
        requests = [r for r in point.get("userRequests") or () if r.__class__ is str] \
            if point.get("userRequests").__class__ is list else []  # fmt: skip
        parts = ([f"User requests: {', '.join(requests)}"] if requests else []) + \
            ([point["sessionSummary"]] if str_or_none(point.get("sessionSummary")) else [])  # fmt: skip
        summary = "\n".join(parts)
        marker = self._add(index, role="system", record_type="compaction", subtype="compact_boundary",
                           raw=compact_json({"summary_message": uuid}), uuid=f"{uuid}:boundary", timestamp=ts,
                           blocks=[Block("text", text="Conversation compacted")])
        self._add(index, role="user", record_type="CHECKPOINT", raw=raw, uuid=uuid, timestamp=ts,
                  blocks=[Block("text", text=summary)] if summary else [], is_compact_summary=True)
        self.folds.append(FoldRecord(line_no=marker.line_no, boundary_uuid=marker.uuid, kind="compact", trigger=None,
                                     tokens_before=None, timestamp=ts, summary_uuid=uuid, summary_text=summary))

    def calls(self, generations: Any) -> tuple[list[UsageRecord], list[str]]:
        """The model calls: each generation with usage over its planner messages; the rest one each."""
        out: list[UsageRecord] = []
        models: dict[str, None] = {}
        claimed: set[int] = set()
        for g, gen in enumerate(generations if generations.__class__ is list else ()):
            chat = _dict(_dict(gen).get("chatModel"))
            usage = _dict(chat.get("usage"))
            counts = [_count(usage.get(k)) for k in ("inputTokens", "outputTokens", "thinkingOutputTokens", "cacheReadTokens")]
            indices = _dict(gen).get("stepIndices")
            mine = [i for i in (indices if indices.__class__ is list else ()) if i.__class__ is int
                    and i in self.planners and i not in claimed]  # fmt: skip
            if not (counts[0] or counts[1] or counts[3]) or not mine:
                continue  # an empty usage: a failed or retried generation (its planner, if any, stands alone)
            claimed.update(mine)
            first = self.planners[mine[0]]
            model = str_or_none(chat.get("model")) or str_or_none(usage.get("model"))
            key = f"{self.sid}:gen:{g}"
            for i in mine:
                self.planners[i].api_message_id, self.planners[i].model = key, model
            ts = parse_timestamp(_dict(chat.get("chatStartMetadata")).get("createdAt")) or first.timestamp
            out.append(UsageRecord(api_message_id=key, request_id=None, message_uuid=first.uuid, line_no=first.line_no,
                                   model=model, input_uncached=counts[0], cache_read=counts[3], output=counts[1],
                                   reasoning=counts[2] or None, timestamp=ts))
            if model:
                models[model] = None
        for i, record in self.planners.items():
            if i not in claimed:
                record.api_message_id = record.uuid
                record.flags["usage_unmeasured"] = True
                out.append(UsageRecord(api_message_id=record.uuid, request_id=None, message_uuid=record.uuid,
                                       line_no=record.line_no, model=None, timestamp=record.timestamp))
        out.sort(key=lambda c: c.line_no)
        return out, list(models)

    def title(self) -> str | None:
        first = next((r for r in self.records if r.role == "user" and not r.is_compact_summary), None)
        text = next((b.text for b in first.blocks if b.kind == "text" and b.text.strip()), None) if first else None
        return text.strip().splitlines()[0][:200] if text else None


def _small_json(path: Path) -> Any:
    try:
        if not path.is_file() or path.stat().st_size > MAX_SIDE_FILE:
            return None
        doc = read_json_file(path, max_bytes=MAX_SIDE_FILE)
    except OSError:
        return None
    return None if isinstance(doc, BadLine) else doc.value


def _workspace(root: Path, sid: str) -> str | None:
    """The conversation's workspace: ``cache/last_conversations.json`` (``{workspace: id}``, the newer),
    else the last ``history.jsonl`` row of the conversation that names one."""
    cache = _small_json(root / "cache" / "last_conversations.json")
    for workspace, cid in _dict(cache).items():
        if cid == sid and workspace.strip():
            return workspace.strip()
    found = None
    try:
        history = root / "history.jsonl"
        if history.is_file() and history.stat().st_size <= MAX_SIDE_FILE:
            for line in history.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if row.__class__ is dict and row.get("conversationId") == sid and str_or_none(row.get("workspace")):
                    found = row["workspace"]
    except OSError:
        return None
    return found


def _parent_of(value: Any) -> str | None:
    return _uuid_or_none(_dict(_dict(value).get("agyReader")).get("parentCascadeId"))


def _children(path: Path, sid: str) -> list[tuple[str, datetime | None]]:
    """The trajectories beside this one that name it their parent: (cascade id, first step's time)."""
    out = []
    try:
        siblings = sorted(p for p in path.parent.iterdir() if p.name.endswith(SUFFIX) and p != path)
    except OSError:
        return []
    for sibling in siblings:
        value = _small_json(sibling)
        if _parent_of(value) == sid:
            steps = _dict(value).get("steps")
            first = steps[0] if steps.__class__ is list and steps else None
            out.append((_uuid_or_none(value.get("cascadeId")) or _stem(sibling),
                        parse_timestamp(_dict(_dict(first).get("metadata")).get("createdAt"))))
    far = datetime.max.replace(tzinfo=UTC)
    return sorted(out, key=lambda c: (c[1] or far, c[0]))


def _links(reader: _Trajectory, path: Path) -> list[AgentLink]:
    """Each sub-agent trajectory linked to the parent's ``invoke_subagent`` call, in order, when their numbers
    agree; else linked to no call."""
    children = _children(path, reader.sid)
    spawns = [(r, b) for r in reader.records for b in r.blocks if b.kind == "tool_call" and (b.tool_name or "").lower() in SPAWN]
    out = []
    for n, (child, _ts) in enumerate(children):
        if len(spawns) == len(children):
            record, block = spawns[n]
            args = _dict(block.tool_input)
            out.append(AgentLink(child, block.tool_id, record.line_no, str_or_none(args.get("name")) or str_or_none(args.get("TypeName")),
                                 str_or_none(args.get("Prompt")) or str_or_none(args.get("description"))))
        else:
            out.append(AgentLink(child, None, reader.records[-1].line_no if reader.records else 0))
    return out


def parse(source: ParseInput) -> Iterator[Record]:
    """Records of one Antigravity CLI trajectory. Never raises."""
    path = Path(source.path)
    try:
        doc = read_source(source, WHAT)
        if isinstance(doc, BadLine):
            yield doc
            yield SessionInfo()
            return
        value = doc.value
        if value.__class__ is not dict or value.get("steps").__class__ is not list:
            got = json_kind(value) if value.__class__ is not dict else f"an object whose steps are {json_kind(value.get('steps'))}"
            yield BadLine(0, 0, f"the file is {got}, not {WHAT} (a JSON object with its cascadeId and a list of steps)")
            yield SessionInfo()
            return
        sid = _uuid_or_none(value.get("cascadeId")) or str_or_none(value.get("cascadeId")) or _stem(path)
        reader = _Trajectory(sid)
        for index, step in enumerate(value["steps"]):
            if step.__class__ is dict:
                reader.step(index, step)
            else:
                yield BadLine(index + 1, 0, f"Antigravity CLI trajectory step {index}: {json_kind(step)}, not a step object")
        calls, models = reader.calls(value.get("generatorMetadata"))
        yield from reader.records
        yield from calls
        yield from reader.folds
        if source.agent_id is None:
            yield from _links(reader, path)
        yield SessionInfo(external_id=sid, title=reader.title(),
                          cwd=_workspace(path.parent.parent, sid) or reader.commands_cwd, models=models,
                          started_at=reader.span.started_at, ended_at=reader.span.ended_at)
    except Exception as exc:  # a last resort: never raise
        yield BadLine(0, 0, unexpected(exc))
        yield SessionInfo()


def group(paths: list[Path]) -> list[SessionFiles]:
    """Each trajectory with the sub-agent trajectories that name it their parent (``agyReader.
    parentCascadeId``); a sub-agent whose parent is not among the paths goes under that parent's id."""
    ids: dict[str, Path] = {}
    parents: dict[Path, str] = {}
    for path in sorted(paths):
        value = _small_json(path)
        ids[_uuid_or_none(_dict(value).get("cascadeId")) or _stem(path)] = path
        parent = _parent_of(value)
        if parent is not None:
            parents[path] = parent
    mains: dict[Path, list[SubagentFile]] = {p: [] for p in sorted(paths) if p not in parents}
    orphans: dict[str, list[SubagentFile]] = {}
    for path, parent in sorted(parents.items()):
        child_id = next((i for i, p in ids.items() if p == path), _stem(path))
        entry = SubagentFile(path, child_id)
        owner = ids.get(parent)
        if owner is not None and owner in mains:
            mains[owner].append(entry)
        else:
            orphans.setdefault(parent, []).append(entry)
    out = [SessionFiles(format=NAME, main=m, subagents=s) for m, s in mains.items()]
    out += [SessionFiles(format=NAME, main=None, subagents=s, session_id=sid) for sid, s in sorted(orphans.items())]
    return out


FORMAT = ENTRY.format(parse=parse, group=group)
