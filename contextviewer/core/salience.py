"""Salience of a segment's facts (core/facts.py): which tool writes, which reads, which command is
an action and which a lookup, which paths are background (vendored and build trees, temp dirs,
stack frames), and how an error reads in a tool result. Pure, no Django."""

from __future__ import annotations

import re
from collections.abc import Mapping

# An error-marked result's headline: searched for the keyword only (a leading `.*` would rescan
# the line from every character). `fatal:` and friends end in a colon, so no `\b` after them.
ERROR_RE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b"
    r"|\b(?:command not found|No such file or directory|Permission denied|permission denied|not found|failed|FAILED"
    r"|ERROR|Traceback|Segmentation fault|undefined|cannot|Cannot|could not|Could not|refused)\b"
    r"|\b(?:fatal|error|panic|FATAL|Error)(?:\[\w+\])?:"
)
# An error header in the output of a command that did not fail as a whole: at the start of a line,
# an exception (`ValueError: x`, `** (BadMapError) x`, `E   KeyError: x`) or `fatal:`/`error:`/`panic:`.
ERROR_HEADER_RE = re.compile(
    r"^\s*(?:E\s+|\*\*\s*)?(?:\((?:[\w.]*(?:Error|Exception)|EXIT|Mix)\)\s"
    r"|(?:[a-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception)(?::\s|$)"
    r"|(?:fatal|error|panic|FATAL|ERROR)(?:\[\w+\])?:\s)"
)
SHELL_PREFIX_RE = re.compile(r"^(?:/(?:usr/)?bin/)?(?:ba|z)?sh: (?:line \d+: )?")
# A linter's or compiler's finding: `[F] → Function is too complex`, `lib/x.ex:57:13: ...`.
DIAGNOSTIC_RE = re.compile(r"^\[[A-Z]\]\s*\S?\s*\w|\S\.\w+:\d+")

# --- tiers ------------------------------------------------------------------------------------

WRITE_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit", "str_replace_based_edit_tool", "write_file", "edit_file", "apply_patch"}
# Tools whose output is a file's or a page's content, never an error report of its own.
CONTENT_TOOLS = {"Read", "Grep", "Glob", "LS", "WebFetch", "WebSearch", "Task", "Agent", "TodoWrite", "NotebookRead",
                 "read_file", "grep", "glob", "list_dir", "view"} | WRITE_TOOLS
VENDORED = {"node_modules", "_build", "deps", ".venv", "venv", "site-packages", "dist-packages", "target", "dist",
            "__pycache__", ".git", "bower_components", ".tox", ".mypy_cache", ".pytest_cache"}
_TEMP_RE = re.compile(r"^(?:/tmp/|/var/tmp/|/private/tmp/|/private/var/folders/|/var/folders/|/dev/shm/|/proc/|/dev/)")
# A path followed by `:line:col` (or written as `File "x", line N`): a stack frame or a compiler's location.
FRAME_AFTER_RE = re.compile(r":\d+:\d+\b")
PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (\S+)", re.M)
_COMMAND_TRIM_RE = (
    re.compile(r"^\s*cd\s+(?:\"[^\"]*\"|'[^']*'|\S+)\s*&&\s*"),  # a leading `cd X &&`
    re.compile(r"\s*\d?>&\d|\s+2>\s*/dev/null"),  # `2>&1`, `2>/dev/null`
    re.compile(r"(?:\s*\|\s*(?:head|tail)(?:\s+-[nc]?\s*\d+|\s+-\d+|\s+-[fF])*\s*)+$"),  # trailing `| head -5`
)
# Lookups read the state; actions change it or check it (build, test, migrate, VCS writes, installs).
_LOOKUP_RE = re.compile(
    r"^(?:ls|ll|cat|head|tail|less|more|grep|egrep|rg|ag|find|fd|tree|pwd|echo|printf|wc|stat|file|which|type|du|df"
    r"|env|printenv|ps|whoami|date|sed -n|awk|jq|diff|realpath|basename|dirname|sort|uniq|cut"
    r"|git (?:status|log|diff|show|branch|remote|ls-files|blame|rev-parse|describe|config --get|stash list)"
    r"|bd (?:show|ready|list|stats|blocked|search)|gh (?:issue|pr|run|repo) (?:view|list|status|diff|checks)"
    r"|gh api|curl -s|kubectl get|docker ps|docker images)\b"
)
_ACTION_RE = re.compile(
    r"^(?:[A-Z_]+=\S+\s+)*(?:make|cmake|ninja|mix|npm|pnpm|yarn|bun|npx|pip|pip3|uv|poetry|cargo|go (?:build|test|run|mod|get|install)"
    r"|pytest|tox|nox|ruff|mypy|eslint|tsc|jest|vitest|rspec|bundle|rake|rails|gradle|mvn|dotnet|docker (?:build|compose|run)"
    r"|python3? -m (?:pytest|pip|unittest|build)|python3? manage\.py|\./manage\.py|alembic|flask db|prisma|terraform|helm|kubectl (?:apply|delete)"
    r"|git (?:add|commit|push|pull|merge|rebase|checkout|switch|reset|revert|stash|tag|cherry-pick|rm|mv|restore|worktree|clone|init)"
    r"|gh (?:pr|issue|release) (?:create|merge|close|edit|comment)|bd (?:update|close|create|dep)|apt|apt-get|brew|dnf|yum)\b"
)


