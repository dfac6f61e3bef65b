"""iFlow CLI session files written here from the facts of other readers' source and of a real iFlow log (no
iFlow CLI runs here: it needs an iflow.cn login). The facts and where each comes from are in
``contextviewer/importers/iflow/parser.py``'s docstring: wesm/agentsview's ``internal/parser/iflow.go``,
``internal/sync/discovery.go``, ``internal/config/config.go`` (commit 069d7fe0) and the real log it keeps
as test data (read there, not copied here): the Claude Code envelope, ``sessionId`` = ``session-<uuid>``, a response
written as several assistant lines each repeating the tool call(s) of the line before, Gemini CLI's
tool results (``responseParts.functionResponse``) with a ``toolUseResult``; the ``isCompactSummary``
line is what agentsview's reader skips as no prompt.

What is in them, counted by hand (the tests state these):

- ``MAIN`` ("Fix the failing test in parser.py", /home/dev/proj): 14 lines -> 14 messages and a fold
  marker: user prompts on lines 1 and 13, the summary on line 12 (``isCompactSummary``: one fold);
  assistant lines 2, 3, 4, 7, 8, 10, 14, of which 4 and 8 only repeat a call (meta); tool (results only)
  lines 5, 6, 9, 11; model calls: lines 2-4, 7-8, 10, 14 (4), their usage in ``USAGE`` (the call of line 10
  has none: zeros); tool calls c1 ``run_shell_command``, c2 ``read_file``, c3 ``replace`` (its result an
  error), c4 ``task``: 4 calls, 4 results;
- ``SECOND`` ("Say hi"): 1 prompt, 1 assistant line with zero usage (as the real iFlow 1.0.0 log writes).
"""

from __future__ import annotations

import json
from pathlib import Path

MAIN = "7c1f4e2a-3b5d-4c6e-8f90-a1b2c3d4e5f6"
SECOND = "0d9e8f7a-6b5c-4d3e-9f21-0a1b2c3d4e5f"
PROJECT = "proj"
CWD = "/home/dev/proj"
MODEL = "glm-4.7"
VERSION = "0.3.0"
SUMMARY = "This session is being continued from a previous conversation. Summary: the parser's split() was fixed."

# call (its first line) -> (input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens)
USAGE = {
    2: (1_200, 0, 0, 40),  # lines 2-4: line 2 says 15 output, line 3 40 (the last non-zero), line 4 zeros
    7: (300, 0, 1_200, 60),
    14: (500, 100, 1_500, 20),
}


def _line(sid: str, n: int, kind: str, message: dict, parent: int | None = 1, **extra) -> dict:
    obj = {
        "uuid": f"{sid[:8]}-line-{n:02d}",
        "parentUuid": None if parent is None else f"{sid[:8]}-line-{parent:02d}",
        "sessionId": f"session-{sid}",
        "timestamp": f"2026-03-01T10:00:{n:02d}.000Z",
        "type": kind,
        "isSidechain": False,
        "userType": "external",
        "message": message,
    }
    if kind == "user":
        obj.update({"cwd": CWD, "gitBranch": "main", "version": VERSION})
    obj.update(extra)
    return obj


def _assistant(sid: str, n: int, content: list, usage: tuple = (0, 0, 0, 0), suffix: str = "") -> dict:
    i, cw, cr, o = usage
    figures = {"input_tokens": i, "output_tokens": o}
    if cw or cr:
        figures.update({"cache_creation_input_tokens": cw, "cache_read_input_tokens": cr})
    message = {"id": f"response-17728000{n:05d}{suffix}", "type": "message", "role": "assistant", "content": content,
               "model": MODEL, "stop_reason": None, "stop_sequence": None, "usage": figures}
    return _line(sid, n, "assistant", message)


def _use(cid: str, name: str, args: dict) -> dict:
    return {"type": "tool_use", "id": cid, "name": name, "input": args}


def _result(sid: str, n: int, cid: str, name: str, output: str | None = None, error: str | None = None) -> dict:
    response = {"error": error} if error is not None else {"output": output}
    block = {"tool_use_id": cid, "type": "tool_result", "content": {
        "callId": cid, "responseParts": {"functionResponse": {"id": cid, "name": name, "response": response}},
        "resultDisplay": error or output}}
    return _line(sid, n, "user", {"role": "user", "content": [block]}, parent=n - 1,
                 toolUseResult={"toolName": name, "status": "error" if error else "success", "timestamp": 1772800000000 + n})


SHELL = _use("c1", "run_shell_command", {"command": "pytest -q", "description": "Run the tests"})
READ = _use("c2", "read_file", {"absolute_path": f"{CWD}/parser.py"})
EDIT = _use("c3", "replace", {"file_path": f"{CWD}/parser.py", "old_string": "split(' ')", "new_string": "split()"})
TASK = _use("c4", "task", {"description": "Check the docs", "prompt": "Does docs/parser.md describe split()?"})


def main_lines() -> list[dict]:
    s = MAIN
    return [
        _line(s, 1, "user", {"role": "user", "content": "Fix the failing test in parser.py"}, parent=None),
        _assistant(s, 2, [{"type": "text", "text": "Let me run the tests first."}, SHELL], (1_200, 0, 0, 15), "-tool-call_c1"),
        _assistant(s, 3, [SHELL, READ], (1_200, 0, 0, 40), "-tool-call_c2"),
        _assistant(s, 4, [READ]),
        _result(s, 5, "c1", "run_shell_command", output="1 failed, 4 passed"),
        _result(s, 6, "c2", "read_file", output="def split(s):\n    return s.split(' ')\n"),
        _assistant(s, 7, [{"type": "text", "text": "The split is on one space."}, EDIT], USAGE[7], "-tool-call_c3"),
        _assistant(s, 8, [EDIT]),
        _result(s, 9, "c3", "replace", error="Failed to edit: old_string not found"),
        _assistant(s, 10, [TASK], suffix="-tool-call_c4"),
        _result(s, 11, "c4", "task", output="docs/parser.md line 12 describes split()."),
        _line(s, 12, "user", {"role": "user", "content": SUMMARY}, isCompactSummary=True),
        _line(s, 13, "user", {"role": "user", "content": "Now run the full suite"}, parent=12),
        _assistant(s, 14, [{"type": "text", "text": "Suite passes."}], USAGE[14]),
    ]


def second_lines() -> list[dict]:
    s = SECOND
    return [
        _line(s, 1, "user", {"role": "user", "content": "Say hi"}, parent=None),
        _assistant(s, 2, [{"type": "text", "text": "Hi!"}]),
    ]


def write_session(folder: Path, sid: str, lines: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"session-{sid}.jsonl"
    path.write_text("".join(json.dumps(obj, ensure_ascii=False) + "\n" for obj in lines), encoding="utf-8")
    return path


def write_projects(root: Path) -> Path:
    """``<root>/<project>/session-<uuid>.jsonl`` for MAIN and SECOND; returns ``root``."""
    write_session(root / PROJECT, MAIN, main_lines())
    write_session(root / PROJECT, SECOND, second_lines())
    return root
