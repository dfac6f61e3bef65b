"""OpenHands CLI (PyPI `openhands`), driven offline against the scripted server (ops/scripted/chat.py,
Chat Completions through LiteLLM's `openai/` provider).

`--override-with-envs` makes it take `LLM_BASE_URL` (the scripted server's /v1), `LLM_API_KEY` and
`LLM_MODEL` (openhands_cli/stores/agent_store.py); `--headless --always-approve -t PROMPT` runs one
prompt, then `--resume <id>` goes on with the same conversation (its id is printed as "Conversation
ID: <hex>"). Its condenser folds by the number of events in its view (LLMSummarizingCondenser
`max_size`, 80 by default) or on a context-window error, not on reported usage: the driver writes
~/.openhands/agent_settings.json (the user's own setting, the CLI's Agent as JSON) with a small
`max_size` so the condenser folds at the start of prompt 3. The plan (base.standard_plan): prompt 1
(terminal `ls`, file_editor view), prompt 2 (file_editor str_replace, terminal), prompt 3 (a
sub-agent through its `task` tool, which views app.py). Every tool call carries `security_risk`, which
its tools require.

The folder a user imports: ~/.openhands/conversations/ (<conversation id>/base_state.json,
events/event-NNNNN-<id>.json, subagents/), copied out of the temp HOME.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

from contextviewer.importers.openhands.entry import ENTRY as OPENHANDS
from ops.drivers.base import Allowance, MAIN, PinnedDriver, Run, SUB, Toolset, base_env, end_daemons, run_step, standard_plan, workspace
from ops.drivers.pins import PINS, Pin
from ops.scripted.plan import Plan, Tool
from ops.scripted.server import ScriptedServer

LABEL = OPENHANDS.name  # the format's name (contextviewer/importers/openhands: its v1 folders): Conversation.agent
MODEL = "openai/scripted"
TIMEOUT = 180.0
# The condenser folds when its view holds more than MAX_SIZE events: after prompts 1 and 2 (13
# events: the system prompt, 2 prompts, 4 tool calls and their observations, 2 answers) prompt 3 makes 14.
MAX_SIZE = 13
KEEP_FIRST = 2
# What its condenser's request says (sdk/context/condenser/prompts/summarizing_prompt.j2).
COMPACTION_MARKERS = ("You are maintaining a context-aware state summary",)
CONVERSATION_ID = re.compile(r"Conversation ID: ([0-9a-f]{32})")
RISK = {"security_risk": "LOW"}


def toolset() -> Toolset:
    return Toolset(
        list_files=lambda project: Tool("terminal", {"command": "ls", **RISK}),
        read=lambda path: Tool("file_editor", {"command": "view", "path": str(path), **RISK}),
        edit=lambda path, old, new: Tool("file_editor", {"command": "str_replace", "path": str(path), "old_str": old, "new_str": new, **RISK}),
        shell=lambda cmd, cwd: Tool("terminal", {"command": cmd, **RISK}),
        subagent=lambda text: Tool("task", {"description": "Read app.py", "prompt": text, "subagent_type": "default", **RISK}),
    )


def agent_settings(base_url: str) -> dict:
    """~/.openhands/agent_settings.json: the CLI's default agent (openhands_cli/utils.py
    get_default_cli_agent) with a condenser that folds after MAX_SIZE events."""
    llm = {"model": MODEL, "api_key": "sk-scripted", "base_url": base_url, "usage_id": "agent"}
    return {
        "llm": llm,
        "tools": [{"name": n, "params": {}} for n in ("terminal", "file_editor", "task_tracker", "task_tool_set")],
        "system_prompt_kwargs": {"cli_mode": True},
        "condenser": {"kind": "LLMSummarizingCondenser", "llm": {**llm, "usage_id": "condenser"},
                      "max_size": MAX_SIZE, "keep_first": KEEP_FIRST},
        "kind": "Agent",
    }


@dataclass
class OpenHandsCliDriver(PinnedDriver):
    label: ClassVar[str] = LABEL

    def plan(self, project: Path) -> Plan:
        plan = standard_plan(toolset(), project)
        plan.compaction_markers = (*plan.compaction_markers, *COMPACTION_MARKERS)
        return plan

    def run(self, pin: Pin | None = None) -> Run:
        """One run on the pinned install, or on `pin` (another install of the same package)."""
        pin = self.installed(pin)
        with workspace(self.key) as (home, project):
            plan = self.plan(project)
            steps = []
            with ScriptedServer(plan) as srv:
                settings = home / ".openhands" / "agent_settings.json"
                settings.parent.mkdir(parents=True, exist_ok=True)
                settings.write_text(json.dumps(agent_settings(f"{srv.url}/v1")))
                env = base_env(home, LLM_BASE_URL=f"{srv.url}/v1", LLM_API_KEY="sk-scripted", LLM_MODEL=MODEL,
                               OPENHANDS_SUPPRESS_BANNER="1", LITELLM_LOCAL_MODEL_COST_MAP="True")
                conversation = None
                for prompt in (p for p in plan.prompts if p.agent == MAIN):
                    resume = ["--resume", conversation] if conversation else []
                    cmd = [str(pin.exe), "--headless", "--override-with-envs", "--always-approve", *resume, "-t", prompt.text]
                    steps.append(run_step(cmd, project, env, timeout=TIMEOUT))
                    found = CONVERSATION_ID.search(steps[-1].stdout)
                    conversation = conversation or (found.group(1) if found else None)
                    if steps[-1].returncode != 0 or conversation is None:
                        break
                end_daemons(home)
                folder = Path(tempfile.mkdtemp(prefix=f"cv-run-{self.key}-"))
                conversations = home / ".openhands" / "conversations"
                if conversations.is_dir():
                    shutil.copytree(conversations, folder, dirs_exist_ok=True)
            return Run(
                key=self.key,
                version=pin.installed_version() or pin.version,
                label=LABEL,
                folder=folder,
                server=srv,
                plan=plan,
                steps=steps,
                parents={SUB: MAIN},
                triggers={MAIN: ["auto"], SUB: []},
                allowances=allowances(),
            )


def allowances() -> list[Allowance]:
    """Request items an OpenHands conversation folder cannot hold."""
    return []


DRIVER = OpenHandsCliDriver(PINS["openhands"])
