"""Mistral Vibe (PyPI `mistral-vibe`), driven offline against the scripted server (ops/scripted/chat.py,
Chat Completions).

~/.vibe/config.toml names a provider (generic backend) whose `api_base` is the scripted server, and
one model of `max_context_length` 50,000 with an `auto_compact_threshold` of 30,000 (Vibe refuses a
compaction whose summary and kept context cannot fit the threshold: it scales its estimates by the
last reported usage, so the threshold sits at 60 % of the window and the reported input just over
it). One process per prompt: `vibe --trust --auto-approve -p PROMPT`, then `-c -p PROMPT`.

The plan (base.standard_plan's prompts, in another order): prompt 1 (ls through bash, read_file),
then the sub-agent prompt (Vibe starts one from `run_typescript` code, `tools.agents.spawn`, which
returns at once, so the parent then calls `wait`; the child, a session of its own in
`unified/child-<id>/`, reads app.py), then the edit prompt (edit, bash; its answer reports
COMPACT_AT input tokens, over the threshold), then a read: Vibe compacts at the start of that last
prompt, before its first call. In -p, `/compact` goes to the model as a prompt: no manual
compaction is driven.

Vibe keeps the journal since its generation before the last one only (it writes one at the end of
each turn, and when a sub-agent starts): the compaction falls in the last process, in a turn with
no sub-agent, so the folder still holds the figures of the calls around it (earlier calls are
unmeasured in the folder, and the check does not compare usage).

The folder a user imports: ~/.vibe/logs/session/unified/ (one folder per session), copied out of the
temp HOME.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

from contextviewer.importers.vibe.entry import ENTRY as VIBE
from ops.drivers.base import Allowance, MAIN, MARKERS, PinnedDriver, Run, SUB, Toolset, base_env, end_daemons, run_step, standard_plan, workspace
from ops.drivers.pins import PINS, Pin
from ops.scripted.plan import Plan, Prompt, Tool
from ops.scripted.server import ScriptedServer

LABEL = VIBE.name  # the format's name (contextviewer/importers/vibe): Conversation.agent
PACKAGE = "mistral-vibe"
PROVIDER, MODEL, ALIAS = "scripted", "scripted-model", "scripted"
CONTEXT_WINDOW = 50_000
THRESHOLD = 30_000
COMPACT_AT = 31_000  # reported on prompt 2's answer: over the threshold, under the window
TIMEOUT = 120.0
# Vibe's compaction request, beside the plan's markers.
COMPACTION_MARKERS = ("CRITICAL: Respond with text only. Do NOT call any tools.",)
SUB_NAME = "reader"
FOLD_MARKER, LAST_MARKER = "cv-prompt-4", "cv-prompt-5"
WAIT_MS = 5_000


def spawn(task: str) -> Tool:
    """A sub-agent as Vibe starts one: `tools.agents.spawn` in `run_typescript` code (it returns at once)."""
    return Tool("run_typescript", {"code": f"return await tools.agents.spawn({{name: {json.dumps(SUB_NAME)}, message: {json.dumps(task)}}});"})


def toolset() -> Toolset:
    return Toolset(
        list_files=lambda project: Tool("bash", {"command": "ls"}),
        read=lambda path: Tool("read_file", {"path": str(path)}),
        edit=lambda path, old, new: Tool("edit", {"file_path": str(path), "old_string": old, "new_string": new}),
        shell=lambda cmd, cwd: Tool("bash", {"command": cmd}),
        subagent=spawn,
    )


def config_toml(base_url: str) -> str:
    return f"""active_model = "{ALIAS}"
enable_update_checks = false
enable_auto_update = false
enable_telemetry = false

[[providers]]
name = "{PROVIDER}"
api_base = "{base_url}"
api_key_env_var = "SCRIPTED_API_KEY"
backend = "generic"

[[models]]
name = "{MODEL}"
provider = "{PROVIDER}"
alias = "{ALIAS}"
max_context_length = {CONTEXT_WINDOW}
auto_compact_threshold = {THRESHOLD}
"""


@dataclass
class VibeDriver(PinnedDriver):
    label: ClassVar[str] = LABEL

    def plan(self, project: Path) -> Plan:
        plan = standard_plan(toolset(), project, compact_at=COMPACT_AT)
        # The spawn returns at once: the parent waits for the child's notification before it answers.
        spawning = next(p for p in plan.prompts if p.marker == MARKERS[2])
        spawning.tools.append(Tool("wait", {"timeout_ms": WAIT_MS}))
        # The sub-agent second, the compaction's prompt third, a read last (see above: Vibe writes a
        # generation when a sub-agent starts, and drops the journal before it).
        p1, p2, p3, sub = plan.prompts
        p2.text = p2.text.replace(MARKERS[1], FOLD_MARKER)
        p2.marker = FOLD_MARKER
        last = Prompt(f"{LAST_MARKER}: read app.py and say which function says bye.", LAST_MARKER,
                      [toolset().read(project / "app.py")], "farewell says bye.")
        plan.prompts = [p1, p3, sub, p2, last]
        plan.compaction_markers = (*plan.compaction_markers, *COMPACTION_MARKERS)
        return plan

    def run(self, pin: Pin | None = None) -> Run:
        """One run on the pinned install, or on `pin` (another install of the same package)."""
        pin = self.installed(pin)
        with workspace(self.key) as (home, project):
            (home / ".vibe").mkdir(parents=True, exist_ok=True)
            plan = self.plan(project)
            steps = []
            with ScriptedServer(plan) as srv:
                (home / ".vibe" / "config.toml").write_text(config_toml(f"{srv.url}/v1"))
                env = base_env(home, SCRIPTED_API_KEY="sk-scripted")
                for i, prompt in enumerate(p for p in plan.prompts if p.agent == MAIN):
                    cmd = [str(pin.exe), "--trust", "--auto-approve", *(["-c"] if i else []), "-p", prompt.text]
                    steps.append(run_step(cmd, project, env, timeout=TIMEOUT))
                    if steps[-1].returncode != 0:
                        break
                end_daemons(home)
                folder = Path(tempfile.mkdtemp(prefix=f"cv-run-{self.key}-"))
                sessions = home / ".vibe" / "logs" / "session" / "unified"
                if sessions.is_dir():
                    shutil.copytree(sessions, folder, dirs_exist_ok=True)
            return Run(
                key=self.key,
                version=pin.version,
                label=LABEL,
                folder=folder,
                server=srv,
                plan=plan,
                steps=steps,
                parents={SUB: MAIN},
                triggers={MAIN: ["auto"], SUB: []},
                allowances=allowances(),
                notes=["Vibe keeps per-call usage for its last turn only: the earlier turns' calls are unmeasured"],
            )


def allowances() -> list[Allowance]:
    """Request items a Vibe folder cannot hold."""
    return []


DRIVER = VibeDriver(next(p for p in PINS.values() if p.package == PACKAGE))
