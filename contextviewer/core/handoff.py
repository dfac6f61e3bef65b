"""Handoff summarization, the pure part: the loaded view as ONE flat transcript, the prompt that
asks for the four sections, and parsing/validating the sections of an answer.

The transcript goes to the provider inside one user message, never replayed as alternating roles:

    SUMMARY:
      (the previous summary, indented)
    USER: first line
      continuation lines are indented by two spaces
    ASSISTANT: ...
    TOOL Bash({"command": "pytest -q"}) -> 3 passed
    TOOL ERROR Edit({"file_path": "src/app.py"}) -> String not found

Indenting continuation lines means a line inside a message can never pass for a new entry, so the
builtin summarizer can read the transcript back (parse_transcript).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from contextviewer.core import titles

SECTIONS = ("Goal", "State and what is done", "Next steps", "Constraints and preferences")

# Per-entry and whole-transcript caps: a loaded view is at most one window, but a tool result can
# be megabytes; the summarizer needs its gist, not all of it.
MAX_TEXT_CHARS = 4_000
MAX_TOOL_OUTPUT_CHARS = 1_500
MAX_INPUT_VALUE_CHARS = 400
MAX_INPUT_CHARS = 1_200
MAX_TRANSCRIPT_CHARS = 400_000

# Tool input keys shown first (and kept when an input is cut): they carry paths and commands, and
# the task list of a TodoWrite / update_plan call (its open items are next steps).
KEY_ORDER = ("file_path", "path", "notebook_path", "command", "pattern", "glob", "url", "query", "todos", "plan", "description")

# The builtin summary's size, in tokens (count_text), whatever number of folds came before it.
DEFAULT_BUDGET = 2_500
MIN_BUDGET = 300

TRANSCRIPT_OPEN = "<transcript>"
TRANSCRIPT_CLOSE = "</transcript>"


@dataclass
class Entry:
    role: str  # "summary" | "user" | "assistant" | "tool"
    text: str = ""  # user/assistant/summary text; tool: the output
    tool_name: str | None = None
    tool_input: Any = None  # parsed input (entries_from_messages) or its JSON text (parse_transcript)
    is_error: bool = False


def clip(text: str, limit: int) -> str:
    """Head and tail of a long text, with how much was cut in between."""
    if len(text) <= limit:
        return text
    head = int(limit * 0.7)
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


def entries_from_messages(messages: Iterable[tuple[str, Sequence[dict], bool, bool]]) -> list[Entry]:
    """Entries from stored messages given as (role, blocks, is_meta, is_compact_summary).

    Tool results are paired with their calls by tool_id (the call's entry gets the output);
    thinking and meta lines are left out: the summary is about what was said and done."""
    entries: list[Entry] = []
    calls: dict[str, Entry] = {}
    for role, blocks, is_meta, is_compact_summary in messages:
        if is_meta:
            continue
        if is_compact_summary:
            text = "\n".join(b.get("text") or "" for b in blocks if isinstance(b, dict) and b.get("kind") == "text")
            if text.strip():
                entries.append(Entry("summary", text.strip()))
            continue
        for b in blocks or ():
            if not isinstance(b, dict):
                continue
            kind = b.get("kind")
            if kind == "text" and (b.get("text") or "").strip() and role in ("user", "assistant"):
                entries.append(Entry(role, b["text"].strip()))
            elif kind == "tool_call":
                tool_input = b.get("tool_input")
                if tool_input is None and b.get("text"):
                    try:
                        tool_input = json.loads(b["text"])
                    except ValueError:
                        tool_input = b["text"]
                entry = Entry("tool", "", b.get("tool_name") or "tool", tool_input)
                entries.append(entry)
                if b.get("tool_id"):
                    calls[b["tool_id"]] = entry
            elif kind == "tool_result":
                entry = calls.get(b.get("tool_id") or "")
                if entry is None:
                    entry = Entry("tool", "", "tool", {})
                    entries.append(entry)
                entry.text = (entry.text + "\n" if entry.text else "") + (b.get("text") or "")
                entry.is_error = entry.is_error or bool(b.get("is_error"))
    return entries


def _clip_value(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= MAX_INPUT_VALUE_CHARS else value[:MAX_INPUT_VALUE_CHARS] + "…"
    if isinstance(value, dict):
        return {k: _clip_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip_value(v) for v in value[:40]]
    return value


def _compact_tasks(value: Any) -> Any:
    """A task list (TodoWrite `todos`, update_plan `plan`) as its items' text and status only."""
    if not isinstance(value, list):
        return value
    out = []
    for item in value[:40]:
        if isinstance(item, dict):
            text = item.get("content") or item.get("step") or item.get("title") or ""
            out.append({"content": str(text)[:MAX_INPUT_VALUE_CHARS], "status": str(item.get("status") or "")})
        else:
            out.append(item)
    return out


def render_input(tool_input: Any) -> str:
    """The tool input as one line of valid JSON, paths and commands first, long values cut."""
    if isinstance(tool_input, dict) and any(isinstance(tool_input.get(k), list) for k in ("todos", "plan")):
        tool_input = {k: (_compact_tasks(v) if k in ("todos", "plan") else v) for k, v in tool_input.items()}
    if not isinstance(tool_input, dict):
        return json.dumps(_clip_value(tool_input if tool_input is not None else {}), ensure_ascii=False)
    ordered = {k: tool_input[k] for k in KEY_ORDER if k in tool_input}
    ordered.update({k: v for k, v in tool_input.items() if k not in ordered})
    clipped = _clip_value(ordered)
    text = json.dumps(clipped, ensure_ascii=False)
    if len(text) <= MAX_INPUT_CHARS:
        return text
    kept = {k: clipped[k] for k in KEY_ORDER if k in clipped}
    kept["…"] = f"{len(clipped) - len(kept)} more keys"
    return json.dumps(kept, ensure_ascii=False)


def _indent(text: str) -> str:
    lines = text.split("\n")
    return "\n".join([lines[0]] + ["  " + line for line in lines[1:]])


def render_entry(entry: Entry) -> str:
    if entry.role == "summary":
        return "SUMMARY:\n" + "\n".join("  " + line for line in entry.text.split("\n"))
    if entry.role == "tool":
        tag = "TOOL ERROR" if entry.is_error else "TOOL"
        name = re.sub(r"[^\w.:-]", "_", entry.tool_name or "tool") or "tool"
        output = clip(entry.text.strip(), MAX_TOOL_OUTPUT_CHARS) if entry.text.strip() else "(no output)"
        return _indent(f"{tag} {name}({render_input(entry.tool_input)}) -> {output}")
    return _indent(f"{entry.role.upper()}: {clip(entry.text, MAX_TEXT_CHARS)}")


def render_transcript(entries: Sequence[Entry], *, max_chars: int = MAX_TRANSCRIPT_CHARS) -> str:
    """The flat transcript. Above max_chars, the summaries and the first user message stay and the
    oldest other entries give way (the cut is said in the transcript)."""
    rendered = [render_entry(e) for e in entries]
    total = sum(len(r) + 1 for r in rendered)
    if total <= max_chars:
        return "\n".join(rendered)
    keep_always = set()
    first_user = next((i for i, e in enumerate(entries) if e.role == "user"), None)
    for i, e in enumerate(entries):
        if e.role == "summary" or i == first_user:
            keep_always.add(i)
    budget = max_chars - sum(len(rendered[i]) + 1 for i in keep_always)
    tail: set[int] = set()
    for i in range(len(rendered) - 1, -1, -1):
        if i in keep_always:
            continue
        if len(rendered[i]) + 1 > budget:
            break
        budget -= len(rendered[i]) + 1
        tail.add(i)
    out = []
    omitted = 0
    for i, r in enumerate(rendered):
        if i in keep_always or i in tail:
            if omitted:
                out.append(f"[... {omitted} entries omitted ...]")
                omitted = 0
            out.append(r)
        else:
            omitted += 1
    if omitted:
        out.append(f"[... {omitted} entries omitted ...]")
    return "\n".join(out)


SYSTEM_PROMPT = (
    "You write handoff summaries of coding-agent sessions. Another agent will continue the work from "
    "your summary alone, so keep every fact it needs: real file paths, symbols, commands, errors and "
    "decisions. Never invent facts that are not in the transcript."
)

INSTRUCTIONS = """Below is the transcript of a coding-agent session, as one flat text. Lines start with
USER:, ASSISTANT:, TOOL name(input) -> output, or SUMMARY: (a summary of what came before it).
Write a handoff summary with exactly these four Markdown sections, in this order:

## Goal
What the user wants overall, and the latest request.

## State and what is done
What has been done and where things stand: the real file paths, symbols and commands involved,
errors met and how they were resolved. Keep what the previous SUMMARY said, updated.

## Next steps
What remains to be done, in order.

## Constraints and preferences
Rules the user stated ("never ...", "always ...", "use X, not Y"), verbatim where short.

Answer with the four sections only."""


def build_prompt(transcript: str) -> tuple[str, str]:
    """(system, the one user message) for a handoff."""
    return SYSTEM_PROMPT, f"{INSTRUCTIONS}\n\n{TRANSCRIPT_OPEN}\n{transcript}\n{TRANSCRIPT_CLOSE}\n"


_ENTRY_RE = re.compile(r"^(SUMMARY:|USER: |ASSISTANT: |TOOL ERROR |TOOL |\[\.\.\. \d+ entries omitted \.\.\.\])")


def transcript_of(prompt: str) -> str:
    start = prompt.find(TRANSCRIPT_OPEN)
    end = prompt.rfind(TRANSCRIPT_CLOSE)
    if start < 0 or end < start:
        return prompt
    return prompt[start + len(TRANSCRIPT_OPEN) : end].strip("\n")


def _parse_tool(head: str) -> Entry:
    is_error = head.startswith("TOOL ERROR ")
    rest = head[len("TOOL ERROR ") :] if is_error else head[len("TOOL ") :]
    name, _, after = rest.partition("(")
    tool_input: Any = {}
    output = after
    try:
        tool_input, end = json.JSONDecoder().raw_decode(after)
        output = after[end:]
    except ValueError:
        pass
    if output.startswith(")"):
        output = output[1:]
    if output.startswith(" -> "):
        output = output[4:]
    return Entry("tool", output, name, tool_input, is_error)


def parse_transcript(prompt: str) -> list[Entry]:
    """Entries back from a rendered transcript (the builtin summarizer reads its prompt this way)."""
    entries: list[Entry] = []
    current: list[str] | None = None
    head = ""

    def flush() -> None:
        if current is None:
            return
        body = "\n".join(current)
        if head == "SUMMARY:":
            entries.append(Entry("summary", body.strip("\n")))
        elif head.startswith("TOOL"):
            entry = _parse_tool(head + body)
            entries.append(entry)
        elif head in ("USER: ", "ASSISTANT: "):
            entries.append(Entry(head[:-2].lower(), body))

    for line in transcript_of(prompt).split("\n"):
        m = _ENTRY_RE.match(line)
        if m:
            flush()
            if m.group(1).startswith("[..."):
                current = None
                continue
            head = m.group(1)
            first = line[len(head) :]
            current = [first] if head != "SUMMARY:" else []
            if head.startswith("TOOL"):
                current = [first]
        elif current is not None:
            current.append(line[2:] if line.startswith("  ") else line)
    flush()
    return entries


# Headings as models write them: "## Goal", "**Goal**", "Goal:", "1. Goal".
_HEADING_RE = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\d+[.)]\s*)?(?:\*\*|__)?\s*("
    + "|".join(re.escape(s) for s in SECTIONS)
    + r")\s*(?:\*\*|__)?\s*:?\s*(?:\*\*|__)?\s*$",
    re.IGNORECASE,
)


