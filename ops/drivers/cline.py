"""Cline CLI (npm `cline`), driven offline against the scripted server (ops/scripted/chat.py: the
`openai` provider speaks Chat Completions).

`cline auth -p openai -k KEY -m MODEL -b http://127.0.0.1:PORT/v1` writes the provider settings
(~/.cline/data/settings/providers.json); then each prompt is one `cline --json "PROMPT"` run in the
project folder. `--id` resumes a session only interactively, so every prompt is its own session
folder (~/.cline/data/sessions/<id>/) and its own conversation: the plan's prompts are the
conversations "main", "main-2", "main-3"; the third asks for a sub-agent through `spawn_agent`,
whose conversation ("sub", `agent_<id>.messages.json` in the third session's folder) is linked
under "main-3". The tools offered (the request's `tools`): read_files, run_commands, editor,
spawn_agent (and search_codebase, fetch_web_content, ask_question, team_*).

No fold is expected: Cline's compaction did not fire on the usage a model reported (the 150k input
reported on prompt 2's answer ends that session; the next prompt is a new session). Each run starts
a hub daemon (`cline --cline-hub-daemon`) that outlives the command: it is ended by pid
(base.end_daemons).

The folder a user imports: ~/.cline/data/sessions/, copied out of the temp HOME.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ops.drivers.base import MAIN, SUB, Run, Toolset, base_env, end_daemons, run_step, standard_plan, workspace
from ops.drivers.pins import PINS, Pin
from ops.scripted.plan import Plan, Tool
from ops.scripted.server import ScriptedServer

MODEL = "scripted-chat"
KEY = "sk-scripted"
TIMEOUT = 90.0
SUB_PARENT = "main-3"  # the conversation whose prompt spawns the sub-agent


def toolset() -> Toolset:
    return Toolset(
        list_files=lambda project: Tool("run_commands", {"commands": ["ls -la"]}),
        read=lambda path: Tool("read_files", {"files": [{"path": str(path)}]}),
        edit=lambda path, old, new: Tool("editor", {"path": str(path), "old_text": old, "new_text": new}),
        shell=lambda cmd, cwd: Tool("run_commands", {"commands": [cmd]}),
        subagent=lambda text: Tool("spawn_agent", {"systemPrompt": "You read files and answer briefly.", "task": text}),
    )


def plan(project: Path) -> Plan:
    """The standard plan, each main prompt its own conversation (one session per `cline` run)."""
    out = standard_plan(toolset(), project)
    mains = [p for p in out.prompts if p.agent == MAIN]
    for i, prompt in enumerate(mains[1:], start=2):
        prompt.agent = f"{MAIN}-{i}"
    return out


class ClineDriver:
    key = "cline"
    label = "cline"  # the format's name (contextviewer/importers/cline): Conversation.agent

    def __init__(self, pin: Pin = PINS["cline"]):
        self.pin = pin

    def run(self, pin: Pin | None = None) -> Run:
        pin = pin or self.pin
        missing = pin.missing()
        if missing:
            raise RuntimeError(missing)
        with workspace(self.key) as (home, project):
            the_plan = plan(project)
            with ScriptedServer(the_plan) as srv:
                env = base_env(home)
                steps = []
                try:
                    steps.append(run_step([str(pin.exe), "auth", "-p", "openai", "-k", KEY, "-m", MODEL, "-b", f"{srv.url}/v1"],
                                          project, env, timeout=TIMEOUT))
                    if steps[-1].returncode == 0:
                        for prompt in (p for p in the_plan.prompts if p.agent != SUB):
                            steps.append(run_step([str(pin.exe), "--json", prompt.text], project, env, timeout=TIMEOUT))
                            if steps[-1].returncode != 0:
                                break
                finally:
                    end_daemons(home)
                folder = Path(tempfile.mkdtemp(prefix=f"cv-run-{self.key}-"))
                src = home / ".cline" / "data" / "sessions"
                if src.is_dir():
                    shutil.copytree(src, folder / "sessions", symlinks=True)
            return Run(
                key=pin.key,
                version=pin.installed_version() or pin.version,
                label=self.label,
                folder=folder,
                server=srv,
                plan=the_plan,
                steps=steps,
                parents={SUB: SUB_PARENT},
                notes=["one session per prompt (`--id` resumes only interactively): a main conversation per prompt",
                       "no fold expected: Cline's compaction did not fire on the usage the model reported"],
            )


DRIVER = ClineDriver()
