"""The builtin provider: deterministic and offline. It reads the flat transcript back out of its
prompt and builds the four sections from the transcript itself: the first user goal, the files and
commands touched, errors, the last state, and the constraints the user stated. A previous summary in
the transcript is folded in (cumulative handoffs keep what the earlier summary said).

Pure of Django, like every provider."""

from __future__ import annotations

import json
import re

from contextviewer.core import facts, handoff
from contextviewer.core.handoff import Entry
from contextviewer.core.secrets import mask_text
from contextviewer.core.tokens import count_text

from .base import Completion

PATH_KEYS = ("file_path", "path", "notebook_path")
EDIT_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch", "str_replace_based_edit_tool"}
# Caps on what the summary lists. Lists are cumulative over handoffs (what an earlier summary
# listed is merged in, deduplicated), so they are sized for a whole session, not one view.
MAX_PATHS = 300
MAX_COMMANDS = 200
MAX_ERRORS = 12
MAX_SYMBOLS = 60
MAX_CONSTRAINTS = 20
MAX_EARLIER_STATES = 4  # "Last state" lines of earlier handoffs kept as "Earlier state"
MAX_CARRIED_LINES = 200  # other lines of an earlier summary's State, carried as they are
LONG_COMMAND = facts.LONG_COMMAND

# A path in prose: at least one slash and an extension, or an absolute path.
PATH_RE = re.compile(r"(?<![\w/.@:-])((?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+\.[A-Za-z0-9]{1,8})(?![\w/])")
SYMBOL_RE = re.compile(r"`([A-Za-z_][\w.:]*(?:\(\))?)`")
CONSTRAINT_RE = re.compile(
    r"\b(never|always|don'?t|do not|must|must not|should not|shouldn'?t|avoid|prefer|instead of|make sure|"
    r"only use|no need to|please keep|keep the|not allowed|required to|use \S+ (?:not|rather than|instead of))\b",
    re.IGNORECASE,
)
NEXT_RE = re.compile(r"\b(next|todo|remaining|still need|then I'?ll|I will|I'll|need to|should now|left to)\b", re.IGNORECASE)


def _one_line(text: str, limit: int) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _unique(items, limit: int | None = None, *, keep_last: bool = False) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        if item and item not in seen:
            seen[item] = None
    out = list(seen)
    if limit is not None and len(out) > limit:
        out = out[-limit:] if keep_last else out[:limit]
    return out


def _input(entry: Entry) -> dict:
    value = entry.tool_input
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text or "")
    return [p.strip(" -*•\t") for p in parts if p.strip(" -*•\t")]


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {i}" for i in items)


def _previous(entries: list[Entry]) -> tuple[dict[str, str], list[str]]:
    """Sections of the latest summary in the transcript (ours parse; others give their text)."""
    summaries = [e.text for e in entries if e.role == "summary"]
    if not summaries:
        return {}, []
    latest = summaries[-1]
    sections = handoff.parse_sections(latest)
    if all(s in sections for s in handoff.SECTIONS):
        return sections, []
    return {}, [latest]


def _intent(summary: str) -> str:
    """The request part of a foreign summary (Claude Code's "Primary Request and Intent"), else its start."""
    m = re.search(r"Primary Request and Intent:?\**\s*(.+?)(?:\n\s*\n|\n\s*\d+\.\s)", summary, re.DOTALL | re.IGNORECASE)
    return m.group(1) if m else summary


def _command(text: str) -> str:
    """A command on one line: whole up to LONG_COMMAND characters, else its start (with its head)."""
    line = " ".join(text.split())
    return line if len(line) <= LONG_COMMAND else _one_line(line, 240)


def _quote(summary: str) -> list[str]:
    """A foreign summary's lines, quoted (`  > `) so none can pass for a section heading; blank
    lines dropped, runs of spaces collapsed. Every line stays: its facts are what later handoffs keep."""
    return ["  > " + " ".join(ln.split()) for ln in summary.split("\n") if ln.strip()]


_TICKED = re.compile(r"`([^`]+)`")


