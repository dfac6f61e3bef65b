"""Small hand-built Claude Code session lines for precise tests (big ones: importers.synthetic)."""

from __future__ import annotations

import json
import uuid as uuidlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

SESSION = "11111111-2222-4333-8444-555555555555"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class SessionBuilder:
    def __init__(self, session_id: str = SESSION, cwd: str = "/home/dev/project"):
        self.session_id = session_id
        self.cwd = cwd
        self.parent: str | None = None
        self.n = 0
        self.calls = 0
        self.context = 12_000

    def _envelope(self, kind: str, **extra) -> dict:
        self.n += 1
        uid = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{self.session_id}:{self.n}"))
        line = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.39",
            "gitBranch": "main",
            "type": kind,
            "uuid": uid,
            "timestamp": (T0 + timedelta(seconds=self.n)).isoformat().replace("+00:00", "Z"),
            **extra,
        }
        self.parent = uid
        return line

    def user(self, text: str) -> str:
        return json.dumps(self._envelope("user", message={"role": "user", "content": text}))

    def assistant(self, text: str, tool: tuple[str, dict] | None = None) -> list[str]:
        """One model call written as one line per block, as Claude Code does."""
        self.calls += 1
        self.context += 900
        msg_id = f"msg_{self.calls:06d}"
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 900, "cache_read_input_tokens": self.context - 903,
                 "output_tokens": 40}
        blocks = [{"type": "text", "text": text}]
        if tool:
            blocks.append({"type": "tool_use", "id": f"toolu_{self.calls:06d}", "name": tool[0], "input": tool[1]})
        lines = []
        for block in blocks:
            lines.append(json.dumps(self._envelope(
                "assistant", requestId=f"req_{self.calls:06d}",
                message={"id": msg_id, "type": "message", "role": "assistant", "model": "claude-opus-4-6",
                         "content": [block], "stop_reason": None, "usage": usage},
            )))
        return lines

    def tool_result(self, text: str, is_error: bool = False, tool_use_result: dict | str | None = None) -> str:
        """The result of the latest tool call; `tool_use_result` is the line's toolUseResult (Bash:
        stdout, stderr, interrupted)."""
        block = {"type": "tool_result", "tool_use_id": f"toolu_{self.calls:06d}", "content": text}
        if is_error:
            block["is_error"] = True
        extra = {"toolUseResult": tool_use_result} if tool_use_result is not None else {}
        return json.dumps(self._envelope("user", message={"role": "user", "content": [block]}, **extra))

    def queue_operation(self, operation: str, content: str | None = None) -> str:
        """A `queue-operation` line (enqueue: what the person typed while the agent worked). It has
        no uuid and no parent, so the other lines' chain, uuids and timestamps stay as without it."""
        line = {
            "type": "queue-operation",
            "operation": operation,
            "timestamp": (T0 + timedelta(seconds=self.n, milliseconds=500)).isoformat().replace("+00:00", "Z"),
            "sessionId": self.session_id,
        }
        if content is not None:
            line["content"] = content
        return json.dumps(line)

    def turn(self, i: int) -> list[str]:
        return [
            self.user(f"Step {i}: please fix the failing test in src/app_{i}.py"),
            *self.assistant(f"Looking at src/app_{i}.py", tool=("Bash", {"command": f"pytest tests/test_{i}.py"})),
            self.tool_result(f"1 failed, {i} passed"),
            *self.assistant("Fixed it."),
        ]


def write_lines(path, lines: list[str], trailing_newline: bool = True) -> None:
    data = "\n".join(lines) + ("\n" if trailing_newline else "")
    path.write_text(data, encoding="utf-8")


def session_lines(turns: int, builder: SessionBuilder | None = None) -> list[str]:
    builder = builder or SessionBuilder()
    out: list[str] = []
    for i in range(turns):
        out.extend(builder.turn(i))
    return out


def one_call_session(folder, prompt: str = "One question: what does src/only_call.py do?",
                     answer: str = "It prints the version.") -> Path:
    """A session file with one prompt and one model call (its answer), written in `folder`."""
    b = SessionBuilder(session_id="11111111-2222-4333-8444-000000000002")
    path = Path(folder) / f"{b.session_id}.jsonl"
    write_lines(path, [b.user(prompt), *b.assistant(answer)])
    return path
