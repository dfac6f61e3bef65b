"""Other agents' tools, as the Claude Code tools whose views they get (tool_display.py builds them).

Which of an agent's tools is a shell, an edit, a read, a search, a sub-agent... is the agent's own
vocabulary, declared by its format (importers/<format>/tools.py) and read here through the registry;
this module knows the shapes of their arguments and results (OpenHands' editor commands, SWE-agent's
action lines, Gemini CLI's shell report...). Plain data in, plain data out: `normalize(name, input)` says which view a call
gets and with which arguments; the `*_output` helpers read a result's text by its shape.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from contextviewer.importers import formats

# Canonical calls (the Claude Code tool each maps onto) and their arguments:
# Bash {command, description, workdir} · Edit {file_path, old_string, new_string, note} ·
# MultiEdit {file_path, edits} · Write {file_path, content} · Read {file_path, offset} ·
# Search {pattern, path} · TodoWrite {todos} · Task {prompt, description, subagent_type} ·
# Browse {url, code} · Think {thought} · Code {code} · Patch {patch} · Submit {} (its result is a diff) ·
# Note {label, title, intent, text} · Ask {questions: [{header, question, options: [{label, description}], multi}]}
# Which name is which kind: every format's tool vocabulary (importers/<format>/tools.py), together.
_TOOLS = formats.tool_vocabulary()
SHELL, EDITORS, WRITES, READS, MULTI = _TOOLS.shell, _TOOLS.edit, _TOOLS.write, _TOOLS.read, _TOOLS.multi_edit
SEARCHES, TODOS, TASKS, BROWSE, THINK, CODE = _TOOLS.search, _TOOLS.todo, _TOOLS.task, _TOOLS.browse, _TOOLS.think, _TOOLS.code
SWE_COMMANDS = _TOOLS.commands
NOTES, ASKS = _TOOLS.note, _TOOLS.ask
TODO_STATUS = {"todo": "pending", "done": "completed", "complete": "completed", "in-progress": "in_progress",
               "cancelled": "cancelled", "canceled": "cancelled"}  # fmt: skip


def _s(d: dict, *keys: str) -> str:
    for key in keys:
        value = d.get(key)
        if isinstance(value, str):
            return value
    return ""


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


PATH_KEYS = ("file_path", "filePath", "path", "absolute_path", "filename", "file", "dir_path", "directory")
# PascalCase argument keys some agents write (CommandLine, AbsolutePath, TargetFile...), read as the usual ones.
PASCAL_KEYS = {"CommandLine": "command", "Cwd": "cwd", "AbsolutePath": "path", "TargetFile": "path",
               "TargetContent": "old_string", "ReplacementContent": "new_string", "CodeContent": "content",
               "Query": "query", "SearchPath": "path", "DirectoryPath": "path", "Prompt": "prompt"}  # fmt: skip


def normalize(name: str, tool_input: Any) -> tuple[str, dict] | None:
    """(canonical tool, its arguments) for another agent's call, or None (the generic view)."""
    key = (name or "").strip().lower()
    if isinstance(tool_input, str):
        return _action_line(key, tool_input)
    if not isinstance(tool_input, dict):
        return None
    if any(k in PASCAL_KEYS for k in tool_input):
        tool_input = {**{PASCAL_KEYS[k]: v for k, v in tool_input.items() if k in PASCAL_KEYS}, **tool_input}
    kind = tool_input.get("kind")
    if isinstance(kind, str) and kind.endswith("Action") and not key:
        key = kind.lower()
    path = _s(tool_input, *PATH_KEYS)
    if key in SHELL and isinstance(tool_input.get("command"), str):
        return "Bash", {"command": tool_input["command"], "description": _s(tool_input, "description", "thought"),
                        "workdir": _s(tool_input, "cwd", "workdir", "directory", "dir_path")}  # fmt: skip
    if key in ("open", "goto", "scroll_up", "scroll_down"):  # SWE-agent's file window
        return "Read", {"file_path": path if key == "open" else "", "offset": _int(tool_input.get("line_number"))}
    if key == "create" and path:
        return "Write", {"file_path": path, "content": _s(tool_input, "file_text", "content")}
    if key == "insert" and isinstance(tool_input.get("text"), str):
        line = _int(tool_input.get("line"))
        note = f"inserted after line {line}" if line is not None else "inserted"
        return "Edit", {"file_path": path, "old_string": "", "new_string": tool_input["text"], "note": note}
    if key == "patch" and _s(tool_input, "patch_text", "patch", "input"):
        return "Patch", {"patch": _s(tool_input, "patch_text", "patch", "input")}
    edit = tool_input.get("edit")
    if key in EDITORS and isinstance(edit, dict | list):  # {path, edit: {old, new}} or a list of them (Kimi)
        pairs = [{"old_string": _s(e, "old"), "new_string": _s(e, "new")}
                 for e in (edit if isinstance(edit, list) else [edit]) if isinstance(e, dict)]  # fmt: skip
        return ("Edit", {"file_path": path, **pairs[0]}) if len(pairs) == 1 else ("MultiEdit", {"file_path": path, "edits": pairs})
    if key in EDITORS or key in WRITES or key in READS:
        return _file_call(key, tool_input, path)
    if key in MULTI and isinstance(tool_input.get("edits"), list):
        edits = [{"old_string": _s(e, "old_string", "oldString", "old_str"), "new_string": _s(e, "new_string", "newString", "new_str")}
                 for e in tool_input["edits"] if isinstance(e, dict)]  # fmt: skip
        return "MultiEdit", {"file_path": path, "edits": edits}
    if key in SEARCHES:
        pattern = _s(tool_input, "pattern", "file_name", "search_term", "query", "regex", "filePattern")
        return "Search", {"pattern": pattern, "path": path or _s(tool_input, "dir", "include")}
    if key in TODOS:
        items = tool_input.get("todos") if isinstance(tool_input.get("todos"), list) else tool_input.get("task_list")
        if not isinstance(items, list):
            return None
        todos = []
        for t in items:
            if isinstance(t, dict):
                status = _s(t, "status").lower()
                todos.append({"content": _s(t, "content", "description", "title", "active_form"),
                              "status": TODO_STATUS.get(status, status)})  # fmt: skip
        return "TodoWrite", {"todos": todos}
    if key in TASKS and isinstance(tool_input.get("prompt"), str):
        return "Task", {"prompt": tool_input["prompt"], "description": _s(tool_input, "description"),
                        "subagent_type": _s(tool_input, "subagent_type", "agent_type")}  # fmt: skip
    if key in BROWSE:
        url, code = _s(tool_input, "url"), _s(tool_input, "code", "browser_actions")
        return ("Browse", {"url": url, "code": code}) if url or code else None
    if key in THINK and _s(tool_input, "thought", "content"):
        return "Think", {"thought": _s(tool_input, "thought", "content")}
    if key in CODE and _s(tool_input, "code"):
        return "Code", {"code": _s(tool_input, "code")}
    if key in NOTES:
        return _note(tool_input)
    if key in ASKS and isinstance(tool_input.get("questions"), list):
        return "Ask", {"questions": [_question(q) for q in tool_input["questions"] if isinstance(q, dict)]}
    if key == "submit":
        return "Submit", {}
    return None


def _file_call(key: str, d: dict, path: str) -> tuple[str, dict] | None:
    command = _s(d, "command")
    old = _s(d, "old_string", "oldString", "old_str", "search")
    new = _s(d, "new_string", "newString", "new_str", "replace")
    content = d.get("content") if isinstance(d.get("content"), str) else d.get("file_text")
    if command == "view" or (key in READS and not command):
        view_range = d.get("view_range")
        offset = _int(d.get("offset"))
        if offset is None and isinstance(view_range, list) and view_range:
            offset = _int(view_range[0])
        if offset is None:
            offset = _int(d.get("start"))
        # Gemini's read_file and OpenHands' read action answer with the file's text, unnumbered
        return "Read", {
            "file_path": path,
            "offset": offset,
            "plain": key in ("read_file", "filereadaction", "read", "view") and not command,
        }
    if command == "insert" or (key == "insert"):
        line = _int(d.get("insert_line")) if command else _int(d.get("line"))
        text = new or _s(d, "text")
        note = f"inserted after line {line}" if line is not None else "inserted"
        return "Edit", {"file_path": path, "old_string": "", "new_string": text, "note": note}
    if command == "create" or key in WRITES:
        if isinstance(content, str):
            return "Write", {"file_path": path, "content": content}
        return None
    if command == "str_replace" or (not command and (old or new)):
        return "Edit", {"file_path": path, "old_string": old, "new_string": new}
    if key in ("edit", "edit_file", "fileeditaction") and isinstance(content, str):  # OpenHands v0's LLM edit
        start, end = _int(d.get("start")), _int(d.get("end"))
        note = f"lines {start}-{end} rewritten" if start is not None and end is not None and end >= 0 else ""
        return "Write", {"file_path": path, "content": content, "note": note}
    return None


def _note(d: dict) -> tuple[str, dict] | None:
    """A note by its shape: a topic (a title, a summary, an intent: Gemini CLI's update_topic), a
    memory (a fact: its save_memory). None: neither."""
    title, intent = _s(d, "title", "topic"), _s(d, "strategic_intent", "intent")
    fact = _s(d, "fact")
    if fact:
        return "Note", {"label": "remembered", "title": "", "intent": "", "text": fact}
    if title or intent or _s(d, "summary"):
        label = "topic" if title else "intent"
        return "Note", {"label": label, "title": title, "intent": intent, "text": _s(d, "summary")}
    return None


def _question(q: dict) -> dict:
    options = q.get("options") if isinstance(q.get("options"), list) else []
    return {
        "header": _s(q, "header"),
        "question": _s(q, "question", "text"),
        "options": [{"label": _s(o, "label"), "description": _s(o, "description")} for o in options if isinstance(o, dict)],
        "multi": q.get("multiSelect") is True or q.get("multi_select") is True,
        "type": _s(q, "type"),
    }


_EDIT_RANGE = re.compile(r"^edit\s+(\d+):(\d+)\s*\n(.*?)(?:\nend_of_edit)?\s*$", re.S)


def _action_line(key: str, action: str) -> tuple[str, dict] | None:
    """A SWE-agent action as the model wrote it (`open src/a.py 40`, `edit 12:14\\n...\\nend_of_edit`,
    `ls -F`): its own commands mapped, anything else a command line."""
    text = action.strip()
    words = text.split()
    if not words or words[0].lower() != key:
        return None
    if key == "edit" and (m := _EDIT_RANGE.match(text)):
        return "Edit", {"file_path": "", "old_string": "", "new_string": m.group(3),
                        "note": f"lines {m.group(1)}-{m.group(2)} replaced"}  # fmt: skip
    if key == "open" and len(words) >= 2:
        return "Read", {"file_path": words[1].strip("\"'"), "offset": _int(words[2]) if len(words) > 2 else None}
    if key in ("goto", "scroll_up", "scroll_down"):
        return "Read", {"file_path": "", "offset": None}
    if key == "create" and len(words) >= 2:
        return "Write", {"file_path": words[1].strip("\"'"), "content": ""}
    if key in ("find_file", "search_dir", "search_file") and len(words) >= 2:
        return "Search", {"pattern": words[1].strip("\"'"), "path": words[2] if len(words) > 2 else ""}
    if key == "submit":
        return "Submit", {}
    if key in SWE_COMMANDS:
        return None
    return "Bash", {"command": text, "description": "", "workdir": ""}


# --- results by their shape -----------------------------------------------------------------


@dataclass
class ShellOutput:
    output: str
    exit_code: int | None = None
    stderr: str = ""
    workdir: str = ""
    note: str = ""
    running: bool = False


_SWE_TRAILER = re.compile(r"\n?\(Open file: ([^\n]*)\)\n\(Current directory: ([^\n]*)\)\n?(?:bash-\$\s*)?$")
_CWD_TAG = re.compile(r"\s*<cwd>([^<\n]*)</cwd>\s*$")
_OH_EXIT = re.compile(r"\n?\[(?:The command completed with exit code|Command finished with exit code) (-?\d+)\.?\]\s*")
_OH_META = re.compile(r"\n?\[(Current working directory|Python interpreter): ([^\]\n]*)\]")
_OH_TIMEOUT = re.compile(r"\n?\[(The command (?:timed out|has no new output)[^\]\n]*)\]")
_DEEP_EXIT = re.compile(r"\n?\[Command (?:succeeded|failed) with exit code (-?\d+)\]")
_DEEP_CUT = "[Output was truncated due to size limits]"
_SHELL_ID_EXIT = re.compile(r"\n?<shellId: [^<>\n]*? completed with exit code (-?\d+)>\s*$")
_STDERR = "[stderr]"
_MINI = re.compile(r"^<returncode>(-?\d+)</returncode>\s*(?:<output>\n?(.*?)\n?</output>)?(.*)$", re.S)
_GEMINI_KEYS = ("Command", "Directory", "Output", "Error", "Exit Code", "Signal", "Background PIDs", "Process Group PGID")
_GEMINI_LINE = re.compile(r"^(" + "|".join(re.escape(k) for k in _GEMINI_KEYS) + r"): ?(.*)$")


def decode_escapes(text: str, loose: bool = False) -> str:
    """A result the log wrote as a JSON string (`"a\\nb"`), or (`loose`, for a shell's output)
    escaped once more than it should be (no line break at all, `\\n` between its lines): the text
    it stands for. Anything else as is."""
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == '"' and stripped[-1] == '"':
        try:
            value = json.loads(stripped)
        except ValueError:
            value = None
        if isinstance(value, str):
            return value
    if loose and "\n" not in text and text.count("\\n") >= 2:
        return text.replace("\\r\\n", "\n").replace("\\n", "\n").replace("\\t", "\t")
    return text


def read_object(text: str) -> tuple[str, int, str] | None:
    """A read whose result is one JSON object holding the file's text, as some harnesses send it
    (``{"content", "path", "offset", "lines_read", ...}``, offset 0-based): (the text, its first line
    number, the path); None for any other result."""
    if not text.startswith("{") or '"content"' not in text:
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("content"), str) or not isinstance(obj.get("path"), str):
        return None
    offset = obj.get("offset")
    first = offset + 1 if isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0 else 1
    return obj["content"], first, obj["path"]


def shell_output(text: str) -> ShellOutput:
    """What a shell call printed and how it ended, by the result's shape: mini-swe-agent's
    `<returncode>N</returncode><output>...</output>`, Gemini CLI's `Command: / Directory: / Output: /
    Error: / Exit Code:` lines, OpenHands' `[The command completed with exit code N.]` and
    `[Current working directory: D]` lines, SWE-agent's `(Open file: F)(Current directory: D)bash-$`
    trailer, Crush's `<cwd>D</cwd>`, deepagents' `[Command failed with exit code N]` (its stderr lines
marked `[stderr] `), GitHub Copilot CLI's `<shellId: N completed with exit code N>`; else the text as
    output (exit code unknown)."""
    text = decode_escapes(text, loose=True).replace("\r\n", "\n")
    if m := _MINI.match(text.strip()):
        rest = m.group(3).strip()
        output = m.group(2) if m.group(2) is not None else rest
        return ShellOutput(output, int(m.group(1)), note=rest[:300] if m.group(2) is not None and rest else "")
    gemini = _gemini(text)
    if gemini is not None:
        return gemini
    out = ShellOutput(text)
    if m := _SWE_TRAILER.search(out.output):
        out.output, out.workdir = out.output[: m.start()], m.group(2).strip()
    elif m := _CWD_TAG.search(out.output):
        out.output, out.workdir = out.output[: m.start()], m.group(1).strip()
    if m := _OH_EXIT.search(out.output):
        out.exit_code = int(m.group(1))
        out.output = out.output[: m.start()] + out.output[m.end() :]
    if out.exit_code is None and (m := _DEEP_EXIT.search(out.output)):
        _deepagents(out, m)
    if out.exit_code is None and (m := _SHELL_ID_EXIT.search(out.output)):
        out.exit_code, out.output = int(m.group(1)), out.output[: m.start()]
    for m in list(_OH_META.finditer(out.output)):
        if m.group(1) == "Current working directory":
            out.workdir = m.group(2).strip()
    out.output = _OH_META.sub("", out.output)
    if m := _OH_TIMEOUT.search(out.output):
        out.note, out.running = m.group(1), out.exit_code is None
        out.output = out.output[: m.start()] + out.output[m.end() :]
    out.output = out.output.strip("\n")
    return out


def _deepagents(out: ShellOutput, m: re.Match) -> None:
    """deepagents' execute result: the output, `[Command succeeded|failed with exit code N]`, and
    `[Output was truncated due to size limits]` where it was cut; the lines a sandbox's shell wrote
    to stderr marked `[stderr] ` (set apart as stderr)."""
    out.exit_code = int(m.group(1))
    if _DEEP_CUT in out.output[m.end() :]:
        out.note = "output cut to the sandbox's size limit"
    lines = out.output[: m.start()].split("\n")
    err = [line[len(_STDERR) :].removeprefix(" ") for line in lines if line.startswith(_STDERR)]
    if err:
        out.stderr = "\n".join(err).strip("\n")
        lines = [line for line in lines if not line.startswith(_STDERR)]
    out.output = "\n".join(lines)


def _gemini(text: str) -> ShellOutput | None:
    lines = text.split("\n")
    fields: dict[str, list[str]] = {}
    current = None
    order = -1
    for line in lines:
        m = _GEMINI_LINE.match(line)
        if m and _GEMINI_KEYS.index(m.group(1)) > order:  # the labels come in this order, once each
            current = m.group(1)
            order = _GEMINI_KEYS.index(current)
            fields[current] = [m.group(2)]
        elif current is not None:
            fields[current].append(line)  # a value over several lines (the output, a multi-line command)
        else:
            return None
    if "Output" not in fields:
        return None
    output = "\n".join(fields["Output"])
    error = "\n".join(fields.get("Error", []))
    code = _int(" ".join(fields.get("Exit Code", [])).strip())
    directory = " ".join(fields.get("Directory", [])).strip()
    signal = " ".join(fields.get("Signal", [])).strip()
    out = ShellOutput("" if output.strip() == "(empty)" else output, code, "" if error.strip() == "(none)" else error)
    out.workdir = "" if directory in ("(root)", "") else directory
    if signal and signal not in ("(none)", "0"):
        out.note = f"signal {signal}"
    return out


def answers(text: str) -> tuple[dict[int, str], str] | None:
    """The user's answers to a tool's questions, by question index, from its result: Gemini CLI's
    `{"answers": {"0": "PostgreSQL", "1": "my-app"}}`, with a note where the user dismissed the
    questions or answered none. None: not such a result (it is shown as it is)."""
    stripped = decode_escapes(text).strip()
    if stripped.startswith("User dismissed") and "without answering" in stripped:
        return {}, "dismissed without an answer"
    try:
        obj = json.loads(stripped) if stripped.startswith("{") else None
    except ValueError:
        obj = None
    if not isinstance(obj, dict) or not isinstance(obj.get("answers"), dict):
        return None
    found = {}
    for key, value in obj["answers"].items():
        index = _int(key)
        if index is not None:
            found[index] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return found, "" if found else "submitted without an answer"


_CAT_N = re.compile(r"^Here's the result of running `cat -n` on [^\n]*:\n")
_SWE_WINDOW = re.compile(r"^\[File: (.+?) \((\d+) lines total\)\]$")
_SWE_MORE = re.compile(r"^\((\d+) more lines (above|below)\)$")
_NUMBER_BAR = re.compile(r"^\s*(\d+)\|\s?(.*)$")
_NUMBER_COLON = re.compile(r"^(\d+):(.*)$")


@dataclass
class Listing:
    path: str
    numbers: list[int]
    lines: list[str]
    trailer: str = ""


def numbered_listing(text: str) -> Listing | None:
    """A file shown with line numbers in another agent's way: Crush and opencode `<file>\\n  12|line`
    (opencode `00012| line`), OpenHands `Here's the result of running cat -n on P:` then `  12\\tline`,
    SWE-agent's window `[File: P (N lines total)]`, `(N more lines above)`, `12:line`. None: not one."""
    text = decode_escapes(text).replace("\r\n", "\n")
    path = ""
    if m := _CAT_N.match(text):
        text = text[m.end() :]
        pattern = re.compile(r"^\s*(\d+)\t(.*)$")
    elif text.lstrip().startswith("<file>"):
        text = text.lstrip()[len("<file>") :].lstrip("\n")
        pattern = _NUMBER_BAR
    else:
        lines = text.split("\n")
        head = next((i for i, line in enumerate(lines[:20]) if _SWE_WINDOW.match(line.strip())), None)
        if head is None:
            return None
        m = _SWE_WINDOW.match(lines[head].strip())
        path, text, pattern = m.group(1), "\n".join(lines[head + 1 :]), _NUMBER_COLON
    numbers: list[int] = []
    body: list[str] = []
    trailer: list[str] = []
    for line in text.split("\n"):
        if trailer:
            trailer.append(line)
            continue
        if _SWE_MORE.match(line.strip()) and pattern is _NUMBER_COLON:
            continue
        m = pattern.match(line)
        if m:
            numbers.append(int(m.group(1)))
            body.append(m.group(2))
        elif line.strip() in ("</file>", ""):
            continue
        else:
            trailer.append(line)
    if not numbers:
        return None
    rest = "\n".join(trailer).strip().removesuffix("</file>").strip()
    if m := _SWE_TRAILER.search("\n" + rest):
        rest = ("\n" + rest)[: m.start()].strip()
    return Listing(path, numbers, body, rest)