def parse_sections(text: str) -> dict[str, str]:
    """The four sections of a summary (names as in SECTIONS); sections not found are absent."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    canonical = {s.lower(): s for s in SECTIONS}
    for line in (text or "").split("\n"):
        m = _HEADING_RE.match(line)
        if m:
            current = canonical[m.group(1).lower()]
            found.setdefault(current, [])
            continue
        if current is not None:
            found[current].append(line)
    return {name: "\n".join(lines).strip() for name, lines in found.items()}


class SummaryInvalid(ValueError):
    pass


def validate_sections(text: str) -> dict[str, str]:
    """The four sections, each non-empty, or SummaryInvalid saying which are missing or empty."""
    sections = parse_sections(text)
    missing = [s for s in SECTIONS if s not in sections]
    empty = [s for s in SECTIONS if s in sections and not sections[s]]
    problems = []
    if missing:
        problems.append("missing " + ", ".join(f'"{s}"' for s in missing))
    if empty:
        problems.append("empty " + ", ".join(f'"{s}"' for s in empty))
    if problems:
        preview = " ".join((text or "").split())[:200]
        raise SummaryInvalid(f"the summary lacks the four sections ({'; '.join(problems)}); it began: {preview!r}")
    return sections


def format_sections(sections: dict[str, str]) -> str:
    return "\n\n".join(f"## {name}\n{sections[name].strip()}" for name in SECTIONS) + "\n"


# What a handoff keeps: no vendored, build or temporary paths; open tasks; resolved errors --------

# Directories whose files are not the project's work: dependencies, build output, caches.
NOISE_DIRS = frozenset(
    {
        "node_modules", "_build", "deps", ".venv", "venv", "site-packages", "dist-packages", "target", "dist",
        "__pycache__", ".git", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache",
        ".next", ".gradle", "vendor", "bower_components", ".eggs", "coverage", "htmlcov",
    }
)
# Roots of temporary or made-up paths.
NOISE_ROOTS = ("/tmp/", "/var/tmp/", "/private/tmp/", "/private/var/folders/", "/var/folders/", "/nonexistent", "/dev/null", "/proc/")
_PATHISH_RE = re.compile(r"(?<![\w/.@:~-])(?:~|\.{1,2})?/?[\w.@+-]+(?:/[\w.@+-]*)+")


def is_noise_path(path: str) -> bool:
    """A vendored, build, cache or temporary path (node_modules, _build, deps, .venv, site-packages,
    target, dist, /tmp, /nonexistent...): not the project's own files, so never in a handoff."""
    p = (path or "").strip().strip("`'\"")
    if not p:
        return False
    if p.startswith(NOISE_ROOTS) or p in {"/tmp", "/nonexistent"}:
        return True
    parts = [x for x in p.replace("\\", "/").split("/") if x]
    return any(x in NOISE_DIRS or x.endswith((".egg-info", ".dist-info")) for x in parts[:-1] or parts)


