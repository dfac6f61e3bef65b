"""What the continuation needed: a fold's summary judged by what the recorded session did after it.

A summarizer benchmark has the segment and the summary; a log viewer also has the messages that
followed the fold (up to the next fold). Pure, no Django. `measure(before, summary, after, report)`
reads them (the same message dicts facts.extract reads) beside the fold's FactReport:

- used_after: the keys of lost facts (tiers A and B the summary did not keep) that the
  continuation uses again, so the agent had to find them again. A path, URL or identifier counts
  when a later tool call acts on it (its input, less its label (`description`) and the text it
  writes (`content`, `new_string` ...)) or a user message names it (in any spelling of the path,
  core/pathmatch.py; a glob or folder a later call searches is not a use of each file it covers);
  a command counts when a later
  command or user message states it. Matched as the probe matches a summary (facts.is_kept): what
  follows the fold is read as a summary would be. Requests, decisions, constraints, errors and
  numbers are statements, not things a call uses: they are not looked for. In order of first use.
- reread_after: the files read before the fold and read again after it, relative to the working
  directory, in order of first re-read (a re-fetch costs the same whether the summary named the
  file or not). A file is read by Read (`file_path`), by Grep or Glob naming a file (a `path` that
  is a file, a Glob pattern without wildcards) or by a simple command that reads the files it
  names (cat, head, sed -n, grep ...: salience.reads_files). Directories searched are not files.
- calls_before_first_edit: the tool calls after the fold before the first edit (salience.is_edit:
  Edit/Write/MultiEdit/NotebookEdit/apply_patch); None when no edit follows.
- anticipated: of the first ten tool calls after the fold, how many touch something the summary
  names: a file the call reads, edits or names in its command (named as facts.is_kept finds a path
  in a summary), or its command (as run, or one of its simple commands of two words or more).
  (hits, calls looked at).
- after_messages: how many messages after the fold were read.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from contextviewer.core import facts, pathmatch, salience

USED_KINDS = ("path", "command", "identifier", "url")
FIRST_ACTIONS = 10
# Input fields that are not what the tool acts on: a label for the person, the text it writes
# (`input`: a whole input given as text, apply_patch's patch).
LABEL_FIELDS = {"description", "title"}
WRITTEN_FIELDS = {"content", "new_string", "new_str", "file_text", "new_source", "edits", "todos", "patch", "input"}
_GLOB_CHARS = re.compile(r"[*?\[\]{}]")


@dataclass
class Continuation:
    used_after: list[str] = field(default_factory=list)  # keys of lost facts used again after the fold
    reread_after: list[str] = field(default_factory=list)  # files read before the fold and again after it
    calls_before_first_edit: int | None = None  # tool calls after the fold before the first edit
    anticipated: tuple[int, int] = (0, 0)  # (first calls touching what the summary names, calls looked at)
    after_messages: int = 0  # messages after the fold read (up to the next fold)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["anticipated"] = list(self.anticipated)
        return out


@dataclass(slots=True)
class _Call:
    position: int
    tool: str
    input: Mapping
    command: str  # the shell script it runs ("" for a tool that runs none)


def _calls(messages: Iterable[Mapping]) -> list[_Call]:
    """The tool calls of the messages, in order (parallel calls of one message each count)."""
    out = []
    for message in messages:
        for block in message.get("blocks") or ():
            if block.get("kind") != "tool_call":
                continue
            tool = str(block.get("tool_name") or "")
            raw = block.get("tool_input")
            tool_input: Mapping = raw if isinstance(raw, Mapping) else ({"input": raw} if isinstance(raw, str) else {})
            # An editor's `command` (view, str_replace) is no shell command.
            command = "" if tool in salience.WRITE_TOOLS else salience.shell_command(tool_input.get("command", tool_input.get("cmd")))
            out.append(_Call(int(message.get("position", 0)), tool, tool_input, command))
    return out


def _words(simple: str) -> list[str]:
    try:
        return shlex.split(simple)
    except ValueError:  # an unbalanced quote: words as written
        return simple.split()


def _file(word: str) -> str:
    """The word when it is a file path (facts.PATH_RE, file-like), else ""."""
    word = word.strip().rstrip(".,:;")
    return word if facts.PATH_RE.fullmatch(word) and facts.is_file_like(word) else ""


def _read_paths(call: _Call) -> list[str]:
    """The files a call reads, as written."""
    inp, out = call.input, []
    reads = call.tool in salience.READ_TOOLS or (call.tool in salience.WRITE_TOOLS and inp.get("command") == "view")
    if reads:
        for name in ("file_path", "notebook_path"):
            if isinstance(inp.get(name), str) and inp[name].strip():
                out.append(inp[name].strip())
        path = inp.get("path")
        if isinstance(path, str) and facts.is_file_like(path):
            out.append(path.strip())
        pattern = inp.get("pattern")
        if call.tool in {"Glob", "glob"} and isinstance(pattern, str) and not _GLOB_CHARS.search(pattern):
            joined = pattern if pattern.startswith("/") or not isinstance(path, str) or not path else f"{path.rstrip('/')}/{pattern}"
            if facts.is_file_like(joined):
                out.append(joined)
    return out + _command_files(call.command, reads=True)


def _command_files(command: str, *, reads: bool) -> list[str]:
    """The files a shell command names as words (not inside a quoted message), a relative one
    under the directory a `cd D` before it went to; with `reads`, only those of its simple
    commands that read the files they name (salience.reads_files)."""
    out, base = [], ""
    for simple in salience.simple_commands(command) if command else ():
        words = _words(simple)
        if len(words) == 2 and words[0] == "cd":
            base = words[1] if words[1].startswith(("/", "~")) or not base else f"{base.rstrip('/')}/{words[1]}"
            continue
        if reads and not salience.reads_files(simple):
            continue
        for word in words[1:] if reads else words:
            p = "" if word.startswith("-") else _file(word)
            if p:
                out.append(p if p.startswith(("/", "~")) or not base else f"{base.rstrip('/')}/{p}")
    return out


def _touched_paths(call: _Call) -> list[str]:
    """The files a call reads, edits or names in its command, as written."""
    out = _read_paths(call)
    for name in ("file_path", "notebook_path", "path"):
        value = call.input.get(name)
        if isinstance(value, str) and (name != "path" or facts.is_file_like(value)):
            out.append(value.strip())
    out += _command_files(call.command, reads=False)
    for value in _strings(call.input):
        out += [m.group(1) for m in salience.PATCH_FILE_RE.finditer(value)]
    return list(dict.fromkeys(p for p in out if p))


def _strings(value: object) -> list[str]:
    """Every string inside a tool input (lists and mappings walked)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _operands(call: _Call) -> list[str]:
    """What a call acts on: its input's strings less its label and the text it writes (of which a
    patch's file headers are kept: the files it changes)."""
    out = []
    for name, value in call.input.items():
        if name in LABEL_FIELDS:
            continue
        if name in WRITTEN_FIELDS:
            out += [m.group(0) for s in _strings(value) for m in salience.PATCH_FILE_RE.finditer(s)]
            continue
        if name in {"command", "cmd"} and call.command:
            out.append(call.command)
            continue
        out += _strings(value)
    return out


