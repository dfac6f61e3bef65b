"""Codex CLI (pin `codex`), driven offline against the scripted server (ops/scripted/responses.py).

How: a temporary HOME whose `~/.codex/config.toml` points `openai_base_url` at the server and sets
`model_auto_compact_token_limit = 100000`; `codex exec --dangerously-bypass-approvals-and-sandbox
--skip-git-repo-check PROMPT` for the first prompt, then `codex exec ... resume --last PROMPT` for
each next one (same session). Codex first tries a WebSocket (refused with 426), then POSTs
/v1/responses.

The model is `gpt-5.5`, the one model of 0.171's catalog that is not code-mode only (the others
offer a single JavaScript `exec` tool): it offers `exec_command` (list, read, run), `apply_patch`
(a freeform, "custom" tool: the edit) and `tool_search`, through which the sub-agent tools
(`multi_agent_v1`: `spawn_agent`, `wait_agent`, ...) are found. So the sub-agent prompt makes three
calls: tool_search, spawn_agent, wait_agent (for the agent id spawn_agent answered). The sub-agent
writes its own rollout (session_meta.parent_thread_id = the parent's id).

Prompt 2's answer reports 150,000 input tokens, over the 100,000 limit: before prompt 3 Codex
compacts remotely (v2: a /v1/responses call whose input ends with a `compaction_trigger` item,
answered with one `compaction` item). `codex exec` has no non-interactive /compact, so there is no
manual compaction.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ops.drivers.base import (
    MAIN,
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
from ops.drivers.pins import PINS, Pin
from ops.scripted.plan import Plan, Tool
from ops.scripted.responses import SPAWNED
from ops.scripted.server import ScriptedServer

PIN = PINS["codex"]
MODEL = "gpt-5.5"
COMPACT_LIMIT = 100_000
TIMEOUT = 120.0


def toolset() -> Toolset:
    return Toolset(
        list_files=lambda project: Tool("exec_command", {"cmd": "ls -1", "workdir": str(project)}),
        read=lambda path: Tool("exec_command", {"cmd": f"cat {path.name}", "workdir": str(path.parent)}),
        edit=lambda path, old, new: Tool("apply_patch", {"input": (
            f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n")}),
        shell=lambda cmd, project: Tool("exec_command", {"cmd": cmd, "workdir": str(project)}),
        subagent=lambda text: Tool("spawn_agent", {"message": text}),
    )


def plan(project: Path) -> Plan:
    """The standard plan; the sub-agent prompt finds the agent tools first (tool_search) and waits
    for the agent it spawned (wait_agent) before it answers."""
    p = standard_plan(toolset(), project, compact_at=int(COMPACT_LIMIT * 1.5))
    for prompt in p.prompts:
        if prompt.agent == MAIN and any(t.name == "spawn_agent" for t in prompt.tools):
            prompt.tools = [Tool("tool_search", {"query": "spawn agent", "limit": 8}), *prompt.tools,
                            Tool("wait_agent", {"targets": [SPAWNED], "timeout_ms": 30000})]
    return p


def config(url: str) -> str:
    return (f'model = "{MODEL}"\nopenai_base_url = "{url}/v1"\n'
            f"model_auto_compact_token_limit = {COMPACT_LIMIT}\n"
            "check_for_update_on_startup = false\n[analytics]\nenabled = false\n")


ALLOWANCES = [
    Allowance(
        "encrypted-summary",
        "Codex compacts remotely (compaction v2): the summary is an opaque `encrypted_content` the "
        "rollout stores as it came (`compacted.replacement_history`), so the window shows a summary "
        "item that says it is encrypted: its text cannot be shown.",
    ),
]


class CodexDriver:
    key = PIN.key
    label = "codex"  # the format's name (contextviewer/importers/codex): Conversation.agent

    def run(self, pin: Pin | None = None) -> Run:
        """Run the pinned CLI, or `pin` (another install of it: `agents check --latest`)."""
        pin = pin or PIN
        missing = pin.missing()
        if missing:
            raise RuntimeError(missing)
        out = Path(tempfile.mkdtemp(prefix="cv-codex-run-"))
        with workspace("codex") as (home, project):
            the_plan = plan(project)
            with ScriptedServer(the_plan) as srv:
                (home / ".codex").mkdir()
                (home / ".codex" / "config.toml").write_text(config(srv.url))
                (home / "tmp").mkdir()
                env = base_env(home, OPENAI_API_KEY="x", CODEX_HOME=str(home / ".codex"), TMPDIR=str(home / "tmp"))
                exe = [str(pin.exe), "exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"]
                run = Run(pin.key, pin.installed_version() or pin.version, self.label, out, srv, the_plan,
                          parents={SUB: MAIN}, triggers={MAIN: ["auto"]}, allowances=list(ALLOWANCES))
                mains = [p for p in the_plan.prompts if p.agent == MAIN]
                try:
                    for i, prompt in enumerate(mains):
                        cmd = exe + ([prompt.text] if i == 0 else ["resume", "--last", prompt.text])
                        step = run_step(cmd, project, env, timeout=TIMEOUT)
                        run.steps.append(step)
                        if step.returncode != 0:
                            break
                finally:
                    ended = end_daemons(home)
                    if ended:
                        run.notes.append(f"ended {len(ended)} process(es) left running: {ended}")
                    sessions = home / ".codex" / "sessions"
                    if sessions.is_dir():  # as `~/.codex/sessions`: YYYY/MM/DD/rollout-*.jsonl
                        shutil.copytree(sessions, out / "sessions")
        return run


DRIVER = CodexDriver()