def normalize_command(cmd: str) -> str:
    """A command without what does not change it: a leading `cd X &&`, `2>&1`, a trailing `| head`/`| tail`."""
    out = cmd.strip()
    for pattern in _COMMAND_TRIM_RE:
        out = pattern.sub("", out)
    return out.strip() or cmd.strip()


def command_tier(cmd: str) -> str:
    """A for an action (build, test, migrate, VCS write, install), C for a lookup, B otherwise."""
    head = normalize_command(cmd)
    if _ACTION_RE.match(head):
        return "A"
    if _LOOKUP_RE.match(head) and not re.search(r"(?<![<>&\d])>(?!&)|\btee\b|\|\s*sh\b", head):
        return "C"
    return "B"


def is_background_path(path: str) -> bool:
    """Vendored and build trees, temp dirs: tier C wherever they are written."""
    if _TEMP_RE.match(path):
        return True
    return any(part in VENDORED for part in path.split("/")[:-1])


def path_tier(source: str, tool: str, field: str) -> str:
    """A path written by the user or as a write's target is A; read, searched or said, B; else C."""
    if source == "user" or (source == "input" and tool in WRITE_TOOLS and field != "path"):
        return "A"
    if source in {"input", "assistant"}:
        return "B"
    return "C"


TIER_RANK = {"A": 0, "B": 1, "C": 2}


# A person's decision, not a failure: the user rejected a tool call (a plan, an edit, a command) or
# refused the permission it asked for. Claude Code's words (its REJECT_MESSAGE, "User rejected tool
# use" in the record beside it, the non-interactive "requested permissions ... haven't granted it",
# an interrupt for a tool use); Codex's "rejected by user".
USER_DECISION_RE = re.compile(
    r"^\s*(?:<tool_use_error>\s*)?(?:The user doesn't want to (?:proceed|take this action)|User rejected"
    r"|\[Request interrupted by user for tool use\]|Claude requested permissions? to .{0,200}?but you haven't granted it"
    r"|Permission to use \S+.{0,200}? has been denied|(?:exec )?command rejected by (?:the )?user|Permission denied by (?:the )?user)",
    re.I | re.S,
)
# Not a failure of its own: a parallel call the harness cancelled because a sibling failed.
NOT_ITS_OWN_RE = re.compile(r"^\s*(?:<tool_use_error>\s*)?(?:Sibling tool call errored|Cancelled: parallel tool call)", re.I)


def is_user_decision(text: str) -> bool:
    """A tool result that is the user's decision (a rejected plan or call, a refused permission)."""
    return bool(USER_DECISION_RE.match(text or ""))


def failed_run(block: Mapping) -> bool:
    """A command result the log records as failed without marking it an error: a non-zero exit code."""
    extra = block.get("extra") if isinstance(block.get("extra"), Mapping) else {}
    code = extra.get("exit_code")
    return isinstance(code, int) and not isinstance(code, bool) and code != 0