def _user_texts(message: Mapping) -> list[str]:
    """The person's words in a message: not a compaction summary, a command echo or a reminder.
    Read by facts' own reader of a message's blocks (private there), so that one place decides
    what is the person's and what the harness's."""
    return [text for source, text, _ in facts.block_texts(message) if source == "user"]


def _used_after(after: Sequence[Mapping], report: facts.FactReport, cwd: str) -> list[str]:
    lost = [f for f in report.facts if not f.kept and f.kind in USED_KINDS]
    if not lost:
        return []
    tails = facts.suffix_counts(f.key for f in report.facts if f.kind == "path")
    by_position: dict[int, list[_Call]] = {}
    for call in _calls(after):
        by_position.setdefault(call.position, []).append(call)
    texts = []  # (uses, commands) of each message, prepared as a summary is
    for message in after:
        users = _user_texts(message)
        calls = by_position.get(int(message.get("position", 0)), [])
        uses = users + [s for call in calls for s in _operands(call)]
        commands = users + [salience.normalize_command(call.command) for call in calls if call.command]
        if uses or commands:
            texts.append((facts.prepare("\n".join(uses)), facts.prepare("\n".join(commands))))
    if not texts:
        return []

    def used(fact: facts.Fact, uses, commands) -> bool:
        # A glob or a folder a later call searches (`**/*.py`) is not the file used again.
        how = facts.is_kept(fact, commands if fact.kind == "command" else uses, cwd, tails)
        return bool(how) and how != pathmatch.PATTERN

    # The whole continuation first (one pass), then the first message using each candidate.
    everything = facts.merge([u for u, _ in texts]), facts.merge([c for _, c in texts])
    candidates = [f for f in lost if used(f, *everything)]
    first: dict[str, int] = {}
    for index, (uses, commands) in enumerate(texts):
        for fact in candidates:
            if fact.key not in first and used(fact, uses, commands):
                first[fact.key] = index
        if len(first) == len(candidates):
            break
    order = {f.key: i for i, f in enumerate(lost)}
    return sorted(first, key=lambda key: (first[key], order[key]))


