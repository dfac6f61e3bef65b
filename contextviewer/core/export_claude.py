"""The Claude Code session file (pure, no Django): the Claude Code format's own export target's
writer (declared on importers/claude_code/parser.py).

``claude_code_lines`` writes one JSONL line per message, as Claude Code writes its own session:
chained by uuid/parentUuid (the source's own tree), a fold marker starting a new chain, and where the
stored line still says what the stored blocks say, its own items (signatures, structured results).
``claude_code_session`` adds the file's name and how to resume it; ``claude_code_commands`` are the
commands that put it in place and resume it. The shared preparation and notes are core/export.py's.
"""

from __future__ import annotations

import json
import re
import uuid as uuidlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from .export import (
    DEFAULT_MODEL,
    Export,
    ExportMeta,
    Written,
    _iso,
    _Notes,
    _short_hash,
    _timestamp,
    _tool_input,
    anthropic_blocks,
    conversational,
    export_session_id,
    shell_path,
)

# The version exported Claude Code lines claim; they validate against its session schema
# (../shared/schemas/claude-code/v2.1.144, covering 2.1.97-2.1.144).
CLAUDE_CODE_VERSION = "2.1.144"

# Tool names Claude Code 2.1.144 knows (its session schema's BuiltInToolName); MCP tools are
# mcp__<server>__<tool>. Older names are mapped to their successors, others to an MCP-shaped name.
CLAUDE_CODE_TOOLS = frozenset(
    "Bash Read Write Edit Glob Grep WebSearch WebFetch Task TaskOutput TaskStop TaskCreate TaskUpdate "
    "TaskList TaskGet TodoWrite AskUserQuestion NotebookEdit EnterPlanMode ExitPlanMode EnterWorktree "
    "Skill KillShell ToolSearch SendMessage TeamCreate TeamDelete ListMcpResourcesTool ReadMcpResourceTool "
    "Agent CronCreate CronDelete CronList ExitWorktree bash Monitor PushNotification ScheduleWakeup "
    "ShareOnboardingGuide WaitForMcpServers RemoteTrigger PowerShell SendUserFile".split()
)
RENAMED_TOOLS = {"BashOutput": "TaskOutput", "KillBash": "KillShell"}
_MCP_NAME = re.compile(r"^mcp__[a-zA-Z0-9_:-]+(__[a-zA-Z0-9_-]+)?$")
_TOOL_ID = re.compile(r"^toolu_[a-zA-Z0-9]+$")
_MSG_ID = re.compile(r"^msg_[a-zA-Z0-9]+$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


# System lines Claude Code itself turns into user messages when it loads a session (a slash
# command run locally and its output): its own session file keeps them.
CLAUDE_CODE_SENT_SYSTEM = frozenset({"local_command"})


def claude_code_tool_name(name: str | None) -> str:
    """A tool name Claude Code's schema accepts (the same name where it already does)."""
    name = name or "unknown"
    if name in CLAUDE_CODE_TOOLS or _MCP_NAME.match(name):
        return name
    if name in RENAMED_TOOLS:
        return RENAMED_TOOLS[name]
    safe = re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_") or "tool"
    return f"mcp__exported__{safe[:60]}"


def anthropic_tool_id(tool_id: str | None) -> str:
    if tool_id and _TOOL_ID.match(tool_id):
        return tool_id
    return "toolu_" + _short_hash(tool_id or "missing")


def encoded_project_dir(cwd: str) -> str:
    """Claude Code's folder name for a working directory: every non-alphanumeric character -> '-'."""
    return re.sub(r"[^a-zA-Z0-9]", "-", cwd or "/")


def claude_code(
    messages: Sequence[dict],
    *,
    session_id: str,
    cwd: str,
    git_branch: str = "",
    model: str = "",
    version: str = CLAUDE_CODE_VERSION,
    start: datetime | None = None,
    title: str = "",
) -> Export:
    lines, notes = claude_code_lines(
        messages, session_id=session_id, cwd=cwd, git_branch=git_branch, model=model, version=version, start=start,
        title=title,
    )
    content = "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)
    return Export(content, notes, session_id)


def claude_code_lines(
    messages: Sequence[dict],
    *,
    session_id: str,
    cwd: str,
    git_branch: str = "",
    model: str = "",
    version: str = CLAUDE_CODE_VERSION,
    start: datetime | None = None,
    title: str = "",
) -> tuple[list[dict], list[str]]:
    """One JSONL line per message, chained by uuid/parentUuid; a fold marker starts a new chain
    (parentUuid null, logicalParentUuid: the last line before it), as Claude Code writes it.
    A title, when given, ends the file as a custom-title line (the name `claude --resume` lists)."""
    if not _UUID.match(session_id or ""):
        raise ValueError("session_id must be a lowercase UUID")
    notes = _Notes()
    messages = [{**m, "_at": i} for i, m in enumerate(messages)]
    kept = conversational(messages, notes, keep_fold_markers=True, keep_system=CLAUDE_CODE_SENT_SYSTEM)
    writer = _LineWriter(
        notes, session_id, cwd=cwd, git_branch=git_branch, model=model, version=version, start=start, resolve=_parents(messages)
    )
    for n, m in enumerate(kept):
        writer.add(n, m)
    lines = writer.lines
    if title and lines:
        lines.append({"type": "custom-title", "customTitle": " ".join(title.split())[:200], "sessionId": session_id})
    out = notes.render()
    if writer.renamed:
        out.append("tool names Claude Code does not know, renamed: " + ", ".join(sorted(writer.renamed)))
    return lines, out


class _LineWriter:
    """The lines of one export as claude_code_lines writes them, and what chains them: the uuid of
    the last line, the exported line of each source message, the message id given to each API
    message, the clock (one millisecond on where a message has no later time), the tools renamed."""

    def __init__(self, notes: _Notes, session_id: str, *, cwd: str, git_branch: str, model: str, version: str,
                 start: datetime | None, resolve: Callable[[int], int | None]):
        self.notes, self.session_id, self.model, self.resolve = notes, session_id, model, resolve
        self.namespace = uuidlib.UUID(session_id)
        self.clock = start or datetime(2026, 1, 1, tzinfo=UTC)
        # What every line says after its parentUuid, isSidechain and userType.
        self.fields = {"cwd": cwd or "/", "sessionId": session_id, "version": version, **({"gitBranch": git_branch} if git_branch else {})}
        self.lines: list[dict] = []
        self.parent: str | None = None  # the uuid of the last line written
        self.api_ids: dict[str, str] = {}
        self.line_ids: dict[int, str] = {}  # index in `messages` -> the uuid of its exported line
        self.renamed: set[str] = set()

    def tool_name(self, name):
        mapped = claude_code_tool_name(name)
        if mapped != (name or ""):
            self.renamed.add(f"{name} → {mapped}")
        return mapped

    def add(self, n: int, m: dict) -> None:
        """The line of the n-th kept message, if it has one (a message with nothing to say has none)."""
        ts = _timestamp(m.get("timestamp"))
        self.clock = ts if ts is not None and ts >= self.clock else self.clock + timedelta(milliseconds=1)
        uid = str(uuidlib.uuid5(self.namespace, f"line:{n}"))
        at = m.get("_at")
        head = {"parentUuid": self._parent_of(at), "isSidechain": False, "userType": "external", **self.fields}
        role = m.get("role")
        if role == "system" and m.get("subtype") in CLAUDE_CODE_SENT_SYSTEM:
            line = self._local_command(m, head, uid)
        elif role == "system":
            line = self._boundary(m, head, uid)
        elif role == "assistant":
            line = self._assistant(n, m, head, uid)
        else:
            line = self._user(m, head, uid)
        if line is None:
            return
        self.lines.append(line)
        self.parent = uid
        if at is not None:
            self.line_ids[at] = uid

    def _parent_of(self, at: int | None) -> str | None:
        """The uuid of the line a message's line hangs from: the line before, or for a message of the
        list (`at`, its index) the source's own tree (parallel calls answered off the main chain, a
        branch left behind), with the lines not exported skipped: the agent rebuilds what it built."""
        if at is None:
            return self.parent
        p = self.resolve(at)
        while p is not None and p not in self.line_ids:
            p = self.resolve(p)
        return self.line_ids.get(p) if p is not None else None

    def _local_command(self, m: dict, head: dict, uid: str) -> dict | None:
        """A slash command run locally, or its output: a system line Claude Code reads as a user message."""
        text = "\n".join(b.get("text") or "" for b in m.get("blocks") or () if b.get("kind") == "text")
        if not text.strip():
            return None
        return {**head, "type": "system", "subtype": m["subtype"], "content": text, "level": "info",
                "uuid": uid, "timestamp": _iso(self.clock), "isMeta": bool(m.get("is_meta"))}

    def _boundary(self, m: dict, head: dict, uid: str) -> dict:
        """A fold marker: it starts a new chain, its logical parent the last line before it."""
        return {
            **head,
            "parentUuid": None,
            "logicalParentUuid": self.parent,
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "level": "info",
            "compactMetadata": {"trigger": m.get("trigger") or "manual", "preTokens": int(m.get("pre_tokens") or 0)},
            "uuid": uid,
            "timestamp": _iso(self.clock),
        }

    def _assistant(self, n: int, m: dict, head: dict, uid: str) -> dict | None:
        raw = _raw_message(m)
        blocks = claude_code_content(m, raw, self.notes, self.tool_name)
        if not blocks:
            return None
        msg_id = self._message_id(m.get("api_message_id") or f"row:{n}")
        usage = m.get("usage") if isinstance(m.get("usage"), dict) else {"input_tokens": 0, "output_tokens": 0}
        if raw is not None and isinstance(raw.get("usage"), dict):
            usage = raw["usage"]  # the line's own, as the agent wrote it (it reads the last one)
        own_model = raw.get("model") if raw is not None and isinstance(raw.get("model"), str) else ""
        return {
            **head,
            "type": "assistant",
            "message": {
                # Each line's own model: the agent drops thinking written by another model.
                "model": own_model or m.get("model") or self.model or DEFAULT_MODEL,
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": blocks,
                "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn",
                "stop_sequence": None,
                "usage": usage,
            },
            "uuid": uid,
            "timestamp": _iso(self.clock),
        }

    def _message_id(self, api_id: str) -> str:
        """The message id of an API message (its own where it is one), the same for each of its lines."""
        msg_id = self.api_ids.get(api_id)
        if msg_id is None:
            msg_id = api_id if _MSG_ID.match(api_id) else "msg_" + _short_hash(f"{self.session_id}:{api_id}")
            self.api_ids[api_id] = msg_id
        return msg_id

    def _user(self, m: dict, head: dict, uid: str) -> dict | None:
        raw = None
        if m.get("is_compact_summary"):
            text = "\n".join(b.get("text") or "" for b in m.get("blocks") or () if b.get("kind") == "text")
            content: str | list = text
        else:
            raw = _raw_message(m)
            content = claude_code_content(m, raw, self.notes, self.tool_name)
            if not content:
                return None
            as_list = raw is not None and isinstance(raw.get("content"), list)
            if len(content) == 1 and content[0]["type"] == "text" and not as_list:
                content = content[0]["text"]  # a typed prompt, as Claude Code writes it
        line = {**head, "type": "user", "message": {"role": "user", "content": content}, "uuid": uid, "timestamp": _iso(self.clock)}
        extra = _raw_line_fields(m, content, raw)
        if extra:
            line.update(extra)
        if m.get("is_meta"):
            line["isMeta"] = True
        if m.get("is_compact_summary"):
            line["isCompactSummary"] = True
            line["isVisibleInTranscriptOnly"] = True
        return line


def _parents(messages: Sequence[dict]):
    """index -> the index of its parent line in `messages` (None: a root), from uuid/parent_uuid.
    A parent that is not in the list (a progress line the importer does not keep, a line before
    the exported part) is taken as the message just before; a message without a uuid follows the
    one before it."""
    index = {m["uuid"]: i for i, m in enumerate(messages) if isinstance(m.get("uuid"), str) and m.get("uuid")}

    def resolve(i: int) -> int | None:
        m = messages[i]
        if not m.get("uuid"):
            return i - 1 if i > 0 else None
        p = m.get("parent_uuid")
        if not p:
            return None
        j = index.get(p)
        if j is not None and j < i:
            return j
        return i - 1 if i > 0 else None

    return resolve


def _raw_message(m: dict) -> dict | None:
    """The API message of the message's stored Claude Code line (``raw``), if it has one."""
    raw = m.get("raw")
    if not isinstance(raw, str) or not raw.startswith("{"):
        return None
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    message = obj.get("message") if isinstance(obj, dict) else None
    return message if isinstance(message, dict) and "content" in message else None


def _result_text(content) -> str | None:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, dict) and part.get("type") == "image":
            source = part.get("source") if isinstance(part.get("source"), dict) else {}
            if not isinstance(source.get("data"), str) or source["data"].startswith("[contextviewer: "):
                return None  # its data was left out: the stored block says so, the line cannot
        else:
            return None
    return "\n".join(texts)