def names_noise_path(text: str) -> bool:
    """Whether a line (a command, an error) names a vendored, build or temporary path."""
    return any(is_noise_path(m.group(0)) for m in _PATHISH_RE.finditer(text or ""))


def scrub_noise_paths(text: str) -> str:
    """The text with vendored, build and temporary paths replaced by `(temp path)`."""
    return _PATHISH_RE.sub(lambda m: "(temp path)" if is_noise_path(m.group(0)) else m.group(0), text or "")


DONE_STATUSES = frozenset({"completed", "complete", "done", "cancelled", "canceled"})


def task_list(tool_name: str | None, tool_input: Any) -> list[tuple[str, bool]] | None:
    """(text, done) of each item of a task-list call (TodoWrite `todos`, update_plan `plan`), or None
    when the call is not one. Each such call gives the whole list: the latest one is the state."""
    if not isinstance(tool_input, dict):
        return None
    items = tool_input.get("todos") if isinstance(tool_input.get("todos"), list) else tool_input.get("plan")
    if not isinstance(items, list) or (tool_name or "") not in {"TodoWrite", "update_plan", "todo_write", "write_todos"}:
        return None
    out = []
    for item in items:
        if isinstance(item, dict):
            text = " ".join(str(item.get("content") or item.get("step") or item.get("title") or "").split())
            if text:
                out.append((text, str(item.get("status") or "").lower() in DONE_STATUSES))
    return out


