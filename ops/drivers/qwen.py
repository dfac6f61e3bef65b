"""Qwen Code, driven offline against the scripted server (ops/scripted/chat.py, Chat Completions).

One process per prompt: `qwen --yolo -p PROMPT`, then `qwen --yolo --continue -p PROMPT` (the last
session of this project goes on), with OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL and the
settings' auth type `openai`. The plan (base.standard_plan): prompt 1 (glob, read_file), prompt 2
(edit, run_shell_command; its answer reports COMPACT_AT input tokens, so the CLI compresses its
history before prompt 3), prompt 3 (a foreground sub-agent through the `agent` tool, which reads
app.py), `/compress` (a manual fold: the CLI runs slash commands in -p mode), prompt 4 (a call after
the manual fold). Managed auto-memory (a background extraction call after each prompt) is switched off in
the settings: it is a side call the CLI makes with tools and the whole conversation.

The folder a user imports: ~/.qwen/projects/<cwd with / as ->/, its chats/<id>.jsonl (the session)
and subagents/<id>/agent-*.jsonl + .meta.json (its sub-agents), copied out of the temp HOME.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

from ops.drivers.base import Allowance, MAIN, PinnedDriver, Run, SUB, Toolset, base_env, end_daemons, run_step, standard_plan, with_prompt_after_the_fold, workspace
from contextviewer.importers.qwen.entry import ENTRY as QWEN
from ops.drivers.pins import PINS, Pin
from ops.scripted.plan import Plan, Tool
from ops.scripted.server import ScriptedServer

LABEL = QWEN.name  # the format's name (contextviewer/importers/qwen): Conversation.agent
# Reported on prompt 2's answer. Qwen Code 0.24.4 takes a model it does not know (OPENAI_MODEL
# "scripted") as a 200k window: it compresses before the next call when the last reported input
# (plus the new message) reaches min(0.85 x window, window - 20k reserve - 13k) = 167k, and above its
# hard limit (window - 20k - 3k = 177k) it compresses as a "hard rescue" and refuses the call when
# its estimate stays over it. (A 1M model moves both: ~940k and ~990k.)
COMPACT_AT = 170_000
TIMEOUT = 90.0
# What a Qwen Code compression request says (its summarization prompt), beside the plan's own.
COMPACTION_MARKERS = ("<state_snapshot>", "summarizes a conversation when its context window")
# Qwen Code asks for its summary as a <state_snapshot> XML block.
SUMMARY = (
    "<analysis>Scripted summary.</analysis>\n<state_snapshot>\n<overall_goal>the scripted prompts</overall_goal>\n"
    "<key_knowledge>the project folder was listed, a file read and edited, a command run</key_knowledge>\n"
    "<current_plan>none pending</current_plan>\n</state_snapshot>"
)
SETTINGS = {
    "security": {"auth": {"selectedType": "openai"}},
    "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False},
}


def toolset() -> Toolset:
    return Toolset(
        list_files=lambda project: Tool("glob", {"pattern": "*"}),
        read=lambda path: Tool("read_file", {"file_path": str(path)}),
        edit=lambda path, old, new: Tool("edit", {"file_path": str(path), "old_string": old, "new_string": new}),
        shell=lambda cmd, cwd: Tool("run_shell_command", {"command": cmd, "description": "Run the command"}),
        subagent=lambda text: Tool(
            "agent",
            {"description": "Read app.py", "prompt": text, "subagent_type": "general-purpose", "run_in_background": False},
        ),
    )


def project_dir_name(cwd: Path) -> str:
    """~/.qwen/projects/<this>: the cwd with every / as - (and every character other than a letter,
    a digit or - as -)."""
    return "".join(c if c.isalnum() or c == "-" else "-" for c in str(cwd))


@dataclass
class QwenDriver(PinnedDriver):
    label: ClassVar[str] = LABEL

    def plan(self, project: Path) -> Plan:
        plan = standard_plan(toolset(), project, compact_at=COMPACT_AT)
        with_prompt_after_the_fold(plan, *COMPACTION_MARKERS)
        plan.summary = SUMMARY
        return plan

    def prompts(self, plan: Plan) -> list[str]:
        """What the user types, one process each: the main prompts, `/compress` (a manual fold) after the third."""
        main = [p.text for p in plan.prompts if p.agent == MAIN]
        return [*main[:3], "/compress", *main[3:]]

    def run(self, pin: Pin | None = None) -> Run:
        """One run on the pinned install, or on `pin` (another install of the same package)."""
        pin = self.installed(pin)
        with workspace(self.key) as (home, project):
            (home / ".qwen").mkdir(parents=True, exist_ok=True)
            (home / ".qwen" / "settings.json").write_text(json.dumps(SETTINGS))
            plan = self.plan(project)
            steps = []
            with ScriptedServer(plan) as srv:
                env = base_env(
                    home,
                    OPENAI_BASE_URL=f"{srv.url}/v1",
                    OPENAI_API_KEY="sk-scripted",
                    OPENAI_MODEL="scripted",
                    QWEN_CODE_SUPPRESS_YOLO_WARNING="1",
                )
                for i, text in enumerate(self.prompts(plan)):
                    cmd = [str(pin.exe), "--yolo", *(["--continue"] if i else []), "-p", text]
                    steps.append(run_step(cmd, project, env, timeout=TIMEOUT))
                    if steps[-1].returncode != 0:
                        break
                end_daemons(home)
                src = home / ".qwen" / "projects" / project_dir_name(project)
                folder = Path(tempfile.mkdtemp(prefix=f"cv-run-{self.key}-"))
                for part in ("chats", "subagents"):  # not memory/, meta.json: not the session
                    if (src / part).is_dir():
                        shutil.copytree(src / part, folder / part, dirs_exist_ok=True)
            return Run(
                key=self.key,
                version=pin.version,
                label=LABEL,
                folder=folder,
                server=srv,
                plan=plan,
                steps=steps,
                parents={SUB: MAIN},
                triggers={MAIN: ["auto", "manual"]},
                allowances=allowances(),
            )


def allowances() -> list[Allowance]:
    """Request items a Qwen Code log cannot hold."""
    return [
        Allowance(
            "system-reminder",
            "Qwen Code sends <system-reminder> blocks (the skills list, the date, the project's context) as user "
            "texts it never writes to its chat log; the log keeps the prompt as typed",
            ("<system-reminder>",),
        ),
    ]


DRIVER = QwenDriver(PINS["qwen"])
