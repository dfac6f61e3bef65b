"""gptme (PyPI `gptme`), driven offline against the scripted server (ops/scripted/chat.py, Chat
Completions).

`OPENAI_BASE_URL` points its `local` provider at the scripted server: `gptme -m local/scripted
--tool-format tool -n --name cvrun PROMPT`, one process per prompt; the same `--name` goes on with
the conversation. `-t +read,+subagent` adds its read tool and the `subagent()` function of its
ipython tool to the defaults. In non-interactive mode a turn that ends without a tool call gets an
automatic reminder, so each prompt ends with gptme's `complete` tool (the session ends there). The
plan (base.standard_plan, adapted): prompt 1 (ls through shell, read), prompt 2 (patch, shell; its
answer reports COMPACT_AT input tokens, over gptme's budget, so its autocompact hook asks the model
for a checkpoint through the normal turn loop, then switches to a compacted view; the interrupted
prompt then goes on with its `complete`), prompt 3 (a sub-agent: ipython `subagent(...)` then
`subagent_wait(...)`; the sub-agent reads app.py with `cat` through its shell, since its default
tools have no read, and ends with `complete`), `/compact` (a manual fold: `-n` runs its commands;
it rewrites the compacted view it is in), prompt 4 (a call after the manual fold).

The folder a user imports: ~/.local/share/gptme/logs/ (the conversation's folder, `cvrun/`, and the
sub-agent's, `subagent-<id>-<hex>/`), copied out of the temp HOME.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

from contextviewer.importers.gptme.entry import ENTRY as GPTME
from ops.drivers.base import EXTRA_MARKER, Allowance, MAIN, PinnedDriver, Run, SUB, Toolset, base_env, end_daemons, run_step, standard_plan, workspace
from ops.drivers.pins import PINS, Pin
from ops.scripted.plan import Plan, Prompt, Tool
from ops.scripted.server import ScriptedServer

LABEL = GPTME.name  # the format's name (contextviewer/importers/gptme): Conversation.agent
NAME = "cvrun"  # --name: the conversation's folder under logs/
MODEL = "local/scripted"
SUB_ID = "reader"
# Reported on prompt 2's shell answer: over gptme's budget for a model it does not know (128,000
# tokens: the `<budget:token_budget>` line of its log), measured from that usage on
# (util/context_measurement.py: the last call's input plus its estimate of what followed).
COMPACT_AT = 150_000
TIMEOUT = 120.0
# What gptme's checkpoint request says (tools/autocompact/resume.py build_checkpoint_prompt).
COMPACTION_MARKERS = ("Context budget has been reached", "produce a structured checkpoint")
COMPLETE = Tool("complete", {})


def toolset() -> Toolset:
    return Toolset(
        list_files=lambda project: Tool("shell", {"command": "ls"}),
        read=lambda path: Tool("read", {"path": str(path)}),
        edit=lambda path, old, new: Tool("patch", {"path": str(path), "patch": f"<<<<<<< ORIGINAL\n{old}\n=======\n{new}\n>>>>>>> UPDATED\n"}),
        shell=lambda cmd, cwd: Tool("shell", {"command": cmd}),
        subagent=lambda text: Tool("ipython", {"code": f"subagent({SUB_ID!r}, {text!r})\nsubagent_wait({SUB_ID!r})"}),
    )


@dataclass
class GptmeDriver(PinnedDriver):
    label: ClassVar[str] = LABEL

    def plan(self, project: Path) -> Plan:
        plan = standard_plan(toolset(), project, compact_at=COMPACT_AT)
        for prompt in plan.prompts:
            if prompt.agent == SUB:  # the sub-agent's default tools have no read: cat through its shell
                prompt.tools = [Tool("shell", {"command": "cat app.py"})]
            prompt.tools.append(COMPLETE)
        plan.prompts.append(Prompt(f"{EXTRA_MARKER}: say which file holds the status line.", EXTRA_MARKER, [COMPLETE],
                                   "notes.txt holds the status line."))
        plan.compaction_markers = (*plan.compaction_markers, *COMPACTION_MARKERS)
        return plan

    def prompts(self, plan: Plan) -> list[str]:
        """What the user types, one process each: the main prompts, `/compact` (a manual fold) after the third."""
        main = [p.text for p in plan.prompts if p.agent == MAIN]
        return [*main[:3], "/compact", *main[3:]]

    def run(self, pin: Pin | None = None) -> Run:
        """One run on the pinned install, or on `pin` (another install of the same package)."""
        pin = self.installed(pin)
        with workspace(self.key) as (home, project):
            plan = self.plan(project)
            steps = []
            with ScriptedServer(plan) as srv:
                # GPTME_TIKTOKEN_TIMEOUT=0: no download of tiktoken's tables (no network here); chars / 4
                env = base_env(home, OPENAI_BASE_URL=f"{srv.url}/v1", OPENAI_API_KEY="sk-scripted", GPTME_TIKTOKEN_TIMEOUT="0")
                base = [str(pin.exe), "-m", MODEL, "--tool-format", "tool", "-n", "--name", NAME, "-t", "+read,+subagent"]
                for text in self.prompts(plan):
                    steps.append(run_step([*base, text], project, env, timeout=TIMEOUT))
                    if steps[-1].returncode != 0:
                        break
                end_daemons(home)
                folder = Path(tempfile.mkdtemp(prefix=f"cv-run-{self.key}-"))
                logs = home / ".local" / "share" / "gptme" / "logs"
                if logs.is_dir():
                    shutil.copytree(logs, folder, dirs_exist_ok=True)
            return Run(
                key=self.key,
                version=pin.installed_version() or pin.version,
                label=LABEL,
                folder=folder,
                server=srv,
                plan=plan,
                steps=steps,
                parents={SUB: MAIN},
                triggers={MAIN: ["auto", "manual"], SUB: []},
                allowances=allowances(),
            )


def allowances() -> list[Allowance]:
    """Request items a gptme log cannot hold."""
    return []


DRIVER = GptmeDriver(PINS["gptme"])