def _same_item(b: dict, item, tool_name) -> dict | None:
    """The line's own content item for block `b` when it says exactly what the stored block says
    (same kind, ids, text and input: masking or a repair made them differ, and then the block is
    written from the stored copy); None otherwise."""
    if not isinstance(item, dict):
        return None
    kind, typ, text = b.get("kind"), item.get("type"), b.get("text") or ""
    if kind == "text" and typ == "text":
        return dict(item) if item.get("text") == text else None  # blank ones too: the agent's file keeps them
    if kind == "thinking" and typ == "thinking":
        return dict(item) if item.get("thinking") == text and isinstance(item.get("signature"), str) and item["signature"] else None
    if kind == "thinking" and typ == "redacted_thinking":
        return dict(item) if b.get("raw_type") == "redacted_thinking" and isinstance(item.get("data"), str) else None
    if kind == "tool_call" and typ == "tool_use":
        name = item.get("name")
        # The name as the agent wrote it (a tool it has since renamed included: it sent it so).
        if item.get("id") == b.get("tool_id") and _TOOL_ID.match(item.get("id") or "") and isinstance(name, str) \
                and name == b.get("tool_name") and item.get("input") == _tool_input(b):
            return dict(item)
        return None
    if kind == "tool_result" and typ == "tool_result":
        if item.get("tool_use_id") == b.get("tool_id") and _TOOL_ID.match(item.get("tool_use_id") or "") \
                and _result_text(item.get("content")) == text and (item.get("is_error") is True) == bool(b.get("is_error")):
            return dict(item)
        return None
    if kind == "image" and typ == "image":
        source = item.get("source") if isinstance(item.get("source"), dict) else {}
        data = source.get("data")
        if isinstance(data, str) and data and not data.startswith("[contextviewer: ") and data == b.get("data"):
            return dict(item)
    return None


