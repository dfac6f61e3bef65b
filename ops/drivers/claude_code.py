"""Claude Code, driven offline against the scripted server (ops/scripted/anthropic.py).

One process per run: `claude -p --input-format stream-json --output-format stream-json --verbose`
reads the prompts as JSON lines on stdin; the driver writes the next one after each `result` line
it prints. The plan (base.standard_plan): prompt 1 (list, read), prompt 2 (edit, shell; its answer
reports a 185k input, so the CLI auto-compacts before prompt 3, with
CLAUDE_CODE_AUTO_COMPACT_WINDOW=200000), prompt 3 (a sub-agent through the Agent/Task tool: on
2.1.332 it runs in the background and comes back as a <task-notification>), then `/compact` (a
manual fold), then, on the current version, prompt 4 so that a call follows the manual fold; on
2.1.197 the manual fold is the last thing (a fold with no call after it: tokens_after empty).

The folder a user imports: ~/.claude/projects/<cwd with / and . as ->/ (the session file and its
<id>/subagents/), copied out of the temp HOME.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

from ops.drivers.base import (
    MAIN,
    PinnedDriver,
    with_prompt_after_the_fold,
    SUB,
    Allowance,
    Run,
    Step,
    Toolset,
    base_env,
    end_daemons,
    kill_group,
    standard_plan,
    workspace,
)
from ops.drivers.pins import PINS, Pin
from ops.scripted.plan import Plan, Tool
from ops.scripted.server import ScriptedServer

LABEL = "claude-code"  # the format's name (contextviewer/importers/claude_code): Conversation.agent
COMPACT_AT = 185_000  # reported on prompt 2's answer; the CLI folds at 200k - 20k - 13k = 167k
TIMEOUT = 120.0
# What a Claude Code compaction request says (its summarization prompt), beside the plan's own.
COMPACTION_MARKERS = ("create a detailed summary of the conversation", "your task is to create a detailed summary")


def toolset(subagent_tool: str) -> Toolset:
    return Toolset(
        list_files=lambda project: Tool("Bash", {"command": "ls", "description": "List the project files"}),
        read=lambda path: Tool("Read", {"file_path": str(path)}),
        edit=lambda path, old, new: Tool("Edit", {"file_path": str(path), "old_string": old, "new_string": new}),
        shell=lambda cmd, cwd: Tool("Bash", {"command": cmd, "description": "Run the command"}),
        subagent=lambda text: Tool(
            subagent_tool, {"description": "Read app.py", "prompt": text, "subagent_type": "general-purpose"}
        ),
    )


def project_dir_name(cwd: Path) -> str:
    """~/.claude/projects/<this>: the cwd with every character but a letter or digit as -."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def session_folder(home: Path, project: Path) -> Path | None:
    """The folder Claude Code wrote the session to (the cwd's, as it resolved it)."""
    root = home / ".claude" / "projects"
    for name in (project_dir_name(project), project_dir_name(project.resolve())):
        if (root / name).is_dir():
            return root / name
    found = sorted(d for d in root.glob("*") if d.is_dir() and any(d.glob("*.jsonl"))) if root.is_dir() else []
    return found[0] if found else None


def _user_line(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}) + "\n"


@dataclass
class ClaudeCodeDriver(PinnedDriver):
    subagent_tool: str = "Agent"  # "Agent" (2.1.x), "Task" before; the request's tools list tells
    prompt_after_manual: bool = True  # a prompt after the manual /compact (a call follows the fold)
    label: ClassVar[str] = LABEL

    def plan(self, project: Path) -> Plan:
        plan = standard_plan(toolset(self.subagent_tool), project, compact_at=COMPACT_AT)
        if self.prompt_after_manual:
            return with_prompt_after_the_fold(plan, *COMPACTION_MARKERS)
        plan.compaction_markers = (*plan.compaction_markers, *COMPACTION_MARKERS)
        return plan

    def prompts(self, plan: Plan) -> list[str]:
        """What the user types, in order: the main prompts, `/compact` after the third."""
        main = [p.text for p in plan.prompts if p.agent == MAIN]
        out = main[:3] + ["/compact"]
        return out + main[3:]

    def run(self, pin: Pin | None = None) -> Run:
        """Run the pinned CLI, or `pin` (another install of it: `agents check --latest`)."""
        pin = self.installed(pin)
        with workspace(self.key) as (home, project):
            (home / ".claude").mkdir(parents=True, exist_ok=True)
            (home / ".claude.json").write_text(
                json.dumps({"hasCompletedOnboarding": True, "bypassPermissionsModeAccepted": True})
            )
            plan = self.plan(project)
            with ScriptedServer(plan) as srv:
                env = base_env(
                    home,
                    ANTHROPIC_BASE_URL=srv.url,
                    ANTHROPIC_API_KEY="sk-ant-scripted",
                    IS_SANDBOX="1",
                    CLAUDE_CODE_AUTO_COMPACT_WINDOW="200000",
                    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                    DISABLE_AUTOUPDATER="1",
                    DISABLE_ERROR_REPORTING="1",
                )
                cmd = [
                    str(pin.exe),
                    "-p",
                    "--input-format",
                    "stream-json",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "--dangerously-skip-permissions",
                ]
                step = converse(cmd, project, env, self.prompts(plan))
                end_daemons(home)
                src = session_folder(home, project)
                folder = Path(tempfile.mkdtemp(prefix=f"cv-run-{self.key}-"))
                if src is not None:
                    shutil.copytree(src, folder, dirs_exist_ok=True)
            triggers = ["auto", "manual"]
            return Run(
                key=self.key,
                version=pin.installed_version() or pin.version,
                label=LABEL,
                folder=folder,
                server=srv,
                plan=plan,
                steps=[step],
                parents={SUB: MAIN},
                triggers={MAIN: triggers},
                allowances=allowances(pin.installed_version() or pin.version),
                recorded_before={MAIN: pre_tokens(folder)},
                notes=[] if self.prompt_after_manual else ["the manual /compact is the last step: no call follows it"],
            )


