"""What every agent driver shares: a throw-away workspace (HOME and a small project), the standard
plan (three prompts with real tools: list, read, edit, run a command; a sub-agent where the agent
has one; an auto-compaction before the third prompt), running a CLI step with a timeout, and ending
the daemons an agent leaves, by pid.

A driver (ops/drivers/<agent>.py) gives its tool names (a Toolset), runs its CLI against a
ScriptedServer and returns a Run: the folder the agent wrote (what a user imports) and what the
conformance check (ops/conformance.py) needs to know about the run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import ClassVar
from pathlib import Path

from ops.drivers.pins import Pin
from ops.scripted.plan import Plan, Prompt, Tool
from ops.scripted.server import ScriptedServer

PROJECT_FILES = {
    "README.md": "# Scripted project\n\nA tiny project the conformance runs work in.\n",
    "app.py": "def greet(name):\n    return f'hello {name}'\n\n\ndef farewell(name):\n    return f'bye {name}'\n",
    "notes.txt": "status: draft\n",
}
MAIN = "main"
SUB = "sub"
# The prompts' markers: unique strings the scripted server finds a prompt by.
MARKERS = ("cv-prompt-1", "cv-prompt-2", "cv-prompt-3", "cv-sub-1")


@dataclass
class Toolset:
    """How one agent's tools are called: each returns the Tool (name and input) for the step."""

    list_files: Callable[[Path], Tool]
    read: Callable[[Path], Tool]
    edit: Callable[[Path, str, str], Tool]
    shell: Callable[[str, Path], Tool]
    subagent: Callable[[str], Tool] | None = None  # None: the agent has no sub-agent tool


@dataclass
class Step:
    """One CLI invocation of a run."""

    cmd: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float

    def tail(self, n: int = 1500) -> str:
        return (self.stderr.strip() or self.stdout.strip())[-n:]


@dataclass
class Allowance:
    """A named difference the check accepts, with why (a log that cannot show an item, an agent's
    documented behaviour). `matches(text)` tells a request item the log cannot hold."""

    name: str
    why: str
    contains: tuple[str, ...] = ()  # a request text item holding one of these may be absent from the window

    def matches(self, text: str) -> bool:
        return any(c in text for c in self.contains)


@dataclass
class Run:
    key: str  # the pin (ops/drivers/pins.py)
    version: str
    label: str  # the agent contextviewer must name
    folder: Path  # what the agent wrote: the folder a user imports
    server: ScriptedServer
    plan: Plan
    steps: list[Step] = field(default_factory=list)
    parents: dict[str, str] = field(default_factory=dict)  # sub-agent key -> parent key
    triggers: dict[str, list[str]] = field(default_factory=dict)  # conversation key -> fold triggers in order
    allowances: list[Allowance] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # conversation key -> each fold's tokens_before as the agent's own log records it (read by the
    # driver from the raw file, e.g. Claude Code's compactMetadata.preTokens: the last call's input and
    # output plus its estimate of a prompt written before it folded); the check accepts it
    recorded_before: dict[str, list[int | None]] = field(default_factory=dict)
    # What the agent's files cannot hold, set apart by the check (and said in `notes`): a fold's
    # figures ("tokens_before", "tokens_after") where no call's usage is written, and the request
    # texts an agent re-renders after a fold in places its file does not record (left out of both
    # sides of the window after the first fold; None: nothing)
    unrecorded: frozenset[str] = frozenset()
    after_fold_ignores: Callable[[str], bool] | None = None

    @property
    def ok(self) -> bool:
        return all(s.returncode == 0 for s in self.steps) and bool(self.server.calls("main"))

    def failure(self) -> str:
        bad = [s for s in self.steps if s.returncode != 0]
        if bad:
            return f"{self.key}: `{' '.join(bad[0].cmd[:3])} ...` exited {bad[0].returncode}: {bad[0].tail()}"
        return f"{self.key}: no main model call reached the scripted server"