def error_lines(text: str) -> list[str]:
    """The meaningful lines of a tool result: escaped newlines read as such, box drawing, shell
    prefixes, line numbers, `Exit code`, hints and XML-ish tool tags dropped."""
    out = []
    for line in text.replace("\\n", "\n").splitlines():
        line = re.sub(r"</?[a-z_]+>", "", re.sub(r"^[\s┃│|]+", "", line)).strip()
        line = re.sub(r"^\s*(?:\d+→|\d+:\s)", "", SHELL_PREFIX_RE.sub("", line))
        if (len(line) >= 8 or re.fullmatch(r"\[[A-Z]{4,}\]", line)) and not line.lower().startswith(("exit code", "hint:")):
            out.append(line)
    return out


def error_head(lines: list[str], *, command: bool = False) -> str:
    """The headline of an error-marked result: its error header line (an exception, `fatal:`,
    `error:`), else the first line naming a failure, else its first line (for a `command`'s output
    the line printed last, its stderr following its stdout, unless the first line introduces what
    follows); a line that only introduces (`Pre-commit validation failed:`) runs on into the next
    one."""
    pick = next((i for i, x in enumerate(lines) if ERROR_HEADER_RE.match(x)), None)
    if pick is None:
        pick = next((i for i, x in enumerate(lines) if ERROR_RE.search(x) and not x.endswith(":")), None)
    if pick is None:  # no line names the failure
        pick = 0 if not command or lines[0].endswith(":") else len(lines) - 1
    head = lines[pick]
    for more in lines[pick + 1 : pick + 3]:
        if not head.endswith(":") or len(head) > 120:
            break
        head = f"{head} {more}"
    return head[:200]


# --- tool calls: what reads and what edits (core/continuation.py) -----------------------------

# Tools that read a file (or search files) named in their input; `str_replace_based_edit_tool`
# reads with its `view` command.
READ_TOOLS = {"Read", "NotebookRead", "Grep", "Glob", "read_file", "grep", "glob", "view"}
# Simple commands that read the files they name: their content, or a search in it.
_READ_COMMAND_RE = re.compile(r"^(?:cat|head|tail|less|more|bat|nl|wc|sed -n|awk|grep|egrep|fgrep|rg|ag|jq|diff)\b")
_SHELLS = {"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/usr/bin/bash", "/bin/zsh"}


def shell_command(value: object) -> str:
    """A tool input's command as one line: a list (`["bash", "-lc", "cat x"]`) is the script it runs."""
    if isinstance(value, (list, tuple)):
        words = [str(v) for v in value]
        if len(words) >= 3 and words[0] in _SHELLS and words[1] in {"-c", "-lc", "-ic"}:
            return " ".join(words[2:])
        return " ".join(words)
    return value if isinstance(value, str) else ""


def simple_commands(cmd: str) -> list[str]:
    """The simple commands of a command line: split at `&&`, `||`, `;`, `|` and newlines outside
    quotes, each without a leading `cd X &&` or a redirection (normalize_command)."""
    parts, current, quote, i = [], [], "", 0
    while i < len(cmd):
        c = cmd[i]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"':
                current.append(c)
                i += 1
                c = cmd[i] if i < len(cmd) else ""
        elif c in "\"'":
            quote = c
        elif c in ";|\n&" and not (c == "&" and cmd[i : i + 2] != "&&"):
            parts.append("".join(current))
            current = []
            if cmd[i : i + 2] in {"&&", "||"}:
                i += 1
            i += 1
            continue
        current.append(c)
        i += 1
    parts.append("".join(current))
    return [normalize_command(p) for p in parts if p.strip()]


def reads_files(simple: str) -> bool:
    """A simple command that reads the files it names (cat, head, tail, sed -n, grep, rg, wc ...)."""
    return bool(_READ_COMMAND_RE.match(simple.strip()))


def is_edit(tool: str, tool_input: object) -> bool:
    """An edit: Edit/Write/MultiEdit/NotebookEdit/apply_patch and their kin (WRITE_TOOLS), not the
    `view` command of an editor tool; or a shell command that applies a patch."""
    command = tool_input.get("command") if isinstance(tool_input, Mapping) else None
    if tool in WRITE_TOOLS:
        return command != "view"
    script = shell_command(command)
    return bool(script) and (script.lstrip().startswith("apply_patch") or PATCH_FILE_RE.search(script) is not None)
