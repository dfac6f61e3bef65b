"""Gemini CLI (`@google/gemini-cli`, pin "gemini") driven offline against the scripted server.

How it runs: `GOOGLE_GEMINI_BASE_URL` = the scripted server, `GEMINI_API_KEY` (any), a settings file
that selects the API-key auth (`security.auth.selectedType = "gemini-api-key"`: with only the base URL
set, 0.61 takes the "gateway" auth and refuses to start non-interactively),
`GEMINI_CLI_TRUST_WORKSPACE=true`, `-m gemini-2.5-flash` (an explicit model: the default "auto"
first asks a router model for a JSON complexity score on every prompt), `--yolo -p PROMPT`, then
`--resume latest -p PROMPT` for the next prompts.

The plan: the standard three prompts; the third asks the `generalist` sub-agent through `invoke_agent`,
which ends its run by calling `complete_task {result}` (its loop needs that call, a text answer is
refused). Auto-compression: Gemini CLI compresses when the last call's reported prompt tokens reach
half of the model's window (1,048,576 for gemini-2.5-flash), checked before each request of the same
process only (a resumed session starts from an estimate of its history): so the big input is
reported on prompt 2's SECOND response (the one that asks for the shell command), and the request
that carries the command's output is preceded by the compression: two requests (the
`<state_snapshot>` and its verification pass), both compaction calls of one fold (the plan's markers
hold `<state_snapshot>`, which both carry). `/compress` as a `-p` prompt is not a manual fold here:
0.61 starts the compression in the background and sends "/compress" to the model as a prompt too.

The log: `~/.gemini/tmp/<project>/chats/session-<ts>-<id8>.jsonl` (+ `chats/<sessionId>/<id>.jsonl`
for the sub-agent); Run.folder is a copy of `~/.gemini/tmp`.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from ops.drivers.base import (
    SUB,
    Allowance,
    Run,
    Toolset,
    base_env,
    end_daemons,
    run_step,
    standard_plan,
    workspace,
)
from ops.drivers.pins import PINS
from ops.scripted.plan import Tool
from ops.scripted.server import ScriptedServer

MODEL = "gemini-2.5-flash"
# What Gemini CLI's compression prompt asks for (both of its requests get it).
SNAPSHOT = (
    "<state_snapshot>\n<overall_goal>Run the scripted prompts.</overall_goal>\n"
    "<key_knowledge>The project holds README.md, app.py and notes.txt.</key_knowledge>\n"
    "<file_system_state>notes.txt edited: status final.</file_system_state>\n"
    "<current_plan>1. [DONE] list and read. 2. [IN PROGRESS] edit and run cat.</current_plan>\n</state_snapshot>"
)
COMPACT_AT = 600_000  # over 50 % of 1,048,576

TOOLS = Toolset(
    list_files=lambda p: Tool("list_directory", {"dir_path": str(p)}),
    read=lambda p: Tool("read_file", {"file_path": str(p)}),
    edit=lambda p, old, new: Tool(
        "replace", {"file_path": str(p), "old_string": old, "new_string": new, "instruction": f"Change '{old}' to '{new}'."}
    ),
    shell=lambda cmd, p: Tool("run_shell_command", {"command": cmd, "description": f"Run {cmd}", "dir_path": str(p)}),
    subagent=lambda prompt: Tool("invoke_agent", {"agent_name": "generalist", "prompt": prompt}),
)


class GeminiDriver:
    key = "gemini"
    label = "gemini"  # the format's name, as contextviewer labels the conversations

    @property
    def pin(self):
        return PINS[self.key]

    def plan(self, project: Path):
        plan = standard_plan(TOOLS, project, compact_at=COMPACT_AT)
        plan.summary = SNAPSHOT
        second = plan.prompts[1]
        second.input_tokens = {1: COMPACT_AT}  # checked before the next request of the same process
        for p in plan.prompts:
            if p.agent == SUB:
                p.tools = [*p.tools, Tool("complete_task", {"result": {"response": p.answer}})]
        return plan

    def run(self, pin=None) -> Run:
        """One run of the pinned CLI, or of `pin` (another install of the package: `agents check --latest`)."""
        pin = pin or self.pin
        with workspace(self.key) as (home, project):
            plan = self.plan(project)
            settings = home / ".gemini" / "settings.json"
            settings.parent.mkdir(parents=True, exist_ok=True)
            settings.write_text(
                json.dumps(
                    {"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": False}}
                )
            )
            with ScriptedServer(plan) as srv:
                env = base_env(
                    home, GOOGLE_GEMINI_BASE_URL=srv.url, GEMINI_API_KEY="scripted-key", GEMINI_CLI_TRUST_WORKSPACE="true"
                )
                run = Run(self.key, pin.installed_version() or pin.version, self.label, Path(), srv, plan)
                main_prompts = [p for p in plan.prompts if p.agent != SUB]
                try:
                    for i, prompt in enumerate(main_prompts):
                        cmd = [str(pin.exe), "-m", MODEL, "--yolo", *(["--resume", "latest"] if i else []), "-p", prompt.text]
                        step = run_step(cmd, project, env, timeout=90)
                        run.steps.append(step)
                        if step.returncode != 0:
                            break
                finally:
                    ended = end_daemons(home)
                if ended:
                    run.notes.append(f"ended {len(ended)} process(es) left running: {ended}")
                out = Path(tempfile.mkdtemp(prefix="cv-run-gemini-"))
                src = home / ".gemini" / "tmp"
                if src.exists():
                    shutil.copytree(src, out / "tmp", ignore_dangling_symlinks=True, dirs_exist_ok=True)
                run.folder = out
                run.triggers = {"main": ["auto"]}
                run.parents = {SUB: "main"}
                run.allowances = allowances(srv)
        return run


def allowances(srv: ScriptedServer) -> list[Allowance]:
    """The results a resumed session sent twice (the texts of those items, nothing else)."""
    twice: set[str] = set()
    for ex in srv.calls("main"):
        seen: set[str] = set()
        for item in ex.view.items if ex.view else []:
            if item.kind == "tool_result" and item.tool_id:
                if item.tool_id in seen and item.text:
                    twice.add(item.text)
                seen.add(item.tool_id)
    if not twice:
        return []
    return [
        Allowance(
            "gemini-resume-repeats-results",
            "After `--resume`, Gemini CLI 0.61 rebuilds the history with each earlier tool result twice (the "
            "`<message id>_response` copy it makes from the call's record, and the user turn that sent the result) "
            "and sends both parts from then on; the log cannot place the copy (it is in a `$set.messages` written "
            "after the calls it precedes), so the window shows each result once. Only the results a request "
            "carried twice are named.",
            contains=tuple(sorted(twice)),
        )
    ]


DRIVER = GeminiDriver()
