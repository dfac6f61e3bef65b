"""Synthetic Claude Code 2.1.x sessions, for tests and the import benchmark.

Pure (no Django), deterministic for a seed, streaming (a 200 MB session is written line by line)
and fast (text comes from slices of one prepared corpus). What a session holds:

- ``<dir>/<sessionId>.jsonl``: user prompts; assistant API responses split one line per content
  block (thinking, text, tool_use) sharing ``message.id``/``requestId`` and a repeated ``usage``
  whose cache read/write grow like a real session (``stop_reason`` null, streaming
  ``output_tokens``); tool results with ``toolUseResult`` (code, JSON, logs, file lists);
  ``progress`` (hook/bash/agent), ``file-history-snapshot`` and ``system/turn_duration`` lines;
- a ``Task`` call whose sub-agent runs in ``<dir>/<sessionId>/subagents/agent-<id>.jsonl`` (with
  its ``.meta.json``), linked by ``agent_progress`` lines and ``toolUseResult.agentId``;
- one auto ``compact_boundary`` whose ``preTokens`` is the measured context of the last call before
  it, followed by the ``isCompactSummary`` user message, plus the compaction call's own transcript
  in ``subagents/agent-acompact-<hex>.jsonl``. With ``compaction_replay`` that file has the 2.1
  layout: it first replays the conversation the fold puts away (the parent's own lines, same uuids
  and message ids, marked ``isSidechain``/``agentId``), then the summarizer's prompt and its one
  call, written twice under one uuid: a streaming placeholder (``output_tokens`` 6, no
  ``stop_reason``) and the final record with the real output.

Nothing here counts what it wrote for the tests: tests count the files themselves.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

VERSION = "2.1.39"
MODEL = "claude-opus-4-6"
SUBAGENT_MODEL = "claude-haiku-4-5-20251001"
HARNESS_TOKENS = 14_800  # system prompt + tool definitions: in every call, never in the log
AUTO_COMPACT_TOKENS = 155_000
DEFAULT_MESSAGES = 200
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

# -- the corpus ---------------------------------------------------------------------------------

_WORDS = (
    "context window session model token cache compaction summary message turn tool result call "
    "import parser stream buffer offset line record usage budget segment fold handoff review "
    "request response worker queue retry timeout config setting path module function class value "
    "error warning check test fixture branch commit patch diff build deploy metric index schema"
).split()
_PROSE = (
    "The importer reads each line once and keeps only what it needs.",
    "Let me check the failing test before changing the parser.",
    "I'll run the suite again with the verbose flag to see which case breaks.",
    "The cache read grows with every call because the prefix is reused.",
    "Résumé of the change: the reader now skips over-long lines — no more crashes.",
    "Found it: the offset was computed before the BOM was stripped.",
    "Next, update the migration and re-run the integration tests.",
    "Ce fichier contient les réglages par défaut (naïve approach → fixed).",
    "The build passes now; 3 warnings remain in the legacy module ✓",
)
_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARNING", "ERROR")
_CORPUS: dict[str, str] = {}


def _corpus(kind: str) -> str:
    """Large deterministic texts (code, json, log, prose, files) to slice tool output from."""
    if not _CORPUS:
        rng = random.Random(20260301)
        w = _WORDS
        code: list[str] = []
        for n in range(900):
            name = f"{rng.choice(w)}_{rng.choice(w)}"
            code.append(f"def {name}(self, {rng.choice(w)}: int = {n}) -> dict:")
            code.append(f'    """Return the {rng.choice(w)} of the {rng.choice(w)} for {rng.choice(w)}."""')
            for _ in range(rng.randint(2, 7)):
                code.append(
                    f"    {rng.choice(w)} = self.{rng.choice(w)}.get({rng.choice(w)!r}, {rng.randint(0, 999)})"
                )
            code.append(f"    return {{{rng.choice(w)!r}: {rng.choice(w)}}}\n")
        _CORPUS["code"] = "\n".join(code)
        items = [
            {
                "id": i,
                "name": f"{rng.choice(w)}-{rng.choice(w)}",
                "status": rng.choice(["ok", "pending", "failed"]),
                "tokens": rng.randint(10, 90000),
                "tags": rng.sample(w, 3),
                "nested": {"path": f"/srv/app/{rng.choice(w)}/{rng.choice(w)}.py", "line": rng.randint(1, 900)},
            }
            for i in range(1800)
        ]
        _CORPUS["json"] = json.dumps(items, indent=2)
        logs = []
        for i in range(6000):
            logs.append(
                f"2026-03-01 {9 + i // 3600 % 12:02d}:{i // 60 % 60:02d}:{i % 60:02d},{rng.randint(0, 999):03d} "
                f"{rng.choice(_LEVELS)} [{rng.choice(w)}-{rng.randint(1, 8)}] {rng.choice(w)} {rng.choice(w)} "
                f"{rng.randint(1, 99999)} items in {rng.random():.3f}s"
            )
        _CORPUS["log"] = "\n".join(logs)
        _CORPUS["prose"] = " ".join(rng.choice(_PROSE) for _ in range(3000))
        _CORPUS["files"] = "\n".join(
            f"src/{rng.choice(w)}/{rng.choice(w)}_{rng.choice(w)}.py:{rng.randint(1, 900)}: {rng.choice(w)}"
            for _ in range(6000)
        )
    return _CORPUS[kind]


def _snippet(rng: random.Random, kind: str, size: int) -> str:
    text = _corpus(kind)
    size = max(1, min(size, len(text) - 1))
    start = rng.randrange(0, len(text) - size)
    nl = text.find("\n", start, start + 200)
    if nl >= 0 and nl + 1 < len(text) - size:
        start = nl + 1
    return text[start : start + size]


# -- the writer ---------------------------------------------------------------------------------


class _Writer:
    def __init__(self, rng: random.Random, path: Path, session_id: str, cwd: str, clock: list[float]):
        self.rng = rng
        self.path = path
        self.fh = open(path, "wb", buffering=1 << 20)  # noqa: SIM115 - closed by close()
        self.session_id = session_id
        self.cwd = cwd
        self.clock = clock  # shared [epoch seconds], moves forward
        self.bytes = 0
        self.messages = 0
        self.last_uuid: str | None = None

    def close(self) -> None:
        self.fh.close()

    def tick(self, low: float, high: float) -> str:
        self.clock[0] += self.rng.uniform(low, high)
        dt = datetime.fromtimestamp(self.clock[0], UTC)
        return f"{dt:%Y-%m-%dT%H:%M:%S}.{dt.microsecond // 1000:03d}Z"

    def uuid(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"

    def ident(self, prefix: str, n: int) -> str:
        return prefix + "".join([_B62[b % 62] for b in self.rng.randbytes(n)])

    def write(self, obj: dict[str, Any]) -> None:
        data = _dumps(obj).encode("utf-8") + b"\n"
        self.fh.write(data)
        self.bytes += len(data)

    def envelope(self, kind: str, *, parent: str | None, extra: dict | None = None, chain: bool = True, **fields) -> dict:
        uuid = self.uuid()
        obj: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": VERSION,
            "gitBranch": "main",
            "slug": "synthetic-session",
        }
        if extra:
            obj.update(extra)
        obj["type"] = kind
        obj.update(fields)
        obj["uuid"] = uuid
        obj["timestamp"] = self.tick(0.05, 4.0)
        if chain:
            self.last_uuid = uuid
            self.messages += 1
        return obj


class _Session:
    """State of the main conversation: the uuid chain and the context size of the calls."""

    def __init__(self, rng: random.Random, directory: Path, seed: int, subagent: bool, compaction: bool,
                 compaction_replay: bool = False):
        self.rng = rng
        self.compaction_replay = compaction_replay
        self.dir = directory
        self.session_id = f"{random.Random(seed).getrandbits(128):032x}"
        self.session_id = (
            f"{self.session_id[:8]}-{self.session_id[8:12]}-4{self.session_id[13:16]}-"
            f"a{self.session_id[17:20]}-{self.session_id[20:32]}"
        )
        self.clock = [datetime(2026, 3, 1, 9, 0, tzinfo=UTC).timestamp() + seed * 3600]
        self.cwd = "/home/dev/projects/contextviewer"
        self.main = _Writer(rng, directory / f"{self.session_id}.jsonl", self.session_id, self.cwd, self.clock)
        self.want_subagent = subagent
        self.want_compaction = compaction
        self.context = HARNESS_TOKENS  # tokens the next call will carry
        self.cached = 0  # tokens of that prefix already cached
        self.last_context = 0  # measured context of the last call
        self.compacted = False
        self.subagent_done = False

    # ---- model calls ----

    def _usage(self, new_tokens: int) -> dict:
        rng = self.rng
        self.context += new_tokens
        read = self.cached
        write = self.context - read - 3
        self.cached = self.context
        self.last_context = 3 + write + read
        return {
            "input_tokens": 3,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": write},
            "output_tokens": rng.randint(1, 9),
            "service_tier": "standard",
        }

    def call(self, blocks: list[dict], new_tokens: int, *, writer: _Writer | None = None, model: str = MODEL,
             extra: dict | None = None, usage: dict | None = None) -> list[str]:
        """One API response written as one line per block; returns the uuids of its lines."""
        w = writer or self.main
        usage = usage or self._usage(new_tokens)
        msg_id = w.ident("msg_01", 22)
        req_id = w.ident("req_011C", 20)
        uuids = []
        for block in blocks:
            line_usage = dict(usage, output_tokens=self.rng.randint(1, 12))
            obj = w.envelope(
                "assistant",
                parent=w.last_uuid,
                extra=extra,
                message={
                    "model": model,
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "content": [block],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": line_usage,
                },
                requestId=req_id,
            )
            w.write(obj)
            uuids.append(obj["uuid"])
        # What this response adds to the next call's prompt.
        out_chars = sum(len(_dumps(b)) for b in blocks)
        self.pending_tokens = out_chars // 4
        return uuids

    # ---- pieces of a turn ----

    def user_prompt(self, w: _Writer, text: str, extra: dict | None = None) -> None:
        obj = w.envelope("user", parent=w.last_uuid, extra=extra, message={"role": "user", "content": text})
        if w is self.main:
            obj["permissionMode"] = "default"
        w.write(obj)

    def tool(self, w: _Writer) -> tuple[dict, str, Any]:
        """A random tool call: (tool_use block, result text, toolUseResult)."""
        rng = self.rng
        kind = rng.choices(("Bash", "Read", "Grep", "Edit", "Bash-json"), (30, 30, 15, 15, 10))[0]
        tool_id = w.ident("toolu_01", 22)
        big = rng.random() < 0.04
        size = rng.randint(20_000, 60_000) if big else int(rng.paretovariate(1.3) * 400)
        size = min(size, 60_000)
        if kind == "Bash" or kind == "Bash-json":
            corpus = "json" if kind == "Bash-json" else "log"
            command = "curl -s localhost:8000/api/calls | jq ." if corpus == "json" else "pytest -q tests/unit 2>&1 | tail -200"
            out = _snippet(rng, corpus, size)
            block = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command, "description": "Run it"}}
            result = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        elif kind == "Read":
            path = f"{self.cwd}/contextviewer/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py"
            code = _snippet(rng, "code", size)
            out = "\n".join(f"{i + 1:6d}\t{line}" for i, line in enumerate(code.split("\n")))
            block = {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": path}}
            result = {"type": "text", "file": {"filePath": path, "content": code, "numLines": out.count("\n") + 1,
                                               "startLine": 1, "totalLines": out.count("\n") + 1}}
        elif kind == "Grep":
            out = _snippet(rng, "files", size)
            block = {"type": "tool_use", "id": tool_id, "name": "Grep",
                     "input": {"pattern": rng.choice(_WORDS), "output_mode": "content"}}
            result = {"mode": "content", "numFiles": out.count("\n") + 1, "content": out}
        else:
            path = f"{self.cwd}/contextviewer/{rng.choice(_WORDS)}.py"
            old = _snippet(rng, "code", min(size, 1200))
            new = _snippet(rng, "code", min(size, 1200))
            block = {"type": "tool_use", "id": tool_id, "name": "Edit",
                     "input": {"file_path": path, "old_string": old, "new_string": new}}
            out = f"The file {path} has been updated successfully."
            result = {"filePath": path, "oldString": old, "newString": new, "userModified": False, "replaceAll": False}
        return block, out, result

    def tool_result(self, w: _Writer, tool_id: str, text: str, result: Any, source_uuid: str, is_error: bool = False) -> int:
        obj = w.envelope(
            "user",
            parent=w.last_uuid,
            message={"role": "user", "content": [
                {"tool_use_id": tool_id, "type": "tool_result", "content": text, "is_error": is_error}]},
            toolUseResult=result,
            sourceToolAssistantUUID=source_uuid,
        )
        w.write(obj)
        return len(text) // 4 + 20

    def progress(self, w: _Writer, tool_id: str, parent: str, data: dict) -> None:
        obj = w.envelope("progress", parent=parent, chain=False, data=data, toolUseID=tool_id, parentToolUseID=tool_id)
        w.write(obj)

    def turn(self, *, task: bool = False) -> None:
        rng = self.rng
        w = self.main
        if rng.random() < 0.5:
            w.write({"type": "file-history-snapshot", "messageId": w.uuid(),
                     "snapshot": {"messageId": w.uuid(), "trackedFileBackups": {}, "timestamp": w.tick(0, 0.1)},
                     "isSnapshotUpdate": False})
        prompt = " ".join(rng.choice(_PROSE) for _ in range(rng.randint(1, 4)))
        self.user_prompt(w, prompt)
        new_tokens = len(prompt) // 4 + 10
        calls = rng.randint(2, 6)
        for n in range(calls):
            last = n == calls - 1
            blocks: list[dict] = []
            if rng.random() < 0.6:
                blocks.append({"type": "thinking", "thinking": _snippet(rng, "prose", rng.randint(80, 2500)),
                               "signature": w.ident("Eo", 40)})
            if last or rng.random() < 0.7:
                blocks.append({"type": "text", "text": _snippet(rng, "prose", rng.randint(40, 1500))})
            tools: list[tuple[dict, str, Any]] = []
            if task and n == 0:
                tools.append(self.task_tool(w))
            elif not last:
                tools.extend(self.tool(w) for _ in range(rng.choices((1, 2, 3), (70, 20, 10))[0]))
            blocks.extend(t[0] for t in tools)
            uuids = self.call(blocks, new_tokens)
            new_tokens = self.pending_tokens
            for (block, text, result), source in zip(tools, uuids[-len(tools):] if tools else []):
                if block["name"] == "Task":
                    new_tokens += self.run_subagent(block, source)
                    continue
                self.progress(w, block["id"], source, {"type": "hook_progress", "hookEvent": "PostToolUse",
                                                       "hookName": f"PostToolUse:{block['name']}", "command": "callback"})
                if block["name"] == "Bash" and rng.random() < 0.5:
                    self.progress(w, block["id"], source, {"type": "bash_progress", "output": text[:200],
                                                           "fullOutput": text[:400], "elapsedTimeSeconds": 2,
                                                           "totalLines": text.count("\n") + 1})
                new_tokens += self.tool_result(w, block["id"], text, result, source, is_error=rng.random() < 0.05)
        w.write(w.envelope("system", parent=w.last_uuid, subtype="turn_duration",
                           durationMs=rng.randint(2_000, 300_000), isMeta=False))
        self.context += new_tokens  # the final answer and the turn's tail join the next prompt

    # ---- the sub-agent ----

    def task_tool(self, w: _Writer) -> tuple[dict, str, Any]:
        tool_id = w.ident("toolu_01", 22)
        block = {"type": "tool_use", "id": tool_id, "name": "Task", "input": {
            "description": "Explore the importer code",
            "prompt": "Find where the session importer reads lines and report the functions involved.",
            "subagent_type": "Explore"}}
        return block, "", None

    def run_subagent(self, block: dict, source_uuid: str) -> int:
        rng = self.rng
        agent_id = "a" + f"{rng.getrandbits(28):07x}"
        folder = self.dir / self.session_id / "subagents"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"agent-{agent_id}.meta.json").write_text(json.dumps({"agentType": "Explore", "spawnDepth": 1}))
        sub = _Writer(rng, folder / f"agent-{agent_id}.jsonl", self.session_id, self.cwd, self.clock)
        side = {"isSidechain": True, "agentId": agent_id}
        # The sub-agent's own context starts from its harness and the prompt.
        saved = (self.context, self.cached, self.last_context)
        self.context, self.cached = 9_000, 0
        prompt = block["input"]["prompt"]
        sub.write(sub.envelope("user", parent=None, extra=side, message={"role": "user", "content": prompt}))
        new_tokens = len(prompt) // 4
        total_tools = 0
        for n in range(rng.randint(2, 4)):
            tools = [self.tool(sub) for _ in range(rng.randint(1, 2))]
            blocks = [{"type": "text", "text": _snippet(rng, "prose", rng.randint(40, 400))}] + [t[0] for t in tools]
            uuids = self.call(blocks, new_tokens, writer=sub, model=SUBAGENT_MODEL, extra=side)
            new_tokens = self.pending_tokens
            for (tb, text, result), source in zip(tools, uuids[1:]):
                total_tools += 1
                self.progress(self.main, block["id"], source_uuid, {
                    "type": "agent_progress", "agentId": agent_id, "prompt": prompt,
                    "message": {"type": "assistant", "uuid": source}})
                obj = sub.envelope("user", parent=sub.last_uuid, extra=side, message={
                    "role": "user", "content": [{"tool_use_id": tb["id"], "type": "tool_result", "content": text}]},
                    toolUseResult=result, sourceToolAssistantUUID=source)
                sub.write(obj)
                new_tokens += len(text) // 4
        answer = _snippet(rng, "prose", rng.randint(300, 1500))
        self.call([{"type": "text", "text": answer}], new_tokens, writer=sub, model=SUBAGENT_MODEL, extra=side)
        sub_tokens = self.context
        sub.close()
        self.context, self.cached, self.last_context = saved
        result = {"status": "completed", "prompt": prompt, "agentId": agent_id,
                  "content": [{"type": "text", "text": answer}], "totalDurationMs": rng.randint(5_000, 90_000),
                  "totalTokens": sub_tokens, "totalToolUseCount": total_tools,
                  "usage": {"input_tokens": 3, "cache_read_input_tokens": sub_tokens - 3, "output_tokens": 400}}
        self.subagent_done = True
        return self.tool_result(self.main, block["id"], answer, result, source_uuid)

    # ---- the compaction ----

    def compact(self) -> None:
        rng = self.rng
        w = self.main
        pre_tokens = self.last_context  # measured context of the last call before the boundary
        logical_parent = w.last_uuid  # the last message of the history the fold puts away
        hexid = f"{rng.getrandbits(24):06x}"
        folder = self.dir / self.session_id / "subagents"
        folder.mkdir(parents=True, exist_ok=True)
        summary = (
            "This session is being continued from a previous conversation that ran out of context. "
            "The summary below covers the earlier portion of the conversation.\n\nAnalysis:\n"
            + _snippet(rng, "prose", 6000)
            + "\n\nFiles and code sections:\n"
            + _snippet(rng, "files", 1500)
        )
        # The compaction call's own transcript: it reads the whole context and writes the summary.
        agent_id = f"acompact-{hexid}"
        side = {"isSidechain": True, "agentId": agent_id}
        sub = _Writer(rng, folder / f"agent-{agent_id}.jsonl", self.session_id, self.cwd, self.clock)
        if self.compaction_replay:
            self._replay(w, sub, side)
        obj = sub.envelope("user", parent=sub.last_uuid, extra=side, message={
            "role": "user", "content": "Your task is to create a detailed summary of the conversation so far."})
        sub.write(obj)
        write = min(8_000, pre_tokens // 20)
        usage = {"input_tokens": 3, "cache_creation_input_tokens": write,
                 "cache_read_input_tokens": max(0, pre_tokens - write - 3),
                 "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0},
                 "output_tokens": len(summary) // 4, "service_tier": "standard"}
        if self.compaction_replay:
            # One response, one uuid, written twice: the streaming placeholder, then the final record.
            placeholder = sub.envelope("assistant", parent=sub.last_uuid, extra=side, message={
                "model": MODEL, "id": sub.ident("msg_01", 22), "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": summary}], "stop_reason": None, "stop_sequence": None,
                "usage": dict(usage, output_tokens=6)}, requestId=sub.ident("req_011C", 20))
            sub.write(placeholder)
            final = dict(placeholder, timestamp=sub.tick(1.0, 20.0))
            final["message"] = dict(placeholder["message"], stop_reason="end_turn", usage=usage)
            sub.write(final)
        else:
            self.call([{"type": "text", "text": summary}], 0, writer=sub, extra=side, usage=usage)
        sub.close()

        boundary = w.envelope("system", parent=None, subtype="compact_boundary", content="Conversation compacted",
                              isMeta=False, level="info", compactMetadata={"trigger": "auto", "preTokens": pre_tokens})
        boundary["logicalParentUuid"] = logical_parent
        w.write(boundary)
        obj = w.envelope("user", parent=boundary["uuid"], message={"role": "user", "content": summary},
                         isVisibleInTranscriptOnly=True, isCompactSummary=True)
        w.write(obj)
        # After the fold the prompt is the harness (still cached) plus the summary.
        self.context = HARNESS_TOKENS + len(summary) // 4
        self.cached = HARNESS_TOKENS
        self.compacted = True


    @staticmethod
    def _replay(w: _Writer, sub: _Writer, side: dict) -> None:
        """Claude Code 2.1's compaction file first repeats the conversation the fold puts away (the
        message lines since the last boundary), with the parent's own uuids and message ids."""
        w.fh.flush()
        lines: list[dict] = []
        with open(w.path, "rb") as fh:
            for line in fh:
                obj = json.loads(line)
                if obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
                    lines = []
                if obj.get("type") in ("user", "assistant", "system"):
                    lines.append(obj)
        for obj in lines:
            sub.write(dict(obj, **side))
            sub.last_uuid = obj["uuid"]