_PATH_HEADS = (
    re.compile(r"^Found \d+ (?:matching )?files?.*:$"),  # Gemini glob
    re.compile(r"^Found \d+ matches for .* in .*:$"),  # SWE-agent find_file
    re.compile(r"^Directory listing for .*:$"),  # Gemini list_directory
    re.compile(r"^Here's the files and directories up to \d+ levels deep in .*:$"),  # OpenHands' editor on a folder
)
_TREE_ITEM = re.compile(r"^( *)- (.+)$")


def _tree(lines: list[str]) -> list[str] | None:
    """Crush's and opencode's `ls` tree (`- /root/` then `  - name`, two spaces a level) as paths."""
    out: list[str] = []
    stack: list[str] = []
    for line in lines:
        m = _TREE_ITEM.match(line.rstrip())
        if not m:
            return None
        depth = len(m.group(1)) // 2
        stack = stack[:depth]
        parent = stack[-1] if stack else ""
        name = m.group(2)
        full = name if not parent or name.startswith("/") else parent.rstrip("/") + "/" + name
        out.append(full)
        stack.append(full)
    return out


def path_lines(text: str, need_head: bool = False) -> tuple[list[str], str] | None:
    """Paths, one a line, under another agent's head line (Gemini's glob and list_directory,
    SWE-agent's find_file, OpenHands' folder view), the trailer of SWE-agent apart; `[DIR] x` as
    `x/`; an `ls` tree as full paths. None: not paths (grep hits with line numbers are not)."""
    text = decode_escapes(text).replace("\r\n", "\n")
    if m := _SWE_TRAILER.search(text):
        text = text[: m.start()]
    raw = [line for line in text.split("\n") if line.strip()]
    if raw and not need_head and (tree := _tree(raw)) is not None:
        return tree, ""
    lines = [line.strip() for line in raw]
    if not lines:
        return None
    note = ""
    if any(p.match(lines[0]) for p in _PATH_HEADS):
        note, lines = lines[0], lines[1:]
    elif need_head:
        return None
    paths = []
    for line in lines:
        if line.startswith("[DIR] "):
            line = line[6:].rstrip("/") + "/"
        if (
            len(line) > 1000
            or re.match(r"^.+:\d+[:-]", line)
            or re.match(r"^(?:L\d+:|Line \d+)", line)
            or (" " in line and not note)
        ):
            return None
        paths.append(line)
    return (paths, note) if paths else None


_TRUNCATED_HEAD = "--- FILE CONTENT (truncated) ---"
_SHOWING = re.compile(r"Showing lines (\d+)-(\d+) of (\d+) total lines")


def file_text(text: str) -> tuple[str, int | None, str]:
    """A file's text as a read tool returned it, unnumbered: (the text, its first line's number
    where the result says, a note). Gemini CLI heads a truncated read with `IMPORTANT: The file
    content has been truncated. Status: Showing lines A-B of N total lines. ...` and
    `--- FILE CONTENT (truncated) ---`: the note keeps what it says, the text starts after it."""
    if _TRUNCATED_HEAD not in text[:2000]:
        return text, None, ""
    head, _, body = text.partition(_TRUNCATED_HEAD)
    m = _SHOWING.search(head)
    if m is None:
        return body.lstrip("\n"), None, "truncated by the agent"
    return body.lstrip("\n"), int(m.group(1)), f"lines {m.group(1)}-{m.group(2)} of {m.group(3)} shown to the model"