def _reread_after(before_calls: list[_Call], after_calls: list[_Call], cwd: str) -> list[str]:
    read_before = {facts.relative_path(p, cwd) for call in before_calls for p in _read_paths(call)}
    out: dict[str, None] = {}
    for call in after_calls:
        for p in _read_paths(call):
            rel = facts.relative_path(p, cwd)
            if rel in read_before:
                out.setdefault(rel, None)
    return list(out)


def command_key(command: str) -> str:
    """A command as the probe keys it: normalized (salience.normalize_command), spaces collapsed,
    a long one by its head (facts.command_head)."""
    normalized = salience.normalize_command(command)
    cmd = " ".join(normalized.split())
    return facts.command_head(normalized) if len(cmd) > facts.LONG_COMMAND else cmd


def command_words(simple: str) -> str:
    """What a simple command runs, without how: its words before the first option, quoted,
    substituted or redirected argument (`bd close spotter-1 --reason="..."` -> `bd close spotter-1`,
    `mix credo --strict` -> `mix credo`), leading `VAR=value` assignments left out."""
    words = simple.split()
    while words and re.fullmatch(r"[A-Za-z_]\w*=\S*", words[0]):
        words = words[1:]
    out = []
    for word in words:
        if word.startswith(("-", "\"", "'", "$", "<", ">", "`", "(")):
            break
        out.append(word)
    return " ".join(out)


def _anticipated(calls: list[_Call], summary: str, report: facts.FactReport, cwd: str) -> tuple[int, int]:
    first = calls[:FIRST_ACTIONS]
    if not first:
        return (0, 0)
    named = facts.prepare(summary or "")
    touched = [_touched_paths(call) for call in first]
    keys = [f.key for f in report.facts if f.kind == "path"] + [facts.relative_path(p, cwd) for ps in touched for p in ps]
    tails = facts.suffix_counts(keys)
    hits = 0
    for call, paths in zip(first, touched):
        path_named = any(facts.is_kept(facts.Fact("path", p, facts.relative_path(p, cwd), 0, 0), named, cwd, tails) for p in paths)
        commands = [command_key(call.command)] if call.command else []
        for simple in salience.simple_commands(call.command) if call.command else ():
            commands += [c for c in (simple, command_words(simple)) if len(c.split()) >= 2]
        command_named = any(facts.is_kept(facts.Fact("command", c, c, 0, 0), named) for c in dict.fromkeys(commands) if c)
        hits += path_named or command_named
    return (hits, len(first))


def measure(before: Sequence[Mapping], summary: str, after: Sequence[Mapping], report: facts.FactReport, *,
            cwd: str = "") -> Continuation:
    """What the continuation after a fold needed: `before` is the segment the fold put away,
    `after` the messages after the fold up to the next fold (or the end), `report` the fold's
    probe (facts.probe(before, summary, cwd=cwd))."""
    after_calls = _calls(after)
    first_edit = next((i for i, call in enumerate(after_calls) if salience.is_edit(call.tool, call.input)), None)
    return Continuation(
        used_after=_used_after(after, report, cwd),
        reread_after=_reread_after(_calls(before), after_calls, cwd),
        calls_before_first_edit=first_edit,
        anticipated=_anticipated(after_calls, summary, report, cwd),
        after_messages=len(after),
    )
