"""pi (npm `@mariozechner/pi-coding-agent`), driven offline against the scripted server
(ops/scripted/chat.py, Chat Completions).

~/.pi/agent/models.json names a provider of api `openai-completions` whose `baseUrl` is the scripted
server, with one model of `contextWindow` 50,000. One process per prompt: `pi -p PROMPT`, then
`pi -c -p PROMPT` (the project's last session goes on). The plan (base.standard_plan): prompt 1
(ls through bash, read), prompt 2 (edit, bash; its answer reports COMPACT_AT input tokens, over
pi's threshold of contextWindow - reserveTokens = 50,000 - 16,384, so pi compacts at the end of that
prompt), prompt 3 (read; pi has no sub-agent tool), then a manual compaction and prompt 4 after it.
`-p` sends `/compact` to the model as a prompt: the manual compaction goes through RPC mode
(`pi --mode rpc -c`: a `{"type": "compact"}` command, then prompt 4 as a `prompt` command).

The folder a user imports: ~/.pi/agent/sessions/--<cwd>--/ (the session's <ts>_<id>.jsonl), copied
out of the temp HOME.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

from contextviewer.importers.pi.entry import ENTRY as PI
from ops.drivers.base import (
    MAIN,
    PinnedDriver,
    with_prompt_after_the_fold,
    Allowance,
    Run,
    Step,
    Toolset,
    base_env,
    end_daemons,
    kill_group,
    run_step,
    standard_plan,
    workspace,
)
from ops.drivers.pins import PINS, Pin
from ops.scripted.plan import Plan, Tool
from ops.scripted.server import ScriptedServer

LABEL = PI.name  # the format's name (contextviewer/importers/pi): Conversation.agent
PACKAGE = "@mariozechner/pi-coding-agent"
PROVIDER, MODEL = "scripted", "scripted-model"
CONTEXT_WINDOW = 50_000
# Reported on prompt 2's answer: over pi's auto-compaction threshold, contextWindow - reserveTokens
# (16,384 by default) = 33,616, and under the window.
COMPACT_AT = 40_000
TIMEOUT = 90.0
# What a pi compaction request says (its summarization prompt), beside the plan's own.
COMPACTION_MARKERS = ("<conversation>", "context checkpoint summary", "create a structured context checkpoint")


def toolset() -> Toolset:
    return Toolset(
        list_files=lambda project: Tool("bash", {"command": "ls"}),
        read=lambda path: Tool("read", {"path": str(path)}),
        edit=lambda path, old, new: Tool("edit", {"path": str(path), "edits": [{"oldText": old, "newText": new}]}),
        shell=lambda cmd, cwd: Tool("bash", {"command": cmd}),
    )


def models_json(base_url: str) -> dict:
    return {
        "providers": {
            PROVIDER: {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": "sk-scripted",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": MODEL, "name": "Scripted", "contextWindow": CONTEXT_WINDOW, "maxTokens": 4096}],
            }
        }
    }


@dataclass
class PiDriver(PinnedDriver):
    label: ClassVar[str] = LABEL

    def plan(self, project: Path) -> Plan:
        plan = standard_plan(toolset(), project, compact_at=COMPACT_AT)
        with_prompt_after_the_fold(plan, *COMPACTION_MARKERS)
        return plan

    def prompts(self, plan: Plan) -> list[str]:
        """What the user types, one `pi -p` each: the first three main prompts (the rest goes through RPC)."""
        return [p.text for p in plan.prompts if p.agent == MAIN][:3]

    def rpc_commands(self, plan: Plan) -> list[dict]:
        """The manual compaction, then the prompts after it."""
        rest = [p.text for p in plan.prompts if p.agent == MAIN][3:]
        return [
            {"id": "compact", "type": "compact"},
            *({"id": f"p{i}", "type": "prompt", "message": t} for i, t in enumerate(rest)),
        ]

    def run(self, pin: Pin | None = None) -> Run:
        """One run on the pinned install, or on `pin` (another install of the same package)."""
        pin = self.installed(pin)
        with workspace(self.key) as (home, project):
            agent_dir = home / ".pi" / "agent"
            agent_dir.mkdir(parents=True, exist_ok=True)
            plan = self.plan(project)
            steps = []
            with ScriptedServer(plan) as srv:
                (agent_dir / "models.json").write_text(json.dumps(models_json(f"{srv.url}/v1")))
                env = base_env(home, PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1")
                base = [str(pin.exe), "--provider", PROVIDER, "--model", MODEL]
                for i, text in enumerate(self.prompts(plan)):
                    steps.append(run_step([*base, *(["-c"] if i else []), "-p", text], project, env, timeout=TIMEOUT))
                    if steps[-1].returncode != 0:
                        break
                else:
                    steps.append(rpc_step([*base, "--mode", "rpc", "-c"], project, env, self.rpc_commands(plan)))
                end_daemons(home)
                folder = Path(tempfile.mkdtemp(prefix=f"cv-run-{self.key}-"))
                sessions = agent_dir / "sessions"
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
                # pi's compaction entry does not say what triggered it (threshold, overflow or
                # /compact): the folds' trigger is empty, not guessed.
                triggers={MAIN: ["", ""]},
                allowances=allowances(),
                notes=["pi logs no compaction trigger: the auto and the manual fold both have an empty trigger"],
            )


def rpc_step(cmd: list[str], cwd: Path, env: dict[str, str], commands: list[dict], timeout: float = TIMEOUT) -> Step:
    """Run `pi --mode rpc`, writing each command after the previous one is done: a compact when its
    response comes, a prompt when its `agent_end` event comes; then close stdin and wait."""
    t0 = time.monotonic()
    p = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ, "out")
    sel.register(p.stderr, selectors.EVENT_READ, "err")
    out: list[str] = []
    err: list[bytes] = []
    pending, waiting, buf, failed = list(commands), None, b"", None

    def send_next() -> None:
        nonlocal waiting
        waiting = pending.pop(0) if pending else None
        if waiting is None:
            p.stdin.close()
            return
        p.stdin.write((json.dumps(waiting) + "\n").encode())
        p.stdin.flush()

    def done(obj: dict) -> bool:
        if obj.get("type") == "response" and obj.get("id") == waiting["id"]:
            if not obj.get("success"):
                return True
            return waiting["type"] == "compact"
        return waiting["type"] == "prompt" and obj.get("type") == "agent_end"

    send_next()
    while sel.get_map():
        if time.monotonic() - t0 > timeout:
            kill_group(p.pid)
            failed = f"[timed out after {timeout:.0f} s]"
            break
        for key, _ in sel.select(timeout=0.5):
            chunk = os.read(key.fileobj.fileno(), 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                continue
            if key.data == "err":
                err.append(chunk)
                continue
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode("utf-8", "replace")
                out.append(text)
                try:
                    obj = json.loads(text)
                except ValueError:
                    continue
                if waiting is not None and isinstance(obj, dict) and done(obj):
                    if obj.get("type") == "response" and not obj.get("success"):
                        failed = f"{waiting['type']} failed: {obj.get('error')}"
                    send_next()
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        kill_group(p.pid)
        rc = None
    if failed and rc == 0:
        rc = 1
    stderr = b"".join(err).decode("utf-8", "replace") + (f"\n{failed}" if failed else "")
    return Step(cmd, rc, "\n".join(out), stderr, time.monotonic() - t0)


def allowances() -> list[Allowance]:
    """Request items a pi log cannot hold."""
    return []


DRIVER = PiDriver(next(p for p in PINS.values() if p.package == PACKAGE))
