"""Kimi CLI (PyPI `kimi-cli`), driven offline against the scripted server (ops/scripted/chat.py, Chat
Completions: its `kimi` provider).

`KIMI_BASE_URL` (the scripted server's /v1), `KIMI_API_KEY`, `KIMI_MODEL_NAME` and
`KIMI_MODEL_MAX_CONTEXT_SIZE` (100,000) configure its default provider; one process per prompt,
`kimi --print --yolo -p PROMPT`, then `kimi --print --yolo -C -p PROMPT` (the work folder's last
session goes on). The plan (base.standard_plan): prompt 1 (Glob, ReadFile), prompt 2
(StrReplaceFile, Shell; its answer reports COMPACT_AT input tokens: with Kimi's 50,000 reserved for
the answer, context + reserve passes the window, so it compacts at the start of the next step),
prompt 3 (a foreground sub-agent through the `Agent` tool, which reads app.py), `/compact` (a manual
fold: `--print` runs slash commands), prompt 4 (a call after the manual fold).

The folder a user imports: ~/.kimi/sessions/ (<work folder hash>/<session id>/ with context.jsonl,
context_1.jsonl after the fold, wire.jsonl, state.json, subagents/<id>/), copied out of the temp HOME.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

from contextviewer.importers.kimi.entry import ENTRY as KIMI
from ops.drivers.base import Allowance, MAIN, PinnedDriver, Run, SUB, Toolset, base_env, end_daemons, run_step, standard_plan, with_prompt_after_the_fold, workspace
from ops.drivers.pins import PINS, Pin
from ops.scripted.plan import Plan, Tool
from ops.scripted.server import ScriptedServer

LABEL = KIMI.name  # the format's name (contextviewer/importers/kimi): Conversation.agent
MODEL = "scripted"
WINDOW = 100_000
# Reported on prompt 2's answer: Kimi compacts when context + reserved_context_size (50,000) reaches
# max_context_size, or at 85 % of it (config.py LoopControl).
COMPACT_AT = 60_000
TIMEOUT = 120.0
# What Kimi's compaction request says (prompts/compact.md).
COMPACTION_MARKERS = ("compact this conversation context",)


def toolset() -> Toolset:
    return Toolset(
        list_files=lambda project: Tool("Glob", {"pattern": "*"}),
        read=lambda path: Tool("ReadFile", {"path": str(path)}),
        edit=lambda path, old, new: Tool("StrReplaceFile", {"path": str(path), "edit": {"old": old, "new": new}}),
        shell=lambda cmd, cwd: Tool("Shell", {"command": cmd}),
        subagent=lambda text: Tool("Agent", {"description": "Read app.py", "prompt": text, "subagent_type": "coder"}),
    )


@dataclass
class KimiDriver(PinnedDriver):
    label: ClassVar[str] = LABEL

    def plan(self, project: Path) -> Plan:
        plan = standard_plan(toolset(), project, compact_at=COMPACT_AT)
        with_prompt_after_the_fold(plan, *COMPACTION_MARKERS)
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
                env = base_env(home, KIMI_BASE_URL=f"{srv.url}/v1", KIMI_API_KEY="sk-scripted", KIMI_MODEL_NAME=MODEL,
                               KIMI_MODEL_MAX_CONTEXT_SIZE=str(WINDOW))
                for i, text in enumerate(self.prompts(plan)):
                    cmd = [str(pin.exe), "--print", "--yolo", *(["-C"] if i else []), "-p", text]
                    steps.append(run_step(cmd, project, env, timeout=TIMEOUT))
                    if steps[-1].returncode != 0:
                        break
                end_daemons(home)
                folder = Path(tempfile.mkdtemp(prefix=f"cv-run-{self.key}-"))
                sessions = home / ".kimi" / "sessions"
                if sessions.is_dir():
                    shutil.copytree(sessions, folder, dirs_exist_ok=True)
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
    """Request items a Kimi CLI log cannot hold."""
    return []


DRIVER = KimiDriver(PINS["kimi"])