def pre_tokens(folder: Path) -> list[int | None]:
    """Each fold's tokens_before as the main session file records it: compactMetadata.preTokens of its
    compact_boundary lines, in order (read here from the raw lines, not through the importer)."""
    out: list[int | None] = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj.get("subtype") == "compact_boundary" and not obj.get("isSidechain"):
                out.append((obj.get("compactMetadata") or {}).get("preTokens"))
    return out


def records_requests(version: str) -> bool:
    """2.1.3xx writes api-request records: the window is what each request carried (flags.request)."""
    parts = [int(p) if p.isdigit() else 0 for p in version.split(".")[:3]]
    return parts >= [2, 1, 300]


def allowances(version: str) -> list[Allowance]:
    """Request items a Claude Code log cannot hold as conversation text (docs/agents.md): none where it
    records each request (2.1.3xx), the reminders and system messages where it does not (2.1.197)."""
    if records_requests(version):
        return []
    system = (
        "You have been invoked in the following environment",
        "Today's date is",
        "The following deferred tools are now available",
        "While bypass permissions mode is active",
        "(type: local_agent) (status:",
        "Available agent types for the Agent tool",
        "The following skills are available for use with the Skill tool",
        "Called the Read tool with the following input",
        "Result of calling the Read tool",
    )
    kept = "2.1.197 never logged them as sent (2.1.3xx keeps each in an api-request-blob record)"
    return [
        Allowance(
            "system-reminder",
            "Claude Code renders <system-reminder> blocks (git attribution, the re-read files after a compaction, "
            "a background task's notification) into the user messages it sends; the transcript keeps the prompt as "
            f"typed and the reminders as attachment records; {kept}",
            ("<system-reminder>",),
        ),
        Allowance(
            "system messages",
            "Claude Code sends its environment, the date, the deferred tools, the permission-mode note, the agent "
            "and skill lists, a finished task's status and (2.1.197) the re-read files as role-system messages "
            f"inside `messages`; the transcript has them only as attachment records; {kept}",
            system,
        ),
    ]


QUIET = 1.5  # seconds without output after a `result` before the next prompt is written


def converse(cmd: list[str], cwd: Path, env: dict[str, str], prompts: list[str], timeout: float = TIMEOUT) -> Step:
    """Run the CLI, writing the next prompt once the last one is answered: a `result` line came, no
    background task (a sub-agent the Agent tool started) is still running, and the CLI printed
    nothing for QUIET seconds (a task's notification is answered in a turn of its own, with a
    `result` of its own). After the last prompt's answer, stdin is closed and the CLI exits."""
    t0 = time.monotonic()
    p = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    out: list[str] = []
    err: list[bytes] = []
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ, "out")
    sel.register(p.stderr, selectors.EVENT_READ, "err")
    pending = list(prompts)
    running: set[str] = set()
    buf = b""
    answered = False  # a result came since the last prompt was written
    last_output = time.monotonic()

    def write(text: str | None) -> None:
        nonlocal answered
        answered = False
        if text is None:
            p.stdin.close()
        else:
            p.stdin.write(_user_line(text).encode())
            p.stdin.flush()

    write(pending.pop(0))
    while sel.get_map():
        now = time.monotonic()
        if now - t0 > timeout:
            kill_group(p.pid)
            err.append(f"\n[timed out after {timeout:.0f} s]".encode())
            break
        if answered and not running and now - last_output > QUIET and not p.stdin.closed:
            write(pending.pop(0) if pending else None)
        for key, _ in sel.select(timeout=0.2):
            chunk = os.read(key.fileobj.fileno(), 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                continue
            if key.data == "err":
                err.append(chunk)
                continue
            last_output = time.monotonic()
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode("utf-8", "replace")
                out.append(text)
                try:
                    obj = json.loads(text)
                except ValueError:
                    continue
                if not isinstance(obj, dict):
                    continue
                kind, subtype = obj.get("type"), obj.get("subtype")
                if kind == "result":
                    answered = True
                elif kind == "system" and subtype == "task_started" and obj.get("task_id"):
                    running.add(obj["task_id"])
                elif kind == "system" and subtype == "task_notification":
                    running.discard(obj.get("task_id"))
                    answered = False  # its own turn (and result) follows
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        kill_group(p.pid)
        rc = None
    return Step(cmd, rc, "\n".join(out), b"".join(err).decode("utf-8", "replace"), time.monotonic() - t0)


DRIVER = ClaudeCodeDriver(PINS["claude-code"], "Agent", prompt_after_manual=True)
DRIVER_2_1_197 = ClaudeCodeDriver(PINS["claude-code-2.1.197"], "Task", prompt_after_manual=False)
DRIVERS = [DRIVER, DRIVER_2_1_197]
