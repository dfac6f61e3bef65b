"""Tool calls as people read them: an Edit as a diff, a Read as highlighted lines, a Bash call (and
the shell tools of other agents: shell, exec_command, local_shell ...) as description, command,
working directory, exit code, stdout and stderr, a TodoWrite as a checklist, Glob/Grep results as
paths, a Task's prompt and report as Markdown. Other agents' tools (OpenHands, Gemini CLI,
SWE-agent, mini-swe-agent, opencode, Crush) get the same views: tool_agents.py maps their names
and argument shapes onto these, and reads their results' shapes; an OpenHands browse shows its URL,
a think its thought, a Gemini CLI topic or memory a short note, its questions to the user the
answers given. Terminal colours in a command's output are kept (rendering.ansi_segments),
other escape codes dropped. What a shell run's result says (exit code, stdout, stderr, duration) is
read by tool_shell.py.

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

from contextviewer.display import rendering
from contextviewer.importers import formats
from contextviewer.viewer import tool_agents
from contextviewer.viewer.tool_shell import BashResult, agent_shell_result, bash_result, shell_line, shell_result

DIFF_LINES = 200  # diff lines shown per file; the rest is in the raw view (a fragment stays under 150 KB)
CODE_LINES = 150  # highlighted lines shown; the rest is in the raw view (a fragment stays under 150 KB)
CODE_CHARS = 12_000  # ... and at most about this many characters of them (a Read of a JSONL file)
PATH_LINES = 300  # paths listed; the rest is in the raw view
CONTEXT = 3  # unchanged lines kept around a change

EDIT_TOOLS = {"Edit", "MultiEdit", "str_replace_based_edit_tool", "str_replace_editor"}
TASK_TOOLS = {"Task", "Agent"}
TODO_STATES = {"pending", "in_progress", "completed", "cancelled"}
# Tools that run a command line: shown like Bash. (A shell call whose command is an apply_patch
# heredoc is shown as the patch's diff instead.)
# (Codex's: its format's tool vocabulary, importers/<format>/tools.py, read through the registry.)
_VOCABULARY = formats.tool_vocabulary()
SHELL_TOOLS = _VOCABULARY.exec
PATCH_TOOLS = SHELL_TOOLS | _VOCABULARY.patch
# Claude Code's and Codex's tools, read by _view only (another agent's tool of the same name in
# another case, `bash`, `edit`, goes through tool_agents.normalize).
OWN_TOOLS = (
    EDIT_TOOLS - {"str_replace_editor"}
    | TASK_TOOLS
    | SHELL_TOOLS
    | PATCH_TOOLS
    | {"Write", "Read", "Bash", "TodoWrite", "Glob", "Grep"}
)


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
        return {"completed": "☑", "in_progress": "◐", "cancelled": "☒"}.get(self.status, "☐")

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
class Arg:
    name: str
    text: str  # a string as it is (line breaks and all), anything else as compact JSON
    multiline: bool
    more: int = 0  # characters left out (the whole is in the raw view)


@dataclass
class Option:
    label: str
    description: str = ""
    chosen: bool = False  # the user's answer is (or, several chosen, holds) this option


@dataclass
class Question:
    header: str  # a short label ("Database")
    text: str
    options: list[Option] = field(default_factory=list)
    answer: str | None = None  # None: no answer known (no result yet, or none given)


@dataclass
class ToolView:
    kind: str  # edit | write | read | code | bash | todos | search | task | browse | think | note | ask | args
    path: str = ""
    description: str = ""
    command: str = ""
    workdir: str = ""  # the directory a shell command ran in, where the call says
    pattern: str = ""
    diffs: list[DiffFile] = field(default_factory=list)
    code: Code | None = None
    todos: list[Todo] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    paths_note: str = ""
    prompt: str = ""
    report: str = ""
    bash: BashResult | None = None
    url: str = ""  # browse: the address the agent opened (shown as text, never fetched)
    note: str = ""  # what the view cannot show by itself: "inserted after line 12", "lines 5-7 replaced"
    args: list[Arg] = field(default_factory=list)  # args: an unknown tool's arguments, one by one
    label: str = ""  # note: what the note is (topic, intent, remembered)
    intent: str = ""  # note: the one-line intent a topic states
    questions: list[Question] = field(default_factory=list)  # ask: the questions put to the user, with the answers
    shows_result: bool = False  # the view renders the result itself (no generic result block)


# --- diffs ------------------------------------------------------------------------------------


def diff_lines(old: str, new: str) -> DiffFile:
    """old -> new as changed lines with CONTEXT unchanged lines around each change."""
    a = rendering.strip_ansi(old).replace("\r\n", "\n").split("\n")
    b = rendering.strip_ansi(new).replace("\r\n", "\n").split("\n")
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
        if line.startswith("*** End Patch"):
            current = None  # what follows (a heredoc's terminator) is not the patch's
            continue
        if line.startswith(("*** Begin Patch", "*** End of File")) or current is None:
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


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")


def parse_unified(text: str) -> list[DiffFile]:
    """A unified diff (`git diff`: SWE-agent's submission) as diffs, one per file."""
    files: list[DiffFile] = []
    current: DiffFile | None = None
    old_path = ""
    for line in rendering.strip_ansi(text).replace("\r\n", "\n").split("\n"):
        if line.startswith("diff --git ") or line.startswith("index ") or line.startswith(("new file mode", "deleted file mode")):
            current = None
            continue
        if line.startswith("--- ") and (current is None or not current.lines):
            old_path = line[4:].strip()
            continue
        if line.startswith("+++ "):
            new_path = line[4:].strip()
            action = "add" if old_path == "/dev/null" else "delete" if new_path == "/dev/null" else "update"
            path = old_path if new_path == "/dev/null" else new_path
            current = DiffFile(path=re.sub(r"^[ab]/", "", path), action=action)
            files.append(current)
            continue
        if current is None:
            continue
        if m := _HUNK.match(line):
            current.lines.append(DiffLine("gap", m.group(1).strip() or "…"))
        elif line.startswith("+"):
            current.lines.append(DiffLine("add", line[1:]))
            current.added += 1
        elif line.startswith("-"):
            current.lines.append(DiffLine("del", line[1:]))
            current.removed += 1
        elif line.startswith(" "):
            current.lines.append(DiffLine("ctx", line[1:]))
    return [_cap(f) for f in files if f.lines]


def _patch_text(tool_input: Any) -> str | None:
    if isinstance(tool_input, str):
        return tool_input if "*** Begin Patch" in tool_input else None
    if isinstance(tool_input, dict):
        for key in ("input", "patch"):
            if isinstance(tool_input.get(key), str) and "*** Begin Patch" in tool_input[key]:
                return tool_input[key]
        command = tool_input.get("command")
        parts = command if isinstance(command, list) else [command, tool_input.get("cmd")]
        for part in parts:  # shell ["apply_patch", "*** Begin Patch ..."], exec_command "apply_patch <<'EOF' ..."
            if isinstance(part, str) and "*** Begin Patch" in part:
                return part[part.index("*** Begin Patch") :]
    return None


# --- code -------------------------------------------------------------------------------------

_NUMBERED = re.compile(r"^\s*(\d+)(?:→|\t)(.*)$")


def numbered_code(path: str, text: str) -> Code | None:
    """A Read result (`     12→line`, or a tab after the number) as highlighted lines keeping the
    file's own numbers; text after the numbered lines (a system reminder) stays plain."""
    lines = rendering.strip_ansi(text).replace("\r\n", "\n").split("\n")
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
    shown = _lines_shown(body)
    more = len(body) - shown
    body, numbers = body[:shown], numbers[:shown]
    return Code(path, rendering.highlight_lines("\n".join(body), path, numbers), len(body), more, trailer)


def plain_code(path: str, content: str, start: int = 1) -> Code:
    lines = rendering.strip_ansi(content).replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    shown = _lines_shown(lines)
    more = len(lines) - shown
    lines = lines[:shown]
    numbers = list(range(start, start + len(lines))) if start != 1 else None
    return Code(path, rendering.highlight_lines("\n".join(lines), path, numbers), len(lines), more)


def listing_code(path: str, listing: tool_agents.Listing) -> Code:
    """Another agent's numbered file listing (tool_agents.numbered_listing) as highlighted lines
    keeping the file's own numbers."""
    body = [rendering.strip_ansi(line) for line in listing.lines]
    shown = _lines_shown(body)
    html = rendering.highlight_lines("\n".join(body[:shown]), path, listing.numbers[:shown])
    return Code(path, html, shown, len(body) - shown, listing.trailer)


def _lines_shown(lines: list[str]) -> int:
    """How many of `lines` the turn shows highlighted: up to CODE_LINES and CODE_CHARS (at least one)."""
    total = 0
    for n, line in enumerate(lines[:CODE_LINES]):
        total += len(line) + 1
        if total > CODE_CHARS:
            return max(1, n)
    return min(len(lines), CODE_LINES)


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
    view = _view(name, tool_input, result_text, result_error, result_extra)
    if view is None and name not in OWN_TOOLS:
        call = tool_agents.normalize(name, tool_input)
        if call is not None:
            view = _agent_view(call[0], call[1], result_text, result_error, result_extra)
    if view is None:
        view = _args_view(tool_input)
    if view is not None and view.bash is not None:
        _colour(view.bash)
    return view


SHOWN_OUTPUT = 6000  # characters of stdout and of stderr the bash view shows (the template's truncatechars)


def _colour(r: BashResult) -> None:
    """stdout and stderr with LF line ends (a Windows shell's CRLF) and their terminal colours, as
    segments (escape codes never shown)."""
    r.stdout, r.stderr = r.stdout.replace("\r\n", "\n"), r.stderr.replace("\r\n", "\n")
    if rendering.has_ansi(r.stdout):
        r.stdout_ansi = rendering.ansi_segments(_shown(r.stdout))
    if rendering.has_ansi(r.stderr):
        r.stderr_ansi = rendering.ansi_segments(_shown(r.stderr))


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_OUTPUT else text[: SHOWN_OUTPUT - 1] + "…"


def _view(name: str, tool_input: Any, result_text: str | None, result_error: bool, result_extra: dict | None) -> ToolView | None:
    patch = _patch_text(tool_input) if name in PATCH_TOOLS else None
    if patch is not None:
        files = parse_patch(patch)
        if files:
            return ToolView("edit", diffs=files)
        if name not in SHELL_TOOLS:
            return None  # an empty patch: a shell call that sent one is still shown as its command
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
    if name in SHELL_TOOLS or (name == "Bash" and "cmd" in tool_input):  # a Bash written with `cmd`
        return _shell_view(tool_input, result_text, result_extra)
    if name == "TodoWrite" and isinstance(tool_input.get("todos"), list):
        todos = []
        for t in tool_input["todos"]:
            if isinstance(t, dict):
                status = _s(t, "status")
                todos.append(Todo(_s(t, "content") or _s(t, "activeForm"), status if status in TODO_STATES else "pending"))
        return ToolView("todos", todos=todos)
    if name in {"Glob", "Grep"}:  # (a Glob written with glob_pattern and target_directory too)
        view = ToolView("search", pattern=_s(tool_input, "pattern") or _s(tool_input, "glob_pattern"),
                        path=path or _s(tool_input, "target_directory"))
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


def _shell_view(tool_input: dict, result_text: str | None, result_extra: dict | None) -> ToolView | None:
    """A shell tool's call like a Bash call: the command line (`cmd` or `command`, an argv list
    unwrapped), where it ran, why (a justification or description), and its result when its shape
    is known."""
    command = shell_line(tool_input["cmd"] if "cmd" in tool_input else tool_input.get("command"))
    if command is None:
        return None
    why = [w for w in (_s(tool_input, "description"), _s(tool_input, "justification")) if w.strip()]
    workdir = _s(tool_input, "workdir") or _s(tool_input, "working_directory") or _s(tool_input, "cwd")
    view = ToolView("bash", command=command, description=" · ".join(why), workdir=workdir)
    if result_text is not None:
        view.bash = shell_result(result_text, result_extra)
        view.shows_result = view.bash is not None
    return view


def _agent_view(call: str, args: dict, result_text: str | None, result_error: bool, result_extra: dict | None) -> ToolView | None:
    """Another agent's call, mapped by tool_agents.normalize, as the view of the tool it maps onto."""
    path = args.get("file_path") or ""
    ok = bool(result_text) and not result_error
    if call in ("Note", "Ask"):
        return _talk_view(call, args, result_text if ok else None)
    if call in ("TodoWrite", "Task", "MultiEdit"):
        return _view(call, args, result_text, result_error, result_extra)
    if call == "Edit":
        diff = diff_lines(args["old_string"], args["new_string"])
        if not path and ok:
            listing = tool_agents.numbered_listing(result_text or "")
            path = listing.path if listing else ""
        diff.path = path
        return ToolView("edit", path=path, diffs=[diff], note=args.get("note", ""))
    if call == "Write":
        return ToolView("write", path=path, code=plain_code(path, args["content"]) if args["content"] else None,
                        note=args.get("note", ""))  # fmt: skip
    if call == "Read":
        view = ToolView("read", path=path)
        if ok and (sent := tool_agents.read_object(result_text or "")) is not None:
            body, first, where = sent
            view.path = view.path or where
            view.code = plain_code(view.path, body, first)
            view.shows_result = view.code is not None
            return view
        if ok:
            listing = tool_agents.numbered_listing(result_text or "")
            if listing is not None:
                view.path = view.path or listing.path
                view.code = listing_code(view.path, listing)
            elif (code := numbered_code(path, result_text or "")) is not None:
                view.code = code
            elif (found := tool_agents.path_lines(result_text or "", need_head=True)) is not None:
                view.paths, view.paths_note = found  # a folder's listing
            elif args.get("plain"):
                body, first, view.note = tool_agents.file_text(result_text or "")
                offset = args.get("offset")
                view.code = plain_code(path, body, first or (offset or 0) + 1)
            view.shows_result = view.code is not None or bool(view.paths)
        return view
    if call == "Bash":
        view = ToolView("bash", command=args["command"], description=args.get("description", ""), workdir=args.get("workdir", ""))
        if result_text is not None:
            view.bash = agent_shell_result(result_text, result_error, result_extra)
            view.workdir = view.workdir or view.bash.note_workdir
            view.shows_result = True
        return view
    if call == "Search":
        view = ToolView("search", pattern=args["pattern"], path=args["path"])
        if ok:
            found = tool_agents.path_lines(result_text or "")
            if found is not None:
                view.paths, view.paths_note = found
                view.shows_result = True
        return view
    if call == "Browse":
        code = plain_code("actions.py", args["code"]) if args["code"] else None
        return ToolView("browse", url=args["url"], code=code)
    if call == "Think":
        return ToolView("think", report=args["thought"])
    if call == "Code":
        return ToolView("code", path="IPython cell", code=plain_code("cell.py", args["code"]))
    if call == "Patch":
        files = parse_patch(args["patch"])
        return ToolView("edit", diffs=files) if files else None
    if call == "Submit" and ok:
        diffs = parse_unified(result_text or "")
        return ToolView("edit", diffs=diffs, shows_result=True, note="submitted") if diffs else None
    return None


def _talk_view(call: str, args: dict, result_text: str | None) -> ToolView:
    """A note the agent writes (a topic and its intent, a fact remembered) or its questions to the
    user with the answers its (successful) result gives."""
    if call == "Note":
        return ToolView("note", label=args["label"], description=args["title"], intent=args["intent"],
                        report=args["text"], shows_result=result_text is not None)  # fmt: skip
    view = ToolView("ask")
    for q in args["questions"]:
        options = [Option(o["label"], o["description"]) for o in q["options"] if o["label"]]
        view.questions.append(Question(q["header"], q["question"], options))
    found = tool_agents.answers(result_text) if result_text is not None else None
    if found is not None:
        given, view.note = found
        for i, q in enumerate(view.questions):
            q.answer = given.get(i)
            picked = {p.strip() for p in (q.answer or "").split(",")} | {q.answer}
            for o in q.options:
                o.chosen = o.label in picked
        view.shows_result = True
    return view


ARGS_MAX = 30  # an unknown tool's arguments shown one by one, at most
ARG_CHARS = 6000  # characters of one argument shown; the rest is in the raw view


def _args_view(tool_input: Any) -> ToolView | None:
    """An unknown tool whose arguments hold text over several lines (a script, a prompt, a file's
    content): each argument by its name, the text as it reads, not as JSON with `\\n` escapes.
    None for anything else (the raw JSON is as readable)."""
    if not isinstance(tool_input, dict) or not 0 < len(tool_input) <= ARGS_MAX:
        return None
    if not any(isinstance(v, str) and "\n" in v.strip() for v in tool_input.values()):  # a lone "y\n" reads well as JSON
        return None
    args = []
    for key, value in tool_input.items():
        if isinstance(value, str):
            text = rendering.strip_ansi(value)
        else:
            try:
                text = json.dumps(value, ensure_ascii=False)
            except (TypeError, ValueError):
                text = repr(value)
        more = max(0, len(text) - ARG_CHARS)
        args.append(Arg(str(key), text[:ARG_CHARS], "\n" in text, more))
    return ToolView("args", args=args)