def _raw_line_fields(m: dict, content, raw: dict | None) -> dict:
    """What a user line of the agent's own carries beside its message and the agent reads back when
    it resumes (a tool's structured result: a background task it started, a file it read), when
    the message is written exactly as that line held it."""
    line = m.get("raw")
    if raw is None or content != raw.get("content") or not isinstance(line, str):
        return {}
    obj = json.loads(line)
    return {k: obj[k] for k in ("toolUseResult",) if k in obj}


def claude_code_content(m: dict, raw: dict | None, notes: _Notes, tool_name) -> list[dict]:
    """A message's content for a Claude Code line: where the stored line (`raw`, its API message)
    holds the same blocks, its own items (a tool result's content as a string or a list of blocks,
    `is_error: false`, a thinking signature), else the blocks written from the stored copy."""
    blocks = m.get("blocks") or []
    content = raw.get("content") if raw is not None else None
    items = [c for c in content if c is not None] if isinstance(content, list) else None
    if items is None or len(items) != len(blocks) or m.get("repaired"):
        return anthropic_blocks(m, notes, tool_name, anthropic_tool_id)
    out: list[dict] = []
    for b, item in zip(blocks, items):
        exact = _same_item(b, item, tool_name)
        if exact is not None:
            if exact.get("type") == "tool_use" and claude_code_tool_name(exact["name"]) != exact["name"]:
                notes.add(f"call of {exact['name']} kept under the name the agent wrote (a tool it no longer has; "
                          f"the session schema of {CLAUDE_CODE_VERSION} does not list it)")
            out.append(exact)
        else:
            out.extend(anthropic_blocks({"blocks": [b]}, notes, tool_name, anthropic_tool_id))
    return out