def _carried_state(text: str) -> dict[str, list[str]]:
    """What an earlier builtin summary's State listed, by kind, to merge with the new view's."""
    out: dict[str, list[str]] = {
        k: [] for k in ("edited", "read", "mentioned", "commands", "searches", "symbols", "errors", "states", "other", "quoted")
    }
    out["last"] = ""  # type: ignore[assignment]
    for raw in (text or "").split("\n"):
        if raw.lstrip().startswith(">"):
            out["quoted"].append("  > " + raw.lstrip()[1:].strip())
            continue
        line = raw.strip()
        line = line[2:].strip() if line.startswith("- ") else line
        if not line or line.startswith("Nothing was done") or line == "Earlier summary, carried whole:":
            continue
        for prefix, kind in (("Files changed: ", "edited"), ("Files read: ", "read"), ("Paths mentioned: ", "mentioned"), ("Symbols: ", "symbols")):
            if line.startswith(prefix):
                out[kind] += _TICKED.findall(line[len(prefix) :])
                break
        else:
            if line.startswith("Ran `") and line.endswith("`"):
                out["commands"].append(line[len("Ran `") : -1])
            elif line.startswith("Searched: "):
                out["searches"] += [x for x in line[len("Searched: ") :].split("; ") if x]
            elif line.startswith("Error seen: "):
                out["errors"].append(line[len("Error seen: ") :])
            elif line.startswith("Last state: "):
                out["last"] = line[len("Last state: ") :]  # type: ignore[assignment]
            elif line.startswith("Earlier state: "):
                out["states"].append(line[len("Earlier state: ") :])
            else:
                out["other"].append(line.removeprefix("Earlier: "))
    return out


def _paths_seen(prose: list[Entry], tools: list[Entry]) -> list[str]:
    """File paths named in what was said and in tool commands and outputs (files only, not
    directories or slash-words), read the way the fact probes read them."""
    messages = [{"role": e.role, "blocks": [{"kind": "text", "text": e.text}]} for e in prose]
    for t in tools:
        data = _input(t)
        blocks = [{"kind": "tool_result", "text": t.text}]
        if isinstance(data.get("command"), str):
            blocks.append({"kind": "tool_result", "text": data["command"]})
        messages.append({"role": "tool", "blocks": blocks})
    return [f.text for f in facts.extract(messages) if f.kind == "path"]


