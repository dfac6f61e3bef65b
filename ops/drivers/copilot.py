"""GitHub Copilot CLI (npm `@github/copilot`), driven offline against the scripted server
(ops/scripted/chat.py, Chat Completions) in its bring-your-own-key mode: no GitHub login,
`COPILOT_OFFLINE=true`, `COPILOT_PROVIDER_BASE_URL` (the scripted server), `COPILOT_MODEL`, and a
prompt limit of MAX_PROMPT tokens (`COPILOT_PROVIDER_MAX_PROMPT_TOKENS`).

One process per prompt: `copilot -p PROMPT --allow-all-tools`, then `--continue` (the last session
goes on). The plan (base.standard_plan): prompt 1 (glob, view), prompt 2 (edit, bash; the response
after the edit reports COMPACT_AT input tokens, so Copilot starts its background compaction while
the prompt goes on, and the compaction is done before the process exits), prompt 3 (a `task`
sub-agent, sync, which views app.py), `/compact` (a manual fold: -p runs slash commands), prompt 4.

The folder a user imports: ~/.copilot/session-state/ (each session's <uuid>/events.jsonl; a
sub-agent's events are in its parent's file, marked with their agentId), copied out of the temp HOME.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

from contextviewer.importers.copilot.entry import ENTRY as COPILOT
from ops.drivers.base import Allowance, MAIN, PinnedDriver, Run, SUB, Toolset, base_env, end_daemons, run_step, standard_plan, workspace, with_prompt_after_the_fold
from ops.drivers.pins import PINS, Pin
from ops.scripted.plan import Plan, Tool
from ops.scripted.server import ScriptedServer

LABEL = COPILOT.name  # the format's name (contextviewer/importers/copilot): Conversation.agent
MODEL = "scripted"
MAX_PROMPT = 50_000
# Reported on the response after prompt 2's edit: over Copilot's background compaction threshold
# (80 % of the prompt limit) and under the limit, so the compaction runs while the prompt goes on.
COMPACT_AT = 42_000
TIMEOUT = 90.0


def toolset() -> Toolset:
    return Toolset(
        list_files=lambda project: Tool("glob", {"pattern": "*"}),
        read=lambda path: Tool("view", {"path": str(path)}),
        edit=lambda path, old, new: Tool("edit", {"path": str(path), "old_str": old, "new_str": new}),
        shell=lambda cmd, cwd: Tool("bash", {"command": cmd, "description": "Run the command"}),
        subagent=lambda text: Tool(
            "task", {"name": "reader", "description": "Read app.py", "prompt": text, "agent_type": "general-purpose", "mode": "sync"}
        ),
    )


class CopilotPlan(Plan):
    """The standard plan, with one rule for Copilot's summary: after a compaction the request's
    first user text is the summary, wrapped with every earlier prompt ("<user_message>cv-prompt-1
    ...</user_message><user_message>cv-prompt-2 ..."), and a compaction made while a prompt runs
    leaves that wrapper as the request's only user text. The prompt is then the one whose marker
    comes LAST in the text, not the first of the plan found in it."""

    def prompt_for(self, user_texts: list[str]) -> int | None:
        for text in reversed(user_texts):
            found = [(text.rfind(p.marker), i) for i, p in enumerate(self.prompts) if p.marker in text]
            if found:
                return max(found)[1]
        return None


@dataclass
class CopilotDriver(PinnedDriver):
    label: ClassVar[str] = LABEL

    def plan(self, project: Path) -> Plan:
        plan = standard_plan(toolset(), project, compact_at=COMPACT_AT)
        # The compaction is started by the response after the edit, not by the answer: Copilot
        # compacts in the background and cancels a compaction still running when the process ends.
        p2 = plan.prompts[1]
        p2.input_tokens = {0: COMPACT_AT}
        with_prompt_after_the_fold(plan)
        # Copilot's compaction request ("Please create a detailed summary of the conversation so
        # far") is found by the plan's own markers.
        return CopilotPlan(plan.prompts)

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
                env = base_env(
                    home,
                    COPILOT_OFFLINE="true",
                    COPILOT_PROVIDER_BASE_URL=f"{srv.url}/v1",
                    COPILOT_PROVIDER_API_KEY="sk-scripted",
                    COPILOT_MODEL=MODEL,
                    COPILOT_PROVIDER_MAX_PROMPT_TOKENS=str(MAX_PROMPT),
                )
                for i, text in enumerate(self.prompts(plan)):
                    cmd = [str(pin.exe), "-p", text, "--allow-all-tools", *(["--continue"] if i else [])]
                    steps.append(run_step(cmd, project, env, timeout=TIMEOUT))
                    if steps[-1].returncode != 0:
                        break
                end_daemons(home)
                folder = Path(tempfile.mkdtemp(prefix=f"cv-run-{self.key}-"))
                src = home / ".copilot" / "session-state"
                if src.is_dir():
                    shutil.copytree(src, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.lock", ".session-operation-locks"))
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
                recorded_before={MAIN: current_tokens(folder)},
            )


def current_tokens(folder: Path) -> list[int | None]:
    """Each applied compaction's tokens_before as Copilot records it: `currentTokens` of the main
    agent's session.compaction_start whose compaction_complete says success (read here from the raw
    events, not through the importer)."""
    started: dict[str, int | None] = {}
    out: list[int | None] = []
    for path in sorted(folder.glob("*/events.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if not isinstance(obj, dict) or obj.get("agentId"):
                continue
            data = obj.get("data") or {}
            if obj.get("type") == "session.compaction_start":
                started[data.get("compactionAttemptId")] = data.get("currentTokens")
            elif obj.get("type") == "session.compaction_complete" and data.get("success") is True:
                out.append(started.get(data.get("compactionAttemptId")))
    return out


def allowances() -> list[Allowance]:
    """Request items a Copilot log cannot hold."""
    return []


DRIVER = CopilotDriver(PINS["copilot"])