def claude_code_session(messages: Sequence[dict], meta: ExportMeta) -> Written:
    """A session file `claude --resume` reads, with where to save it (the Claude Code format's own
    export target, declared on its module)."""
    session_id = export_session_id(meta.session_seed)
    cwd = meta.cwd or "/"
    result = claude_code(messages, session_id=session_id, cwd=cwd, git_branch=meta.git_branch, model=meta.model,
                         title=meta.title)
    hint = f"Save as ~/.claude/projects/{encoded_project_dir(cwd)}/{session_id}.jsonl, then run: claude --resume {session_id}"
    return Written(result.content, result.notes, f"{session_id}.jsonl", session_id, hint)



# How to continue the file in Claude Code (the pages show it beside the links).
RESUME_HELP = (
    "To continue the Claude Code file: save it under ~/.claude/projects/<the working directory with every "
    "character but letters and digits as ->/ and run claude --resume <file name without .jsonl>."
)


def claude_code_commands(filename: str, session_id: str, cwd: str, download: str) -> list[str]:
    """The commands that move a downloaded session file where Claude Code looks and resume it."""
    cwd = cwd or "/"
    folder = f"~/.claude/projects/{encoded_project_dir(cwd)}"
    return [f"mkdir -p {folder}", f"mv {download} {folder}/", f"cd {shell_path(cwd)} && claude --resume {session_id}"]
