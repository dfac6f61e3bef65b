"""Cursor's earlier plain-text transcript (``agent-transcripts/<chat>.txt``), read into the records of
``parser._Transcript``. The facts (wesm/agentsview ``internal/parser/cursor.go``, commit aea2eb12): a line
``user:`` or ``assistant:`` alone opens a message; a user's words are inside ``<user_query>``; in an
assistant's, ``[Thinking]``, ``[Tool call] <name>`` and ``[Tool result]`` lines each open a body of
indented (or blank) lines that a non-blank line at the left margin ends; the rest is prose. A call's body
lines are its arguments (``key: value`` or ``key=value``)."""

from __future__ import annotations

import re
from typing import Any

from contextviewer.core.records import BadLine, Block
from contextviewer.importers.common import compact_json, tool_call

# ``reader`` below is parser.py's ``_Transcript`` (its ``add``, ``user``, ``sid``, ``inputs``, ``bad``),
# not imported here: parser.py imports this module.

MARKERS = ("[Thinking]", "[Tool call] ", "[Tool result]")
ARG = re.compile(r"\s*([A-Za-z_][\w.-]*)\s*(?::|=)\s?(.*)\Z")


def _ends_body(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(MARKERS) or (stripped != "" and line[:1] not in (" ", "\t"))


def _body(lines: list[str], i: int) -> tuple[list[str], int]:
    """The body lines after line ``i`` (a marker), and the index after them."""
    j = i + 1
    while j < len(lines) and not _ends_body(lines[j]):
        j += 1
    body = lines[i + 1:j]
    while body and not body[-1].strip():
        body.pop()
    return body, j


def _arguments(body: list[str]) -> dict:
    args: dict[str, str] = {}
    key = None
    for line in body:
        m = ARG.match(line)
        if m and (key is None or len(line) - len(line.lstrip()) <= 2):
            key = m.group(1)
            args[key] = m.group(2)
        elif key is not None:
            args[key] += "\n" + line.strip()
    return args


def _dedent(body: list[str]) -> str:
    return "\n".join(line[2:] if line.startswith("  ") else line.lstrip("\t") for line in body)


def read_text_transcript(reader: Any, text: str) -> None:
    lines = text.splitlines()
    opened: list[tuple[int, str]] = []  # (line of the role marker, role)
    for i, line in enumerate(lines):
        if line.strip() in ("user:", "assistant:"):
            opened.append((i, line.strip()[:-1]))
    if not opened:
        reader.bad.append(BadLine(0, 0, "Cursor transcript: no user: or assistant: line, so it is not a Cursor .txt transcript"))
        return
    for n, (start, role) in enumerate(opened):
        end = opened[n + 1][0] if n + 1 < len(opened) else len(lines)
        body = lines[start + 1:end]
        raw = "\n".join(lines[start:end])
        if role == "user":
            words = "\n".join(body).strip()
            reader.user(start + 1, raw, words, [Block("text", text=words)])
        else:
            _assistant(reader, start + 1, body)


def _assistant(reader: Any, first: int, lines: list[str]) -> None:
    """An assistant block: one message per model call (a run of prose, thinking and calls), each call's
    results a ``tool`` message after it."""
    blocks: list[Block] = []
    results: list[Block] = []
    open_calls: list[Block] = []
    at = first  # the line number the message being built starts at (the block's first: its marker)
    result_at = first  # the line of its first result
    raw: list[str] = []
    i = 0

    def flush(next_at: int) -> None:
        nonlocal blocks, results, at, raw
        if blocks:
            reader.add(at, "assistant", "\n".join(raw), blocks)
        if results:
            reader.add(result_at, "tool", compact_json([b.text for b in results]), results, record_type="tool_result")
        blocks, results, raw, at = [], [], [], next_at

    while i < len(lines):
        line, stripped = lines[i], lines[i].strip()
        if results and not stripped.startswith("[Tool result]") and stripped:
            flush(first + 1 + i)
        if stripped.startswith("[Thinking]"):
            body, j = _body(lines, i)
            thought = "\n".join([stripped[len("[Thinking]"):].strip(), _dedent(body)]).strip()
            blocks.append(Block("thinking", text=thought))
        elif stripped.startswith("[Tool call] "):
            body, j = _body(lines, i)
            name = stripped[len("[Tool call] "):].strip()
            call = tool_call(f"{reader.sid}:{first + 1 + i}:1", name or None, _arguments(body))
            reader.inputs.append(call.tool_input)
            blocks.append(call)
            open_calls.append(call)
        elif stripped.startswith("[Tool result]"):
            body, j = _body(lines, i)
            name = stripped[len("[Tool result]"):].strip()
            call = next((c for c in open_calls if c.tool_name == name), open_calls[0] if open_calls else None)
            if call is not None:
                open_calls.remove(call)
            if not results:
                result_at = first + 1 + i
            results.append(Block("tool_result", text=_dedent(body).strip(), tool_id=call.tool_id if call else None))
        else:
            j = i + 1
            if stripped:
                if blocks and blocks[-1].kind == "text":
                    blocks[-1].text += "\n" + line
                else:
                    blocks.append(Block("text", text=line))
        raw.extend(lines[i:j])
        i = j
    flush(first + 1 + len(lines))
