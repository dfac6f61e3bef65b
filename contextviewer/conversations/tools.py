"""Tool calls as people read them: an Edit as a diff, a Read as highlighted lines, a Bash call as
description, command, exit code, stdout and stderr, a TodoWrite as a checklist, Glob/Grep results as
paths, a Task's prompt and report as Markdown.

`tool_view(name, tool_input, result)` returns a ToolView (plain data) or None when the tool is not
one of these, or its input is not the shape expected: the caller then keeps the generic rendering.
Every string here is printed by the templates with autoescaping; the only HTML is highlighted code,
which comes from rendering.highlight_lines (pygments, then nh3).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString

from . import rendering

DIFF_LINES = 400  # diff lines shown per file; the rest is in the raw view
CODE_LINES = 400  # highlighted lines shown; the rest is in the raw view
PATH_LINES = 300  # paths listed; the rest is in the raw view
CONTEXT = 3  # unchanged lines kept around a change

EDIT_TOOLS = {"Edit", "MultiEdit", "str_replace_based_edit_tool", "str_replace_editor"}
TASK_TOOLS = {"Task", "Agent"}
TODO_STATES = {"pending", "in_progress", "completed"}


@dataclass
class DiffLine:
    kind: str  # add | del | ctx | gap
    text: str


@dataclass
class DiffFile:
    path: str
    action: str = ""  # update | add | delete | move (a patch) or "" (an edit)
    lines: list[DiffLine] = field(default_factory=list)
    more: int = 0  # lines left out
    added: int = 0
    removed: int = 0


@dataclass
class Todo:
    content: str
    status: str  # pending | in_progress | completed

    @property
    def icon(self) -> str:
        return {"completed": "☑", "in_progress": "◐"}.get(self.status, "☐")

    @property
    def label(self) -> str:
        return self.status.replace("_", " ")


@dataclass
class Code:
    path: str
    html: SafeString
    lines: int
    more: int = 0  # lines left out
    trailer: str = ""  # text after the numbered lines (a system reminder), shown plain


@dataclass
class BashResult:
    exit_code: int | None
    stdout: str
    stderr: str
    interrupted: bool = False
    note: str = ""  # returnCodeInterpretation, background task id ...
    combined: bool = True  # stdout holds stdout and stderr together (no toolUseResult to split them)


@dataclass
class ToolView:
    kind: str  # edit | write | read | bash | todos | search | task
    path: str = ""
    description: str = ""
    command: str = ""
    pattern: str = ""
    diffs: list[DiffFile] = field(default_factory=list)
    code: Code | None = None
    todos: list[Todo] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    paths_note: str = ""
    prompt: str = ""
    report: str = ""
    bash: BashResult | None = None
    shows_result: bool = False  # the view renders the result itself (no generic result block)


# --- diffs ------------------------------------------------------------------------------------


def diff_lines(old: str, new: str) -> DiffFile:
    """old -> new as changed lines with CONTEXT unchanged lines around each change."""
    a = old.replace("\r\n", "\n").split("\n")
    b = new.replace("\r\n", "\n").split("\n")
    out = DiffFile(path="")
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    groups = list(matcher.get_grouped_opcodes(CONTEXT)) if a != b else []
    for g, group in enumerate(groups):
        if g or group[0][1] > 0:
            out.lines.append(DiffLine("gap", "…"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.lines.extend(DiffLine("ctx", line) for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                out.lines.extend(DiffLine("del", line) for line in a[i1:i2])
                out.removed += i2 - i1
            if tag in ("replace", "insert"):
                out.lines.extend(DiffLine("add", line) for line in b[j1:j2])
                out.added += j2 - j1
    return _cap(out)


def _cap(diff: DiffFile) -> DiffFile:
    if len(diff.lines) > DIFF_LINES:
        diff.more = len(diff.lines) - DIFF_LINES
        diff.lines = diff.lines[:DIFF_LINES]
    return diff


_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")
_PATCH_MOVE = re.compile(r"^\*\*\* Move to: (.+)$")


def parse_patch(text: str) -> list[DiffFile]:
    """A Codex apply_patch body (*** Begin Patch / *** Update File: p / @@ / -old / +new) as diffs."""
    files: list[DiffFile] = []
    current: DiffFile | None = None
    for line in text.replace("\r\n", "\n").split("\n"):
        if m := _PATCH_FILE.match(line):
            current = DiffFile(path=m.group(2).strip(), action=m.group(1).lower())
            files.append(current)
            continue
        if line.startswith(("*** Begin Patch", "*** End Patch", "*** End of File")) or current is None:
            continue
        if m := _PATCH_MOVE.match(line):
            current.action = "move"
            current.path = f"{current.path} → {m.group(1).strip()}"
        elif line.startswith("@@"):
            current.lines.append(DiffLine("gap", line[2:].strip() or "…"))
        elif line.startswith("+"):
            current.lines.append(DiffLine("add", line[1:]))
            current.added += 1
        elif line.startswith("-"):
            current.lines.append(DiffLine("del", line[1:]))
            current.removed += 1
        else:
            current.lines.append(DiffLine("ctx", line[1:] if line.startswith(" ") else line))
    return [_cap(f) for f in files]


def _patch_text(tool_input: Any) -> str | None:
    if isinstance(tool_input, str):
        return tool_input if "*** Begin Patch" in tool_input else None
    if isinstance(tool_input, dict):
        for key in ("input", "patch"):
            if isinstance(tool_input.get(key), str) and "*** Begin Patch" in tool_input[key]:
                return tool_input[key]
        command = tool_input.get("command")
        if isinstance(command, list):  # shell ["apply_patch", "*** Begin Patch ..."]
            for part in command:
                if isinstance(part, str) and "*** Begin Patch" in part:
                    return part[part.index("*** Begin Patch") :]
    return None


# --- code -------------------------------------------------------------------------------------

_NUMBERED = re.compile(r"^\s*(\d+)(?:→|\t)(.*)$")


def numbered_code(path: str, text: str) -> Code | None:
    """A Read result (`     12→line`, or a tab after the number) as highlighted lines keeping the
    file's own numbers; text after the numbered lines (a system reminder) stays plain."""
    lines = text.replace("\r\n", "\n").split("\n")
    numbers: list[int] = []
    body: list[str] = []
    i = 0
    for i, line in enumerate(lines):
        m = _NUMBERED.match(line)
        if not m:
            if not line.strip() and (i + 1 == len(lines) or not _NUMBERED.match(lines[i + 1])):
                break
            if not numbers:
                return None
            break
        numbers.append(int(m.group(1)))
        body.append(m.group(2))
    else:
        i = len(lines)
    if not numbers:
        return None
    trailer = "\n".join(lines[i:]).strip()
    more = max(0, len(body) - CODE_LINES)
    body, numbers = body[:CODE_LINES], numbers[:CODE_LINES]
    return Code(path, rendering.highlight_lines("\n".join(body), path, numbers), len(body), more, trailer)


def plain_code(path: str, content: str) -> Code:
    lines = content.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    more = max(0, len(lines) - CODE_LINES)
    lines = lines[:CODE_LINES]
    return Code(path, rendering.highlight_lines("\n".join(lines), path), len(lines), more)


# --- bash -------------------------------------------------------------------------------------

_EXIT = re.compile(r"^(?:Error: )?Exit code (\d+)\s*\n?")


def bash_result(text: str, is_error: bool, extra: dict | None) -> BashResult:
    """Exit code from the result text (Claude Code writes `Exit code N` first on failure; success
    has none and means 0); stdout and stderr apart from the line's toolUseResult when it has them."""
    m = _EXIT.match(text)
    body = text[m.end() :] if m else text
    exit_code = int(m.group(1)) if m else (None if is_error else 0)
    extra = extra if isinstance(extra, dict) else {}
    stdout, stderr = extra.get("stdout"), extra.get("stderr")
    note = ""
    if isinstance(extra.get("returnCodeInterpretation"), str):
        note = extra["returnCodeInterpretation"]
    if isinstance(extra.get("backgroundTaskId"), str):
        note = (note + " · " if note else "") + f"background task {extra['backgroundTaskId']}"
    interrupted = extra.get("interrupted") is True
    if isinstance(stdout, str) and isinstance(stderr, str) and (stdout or stderr or not body.strip()):
        return BashResult(exit_code, stdout, stderr, interrupted, note, combined=False)
    if is_error and not m:  # refused, rejected or failed before running: the text says why
        return BashResult(None, "", body, interrupted, note, combined=False)
    return BashResult(exit_code, body, "", interrupted, note)


# --- paths ------------------------------------------------------------------------------------

_FOUND = re.compile(r"^Found \d+ files?(?: limit: \d+, offset: \d+)?$")


def path_list(text: str) -> tuple[list[str], str] | None:
    """Glob and files-with-matches Grep output: one path a line (a `Found N files` head apart)."""
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    if not lines:
        return None
    note = ""
    if _FOUND.match(lines[0]):
        note, lines = lines[0], lines[1:]
    if lines and lines[-1].startswith("(Results are truncated"):
        note = (note + " · " if note else "") + lines.pop()
    if not lines or any(len(line) > 1000 or re.match(r"^.+:\d+[:-]", line) for line in lines):
        return None
    if len(lines) > PATH_LINES:
        note = (note + " · " if note else "") + f"{len(lines) - PATH_LINES} more in raw"
        lines = lines[:PATH_LINES]
    return lines, note


# --- the dispatcher ---------------------------------------------------------------------------


def _s(d: dict, key: str) -> str:
    value = d.get(key)
    return value if isinstance(value, str) else ""


def tool_view(name: str, tool_input: Any, result_text: str | None = None, result_error: bool = False,
              result_extra: dict | None = None) -> ToolView | None:  # fmt: skip
    """The readable view of one tool call (and its result, when given), or None."""
    patch = _patch_text(tool_input) if name in {"apply_patch", "shell", "local_shell", "exec_command"} else None
    if patch is not None:
        files = parse_patch(patch)
        return ToolView("edit", diffs=files) if files else None
    if not isinstance(tool_input, dict):
        return None
    path = _s(tool_input, "file_path") or _s(tool_input, "path") or _s(tool_input, "notebook_path")
    if name in EDIT_TOOLS:
        if name == "MultiEdit" and isinstance(tool_input.get("edits"), list):
            edits = [e for e in tool_input["edits"] if isinstance(e, dict)]
        elif "old_string" in tool_input or "new_string" in tool_input or "old_str" in tool_input:
            edits = [tool_input]
        else:
            return None
        diffs = []
        for e in edits:
            d = diff_lines(_s(e, "old_string") or _s(e, "old_str"), _s(e, "new_string") or _s(e, "new_str"))
            d.path = path
            diffs.append(d)
        return ToolView("edit", path=path, diffs=diffs)
    if name == "Write" and "content" in tool_input:
        return ToolView("write", path=path, code=plain_code(path, _s(tool_input, "content")))
    if name == "Read" and path:
        view = ToolView("read", path=path)
        if result_text and not result_error:
            view.code = numbered_code(path, result_text)
            view.shows_result = view.code is not None
        return view
    if name == "Bash" and "command" in tool_input:
        view = ToolView("bash", command=_s(tool_input, "command"), description=_s(tool_input, "description"))
        if result_text is not None:
            view.bash = bash_result(result_text, result_error, result_extra)
            view.shows_result = True
        return view
    if name == "TodoWrite" and isinstance(tool_input.get("todos"), list):
        todos = []
        for t in tool_input["todos"]:
            if isinstance(t, dict):
                status = _s(t, "status")
                todos.append(Todo(_s(t, "content") or _s(t, "activeForm"), status if status in TODO_STATES else "pending"))
        return ToolView("todos", todos=todos)
    if name in {"Glob", "Grep"}:
        view = ToolView("search", pattern=_s(tool_input, "pattern"), path=path)
        if result_text and not result_error:
            found = path_list(result_text)
            if found is not None:
                view.paths, view.paths_note = found
                view.shows_result = True
        return view
    if name in TASK_TOOLS and isinstance(tool_input.get("prompt"), str):
        view = ToolView("task", description=_s(tool_input, "description"), prompt=tool_input["prompt"],
                        pattern=_s(tool_input, "subagent_type"))  # fmt: skip
        if result_text and not result_error:
            view.report = result_text
            view.shows_result = True
        return view
    return None


def tool_use_result(raw: str) -> dict | None:
    """The `toolUseResult` object of a Claude Code line (stdout/stderr of a Bash call), if any."""
    try:
        obj = json.loads(raw)
    except (TypeError, ValueError):
        return None
    result = obj.get("toolUseResult") if isinstance(obj, dict) else None
    return result if isinstance(result, dict) else None