def summarize(entries: list[Entry]) -> str:
    previous, foreign = _previous(entries)
    # Lines the harness injects as user messages (<task-notification>, <command-name>, ...) are not requests.
    users = [e for e in entries if e.role == "user" and not e.text.lstrip().startswith("<")]
    assistants = [e for e in entries if e.role == "assistant"]
    tools = [e for e in entries if e.role == "tool"]

    # Goal: the original goal stays (from the previous summary), and the latest request is named.
    goal_lines: list[str] = []
    if previous.get("Goal"):
        goal_lines = [ln for ln in previous["Goal"].split("\n") if not ln.startswith("Latest request:")]
    elif foreign:  # the earlier summary states the original goal; the view's requests came after
        goal_lines = ["From the earlier summary: " + _one_line(_intent(foreign[0]), 600)]
    elif users:
        goal_lines = [_one_line(users[0].text, 600)]
    if users and (previous.get("Goal") or foreign or len(users) > 1):
        latest = _one_line(users[-1].text, 400)
        if latest not in goal_lines:
            goal_lines.append(f"Latest request: {latest}")
    if not goal_lines:
        goal_lines = ["Not stated in the transcript (no user request in the loaded view)."]

    # State: files, commands, symbols, errors, last state, merged with what the previous summary
    # listed (cumulative: earlier facts first, each once); a foreign summary is carried whole.
    carried = _carried_state(previous.get("State and what is done", ""))
    edited, read = list(carried["edited"]), list(carried["read"])
    commands, errors, searches = list(carried["commands"]), list(carried["errors"]), list(carried["searches"])
    for t in tools:
        data = _input(t)
        for key in PATH_KEYS:
            value = data.get(key)
            if not isinstance(value, str) or not value.strip():
                continue
            value = value.strip()
            # file_path and notebook_path name files; a search `path` is often a directory.
            if key != "path" or facts.is_file_like(value):
                (edited if t.tool_name in EDIT_TOOLS else read).append(value)
        if isinstance(data.get("command"), str) and data["command"].strip():
            commands.append(_command(data["command"]))
        if isinstance(data.get("pattern"), str) and t.tool_name not in {"Bash"}:
            where = data.get("path") if isinstance(data.get("path"), str) else ""
            searches.append(_one_line(f"{t.tool_name} {data['pattern']!r}" + (f" in {where}" if where else ""), 200))
        if t.is_error and t.text.strip():
            errors.append(_one_line(f"{t.tool_name}: {t.text.strip()}", 240))
    said = [e for e in entries if e.role in ("user", "assistant")]
    mentioned = list(carried["mentioned"]) + _paths_seen(said, tools)
    symbols = list(carried["symbols"])
    for e in assistants:
        symbols += [s for s in SYMBOL_RE.findall(e.text) if 3 <= len(s) <= 80 and not PATH_RE.fullmatch(s)]

    state: list[str] = []
    edited_u = _unique(edited, MAX_PATHS, keep_last=True)
    read_u = [p for p in _unique(read, MAX_PATHS, keep_last=True) if p not in edited_u]
    listed = set(edited_u) | set(read_u)
    other = [p for p in _unique(mentioned, MAX_PATHS, keep_last=True) if p not in listed]
    if edited_u:
        state.append("Files changed: " + ", ".join(f"`{p}`" for p in edited_u))
    if read_u:
        state.append("Files read: " + ", ".join(f"`{p}`" for p in read_u))
    if other:
        state.append("Paths mentioned: " + ", ".join(f"`{p}`" for p in other))
    for c in _unique(commands, MAX_COMMANDS, keep_last=True):
        state.append(f"Ran `{c}`")
    if searches:
        state.append("Searched: " + "; ".join(_unique(searches, 24, keep_last=True)))
    if symbols:
        state.append("Symbols: " + ", ".join(f"`{s}`" for s in _unique(symbols, MAX_SYMBOLS, keep_last=True)))
    for err in _unique(errors, MAX_ERRORS, keep_last=True):
        state.append(f"Error seen: {err}")
    earlier_states = list(carried["states"])
    if assistants:
        state.append("Last state: " + _one_line(assistants[-1].text, 700))
    elif carried["last"]:
        state.append("Last state: " + carried["last"])
    if assistants and carried["last"]:
        earlier_states.append(carried["last"])
    for line in _unique(earlier_states, MAX_EARLIER_STATES, keep_last=True):
        state.append("Earlier state: " + line)
    state += [ln for ln in _unique(carried["other"], MAX_CARRIED_LINES) if ln not in state]
    quoted = list(carried["quoted"])
    if foreign:
        quoted = _quote(foreign[0])
    if not state and not quoted:
        state.append("Nothing was done in the loaded view yet.")
    if quoted:
        state.append("Earlier summary, carried whole:")

    # Next steps: what the assistant said comes next; an unanswered request; else carry on.
    steps: list[str] = []
    for e in assistants[-3:]:
        steps += [_one_line(s, 300) for s in _sentences(e.text) if NEXT_RE.search(s)]
    steps = _unique(steps, 6, keep_last=True)
    last_role = next((e.role for e in reversed(entries) if e.role in ("user", "assistant")), None)
    if last_role == "user" and users:
        steps.insert(0, "Answer the latest request: " + _one_line(users[-1].text, 300))
    if not steps and previous.get("Next steps") and not (users or assistants or tools):
        steps = [ln.lstrip("- ").strip() for ln in previous["Next steps"].split("\n") if ln.strip()]
    if not steps:
        target = users[-1].text if users else (goal_lines[0] if goal_lines else "the goal")
        steps = ["Continue from the last state toward: " + _one_line(target, 300)]
        if errors:
            steps.append("Resolve the last error: " + errors[-1])

    # Constraints: what the user stated, verbatim where short.
    constraints = []
    if previous.get("Constraints and preferences"):
        constraints += [
            ln.lstrip("- ").strip()
            for ln in previous["Constraints and preferences"].split("\n")
            if ln.strip() and not ln.startswith("None stated")
        ]
    for e in users:
        constraints += [_one_line(s, 300) for s in _sentences(e.text) if CONSTRAINT_RE.search(s)]
    constraints = [c for c in _unique(constraints, MAX_CONSTRAINTS, keep_last=True) if not c.startswith("None stated")]
    if not constraints:
        constraints = ["None stated in the transcript."]

    return handoff.format_sections(
        {
            "Goal": "\n".join(goal_lines),
            "State and what is done": _bullets(state) + ("\n" + "\n".join(quoted) if quoted else ""),
            "Next steps": _bullets(steps),
            "Constraints and preferences": _bullets(constraints),
        }
    )


class BuiltinProvider:
    name = "builtin"
    model = "builtin"

    def complete(self, *, system: str, prompt: str, role: str, max_tokens: int = 4096) -> Completion:
        prompt = mask_text(prompt)  # what it writes comes from the prompt: masked like every prompt
        if role == "title":
            text = handoff.clean_title(handoff.request_of(prompt), 80) or "Untitled session"
        else:
            text = summarize(handoff.parse_transcript(prompt))
        return Completion(
            text=mask_text(text),
            model=self.model,
            input_tokens=count_text(system) + count_text(prompt, approximate_over=200_000),
            output_tokens=count_text(text),
            cost_usd=0.0,
        )