def run_target(tool_input: Any) -> str:
    """What a tool call ran on, to tell whether a later run repeats it: its command (whitespace
    normalized) or its file path, else "" (a call on nothing in particular resolves nothing)."""
    if isinstance(tool_input, dict):
        for key in ("command", "cmd", "file_path", "notebook_path", "path", "url"):
            value = tool_input.get(key)
            if isinstance(value, list):
                value = " ".join(str(v) for v in value)
            if isinstance(value, str) and value.strip():
                return " ".join(value.split())
    return ""


_SETUP_WORDS = {"cd", "export", "source", ".", "set", "pushd", "popd", "true"}
_REDIRECT_RE = re.compile(r"^\d*[<>]")


def command_key(command: str) -> tuple[str, frozenset[str]]:
    """(head, path arguments) of what a shell command runs: its last step that is not `cd`/`export`
    (before any pipe), its program and subcommand (`git push`, `mix test`, `pytest`), and the file
    arguments. `cd app && mix test test/a_test.exs 2>&1 | tail` -> ("mix test", {"test/a_test.exs"})."""
    steps = [x.strip() for x in re.split(r"&&|\|\||;|\n", command or "") if x.strip()]
    steps = [x for x in steps if x.split()[0] not in _SETUP_WORDS] or steps or [""]
    words = [w.strip("'\"") for w in steps[-1].split("|")[0].split()]
    words = [w for w in words if w and not _REDIRECT_RE.match(w)]
    while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
        words = words[1:]
    if not words:
        return "", frozenset()
    head = [words[0].rsplit("/", 1)[-1]]
    rest = words[1:]
    if head[0] in {"python", "python3", "uv", "poetry", "npx", "bunx", "pnpm", "yarn", "npm", "bundle"} and rest and rest[0] in {"-m", "run", "exec"}:
        rest = rest[1:]
        head.append(rest[0] if rest else "")
        rest = rest[1:]
    if rest and re.fullmatch(r"[a-z][\w:-]*", rest[0]):
        head.append(rest[0])
        rest = rest[1:]
    paths = frozenset(w for w in rest if not w.startswith("-") and ("/" in w or re.search(r"\.[A-Za-z]\w{0,7}$", w)))
    return " ".join(head), paths


