"""Amp thread files written here from the facts other readers of Amp's threads record (no Amp CLI runs
here: it needs an ampcode.com login). The facts and where each comes from are in
``contextviewer/importers/amp/parser.py``'s docstring: wesm/agentsview's ``internal/parser/amp.go`` (the
file, its id, ``created``, ``title``, ``env.initial.trees``, ``meta.traces``, Anthropic-shaped content),
ryoppippi/ccusage's ``apps/amp`` (an assistant message's ``usage``; the legacy ``usageLedger``),
jonathan-kellerai/cross_agent_session_resumer's ``src/providers/amp.rs`` (``tool_result`` as
``{toolUseID, run}``, ``meta.sentAt``, an ``info`` message's ``summary`` block).

What is in them, counted by hand (the tests state these):

- ``MAIN`` ("Fix the parser", /home/dev/proj): 12 messages (messageId 0..11) and one ``info`` summary
  (messageId 12, written between 9 and 10) -> 13 messages read, 1 fold: user 0, 4 (results and a
  prompt), 10, the summary; assistant 1, 3, 5, 7, 9, 11 (6 model calls; 9 with no usage, 11 cancelled);
  tool (tool results only) 2, 6, 8; tool calls ``Bash`` (t1, exit 1), ``Read`` (t2), ``edit_file`` (t3,
  rejected by the user), ``Task`` (t4, its result the sub-agent's report), 4 in all, 4 results; the
  usage of calls 1, 3, 5, 7, 11 in ``USAGE``;
- ``LEGACY`` ("Say hi", before message usage): 1 user, 2 assistant messages, their usage in the
  ``usageLedger`` (input 120 / output 30, input 200 / output 12), no cache figures.
"""

from __future__ import annotations

import json
from pathlib import Path

MAIN = "T-0b9d0362-e377-4f2f-9780-3e637f90eaec"
LEGACY = "T-11111111-2222-4333-8444-555555555555"
MODEL = "claude-sonnet-4-5-20250929"
CREATED = 1_767_865_800_000  # 2026-01-08 09:50:00 UTC, in milliseconds
SUMMARY = "Summary: the parser's off-by-one in split() was found by the test run and fixed; the sub-agent checked the docs."

# (messageId) -> (inputTokens, cacheCreationInputTokens, cacheReadInputTokens, outputTokens)
USAGE = {
    1: (12, 4_000, 0, 80),
    3: (9, 300, 4_000, 60),
    5: (7, 250, 4_300, 120),
    7: (5, 400, 4_550, 90),
    11: (20, 1_500, 0, 40),
}


def _usage(mid: int) -> dict:
    i, cw, cr, o = USAGE[mid]
    return {"model": MODEL, "inputTokens": i, "outputTokens": o, "cacheCreationInputTokens": cw,
            "cacheReadInputTokens": cr, "totalInputTokens": i + cw + cr, "credits": 0.5,
            "timestamp": f"2026-01-08T09:50:{mid:02d}.500Z"}


def _msg(mid: int, role: str, content: list, **extra) -> dict:
    msg = {"role": role, "messageId": mid, "content": content, "meta": {"sentAt": CREATED + 1000 * mid}}
    if role == "assistant":
        msg["state"] = {"type": "complete", "stopReason": "tool_use" if any(c["type"] == "tool_use" for c in content) else "end_turn"}
        if mid in USAGE:
            msg["usage"] = _usage(mid)
    msg.update(extra)
    return msg


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def _use(tid: str, name: str, args: dict) -> dict:
    return {"type": "tool_use", "complete": True, "id": tid, "name": name, "input": args}


def _result(tid: str, status: str, **run) -> dict:
    return {"type": "tool_result", "toolUseID": tid, "run": {"status": status, **run}}


def main_thread() -> dict:
    messages = [
        _msg(0, "user", [_text("The parser drops the last field. Fix it.")]),
        _msg(1, "assistant", [{"type": "thinking", "thinking": "Run the tests first."},
                              _use("t1", "Bash", {"cmd": "pytest -q tests/test_parser.py"})]),
        _msg(2, "user", [_result("t1", "done", result={"output": "1 failed, 4 passed", "exitCode": 1})]),
        _msg(3, "assistant", [_use("t2", "Read", {"path": "/home/dev/proj/parser.py"})]),
        _msg(4, "user", [_result("t2", "done", result="1: def split(line):\n2:     return line.split(',')[:-1]"),
                         _text("Also keep the docs in sync.")]),
        _msg(5, "assistant", [_text("The slice drops the last field."),
                              _use("t3", "edit_file", {"path": "/home/dev/proj/parser.py",
                                                       "old_str": "[:-1]", "new_str": ""})]),
        _msg(6, "user", [_result("t3", "rejected-by-user")]),
        _msg(7, "assistant", [_use("t4", "Task", {"description": "Check the docs",
                                                  "prompt": "Find where docs/parser.md describes split()."})]),
        # The sub-agent's run: Amp keeps only its report, the Task call's result.
        _msg(8, "user", [_result("t4", "done", result="docs/parser.md line 12 describes split().")]),
        _msg(9, "assistant", [_text("The docs say split() keeps every field.")]),
        # The history summarized in place (written after 9: Amp numbers messages as it writes them).
        {"role": "info", "messageId": 12, "meta": {"sentAt": CREATED + 9_500},
         "content": [{"type": "summary", "summary": {"type": "message", "summary": SUMMARY}}]},
        _msg(10, "user", [_text("Now apply the fix.")]),
        _msg(11, "assistant", [_text("Applied: split() keeps every field.")], state={"type": "cancelled"}),
    ]
    return {
        "v": 57, "id": MAIN, "created": CREATED, "title": "Fix the parser", "agentMode": "smart",
        "messages": messages, "nextMessageId": 13,
        "env": {"initial": {"trees": [{"displayName": "proj", "uri": "file:///home/dev/proj",
                                       "repository": {"type": "git", "url": "https://example.org/proj.git"}}],
                            "platform": {"os": "linux", "client": "CLI", "clientVersion": "0.0.1767865000"}}},
        "meta": {"traces": [{"name": "inference", "startTime": "2026-01-08T09:50:01Z", "endTime": "2026-01-08T09:50:20Z"}]},
        "relationships": [{"threadID": "T-99999999-0000-4000-8000-000000000000", "type": "handoff", "role": "child"}],
    }


def legacy_thread() -> dict:
    return {
        "v": 3, "id": LEGACY, "created": CREATED - 86_400_000, "title": "Say hi",
        "messages": [
            {"role": "user", "messageId": 0, "content": [_text("hi")]},
            {"role": "assistant", "messageId": 1, "content": [_text("Hello!")]},
            {"role": "assistant", "messageId": 2, "content": [_text("How can I help?")]},
        ],
        "usageLedger": {"events": [
            {"id": "e1", "timestamp": "2026-01-07T09:50:01.000Z", "model": "claude-haiku-4-5-20251001", "credits": 0.1,
             "tokens": {"input": 120, "output": 30}, "operationType": "inference", "fromMessageId": 0, "toMessageId": 1},
            {"id": "e2", "timestamp": "2026-01-07T09:50:02.000Z", "model": "claude-haiku-4-5-20251001", "credits": 0.1,
             "tokens": {"input": 200, "output": 12}, "operationType": "inference", "fromMessageId": 1, "toMessageId": 2},
        ]},
        "nextMessageId": 3,
    }


def write_thread(folder: Path, thread: dict | None = None) -> Path:
    thread = thread if thread is not None else main_thread()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{thread['id']}.json"
    path.write_text(json.dumps(thread, indent=2), encoding="utf-8")
    return path


def write_threads(folder: Path) -> Path:
    """The threads folder with both threads."""
    write_thread(folder, main_thread())
    write_thread(folder, legacy_thread())
    return folder
