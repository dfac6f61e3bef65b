"""The builtin provider: deterministic and offline. It reads the flat transcript back out of its
prompt and builds the four sections from the transcript itself: the first user goal, the files and
commands touched, errors, the last state, and the constraints the user stated. A previous summary in
the transcript is merged in item by item (cumulative handoffs keep what the earlier summary said,
less what the view superseded), within a token budget however many folds came before.

Pure of Django: the budget is a parameter (providers/services.build_provider passes the
CONTEXTVIEWER_HANDOFF_BUDGET setting)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from contextviewer.core import facts, handoff
from contextviewer.core import handoff_truth as truth
from contextviewer.core.handoff import Entry
from contextviewer.core.salience import CONTENT_TOOLS, error_head, error_lines
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
    """A command on one line: whole up to LONG_COMMAND characters, else its head and " …": its
    words before its first quoted, heredoc or subshell argument (a commit message's body or a
    heredoc is not worth its tokens), at most 160 characters of whole words."""
    line = " ".join(text.split())
    if len(line) <= LONG_COMMAND:
        return line
    head = " ".join(re.split(r"\n|\$\(|<<|[\"'`]", text, maxsplit=1)[0].split()).rstrip("=")
    if len(head) > 160:
        head = head[:161].rsplit(" ", 1)[0]
    return (head or facts.command_head(text)) + " …"


_TICKED = re.compile(r"`([^`]+)`")


def _carried_state(text: str) -> dict[str, list[str]]:
    """What an earlier builtin summary's State listed, by kind, to merge with the new view's."""
    out: dict[str, list[str]] = {
        k: [] for k in ("edited", "read", "mentioned", "commands", "named", "searches", "symbols", "errors", "states", "other", "quoted", "done")
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
            elif line.startswith(_NAMED):
                out["named"] += _TICKED.findall(line[len(_NAMED) :])
            elif line.startswith("Searched: "):
                out["searches"] += [x for x in line[len("Searched: ") :].split("; ") if x]
            elif line.startswith("Error seen: "):
                out["errors"].append(line[len("Error seen: ") :])
            elif line.startswith("Last state: "):
                out["last"] = line[len("Last state: ") :]  # type: ignore[assignment]
            elif line.startswith("Tasks done: "):
                out["done"] += [x for x in line[len("Tasks done: ") :].split("; ") if x]
            elif line.startswith("Earlier state: "):
                out["states"].append(line[len("Earlier state: ") :])
            else:
                out["other"].append(line.removeprefix("Earlier: "))
    return out


def _paths_seen(prose: list[Entry], tools: list[Entry]) -> list[str]:
    """File paths named in what was said and in tool commands and outputs (files only, not
    directories or slash-words), read the way the fact probes read them, each whole: the words a
    cut left in pieces are not read, and a path seen only in pieces is left out (handoff_truth)."""
    messages = [{"role": e.role, "blocks": [{"kind": "text", "text": truth.uncut(e.text)}]} for e in prose]
    for t in tools:
        blocks = [{"kind": "tool_result", "text": truth.uncut(t.text)}]
        command = truth.command_of(_input(t))
        if command:
            blocks.append({"kind": "tool_result", "text": truth.uncut(command)})
        messages.append({"role": "tool", "blocks": blocks})
    texts = [b["text"] for m in messages for b in m["blocks"]]
    return truth.whole_paths([f.text for f in facts.extract(messages) if f.kind == "path"], texts)


# A backticked span shaped like a command: a program name (or ./path) then its arguments.
_COMMAND_START = re.compile(r"^(?:\.{0,2}/)?[a-z][\w.+-]*(?:/[\w.+-]+)* +[^ ]")
_NAMED = "Named by the earlier summary: "
_ERROR_TARGET_RE = re.compile(r"^(?P<tool>[\w.:-]+): (?P<msg>.*?)(?: \(on `(?P<target>[^`]+)`\))?$")
_OPEN_TASK = "Open task: "
_ANSWER = "Answer the latest request: "
_LATEST = "Latest request (see Last state for where it stands): "
_STEM_RE = re.compile(r"[\w.@+-]+$")
# State lists that give way in tiers (carried, from the view, the view's latest, named by the request).
TIERED = ("mentioned", "searches", "symbols", "read", "commands", "errors", "edited")
# The order the lists (a TIERED list: its tiers) give way in over the budget, least useful first.
DROP_ORDER = (
    "other", "named", "earlier", "done",
    *(name + "@carried" for name in TIERED),
    *(name + "@view" for name in TIERED),
    "error_steps", "tasks",
    *(name + "@recent" for name in TIERED),
    "constraints",
    *(name + "@goal" for name in TIERED),
    *(name + "@named" for name in TIERED),
)


def _foreign_items(text: str) -> dict[str, list[str]]:
    """The paths of a summary that is not ours (or of lines quoted by an older builtin summary),
    merged as items instead of pasting the text, and its backticked spans shaped like commands: named
    as what the earlier summary names, never as "Ran" lines (a summary's prose, "the instruction was
    to run `bd ready`", or `cannot invoke remote function`, is no command that ran)."""
    paths = [f.text for f in facts.extract([{"role": "assistant", "blocks": [{"kind": "text", "text": text}]}]) if f.kind == "path"]
    named = []
    for span in facts.BACKTICK_RE.findall(text):  # one line, at most 80 characters
        span = " ".join(span.split())
        if " " in span and _COMMAND_START.match(span) and not PATH_RE.fullmatch(span):
            named.append(span)
    return {"mentioned": truth.whole_paths(paths, [text]), "named": named}


def _stems(text: str) -> set[str]:
    """Basename stems (3+ characters) of the paths a request names: `src/parser.py` -> `parser`."""
    out = set()
    for p in PATH_RE.findall(text or ""):
        m = _STEM_RE.search(p.rstrip("/"))
        stem = m.group(0).rsplit(".", 1)[0] if m else ""
        if len(stem) >= 3:
            out.add(stem)
    return out


@dataclass
class _View:
    """The loaded view as the summarizer reads it: the earlier summary (ours by section, or a foreign
    one whole), the requests, what the assistant said, the tool calls and the latest request."""

    entries: list[Entry]
    previous: dict[str, str]  # the sections of an earlier builtin summary
    foreign: list[str]  # an earlier summary that is not ours, whole
    users: list[Entry]
    assistants: list[Entry]
    tools: list[Entry]
    request: str  # the latest request, cut at a sentence end ("" without one)

    @classmethod
    def of(cls, entries: list[Entry]) -> _View:
        previous, foreign = _previous(entries)
        # Lines the harness injects as user messages (<task-notification>, <command-name>, ...) are not requests.
        users = [e for e in entries if e.role == "user" and not e.text.lstrip().startswith("<")]
        return cls(
            entries, previous, foreign, users,
            assistants=[e for e in entries if e.role == "assistant"],
            tools=[e for e in entries if e.role == "tool"],
            request=handoff.first_sentences(users[-1].text, 300) if users else "",
        )


def summarize(entries: list[Entry], budget: int = handoff.DEFAULT_BUDGET) -> str:
    """The four sections of the loaded view in at most `budget` tokens (count_text), however many
    folds came before: an earlier summary's items are merged (not pasted), what the view superseded
    (a deleted file, a finished task, an error a later run fixed) is dropped, and vendored, build and
    temporary paths are left out. Over the budget, the least useful items give way first."""
    budget = max(handoff.MIN_BUDGET, int(budget))
    view = _View.of(entries)
    goal_lines = _goal(view)
    carried = _carried(view)
    work = _work(view, carried)
    state, last = _state(view, carried, work)
    steps, step_lists = _next_steps(view, carried, work, state["errors"])
    full = {**state, **step_lists, "constraints": _constraints(view)}
    tiers = _tiers(full, work.fresh, view, goal_lines)
    return handoff.fit_to_budget(lambda g: _render(g, full, goal_lines, last, steps), tiers, DROP_ORDER, budget, count_text)


def _goal(view: _View) -> list[str]:
    """Goal: the original goal stays (from the previous summary), and the latest request is named."""
    previous, foreign, users = view.previous, view.foreign, view.users
    goal_lines: list[str] = []
    if previous.get("Goal"):
        goal_lines = [ln for ln in previous["Goal"].split("\n") if not ln.startswith("Latest request:")]
    elif foreign:  # the earlier summary states the original goal; the view's requests came after
        goal_lines = ["From the earlier summary: " + handoff.first_sentences(_intent(foreign[0]), 600)]
    elif users:
        goal_lines = [handoff.first_sentences(users[0].text, 600)]
    if users and (previous.get("Goal") or foreign or len(users) > 1):
        if view.request not in goal_lines and handoff.first_sentences(users[-1].text, 600) not in goal_lines:
            goal_lines.append(f"Latest request: {view.request}")
    return goal_lines or ["Not stated in the transcript (no user request in the loaded view)."]


def _carried(view: _View) -> dict[str, list[str]]:
    """What the earlier summary's State listed, by kind (_carried_state), with the paths and commands
    of a foreign summary and of the lines an older builtin summary quoted."""
    carried = _carried_state(view.previous.get("State and what is done", ""))
    for text in ([view.foreign[0]] if view.foreign else []) + (["\n".join(carried["quoted"])] if carried["quoted"] else []):
        items = _foreign_items(text)
        carried["mentioned"] += items["mentioned"]
        carried["named"] += items["named"]
    return carried


@dataclass
class _Work:
    """What the view's tool calls did, after what the earlier summary listed (earlier first)."""

    edited: list[str]
    read: list[str]
    commands: list[str]
    searches: list[str]
    # Errors by what they ran on: a later successful run of the same tool on the same target resolves one.
    open_errors: dict[str, tuple[str, str]]  # line -> (tool, target)
    tasks: list[tuple[str, bool]] | None = None  # the latest task list: (text, done)
    fresh: set[str] = field(default_factory=set)  # items the view itself gave (the rest were carried from the earlier summary)
    deleted: set[str] = field(default_factory=set)


def _work(view: _View, carried: dict[str, list[str]]) -> _Work:
    """The view's tool calls, in order, over what the earlier summary listed: the files changed and
    read (a deleted one forgotten), commands, searches, the latest task list and the open errors."""
    open_errors: dict[str, tuple[str, str]] = {}
    for line in carried["errors"]:
        m = _ERROR_TARGET_RE.match(line)
        open_errors[line] = (m.group("tool"), m.group("target") or "") if m else ("", "")
    work = _Work(list(carried["edited"]), list(carried["read"]), list(carried["commands"]), list(carried["searches"]), open_errors)
    for t in view.tools:
        data = _input(t)
        listed = handoff.task_list(t.tool_name, data)
        if listed is not None:
            work.tasks = listed
        _forget_deleted(work, t, data)
        _note_call(work, t, data)
        _note_outcome(work, t, data)
    return work


def _forget_deleted(work: _Work, t: Entry, data: dict) -> None:
    """The files a call deleted leave the files changed and read (until a later call names them)."""
    for gone in handoff.deleted_paths(t.tool_name, data) if not t.is_error else ():
        work.deleted.add(gone)
        work.edited = [p for p in work.edited if p != gone and not p.endswith("/" + gone.lstrip("./"))]
        work.read = [p for p in work.read if p != gone and not p.endswith("/" + gone.lstrip("./"))]


def _note_call(work: _Work, t: Entry, data: dict) -> None:
    """The files a call changed or read (when it succeeded: a failed Read read nothing), the
    command it ran (unless it was refused before it ran) and the search it made."""
    for key in PATH_KEYS if not t.is_error else ():
        value = data.get(key)
        if not isinstance(value, str) or not value.strip() or value.endswith("…"):
            continue  # a value ending in "…" was cut by the transcript: not a whole path
        value = value.strip()
        # file_path and notebook_path name files; a search `path` is often a directory.
        if key != "path" or facts.is_file_like(value):
            (work.edited if t.tool_name in EDIT_TOOLS else work.read).append(value)
            work.deleted.discard(value)
            work.fresh.add(value)
    command = truth.command_of(data)
    # A command the transcript cut (its value ends in "…") is longer than LONG_COMMAND: its head stays whole.
    if command and not truth.refused(t.text, t.is_error):
        work.commands.append(_command(command))
        work.fresh.add(work.commands[-1])
    if isinstance(data.get("pattern"), str) and t.tool_name not in {"Bash"} and not truth.refused(t.text, t.is_error):
        where = data.get("path") if isinstance(data.get("path"), str) else ""
        if not data["pattern"].endswith("…") and not where.endswith("…"):  # whole, or not at all
            work.searches.append(" ".join((f"{t.tool_name} {data['pattern']!r}" + (f" in {where}" if where else "")).split()))
            work.fresh.add(work.searches[-1])


def _target(target: str) -> str:
    """What an error ran on, whole: a path or a short command as it is, a long command by its head."""
    if not target or "`" in target:
        return ""
    return target if len(target) <= 100 else facts.command_head(target) + " …"


def _error_message(t: Entry) -> str:
    """An error's message (its headline, salience.error_head), on whole sentences."""
    lines = error_lines(truth.uncut(t.text)) or [" ".join(t.text.split())]
    return handoff.first_sentences(error_head(lines, command=t.tool_name not in CONTENT_TOOLS), 160)


def _note_outcome(work: _Work, t: Entry, data: dict) -> None:
    """A failed call opens an error (the latest on a tool and target says it); a successful run of
    the same tool on the same target resolves the errors it answers."""
    target = handoff.run_target(data)
    tool_name = re.sub(r"[^\w.:-]", "_", t.tool_name or "tool")
    if t.is_error and t.text.strip() and truth.failed(t.text):
        shown = _target(target)
        line = f"{tool_name}: {_error_message(t)}" + (f" (on `{shown}`)" if shown else "")
        work.open_errors = {k: v for k, v in work.open_errors.items() if v != (tool_name, shown)}  # the latest one says it
        work.open_errors[line] = (tool_name, shown)
        work.fresh.add(line)
    elif target and not t.is_error:
        work.open_errors = {k: v for k, v in work.open_errors.items() if not handoff.resolves(v[0], v[1], tool_name, target)}


def _state(view: _View, carried: dict[str, list[str]], work: _Work) -> tuple[dict[str, list[str]], str]:
    """State and what is done, as the lists that give way over the budget: files changed, read and
    mentioned, commands, searches, symbols, open errors, earlier states and the earlier summary's
    other lines (each once, the latest within its cap; noise paths and deleted files left out); and
    the last state (what the assistant said last)."""
    said = [e for e in view.entries if e.role in ("user", "assistant")]
    seen_paths = _paths_seen(said, view.tools)
    work.fresh.update(seen_paths)
    mentioned = list(carried["mentioned"]) + seen_paths
    symbols = list(carried["symbols"])
    for e in view.assistants:
        new = [s for s in SYMBOL_RE.findall(e.text) if 3 <= len(s) <= 80 and not PATH_RE.fullmatch(s)]
        symbols += new
        work.fresh.update(new)

    def keep(path: str) -> bool:
        return not handoff.is_noise_path(path) and path not in work.deleted

    edited = [p for p in _unique(work.edited, MAX_PATHS, keep_last=True) if keep(p)]
    read = [p for p in _unique(work.read, MAX_PATHS, keep_last=True) if p not in edited and keep(p)]
    listed_paths = set(edited) | set(read)
    earlier_states = list(carried["states"])
    if view.assistants and carried["last"]:
        earlier_states.append(carried["last"])
    last = handoff.scrub_noise_paths(handoff.first_sentences(truth.uncut(view.assistants[-1].text), 600)) if view.assistants else carried["last"]
    return {
        "edited": edited,
        "read": read,
        "mentioned": [p for p in _unique(mentioned, MAX_PATHS, keep_last=True) if p not in listed_paths and keep(p)],
        "commands": [c for c in _unique(work.commands, MAX_COMMANDS, keep_last=True) if not handoff.names_noise_path(c)],
        "named": [c for c in _unique(carried["named"], MAX_COMMANDS, keep_last=True) if c not in work.commands and not handoff.names_noise_path(c)],
        "searches": [x for x in _unique(work.searches, 24, keep_last=True) if not handoff.names_noise_path(x)],
        "symbols": _unique(symbols, MAX_SYMBOLS, keep_last=True),
        "errors": [e for e in _unique(list(work.open_errors), MAX_ERRORS, keep_last=True) if not handoff.names_noise_path(e)],
        "earlier": _unique(earlier_states, 2, keep_last=True),
        "other": [ln for ln in _unique(carried["other"], MAX_CARRIED_LINES) if not handoff.names_noise_path(ln)],
    }, last


def _next_steps(view: _View, carried: dict[str, list[str]], work: _Work, errors: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Next steps: the latest request, open tasks and unresolved errors; nothing else. With them the
    tasks done (State lists them), from the latest task list, else from the earlier summary."""
    if work.tasks is not None:
        open_tasks = [text for text, done in work.tasks if not done]
        done_tasks = [text for text, done in work.tasks if done]
    else:
        next_steps = (view.previous.get("Next steps") or "").split("\n")
        open_tasks = [ln[2 + len(_OPEN_TASK) :].strip() for ln in next_steps if ln.startswith("- " + _OPEN_TASK)]
        done_tasks = list(carried["done"])
    error_steps = []
    for err in errors:
        m = _ERROR_TARGET_RE.match(err)
        error_steps.append(f"Resolve the error of {m.group('tool')} on `{m.group('target')}`" if m and m.group("target") else f"Resolve the error: {err}")
    return _request_steps(view), {
        "done": _unique([handoff.first_sentences(x, 160) for x in done_tasks], 20, keep_last=True),
        "tasks": [_OPEN_TASK + handoff.first_sentences(x, 200) for x in _unique(open_tasks, 20)],
        "error_steps": error_steps,
    }


def _request_steps(view: _View) -> list[str]:
    """The latest request as a step: to answer (the view ends on it) or to see where it stands;
    without a request in the view, the earlier summary's (answered since if the assistant spoke)."""
    steps: list[str] = []
    # Lines the harness writes after the answer (`/exit`, its stdout) are no request left to answer.
    last_role = next((e.role for e in reversed(view.entries) if e.role == "assistant" or any(e is u for u in view.users)), None)
    if view.users:
        steps.append((_ANSWER if last_role == "user" else _LATEST) + view.request)
    elif view.previous.get("Next steps"):
        carried_request = [ln[2:].strip() for ln in view.previous["Next steps"].split("\n") if ln.startswith(("- " + _ANSWER, "- " + _LATEST))]
        if view.assistants:  # answered in the view since
            carried_request = [_LATEST + x.removeprefix(_ANSWER) if x.startswith(_ANSWER) else x for x in carried_request]
        steps += carried_request
    return steps


def _constraints(view: _View) -> list[str]:
    """Constraints and preferences: what the user stated (and the earlier summary kept), verbatim where short."""
    constraints = []
    if view.previous.get("Constraints and preferences"):
        constraints += [
            ln.lstrip("- ").strip()
            for ln in view.previous["Constraints and preferences"].split("\n")
            if ln.strip() and not ln.startswith("None stated")
        ]
    for e in view.users:
        constraints += [handoff.first_sentences(s, 300) for s in _sentences(truth.uncut(e.text)) if CONSTRAINT_RE.search(s)]
    return [c for c in _unique(constraints, MAX_CONSTRAINTS, keep_last=True) if not c.startswith("None stated")]


def _tiers(full: dict[str, list[str]], fresh: set[str], view: _View, goal_lines: list[str]) -> dict[str, list[str]]:
    """The lists as they give way. Each TIERED list gives way in tiers: what was carried from the
    earlier summary first, then what the view gave, then its three latest items, then what the goal
    names, and what the latest request names last (by basename stem: across folds the goal's files
    stay, so a request that goes back to them finds them). The other lists give way whole."""
    stems = _stems(view.users[-1].text) if view.users else set()
    goal_stems = _stems("\n".join(ln for ln in goal_lines if not ln.startswith("Latest request:"))) - stems

    def named(item: str) -> bool:
        return any(stem in item for stem in stems)

    def in_goal(item: str) -> bool:
        return any(stem in item for stem in goal_stems)

    tiers: dict[str, list[str]] = {}
    for name in TIERED:
        items = full[name]
        named_ = [x for x in items if named(x)]
        goal = [x for x in items if in_goal(x) and not named(x)]
        rest = [x for x in items if not named(x) and not in_goal(x)]
        recent = [x for x in rest if x in fresh][-3:]
        tiers[name + "@carried"] = [x for x in rest if x not in fresh]
        tiers[name + "@view"] = [x for x in rest if x in fresh and x not in recent]
        tiers[name + "@recent"] = recent
        tiers[name + "@goal"] = goal
        tiers[name + "@named"] = named_
    for name in full:
        if name not in TIERED:
            tiers[name] = full[name]
    return tiers


def _live(g: dict[str, list[str]], full: dict[str, list[str]], name: str) -> list[str]:
    """What is left of list `name` in `g` (of a TIERED list: of its tiers, in the list's order)."""
    if name not in TIERED:
        return g[name]
    kept = {x for tier in ("@carried", "@view", "@recent", "@goal", "@named") for x in g[name + tier]}
    return [x for x in full[name] if x in kept]


def _render(g: dict[str, list[str]], full: dict[str, list[str]], goal_lines: list[str], last: str, steps: list[str]) -> str:
    """The four sections, with what is left in `g` of the lists in `full`."""

    def live(name: str) -> list[str]:
        return _live(g, full, name)

    state: list[str] = []
    for label, name in (("Files changed: ", "edited"), ("Files read: ", "read"), ("Paths mentioned: ", "mentioned")):
        paths = live(name)
        if paths:
            state.append(label + ", ".join(f"`{p}`" for p in paths))
    state += [f"Ran `{c}`" for c in live("commands")]
    if live("named"):
        state.append(_NAMED + ", ".join(f"`{c}`" for c in live("named")))
    if live("searches"):
        state.append("Searched: " + "; ".join(live("searches")))
    if live("symbols"):
        state.append("Symbols: " + ", ".join(f"`{s}`" for s in live("symbols")))
    if live("done"):
        state.append("Tasks done: " + "; ".join(live("done")))
    state += [f"Error seen: {e}" for e in live("errors")]
    if last:
        state.append("Last state: " + last)
    state += [f"Earlier state: {x}" for x in live("earlier")]
    state += [ln for ln in live("other") if ln not in state]
    if not state:
        state.append("Nothing was done in the loaded view yet.")
    next_steps = steps + live("tasks") + live("error_steps") or ["No open request, task or error in the transcript."]
    return handoff.format_sections(
        {
            "Goal": "\n".join(goal_lines),
            "State and what is done": _bullets(state),
            "Next steps": _bullets(next_steps),
            "Constraints and preferences": _bullets(live("constraints") or ["None stated in the transcript."]),
        }
    )


class BuiltinProvider:
    name = "builtin"
    model = "builtin"

    def __init__(self, budget: int | None = None):
        # The summary's token budget (build_provider passes the CONTEXTVIEWER_HANDOFF_BUDGET setting).
        self.budget = handoff.DEFAULT_BUDGET if budget is None else budget

    def complete(self, *, system: str, prompt: str, role: str, max_tokens: int = 4096) -> Completion:
        prompt = mask_text(prompt)  # what it writes comes from the prompt: masked like every prompt
        if role == "title":
            text = handoff.clean_title(handoff.request_of(prompt), 80) or "Untitled session"
        else:
            text = summarize(handoff.parse_transcript(prompt), self.budget)
        return Completion(
            text=mask_text(text),
            model=self.model,
            input_tokens=count_text(system) + count_text(prompt, approximate_over=200_000),
            output_tokens=count_text(text),
            cost_usd=0.0,
        )