def _looks_like_path(target: str) -> bool:
    return bool(target) and " " not in target and ("/" in target or "." in target)


def resolves(error_tool: str, error_target: str, tool: str, target: str) -> bool:
    """Whether a successful call (`tool` on `target`) resolves an earlier error (`error_tool` on
    `error_target`): the same file, or the same command (same program and subcommand, on the same
    files or on all of them; for git the subcommand alone: a later `git push -u origin x` resolves a
    failed `git push`)."""
    if not error_target or not target:
        return False
    error_target, target = error_target.rstrip("…"), target
    if _looks_like_path(error_target):
        return error_target == target
    if error_tool != tool or _looks_like_path(target):
        return False
    if error_target == target:
        return True
    head, paths = command_key(error_target)
    later_head, later_paths = command_key(target)
    if not head or head != later_head:
        return False
    return head.startswith("git ") or not paths or not later_paths or paths <= later_paths


def deleted_paths(tool_name: str | None, tool_input: Any) -> list[str]:
    """Paths a shell call deletes (`rm`, `git rm`, `rmdir`, `unlink`): later they are not state."""
    if not isinstance(tool_input, dict) or not isinstance(tool_input.get("command"), str):
        return []
    out: list[str] = []
    for part in re.split(r"&&|\|\||;|\n", tool_input["command"]):
        words = part.split()
        if words[:2] == ["git", "rm"]:
            words = words[1:]
        if words and words[0] in {"rm", "rmdir", "unlink"}:
            out += [w.strip("'\"") for w in words[1:] if not w.startswith("-")]
    return out


# Where a sentence ends: . ! or ? before a space or the end, not after a list number ("1."), a
# lone letter ("a.") or a common abbreviation ("e.g.").
_SENTENCE_END = re.compile(r"(?<![\w.])(?!(?:\d+|[A-Za-z]|e\.g|i\.e|etc|vs|cf|Mr|Dr|St|No)[.!?](?:\s|$))\S*?[.!?]['\")\]]*(?=\s|$)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)]|[A-Za-z][.)])\s")
_CLAUSE_BREAK = re.compile(r"[,;:]\s|\s[-–—]\s|\s\(")


