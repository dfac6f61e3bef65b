"""Fact probes: did a fold's summary keep the salient facts of the segment it put away?

Pure: messages come in as plain dicts ({"position", "turn", "role", "blocks", "is_meta"}), the
summary as text. Facts are extracted from what the summarizer could read (user and assistant text,
tool calls and tool results; not thinking), each linked to the message and turn it first appeared
in. A fact counts as kept only when the summary states the whole fact (exact, or after a
normalization that keeps its meaning), never when it merely shares a word with it.

Kinds (in report order): request, decision, constraint, path, command, identifier, error, number,
url. A request is a user message (every one is a fact); the previous compaction summary at the head of
a segment is not user text.

Salience tiers (each fact records its tier and the position of its message; the fold page links to that message):
- A: what was changed or asked: Edit/Write/MultiEdit/apply_patch targets, paths in user messages,
  user requests and constraints, actions (build, test, migrate, VCS writes, installs).
- B: what was looked at or said: Read/Grep/Glob inputs, paths in Bash arguments and in assistant
  prose, decisions, errors, other commands.
- C: background: paths only seen in tool output (promoted to B when a later tool input uses them),
  vendored and build trees, temp dirs, stack frames, lookup commands (ls, cat, git status ...).
The default report (`FactReport.facts`, retention, the lost list) is tiers A and B; tier C is
`FactReport.background`. A basename is unique, for matching, over the A and B paths only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from contextviewer.core import pathmatch
from contextviewer.core.fact_words import FILE_EXTS, FILE_NAMES, NUMBER_UNITS, STOP_WORDS
from contextviewer.core.salience import (CONTENT_TOOLS, DIAGNOSTIC_RE, ERROR_HEADER_RE, FRAME_AFTER_RE, NOT_ITS_OWN_RE,
                                         PATCH_FILE_RE, SHELL_PREFIX_RE, TIER_RANK, command_tier, error_head, error_lines,
                                         failed_run, is_background_path, is_user_decision, normalize_command, path_tier)

KINDS = ("request", "decision", "constraint", "path", "command", "identifier", "error", "rejection", "number", "url")

# The public measurement over 43 Claude Code compactions (vshulcz/deja-vu issue 543).
BASELINE = {"decision": 0.77, "path": 0.098, "command": 0.002, "number": 0.019}

MAX_TEXT = 20_000  # characters of one block read for facts (tool results can be huge)
MAX_FACTS_PER_KIND = 300


@dataclass(slots=True)
class Fact:
    kind: str
    text: str  # as it first appeared (a path: the fullest form it was written in)
    key: str  # the normalized form facts are deduplicated and matched by
    position: int
    turn: int
    occurrences: int = 1
    terms: list[str] = field(default_factory=list)  # decisions, constraints: what the summary must state
    kept: bool = False
    how: str = ""  # "exact" | "normalized" | "pattern" (a glob or folder the summary names covers it) | "" (lost)
    tier: str = "B"  # "A" | "B" | "C" (module docstring)
    resolved: bool | None = None  # errors: a later call of the same tool on the same target succeeded

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class FactReport:
    facts: list[Fact] = field(default_factory=list)  # tiers A and B: what retention and `lost` count
    folded_tokens: int = 0
    summary_tokens: int = 0
    background: list[Fact] = field(default_factory=list)  # tier C, checked the same way, reported apart

    def _of(self, kind: str) -> list[Fact]:
        return [f for f in self.facts if f.kind == kind]

    def per_kind(self) -> dict[str, dict]:
        out = {}
        for kind in KINDS:
            facts = self._of(kind)
            kept = sum(f.kept for f in facts)
            out[kind] = {"total": len(facts), "kept": kept, "retention": (kept / len(facts)) if facts else None}
        return out

    @property
    def retention(self) -> float | None:
        if not self.facts:
            return None
        return sum(f.kept for f in self.facts) / len(self.facts)

    @property
    def compression_ratio(self) -> float | None:
        if not self.summary_tokens:
            return None
        return self.folded_tokens / self.summary_tokens

    @property
    def lost(self) -> list[Fact]:
        return [f for f in self.facts if not f.kept]

    def as_dict(self) -> dict:
        return {
            "retention": self.retention,
            "per_kind": self.per_kind(),
            "compression_ratio": self.compression_ratio,
            "folded_tokens": self.folded_tokens,
            "summary_tokens": self.summary_tokens,
            "facts": [f.as_dict() for f in self.facts],
            "background": [f.as_dict() for f in self.background],
        }


# --- extraction -------------------------------------------------------------------------------

_EXT = r"[A-Za-z][A-Za-z0-9]{0,7}"
# A path: absolute or relative with a slash, or a bare file name with an extension.
PATH_RE = re.compile(
    r"(?<![\w/.:@-])"
    r"((?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*[\w@+-]"  # a/b/c, /a/b, ./a, ~/a
    r"|[\w@+-][\w.@+-]*\.(?:" + _EXT + r"))"  # name.ext
    r"(?![\w/(]|\.\w)"  # not `Mix.env()`: a call is not a file
)
# A Windows path in a text: `C:\\Users\\x\\a.py`, `C:/Users/x/a.py`, or relative with backslashes `src\\a.py`.
WIN_PATH_RE = re.compile(r"(?<![\w\\/.-])([A-Za-z]:[\\/][\w.@+\-\\/]*[\w@+-]|[\w.@+-]+(?:\\[\w.@+-]+)+)")
URL_RE = re.compile(r"\bhttps?://[^\s<>\"'`)\]]+", re.I)
_NOT_FILE_EXT = {"e", "g", "i", "x", "eg", "ie", "etc", "vs", "mr", "dr", "st", "co", "no"}
_UNIT_ALT = "|".join(sorted((re.escape(u) for u in NUMBER_UNITS if u not in {"$"}), key=len, reverse=True))
NUMBER_RE = re.compile(r"(?<![\w.])(\$)?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s?(" + _UNIT_ALT + r")(?![\w])", re.I)
IDENT_CALL_RE = re.compile(r"(?<![\w.])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\(\)?")
IDENT_RE = re.compile(
    r"(?<![\w/.-])("
    r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+"  # snake_case
    r"|_[a-z][a-z0-9_]+"  # _private
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+"  # CamelCase
    r"|[a-z]+[A-Z][A-Za-z0-9]+"  # camelCase
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"  # CONSTANT_CASE
    r")(?![\w/-]|\.\w)"
)
BACKTICK_RE = re.compile(r"`([^`\n]{2,80})`")
# A sentence ends at . ! ? before a space or the end: a dot inside a file name or a URL does not end it.
SENTENCE_RE = re.compile(r"(?:[^.!?\n]|[.!?]+(?=[^\s.!?]))+(?:[.!?]+(?=\s|$))?")
CONSTRAINT_RE = re.compile(
    r"\b(?:never|always|don't|do not|dont|must not|mustn't|must|should not|shouldn't|avoid|only use|"
    r"make sure|prefer|instead of|rather than|no more|stop using|keep)\b|\buse \S+ (?:not|instead)\b",
    re.I,
)
DECISION_RE = re.compile(
    r"\b(?:i(?:'ll| will) (?:use|go with|switch|keep|implement|add|create|replace|change|fix|remove|move|rename|try)"
    r"|let me (?:use|switch|try|fix|replace|change|go with|implement|rewrite|refactor)"
    r"|we(?:'ll| will| should) (?:use|go with|switch|keep|implement|replace)"
    r"|decided|decision|going with|chose|choose|switched to|switching to|instead of|rather than|opted|settled on"
    r"|the (?:fix|approach|plan|solution) (?:is|was|will be))\b",
    re.I,
)


def _norm_space(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def _norm(s: str) -> str:
    """Lowercase, quotes and markdown emphasis dropped, whitespace collapsed."""
    s = s.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    s = re.sub(r"[`*_\"]", " ", s.lower())
    return _norm_space(s)


# The summary a compaction left at the head of the segment it starts: the previous fold's text, not
# the user's (older stores do not flag it, so its opening sentence tells it too).
_COMPACT_SUMMARY_RE = re.compile(r"^\s*This session is being continued from a previous conversation")
# A user message that is the harness talking, not the person: command echoes, reminders, interrupts.
_HARNESS_TEXT_RE = re.compile(r"^\s*(?:<[\w-]+>|\[Request interrupted)")


def block_texts(message: Mapping) -> Iterable[tuple[str, str, Mapping]]:
    """(source, text, block) of what a summarizer reads in a message: 'user', 'assistant',
    'harness' (a previous compaction's summary, a command echo, a reminder: not the person's
    words), 'input' (text: the tool input), 'error', 'result'."""
    role = message.get("role", "")
    if message.get("is_meta"):
        return
    for block in message.get("blocks") or ():
        kind = block.get("kind")
        text = block.get("text") or ""
        if kind == "text" and role == "user":
            harness = message.get("is_compact_summary") or _COMPACT_SUMMARY_RE.match(text) or _HARNESS_TEXT_RE.match(text)
            yield ("harness" if harness else "user"), text[:MAX_TEXT], block
        elif kind == "text" and role == "assistant":
            yield "assistant", text[:MAX_TEXT], block
        elif kind == "tool_call":
            tool_input = block.get("tool_input")
            if isinstance(tool_input, Mapping):
                yield "input", tool_input, block  # type: ignore[misc]
        elif kind == "tool_result":
            yield ("error" if str(block.get("is_error", "")).lower() in {"true", "1"} else "result"), text[:MAX_TEXT], block






def is_file_like(path: str) -> bool:
    """Whether the last component names a file: a known extension or a known file name.

    Directories (`lib/spotter/`), routes (`/api/v1/users`) and slash-words (`active/inactive/ended`,
    `message/type/tool`) have none, so they are not path facts."""
    path = path.replace("\\", "/")
    last = path.rstrip("/").rsplit("/", 1)[-1] if not path.endswith("/") else ""
    if not last:
        return False
    if last.lower() in FILE_NAMES:
        return True
    stem, dot, ext = last.rpartition(".")
    return bool(dot and stem.strip(".") and ext.lower() in FILE_EXTS and re.search(r"[A-Za-z]", stem))


def _clean_path(raw: str, *, used_as_file: bool = False) -> str | None:
    """The path, or None when it is not one.

    A path fact names a file: its last component is file-like (is_file_like), or a tool used it as
    a file (Read/Write/Edit `file_path`), which takes a file without an extension (and spaces) too."""
    p = raw.strip().rstrip(".,:;")
    slashed = p.replace("\\", "/")
    if len(p) < 3 or len(p) > 300 or slashed.count("/") > 25 or slashed.endswith("/") or (re.search(r"\s", p) and not used_as_file):
        return None
    if "\n" in p:
        return None
    if re.fullmatch(r"[\d/.]+", p) or re.search(r"/\d+$", p):  # dates, fractions, name/arity
        return None
    if used_as_file:
        return p
    return p if is_file_like(p) else None


def relative_path(path: str, cwd: str = "") -> str:
    """The path's key: relative to the working directory when it lies under it, one spelling for
    every form of one file (pathmatch.path_key: Windows, backslashes, `~`, case on Windows)."""
    return pathmatch.path_key(path, cwd)


# A long command is checked by its head: its first simple command, without the quoted or heredoc
# argument that makes it long, cut on a word.
LONG_COMMAND = 300
HEAD_CHARS = 80


def command_head(cmd: str) -> str:
    """The first command word(s) of a long command, before its first quoted, heredoc or
    subshell argument: `git add -A && git commit -m "$(cat <<EOF ...` -> `git add -A && git commit -m`."""
    head = re.split(r"\n|\$\(|<<|[\"'`]", cmd, maxsplit=1)[0]
    head = _norm_space(head).rstrip("=").strip()
    if len(head) > HEAD_CHARS:
        head = head[:HEAD_CHARS].rsplit(" ", 1)[0]
    return head


def _command_of(text: str) -> tuple[str, str] | None:
    """(text, key) of a command fact: the whole command, or for a long one its head (text ends in …)."""
    cmd = _norm_space(text)
    if not cmd:
        return None
    if len(cmd) <= LONG_COMMAND:
        return cmd, cmd
    head = command_head(text)
    if len(head) < 4:
        return None
    return head + " …", head


def _error_terms(lines: list[str]) -> list[str]:
    """What a summary must state of an error: the specific words of the lines given (names,
    quoted values, paths, exception classes), then their plain words."""
    text = " ".join(lines)
    special = [w.strip("'\"`.,:;()[]{}").lower() for w in re.findall(r"[\w./'\"`-]+", text)]
    special = [w for w in special if len(w) >= 4 and re.search(r"[a-z]", w) and re.search(r"[_/]|\w\.\w|\d|error$|exception$", w)]
    # Plain words: of each line's first sentence (what follows is advice: "Please use offset ...").
    firsts = " ".join((SENTENCE_RE.findall(line) or [line])[0] for line in lines)
    plain = [w for w in _key_terms(firsts) if w not in ERROR_WORDS and not re.search(r"[\d/]|\w\.\w", w)]
    return list(dict.fromkeys(special[:12] + plain[:12]))


ERROR_WORDS = {"error", "errors", "failed", "failure", "fatal", "exit", "code", "validation", "pre-commit", "issues",
                "following", "these", "message", "line", "lines", "unknown", "raised", "exception", "warning", "please",
                "checking", "source", "take", "while", "might", "string", "found", "expected", "got"}


def _key_terms(sentence: str) -> list[str]:
    words = re.findall(r"[A-Za-z0-9_./:-]+", sentence.lower())
    return [w.strip(".:-") for w in words if len(w.strip(".:-")) >= 3 and w.strip(".:-") not in STOP_WORDS]


def extract(messages: Sequence[Mapping], cwd: str = "") -> list[Fact]:
    """The salient facts of a segment, each once, in order of appearance, each with its tier.

    A path is one fact however it is written: its key is relative to `cwd` when it lies under it.
    Its tier is the best of its appearances (a path seen in an output and then read is tier B), and
    its position is its first appearance at that tier."""
    found = _Found(cwd)
    for message in messages:
        for source, text, block in block_texts(message):
            if source == "input":
                found.tool_input(text, block, message)  # type: ignore[arg-type]
            else:
                found.text(source, text, block, message)
    return _merge_basenames(list(found.facts.values()))


class _Found:
    """What extract found so far: each fact once (its occurrences counted, at its best tier), at most
    MAX_FACTS_PER_KIND of a kind; the tool calls seen, and their errors until a later call succeeds."""

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.facts: dict[tuple[str, str], Fact] = {}
        self.counts: dict[str, int] = {}
        self.tools: dict[str, tuple[str, str]] = {}  # tool id -> (tool name, target: file or command head)
        self.failed: dict[tuple[str, str], Fact] = {}  # (tool, target) -> its last error, until a call succeeds

    def add(self, kind: str, text: str, key: str, message: Mapping, terms: list[str] | None = None, tier: str = "B") -> Fact | None:
        if not key:
            return None
        existing = self.facts.get((kind, key))
        if existing is not None:
            existing.occurrences += 1
            if TIER_RANK[tier] < TIER_RANK[existing.tier]:
                existing.tier, existing.position, existing.turn = tier, int(message.get("position", 0)), int(message.get("turn", 0))
            if kind == "path" and len(text) > len(existing.text):
                existing.text = text  # a path is shown in the fullest form it was written in
            return existing
        if self.counts.get(kind, 0) >= MAX_FACTS_PER_KIND:
            return None
        self.counts[kind] = self.counts.get(kind, 0) + 1
        fact = self.facts[(kind, key)] = Fact(
            kind, text, key, int(message.get("position", 0)), int(message.get("turn", 0)), terms=terms or [], tier=tier
        )
        return fact

    def add_path(self, raw: str, message: Mapping, tier: str, *, used_as_file: bool = False, frame: bool = False) -> None:
        p = _clean_path(raw, used_as_file=used_as_file)
        if p:
            background = frame or is_background_path(p.replace("\\", "/"))
            self.add("path", p, relative_path(p, self.cwd), message, tier="C" if background else tier)

    def paths_in(self, text: str, message: Mapping, tier: str) -> None:
        for m in PATH_RE.finditer(text):
            frame = bool(FRAME_AFTER_RE.match(text, m.end())) or text[max(0, m.start() - 6) : m.start()] == 'File "'
            self.add_path(m.group(1), message, tier, frame=frame)
        if "\\" in text or re.search(r"[A-Za-z]:/", text):
            for m in WIN_PATH_RE.finditer(text):
                frame = bool(FRAME_AFTER_RE.match(text, m.end()))
                self.add_path(m.group(1), message, tier, frame=frame)

    def tool_input(self, tool_input: Mapping, block: Mapping, message: Mapping) -> None:
        """A tool call's input: the command it runs, the files it names or patches, its URL; the call
        is remembered (tool, target) for its result."""
        tool = str(block.get("tool_name") or "")
        target = ""
        for name, value in tool_input.items():
            if isinstance(value, list) and name in {"command", "cmd"}:
                value = " ".join(str(v) for v in value)
            if not isinstance(value, str):
                continue
            if name in {"command", "cmd"}:
                cmd = _command_of(normalize_command(value))
                tier = command_tier(value)
                if cmd:
                    self.add("command", cmd[0], cmd[1], message, tier=tier)
                target = " ".join(normalize_command(value).split()[:2])
                self.paths_in(URL_RE.sub(" ", value[:MAX_TEXT]), message, "B")  # the files it works on
            elif name in {"file_path", "path", "notebook_path", "filename"}:
                # file_path and notebook_path are files by the tool's contract; a search
                # `path` may be a directory.
                self.add_path(value, message, path_tier("input", tool, name), used_as_file=name in {"file_path", "notebook_path"})
                target = target or value
            elif name == "url":
                self.add("url", value, _norm_url(value), message, tier="B")
            for m in PATCH_FILE_RE.finditer(value):  # apply_patch: the files it changes
                self.add_path(m.group(1), message, "A", used_as_file=True)
        if block.get("tool_id"):
            self.tools[str(block["tool_id"])] = (tool, target)

    def text(self, source: str, text: str, block: Mapping, message: Mapping) -> None:
        """A text (source: block_texts'): its URLs and paths; a tool result's error; and of what a
        user or the assistant said, the request, numbers, identifiers, constraints and decisions."""
        tool, target = self.tools.get(str(block.get("tool_id") or ""), ("", ""))
        if source == "result" and (tool, target) in self.failed:
            self.failed.pop((tool, target)).resolved = True  # the same call on the same target succeeded
        prose = source in {"user", "assistant"}
        tier = {"user": "A", "assistant": "B"}.get(source, "C")
        for m in URL_RE.finditer(text):
            url = m.group(0).rstrip(".,;:")
            self.add("url", url, _norm_url(url), message, tier=tier)
        without_urls = URL_RE.sub(" ", text)
        if not prose:
            without_urls = "\n".join(SHELL_PREFIX_RE.sub("", line) for line in without_urls.splitlines())
        self.paths_in(without_urls, message, tier)
        if source == "harness":
            return  # a previous compaction's summary, a reminder: its paths are background, nothing else
        if source in {"error", "result"}:
            marked = source == "error" or failed_run(block)
            if marked and is_user_decision(text):
                self.rejection(tool, target, text, message)
            elif not (marked and NOT_ITS_OWN_RE.match(text)):
                stderr = (block.get("extra") or {}).get("stderr") if isinstance(block.get("extra"), Mapping) else None
                _errors_of(text, marked, tool, message, self.add, self.failed, target, stderr=stderr if isinstance(stderr, str) else "")
            return
        if source == "user" and len(_norm_space(text)) >= 3:
            request = _norm_space(text)
            self.add("request", request[:300] + (" …" if len(request) > 300 else ""), _norm(request)[:300], message,
                     _key_terms(request)[:40], tier="A")
        for m in NUMBER_RE.finditer(without_urls):
            self.add("number", m.group(0), _number_key(m), message, tier=tier)
        self.identifiers(text, without_urls, message, tier)
        self.statements(source, text, message)

    def rejection(self, tool: str, target: str, text: str, message: Mapping) -> None:
        """A user's decision (a rejected plan or call, a refused permission): its own kind, not an
        error. What the user said with it (Claude Code: "the user said: ...") is kept in its text."""
        what = "the plan" if tool == "ExitPlanMode" else " ".join(x for x in (tool, target) if x) or "a tool call"
        said = text.split("the user said:", 1)[1].strip() if "the user said:" in text else ""
        shown = f"The user rejected {what}" + (f": {_norm_space(said)[:200]}" if said else "")
        terms = ["plan"] if tool == "ExitPlanMode" else [w for w in _key_terms(f"{tool} {target}") if len(w) >= 3][:3]
        self.add("rejection", shown, _norm(f"{tool} {target} {said[:100]}"), message, terms, tier="A")

    def identifiers(self, text: str, without_urls: str, message: Mapping, tier: str) -> None:
        """Identifiers of prose (user and assistant text): in code spans, called, or shaped like one."""
        for m in BACKTICK_RE.finditer(text):
            span = m.group(1).strip()
            if re.fullmatch(r"[A-Za-z_][\w.]*(?:\(\))?", span) and not PATH_RE.fullmatch(span):
                name = span.removesuffix("()")
                # A code span names an identifier when it is shaped like one (not a bare word).
                if len(name) >= 3 and (IDENT_RE.fullmatch(name) or "." in name or span.endswith("()")):
                    self.add("identifier", name, name, message, tier=tier)
        for m in IDENT_CALL_RE.finditer(without_urls):
            name = m.group(1)
            if len(name) >= 3 and (("_" in name) or any(c.isupper() for c in name[1:]) or "." in name):
                self.add("identifier", name, name, message, tier=tier)
        for m in IDENT_RE.finditer(without_urls):
            if not m.group(1)[0].isupper() or "_" in m.group(1):  # CamelCase prose is often a brand name
                self.add("identifier", m.group(1), m.group(1), message, tier=tier)

    def statements(self, source: str, text: str, message: Mapping) -> None:
        """The constraints a user stated and the decisions the assistant announced, sentence by sentence."""
        for sentence in SENTENCE_RE.findall(text):
            s = _norm_space(sentence)
            if len(s) < 12 or len(s) > 400:
                continue
            if source == "user" and (m := CONSTRAINT_RE.search(s)):
                terms = _key_terms(s)
                if terms:
                    self.add("constraint", s, _norm(s), message, terms, tier="A")
            elif source == "assistant" and (m := DECISION_RE.search(s)):
                # What was decided follows the phrase that announces it ("let me try python3").
                terms = _key_terms(s[m.start() :])
                if terms:
                    self.add("decision", s, _norm(s), message, terms, tier="B")


def _errors_of(text: str, marked: bool, tool: str, message: Mapping, add, failed: dict, target: str, stderr: str = "") -> None:
    """The error of one tool result, if any, grouped per episode (the same error again is one
    fact, its occurrences counted). An error-marked result (or a command's non-zero exit) is an
    error: its headline (from the command's stderr where the log keeps it apart), what it states
    judged on its headline (for a command also its error headers and file:line locations; the rest
    of an editor's refusal is the text it could not find). A headline that does not name what
    failed (`File does not exist.`) is shown and told apart with the call's target. Another result
    has an error only in an error header line, and only when it is no file's or page's content."""
    lines = error_lines(text[:8000] + "\n" + text[-2000:] if len(text) > 10_000 else text)
    if not lines:
        return
    if marked:
        command = tool not in CONTENT_TOOLS
        head = error_head((error_lines(stderr[:8000]) or lines) if command else lines, command=command)
        said = [head]
        if tool not in CONTENT_TOOLS:
            said += [x for x in lines if (ERROR_HEADER_RE.match(x) or DIAGNOSTIC_RE.search(x)) and x not in head][:8]
            if len(head) < 60 and len(said) > 1:  # `Pre-commit failed: [CREDO]`: and what it found
                head = f"{head} {said[1]}"[:200]
        signature = _norm(re.sub(r"\d+", "#", " ".join(lines)[:300]))
        name = target.replace("\\", "/").rsplit("/", 1)[-1]
        if not command and target and name and name.lower() not in head.lower():
            head, signature = f"{head} ({target})"[:240], f"{tool} {target} {signature}"
    else:
        if tool in CONTENT_TOOLS:
            return
        said = [x for x in lines if ERROR_HEADER_RE.match(x)][:6]
        if not said:
            return
        # The exception itself rather than its wrappers (`** (Mix) ...`, `** (EXIT) ...`).
        head = next((x for x in said if re.search(r"[A-Z]\w*(?:Error|Exception)\b", x)), said[0])[:200]
        signature = _norm(re.sub(r"\d+", "#", head))
    fact = add("error", head, signature, message, _error_terms([head] + [x for x in said if x != head]), tier="B")
    if fact is not None:
        fact.resolved = False  # until the same call on the same target succeeds
        failed[(tool, target)] = fact


def _merge_basenames(found: list[Fact]) -> list[Fact]:
    """A bare file name that is the basename of exactly one longer tier A or B path of the segment
    is that file: one fact, at the earlier of the two appearances, at the better tier."""
    longer: dict[str, list[Fact]] = {}
    for f in found:
        if f.kind == "path" and "/" in f.key and f.tier != "C":
            longer.setdefault(f.key.rsplit("/", 1)[-1], []).append(f)
    out = []
    for f in found:
        # Only a name never written with a directory: `/repo/mix.exs` is not `deps/x/mix.exs`.
        owners = longer.get(f.key, []) if f.kind == "path" and "/" not in f.text else []
        if len(owners) == 1:
            owner = owners[0]
            owner.occurrences += f.occurrences
            if TIER_RANK[f.tier] < TIER_RANK[owner.tier]:
                owner.tier = f.tier
            if (f.position, f.turn) < (owner.position, owner.turn):
                owner.position, owner.turn = f.position, f.turn
            continue
        out.append(f)
    return out


def _norm_url(url: str) -> str:
    url = url.strip().rstrip("/.,;:")
    url = re.sub(r"#.*$", "", url)
    scheme, _, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}://{host.lower()}{slash}{path}".rstrip("/")


def _number_key(m: re.Match) -> str:
    dollar, value, unit = m.group(1), m.group(2), m.group(3)
    unit_key = "USD" if dollar else NUMBER_UNITS.get(unit.lower(), unit.lower())
    if unit in {"M", "m"} and not dollar:
        unit_key = "min" if unit == "m" else "M"
    num = value.replace(",", "")
    try:
        f = float(num)
        num = str(int(f)) if f == int(f) else str(f)
    except ValueError:
        pass
    return f"{num} {unit_key}"


# --- matching ---------------------------------------------------------------------------------


@dataclass
class _Summary:
    text: str
    norm: str
    names: pathmatch.Named  # the paths, globs and folders it names (core/pathmatch.py)
    numbers: set[str]
    urls: set[str]
    sentences: list[set[str]]


def prepare(summary: str) -> _Summary:
    """A summary (or any text a fact is looked for in) read once: its paths, numbers, URLs and
    sentences, for `is_kept`. Texts prepared apart can be joined with `merge`."""
    without_urls = URL_RE.sub(" ", summary)
    numbers = {_number_key(m) for m in NUMBER_RE.finditer(without_urls)}
    urls = {_norm_url(m.group(0).rstrip(".,;:")) for m in URL_RE.finditer(summary)}
    sentences = [set(_key_terms(s)) for s in re.split(r"(?<=[.!?])\s+|\n+", summary) if s.strip()]
    return _Summary(summary, _norm(summary), pathmatch.named(without_urls), numbers, urls, sentences)


def merge(parts: Sequence[_Summary]) -> _Summary:
    """The texts of `parts` joined by newlines, as `prepare` would read them: nothing a fact is
    matched on crosses a line break, so the parts' findings are unioned (each part prepared once)."""
    parts = [p for p in parts if p.text]
    if len(parts) == 1:
        return parts[0]
    return _Summary(
        "\n".join(p.text for p in parts),
        " ".join(p.norm for p in parts if p.norm),
        pathmatch.merge([p.names for p in parts]),
        set().union(*(p.numbers for p in parts)),
        set().union(*(p.urls for p in parts)),
        [sentence for p in parts for sentence in p.sentences],
    )


def suffix_counts(paths: Iterable[str]) -> dict[str, int]:
    """How many of the segment's paths (keys) end with each tail: `c.py` -> 2 when two dirs hold one."""
    return pathmatch.tail_counts(paths)


def _path_kept(path: str, s: _Summary, cwd: str, tails: Mapping[str, int] | None = None) -> str:
    """Named by the summary in any form of the file's path (pathmatch.match: as written, another
    spelling, a unique tail, its whole path with spaces) or covered by a glob or a folder it names
    ("pattern")."""
    return pathmatch.match(path, s.names, cwd, tails)


def _contains_phrase(haystack: str, needle: str) -> bool:
    if not needle:
        return False
    pattern = r"(?<![\w])" + re.escape(needle) + r"(?![\w])"
    return re.search(pattern, haystack) is not None


def _statement_kept(fact: Fact, s: _Summary) -> str:
    """Decisions and constraints: stated when one summary sentence carries most of their key terms."""
    if _norm(fact.text) in s.norm:
        return "exact"
    terms = set(fact.terms or _key_terms(fact.text))
    if not terms:
        return ""
    if len(terms) == 1:
        return "normalized" if _contains_phrase(s.norm, next(iter(terms))) else ""
    need = max(2, -(-len(terms) * 2 // 3))  # two thirds, rounded up
    for sentence in s.sentences:
        if len(terms & sentence) >= need:
            return "normalized"
    # Two neighbouring lines of the summary may state it together (a heading and its bullet).
    for a, b in zip(s.sentences, s.sentences[1:]):
        if len(terms & (a | b)) >= need:
            return "normalized"
    return ""


def _error_kept(fact: Fact, s: _Summary) -> str:
    """An error is kept when one summary sentence (or two neighbouring ones) states its key terms:
    two of them (its only one when it has one), a word also as the start of a longer one
    (`.gitignore` in "gitignored")."""
    terms = [t.lstrip(".") for t in fact.terms if len(t.lstrip(".")) >= 3]
    if not terms:
        return ""
    need = min(2, len(terms))

    def stated(sentence: set[str]) -> int:  # an exception's class counts twice: it names the error
        words = {w.lstrip(".") for w in sentence}
        return sum((2 if re.search(r"(?:error|exception)$", t) else 1) for t in terms
                   if t in words or (len(t) >= 5 and any(w.startswith(t) for w in words)))

    pairs = list(zip(s.sentences, s.sentences[1:])) or [(sentence, set()) for sentence in s.sentences]
    return "normalized" if any(stated(a | b) >= need for a, b in pairs) else ""


_REJECTED_RE = re.compile(r"\b(?:reject\w*|declin\w*|denied|den(?:y|ies)|refus\w*|did not approve|didn't approve|not approved)\b", re.I)


def _rejection_kept(fact: Fact, s: _Summary) -> str:
    """A user's decision is kept when one summary sentence says it was rejected (or refused) and
    names what (a term of the call: `plan`, the tool or its target), or the whole of what the user
    said with it."""
    said = fact.text.split(": ", 1)[1] if ": " in fact.text else ""
    if said and _norm(said) in s.norm:
        return "exact"
    for line in re.split(r"(?<=[.!?])\s+|\n+", s.text):
        if _REJECTED_RE.search(line) and (not fact.terms or any(_contains_phrase(line.lower(), t) for t in fact.terms)):
            return "normalized"
    return ""


def is_kept(fact: Fact, s: _Summary, cwd: str = "", tails: Mapping[str, int] | None = None) -> str:
    """How the summary keeps the fact ("exact", "normalized") or "" when it does not.

    `tails` (suffix_counts of the segment's path keys) tells which basenames are unique."""
    kind = fact.kind
    if kind == "path":
        return _path_kept(fact.text, s, cwd, tails)
    if kind == "url":
        return "exact" if fact.text in s.text else ("normalized" if fact.key in s.urls else "")
    if kind == "number":
        return "exact" if fact.text in s.text else ("normalized" if fact.key in s.numbers else "")
    if kind == "identifier":
        if _contains_phrase(s.text, fact.text):
            return "exact"
        short = fact.text.rsplit(".", 1)[-1]
        return "normalized" if short != fact.text and len(short) >= 4 and _contains_phrase(s.text, short + "(") else ""
    if kind == "command":  # the key: the whole command, or the head of a long one
        if fact.key in s.text:
            return "exact"
        return "normalized" if _norm(fact.key) in s.norm else ""
    if kind == "rejection":
        return _rejection_kept(fact, s)
    if kind == "error":
        if fact.text in s.text:
            return "exact"
        if _norm(fact.text) in s.norm:
            return "normalized"
        return _error_kept(fact, s)
    return _statement_kept(fact, s)


def probe(messages: Sequence[Mapping], summary: str, *, cwd: str = "", folded_tokens: int = 0, summary_tokens: int = 0) -> FactReport:
    """Extract the segment's facts and mark which the summary keeps."""
    facts = extract(messages, cwd)
    prepared = prepare(summary or "")
    # A basename is unique over the paths that matter (A and B): a copy under _build/ or a path
    # only seen in an output does not make it ambiguous.
    tails = suffix_counts(f.key for f in facts if f.kind == "path" and f.tier != "C")
    for fact in facts:
        fact.how = is_kept(fact, prepared, cwd, tails)
        fact.kept = bool(fact.how)
    return FactReport(
        [f for f in facts if f.tier != "C"], folded_tokens, summary_tokens, [f for f in facts if f.tier == "C"]
    )
