"""A shell tool's run as the bash view shows it (tool_display.py): the command line (an argv list as
the script a shell was given), and from the result's text and `extra` the exit code, stdout and
stderr apart where the log keeps them so, the duration, whether it is still running and the
harness's notes. Claude Code's Bash result (`bash_result`), Codex's shell tools' shapes
(`shell_result`), and other agents' (`agent_shell_result`, through tool_agents.shell_output).
Plain data: colours and HTML are the view's.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from contextviewer.display import rendering
from contextviewer.viewer import tool_agents

SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "fish"}  # `<shell> -c SCRIPT` is shown as SCRIPT


@dataclass
class BashResult:
    exit_code: int | None
    stdout: str
    stderr: str
    interrupted: bool = False
    note: str = ""  # the harness's note on the return code, a background task id ...
    combined: bool = True  # stdout holds stdout and stderr together (the log keeps them only so)
    duration: float | None = None  # seconds, where the result says
    running: bool = False  # still running when the result was written (no exit code yet)
    exit_unknown: bool = False  # the log does not say how the command ended (nor that it failed)
    stdout_ansi: list[rendering.Segment] | None = None  # stdout with its terminal colours (set by _colour)
    stderr_ansi: list[rendering.Segment] | None = None
    note_workdir: str = ""  # where the result says the command ran (another agent's result shape)

    @property
    def duration_text(self) -> str:
        if self.duration is None:
            return ""
        return f"{self.duration:.1f} s" if self.duration < 100 else f"{self.duration:.0f} s"


_EXIT = re.compile(r"^(?:Error: )?Exit code (\d+)\s*\n?")


def bash_result(text: str, is_error: bool, extra: dict | None) -> BashResult:
    """Exit code from the result text (Claude Code writes `Exit code N` first on failure; success
    has none and means 0); stdout and stderr apart, interrupted and notes from the result's `extra`
    (core/records.py Block.extra, filled by the importer) when it has them."""
    m = _EXIT.match(text)
    body = text[m.end() :] if m else text
    exit_code = int(m.group(1)) if m else (None if is_error else 0)
    extra = extra if isinstance(extra, dict) else {}
    stdout, stderr = extra.get("stdout"), extra.get("stderr")
    if stdout is None and isinstance(stderr, str):
        stdout = body  # stored once: the importer leaves stdout out of extra where it is the result's text
    note = ""
    if isinstance(extra.get("note"), str):
        note = extra["note"]
    if isinstance(extra.get("background_task"), str):
        note = (note + " · " if note else "") + f"background task {extra['background_task']}"
    interrupted = extra.get("interrupted") is True
    if isinstance(stdout, str) and isinstance(stderr, str) and (stdout or stderr or not body.strip()):
        return BashResult(exit_code, stdout, stderr, interrupted, note, combined=False)
    if is_error and not m:  # refused, rejected or failed before running: the text says why
        return BashResult(None, "", body, interrupted, note, combined=False)
    return BashResult(exit_code, body, "", interrupted, note)


def shell_line(command: Any) -> str | None:
    """The command line a shell tool ran: a string as is; an argv list as the script of
    `bash -lc SCRIPT` / `sh -c SCRIPT` (any shell of SHELLS, any flags with a `c`), else the list
    quoted as a shell would read it. None for anything else."""
    if isinstance(command, str):
        return command
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        return None
    exe = command[0].replace("\\", "/").rsplit("/", 1)[-1].lower().removesuffix(".exe")
    flags = command[1:-1]
    if exe in SHELLS and flags and all(f.startswith("-") for f in flags):
        if any(not f.startswith("--") and "c" in f[1:] for f in flags):
            return command[-1]
    if exe in {"powershell", "pwsh"} and len(command) >= 3 and command[-2].lower() in {"-command", "-c"}:
        return command[-1]
    return shlex.join(command)


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return float(value)


def _exit_code(d: dict, *keys: str) -> int | None:
    for key in keys:
        value = d.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


_SHELL_HEADERS = (
    ("exit", re.compile(r"^Exit code: (-?\d+)$")),
    ("exit", re.compile(r"^Process exited with code (-?\d+)$")),
    ("running", re.compile(r"^Process running with session ID (\S+)$")),
    ("wall", re.compile(r"^Wall time: (\d+(?:\.\d+)?) seconds?$")),
    ("lines", re.compile(r"^Total output lines: (\d+)$")),
    ("skip", re.compile(r"^(?:Chunk ID: \S*|Original token count: \d+)$")),
)


def _shell_text(text: str) -> BashResult | None:
    """A shell tool's result text, by its shape: the JSON `{"output", "metadata": {"exit_code",
    "duration_seconds"}}`; `{"stdout", "stderr", "exit_code" | "exitCode"}`; or a header of
    `Exit code: N` / `Process exited with code N` / `Process running with session ID N`, `Wall
    time: S seconds`, `Total output lines: N` ..., then `Output:` and the output. None: not one
    of these (the result is then shown as it is)."""
    head = text.lstrip()
    if head.startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError:
            return None
        if not isinstance(obj, dict):
            return None
        meta = obj.get("metadata")
        if isinstance(obj.get("output"), str) and isinstance(meta, dict):
            return BashResult(_exit_code(meta, "exit_code"), obj["output"], "",
                              duration=_seconds(meta.get("duration_seconds")))  # fmt: skip
        code = _exit_code(obj, "exit_code", "exitCode")
        stdout, stderr = obj.get("stdout", ""), obj.get("stderr", "")
        if code is not None and isinstance(stdout, str) and isinstance(stderr, str) and ("stdout" in obj or "stderr" in obj):
            return BashResult(code, stdout, stderr, combined=False)
        return None
    lines = text.replace("\r\n", "\n").split("\n")
    found: dict[str, str] = {}
    for i, line in enumerate(lines[:10]):
        if line == "Output:":
            if "exit" not in found and "running" not in found:
                return None
            exit_code = int(found["exit"]) if "exit" in found else None
            running = exit_code is None
            note = f"still running (session {found['running']})" if running else ""
            if "lines" in found:
                note = (note + " · " if note else "") + f"{found['lines']} output lines, cut for the model"
            wall = float(found["wall"]) if "wall" in found else None
            return BashResult(exit_code, "\n".join(lines[i + 1 :]), "", note=note, duration=wall, running=running)
        for key, pattern in _SHELL_HEADERS:
            if m := pattern.match(line):
                found.setdefault(key, m.group(1) if pattern.groups else "")
                break
        else:
            return None
    return None


def shell_result(text: str, extra: dict | None = None) -> BashResult | None:
    """A shell tool's result (see _shell_text), with what `extra` (the run as the log records it
    beside the text: exit_code, duration_seconds, stdout, stderr) adds: stdout and stderr apart,
    the exit code and the duration where the text lacks them. None: the shape is unknown and
    nothing says how the command ended (the generic rendering shows the text)."""
    found = _shell_text(text)
    extra = extra if isinstance(extra, dict) else {}
    code = _exit_code(extra, "exit_code", "exitCode")
    duration = _seconds(extra.get("duration_seconds"))
    stdout, stderr = extra.get("stdout"), extra.get("stderr")
    if isinstance(stdout, str) and isinstance(stderr, str):
        if found is None and code is None:
            return None
        base = found or BashResult(code, "", "")
        return BashResult(base.exit_code if base.exit_code is not None else code, stdout, stderr,
                          note=base.note, combined=False, running=base.running and code is None,
                          duration=base.duration if base.duration is not None else duration)  # fmt: skip
    if found is None:
        if code is None:
            return None
        return BashResult(code, text, "", duration=duration)
    if found.exit_code is None and code is not None:
        found.exit_code, found.running = code, False
    if found.duration is None:
        found.duration = duration
    return found



def logged_output(text: str) -> str | None:
    """The output a shell tool's result holds where the log wrote the result as JSON (Codex's
    `{"output": ..., "metadata": {"exit_code": ...}}`, as on Windows, `\\r\\n` and all): the text
    the command printed, line breaks normalised to `\\n`. None: not that shape (the text is shown as
    it is)."""
    if not text.lstrip().startswith('{"output"'):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("output"), str) or not isinstance(obj.get("metadata"), dict):
        return None
    return obj["output"].replace("\r\n", "\n")


def agent_shell_result(text: str, is_error: bool, extra: dict | None) -> BashResult:
    """Another agent's shell result: a Codex-shaped one (some harnesses borrow it) as Codex's,
    else by the agent's own shape (tool_agents.shell_output)."""
    if _shell_text(text) is not None and (codex := shell_result(text, extra)) is not None:
        return codex
    out = tool_agents.shell_output(text)
    extra = extra if isinstance(extra, dict) else {}
    if isinstance(extra.get("stdout"), str) or isinstance(extra.get("stderr"), str):
        # The log keeps the run's streams apart (a result the harness sends as one JSON object): those, not the text.
        out.output, out.stderr = extra.get("stdout") or "", extra.get("stderr") or ""
    code = out.exit_code if out.exit_code is not None else _exit_code(extra, "exit_code", "exitCode")
    note = out.note or (extra["note"] if isinstance(extra.get("note"), str) else "")
    if code is None and is_error and not out.stderr:
        r = BashResult(None, "", out.output, note=note, combined=False)
    else:
        r = BashResult(code, out.output, out.stderr, note=note, combined=not out.stderr, running=out.running,
                       interrupted=extra.get("interrupted") is True, duration=_seconds(extra.get("duration_seconds")),
                       exit_unknown=code is None and not out.running and not is_error)  # fmt: skip
    r.note_workdir = out.workdir
    return r