def _sentences_of(line: str) -> list[str]:
    """One line of text as its sentences (the line is one when it has no sentence end inside)."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(line):
        if line[start : m.end()].strip():
            out.append(line[start : m.end()].strip())
        start = m.end()
    if line[start:].strip():
        out.append(line[start:].strip())
    return out


def _paragraphs(text: str) -> list[list[str]]:
    """The text's paragraphs (blank-line separated), each as its whole units: the sentences of its
    prose lines, and each list item or short line whole (a line break ends a unit)."""
    out = []
    for block in re.split(r"\n\s*\n", text or ""):
        units = []
        for line in block.split("\n"):
            line = " ".join(line.split())
            if line:
                units += [line] if _LIST_ITEM.match(line) else _sentences_of(line)
        if units:
            out.append(units)
    return out


def _is_list(units: list[str]) -> bool:
    return sum(1 for u in units if _LIST_ITEM.match(u)) >= 2


def first_sentences(text: str, limit: int = 300) -> str:
    """The text on one line, as whole sentences: as many as fit in `limit` characters, so it never
    ends mid-phrase. A paragraph is taken whole while it fits; one that does not fit gives its
    first whole sentences (a list gives none once something is taken: half a list misleads); a line
    that announces what follows ("Key files:") is not left at the end. Only a first sentence that
    alone is longer than `limit` is cut, at its last clause break (or word) within it, with "…"."""
    line = " ".join((text or "").split())
    if len(line) <= limit:
        return line
    taken: list[str] = []
    size = -1
    for units in _paragraphs(text):
        whole = len(" ".join(units))
        if size + 1 + whole <= limit:
            taken += units
            size += 1 + whole
            continue
        if not (taken and _is_list(units)):
            for unit in units:
                if size + 1 + len(unit) > limit:
                    break
                taken.append(unit)
                size += 1 + len(unit)
        break
    while taken and taken[-1].endswith(":"):
        taken.pop()
    if taken:
        return " ".join(taken)
    return _cut_phrase(line, limit)


def _cut_phrase(line: str, limit: int) -> str:
    """A sentence longer than `limit`, cut at its last clause break within it (a word when there is
    none in its second half), with "…"."""
    head = line[: limit - 1]
    breaks = [m.start() for m in _CLAUSE_BREAK.finditer(head) if m.start() >= limit // 2]
    cut = head[: breaks[-1]] if breaks else head.rsplit(" ", 1)[0]
    return (cut.rstrip(" ,;:-–—") or head) + "…"


def shorten_line(line: str, limit: int) -> str:
    """A summary line cut to about `limit` characters on whole sentences (first_sentences), its
    indentation and bullet kept."""
    body = line.lstrip()
    indent = line[: len(line) - len(body)]
    bullet = ""
    m = re.match(r"(?:[-*>]\s+)+", body)
    if m:
        bullet, body = m.group(0), body[m.end() :]
    return indent + bullet + first_sentences(body, max(20, limit - len(indent) - len(bullet)))


def fit_to_budget(render, groups: dict[str, list[str]], drop_order: Sequence[str], budget: int, count) -> str:
    """render(groups) within `budget` tokens (count(text)): items give way in `drop_order`, the
    first group's oldest items first (each group's list is oldest first). What is left when every
    group is empty is cut line by line from the end of the longest line."""
    groups = {k: list(v) for k, v in groups.items()}
    text = render(groups)
    tokens = count(text)
    for name in drop_order:
        items = groups.get(name) or []
        while items and tokens > budget:
            excess = tokens - budget
            dropped = 0
            while items and dropped < excess:
                dropped += count(items.pop(0)) + 1
            text = render(groups)
            tokens = count(text)
        if tokens <= budget:
            return text
    while tokens > budget:  # every droppable item gone: shorten the longest line, then drop lines
        lines = text.split("\n")
        body = [k for k, line in enumerate(lines) if line.strip() and not line.startswith("## ")]
        if not body:
            break
        i = max(body, key=lambda k: len(lines[k]))
        if len(lines[i]) > 40:
            lines[i] = shorten_line(lines[i], len(lines[i]) * 2 // 3)
        else:  # the last line of the section with the most lines (each section keeps one)
            sections: list[list[int]] = []
            for k, line in enumerate(lines):
                if line.startswith("## "):
                    sections.append([])
                elif line.strip() and sections:
                    sections[-1].append(k)
            fullest = max(sections, key=len, default=[])
            if len(fullest) < 2:
                break
            del lines[fullest[-1]]
        text = "\n".join(lines)
        tokens = count(text)
    return text


# Titles ---------------------------------------------------------------------------------------

TITLE_SYSTEM = "You name coding-agent sessions. Answer with a title of at most 8 words, no quotes."
REQUEST_OPEN = "<request>"
REQUEST_CLOSE = "</request>"


def title_prompt(first_request: str) -> tuple[str, str]:
    return TITLE_SYSTEM, f"Name the session that began with this request:\n{REQUEST_OPEN}\n{clip(first_request, 2000)}\n{REQUEST_CLOSE}\n"


def request_of(prompt: str) -> str:
    start = prompt.find(REQUEST_OPEN)
    end = prompt.rfind(REQUEST_CLOSE)
    if start < 0 or end < start:
        return prompt
    return prompt[start + len(REQUEST_OPEN) : end].strip()


def clean_title(text: str, limit: int = 120) -> str:
    """One line, no harness tags, surrounding quotes or heading marks, cut on a word to `limit`."""
    return titles.from_request(text, limit)