def standard_plan(tools: Toolset, project: Path, compact_at: int = 150_000) -> Plan:
    """Three prompts with real tools, a sub-agent in the third where the agent has one, and a reported
    input of `compact_at` tokens on the second prompt's answer so that the agent auto-compacts
    before the third (a driver sets it above its agent's threshold)."""
    p1 = Prompt(
        f"{MARKERS[0]}: list the files in this project, then read README.md and tell me what it says.",
        MARKERS[0], [tools.list_files(project), tools.read(project / "README.md")],
        "The project holds README.md, app.py and notes.txt; the README says it is a tiny scripted project.",
    )
    p2 = Prompt(
        f"{MARKERS[1]}: in notes.txt change 'status: draft' to 'status: final', then run `cat notes.txt`.",
        MARKERS[1], [tools.edit(project / "notes.txt", "status: draft", "status: final"), tools.shell("cat notes.txt", project)],
        "notes.txt now reads 'status: final'.", input_tokens={2: compact_at},
    )
    prompts = [p1, p2]
    if tools.subagent is not None:
        sub_text = f"{MARKERS[3]}: read app.py and list the function names it defines."
        prompts.append(Prompt(
            f"{MARKERS[2]}: ask a sub-agent to read app.py and report the function names it defines.",
            MARKERS[2], [tools.subagent(sub_text)], "The sub-agent found greet and farewell.",
        ))
        prompts.append(Prompt(sub_text, MARKERS[3], [tools.read(project / "app.py")], "app.py defines greet and farewell.", agent=SUB))
    else:
        prompts.append(Prompt(
            f"{MARKERS[2]}: read app.py and report the function names it defines.",
            MARKERS[2], [tools.read(project / "app.py")], "app.py defines greet and farewell.",
        ))
    return Plan(prompts)


EXTRA_MARKER = "cv-prompt-4"


def with_prompt_after_the_fold(plan: Plan, *markers: str) -> Plan:
    """`plan` with a fourth main prompt (the window after a fold: what the agent restored) and the
    texts that tell its agent's compaction requests (`markers`)."""
    plan.prompts.append(
        Prompt(f"{EXTRA_MARKER}: say which file holds the status line.", EXTRA_MARKER, [], "notes.txt holds the status line.")
    )
    plan.compaction_markers = (*plan.compaction_markers, *markers)
    return plan


@dataclass
class PinnedDriver:
    """A driver of one pinned install (ops/drivers/pins.py): its key is the pin's, `label` its format's
    name (Conversation.agent); `installed` is the pin a run uses, or why it cannot run."""

    pin: Pin
    label: ClassVar[str] = ""

    @property
    def key(self) -> str:
        return self.pin.key

    def installed(self, pin: Pin | None = None) -> Pin:
        """`pin` (another install of the same package), else the driver's own, once installed;
        RuntimeError saying how to install it otherwise."""
        pin = pin or self.pin
        missing = pin.missing()
        if missing:
            raise RuntimeError(missing)
        return pin


@contextmanager
def workspace(prefix: str) -> Iterator[tuple[Path, Path]]:
    """(home, project): a temporary HOME and a project folder inside it holding PROJECT_FILES."""
    root = Path(tempfile.mkdtemp(prefix=f"cv-agent-{prefix}-"))
    home, project = root / "home", root / "home" / "project"
    project.mkdir(parents=True)
    for name, text in PROJECT_FILES.items():
        (project / name).write_text(text)
    try:
        yield home, project
    finally:
        shutil.rmtree(root, ignore_errors=True)


def base_env(home: Path, **extra: str) -> dict[str, str]:
    """A clean environment: HOME, PATH and the locale; no proxy, no real key, no telemetry."""
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "1",
        "DISABLE_TELEMETRY": "1",
        "DO_NOT_TRACK": "1",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
    }
    env.update(extra)
    return env


def run_step(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 120.0, stdin: str | None = None) -> Step:
    """Run one CLI invocation in its own process group; on timeout the whole group is killed."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(stdin, timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        kill_group(p.pid)
        out, err = p.communicate()
        rc, err = None, (err or "") + f"\n[timed out after {timeout:.0f} s]"
    return Step(cmd, rc, out or "", err or "", time.monotonic() - t0)


def kill_group(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.3)


def daemons_under(home: Path) -> list[int]:
    """Pids of processes whose environment names `home` as HOME: what an agent left running."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"HOME={home}".encode() in env:
            pids.append(int(d.name))
    return pids


def end_daemons(home: Path) -> list[int]:
    """End every process still running with this HOME (by pid: TERM, then KILL); the pids ended."""
    pids = daemons_under(home)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
        time.sleep(0.1)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids
