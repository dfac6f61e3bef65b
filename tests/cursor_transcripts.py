"""Cursor agent transcripts written here from the facts other readers of them record (no Cursor agent runs
here: it needs a cursor.com login). The facts and where each comes from are in
``contextviewer/importers/cursor/parser.py``'s docstring: HulkInTherapy/potsherd's
``docs/formats/cursor.md`` (the layout, the two-key record, ``<timestamp>`` and ``<user_query>``, Cursor's
injected continuation, ``tool_use`` with no id and a string ``input`` for ``ApplyPatch``, a tool name with a
line break, byte-identical duplicate records, no trailing newline, no tool results) and wesm/agentsview's
``internal/parser/cursor.go`` (the earlier ``.txt`` transcript).

What is in them, counted by hand (the tests state these):

- project folder ``home-dev-my-proj`` (the slug of ``/home/dev/my_proj``), chat ``CHAT``: 11 records,
  user at lines 1, 6 (Cursor's injected continuation), 8 (a prompt behind an ``[Image]`` preamble);
  assistant at 2, 3, 4, 5, 7, 9, 10, 11 (11 a byte-identical copy of 10) -> 8 model calls, no usage; tool
  calls ``ReadFile`` + ``Glob`` (line 2), ``Shell`` (3), ``ApplyPatch`` (4, a string input), ``Subagent`` (5),
  ``Grep`` (9, its name cut at the line break) -> 6, none answered; prompts stamped 2026-05-08 06:05 and
  06:20 at UTC+5:30 (00:35 and 00:50 UTC);
- its sub-agent ``AGENT`` (``<chat>/subagents/<agent>.jsonl``): 3 records (user, 2 assistant) -> 2 calls,
  1 tool call (``Read``), no timestamp;
- an earlier ``.txt`` transcript ``TEXT_CHAT``: user, then an assistant block of thinking, a ``Shell`` call
  and its ``[Tool result]``, then prose -> user 1, assistant 2 (the call; the prose after the result), tool
  1 (the result), 2 model calls.
"""

from __future__ import annotations

import json
from pathlib import Path

PROJECT = "home-dev-my-proj"
CWD = "/home/dev/my_proj"
CHAT = "0b2f6c1e-4d5a-4e3b-9c8d-7e6f5a4b3c2d"
AGENT = "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"
TEXT_CHAT = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
INJECTED = ("The above subagent result is already visible to the user. DO NOT reiterate or summarize its contents "
            "unless asked, or if multi-task result synthesis is required. Otherwise do not say anything and end your turn.")
PATCH = "*** Begin Patch\n*** Add File: /home/dev/my_proj/src/health.ts\n+export function health() {\n+  return { ok: true };\n+}\n*** End Patch"


def _user(text: str) -> dict:
    return {"role": "user", "message": {"content": [{"type": "text", "text": text}]}}


def _assistant(*blocks: dict) -> dict:
    return {"role": "assistant", "message": {"content": list(blocks)}}


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def _use(name: str, args) -> dict:
    return {"type": "tool_use", "name": name, "input": args}


def chat_records() -> list[dict]:
    reply = _assistant(_text("The endpoint is wired in."))
    return [
        _user("<timestamp>Friday, May 8, 2026, 6:05 AM (UTC+5:30)</timestamp>\n<user_query>\n"
              "add a health check endpoint and wire it into the router\n</user_query>"),
        _assistant(_text("**Planning the change**\n\nRouter first, then the handler."),
                   _use("ReadFile", {"path": f"{CWD}/src/router.ts", "offset": 1, "limit": 200}),
                   _use("Glob", {"target_directory": CWD, "glob_pattern": "src/**/*.ts"})),
        _assistant(_use("Shell", {"command": "npm test", "working_directory": CWD})),
        _assistant(_use("ApplyPatch", PATCH)),
        _assistant(_text("Checking the docs in a sub-agent."),
                   _use("Subagent", {"subagent_type": "explore", "description": "Find the docs",
                                     "prompt": "Where do the docs list the endpoints?"})),
        _user(f"<timestamp>Friday, May 8, 2026, 6:12 AM (UTC+5:30)</timestamp>\n\n<user_query>{INJECTED}</user_query>"),
        _assistant(_text("Done: /health returns ok.")),
        _user("[Image]\n<image_files>\nThe following images were provdied by the user and saved to the workspace for future use:\n"
              f"1. {CWD}/assets/image-1.png\n</image_files>\n"
              "<timestamp>Friday, May 8, 2026, 6:20 AM (UTC+5:30)</timestamp>\n<user_query>\nmatch the screenshot\n</user_query>"),
        _assistant(_use(f"Grep path\n{CWD}", {"pattern": "^export function", "glob": "*.ts"})),
        reply,
        reply,
    ]


def agent_records() -> list[dict]:
    return [
        _user("<user_query>\nWhere do the docs list the endpoints?\n</user_query>"),
        _assistant(_use("Read", {"path": f"{CWD}/docs/api.md"})),
        _assistant(_text("docs/api.md lists them under Endpoints.")),
    ]


TEXT = f"""user:
<user_query>
list the files
</user_query>

assistant:
[Thinking]
  The user wants a listing.
[Tool call] Shell
  command: ls
  working_directory: {CWD}
[Tool result] Shell
  README.md
  src
Two entries: README.md and src.
"""


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")  # no newline at the end, as Cursor
    return path


def write_chat(projects: Path) -> Path:
    """``<projects>/<project>/agent-transcripts/<chat>/<chat>.jsonl`` and its sub-agent's file."""
    folder = projects / PROJECT / "agent-transcripts" / CHAT
    _jsonl(folder / "subagents" / f"{AGENT}.jsonl", agent_records())
    return _jsonl(folder / f"{CHAT}.jsonl", chat_records())


def write_text_chat(projects: Path) -> Path:
    path = projects / PROJECT / "agent-transcripts" / f"{TEXT_CHAT}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TEXT, encoding="utf-8")
    return path


def write_projects(projects: Path) -> Path:
    """The projects folder with both chats."""
    write_chat(projects)
    write_text_chat(projects)
    return projects