def write_session(
    dir: str | Path,  # noqa: A002 - the name the callers use
    *,
    target_bytes: int | None = None,
    messages: int | None = None,
    seed: int = 0,
    subagent: bool = True,
    compaction: bool = True,
    folds: int = 1,
    compaction_replay: bool = False,
) -> Path:
    """Write one synthetic session under ``dir`` and return the path of its main ``.jsonl`` file.

    Stops at the end of the first turn after the main file reaches ``target_bytes`` or holds
    ``messages`` message lines (user/assistant/system; default 200 when neither is given). The
    sub-agent runs in the second turn; the compaction happens once, when the context passes
    about 155k tokens or half of the target is written, whichever comes first. ``folds`` > 1 (with
    ``compaction``): that many compactions spread evenly, the k-th once k/(folds+1) of the target
    is written and at least two turns after the previous one (the context then may pass 155k).
    ``compaction_replay``: compaction files in the 2.1 layout (see the module docstring).
    """
    directory = Path(dir)
    directory.mkdir(parents=True, exist_ok=True)
    if target_bytes is None and messages is None:
        messages = DEFAULT_MESSAGES
    rng = random.Random(seed)
    s = _Session(rng, directory, seed, subagent, compaction, compaction_replay)
    w = s.main

    def progress() -> float:
        done = 0.0
        if target_bytes:
            done = max(done, w.bytes / target_bytes)
        if messages:
            done = max(done, w.messages / messages)
        return done

    try:
        turn = 0
        turns_after_fold = 0
        done_folds = 0
        wanted = max(1, folds) if compaction else 0
        while True:
            turn += 1
            s.turn(task=subagent and turn == 2)
            if s.compacted:
                turns_after_fold += 1
            finished = progress() >= 1.0 and turn >= 3
            if (
                done_folds < wanted
                and turn >= 2
                and (done_folds == 0 or turns_after_fold >= 2)
                and (
                    (s.context >= AUTO_COMPACT_TOKENS and wanted == 1)
                    or progress() >= (done_folds + 1) / (wanted + 1)
                    or (finished and done_folds == 0)
                )
            ):
                s.compact()
                done_folds += 1
                turns_after_fold = 0
                continue
            if finished and (done_folds >= wanted or progress() >= 1.5) and (turns_after_fold >= 1 or not compaction):
                break
    finally:
        w.close()
    return w.path
