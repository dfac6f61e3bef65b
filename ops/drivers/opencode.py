"""opencode and Kilo (an opencode fork), driven offline against the scripted server
(ops/scripted/anthropic.py).

Both read a config file in ~/.config/<agent>/ (`opencode.json`, `kilo.json`): provider `anthropic`
with `options.baseURL` = the scripted server, one model whose `limit.context` is small (50,000) so
the reported 150k input on prompt 2's answer overflows it and the CLI auto-compacts. opencode: one
process per prompt, `opencode run "PROMPT"`, then `opencode run --continue "PROMPT"`; Kilo: the same
prompts through one `kilo serve` (`kilo run --attach URL [--continue]`), its start being slow. The
plan (base.standard_plan): prompt 1 (read the folder: glob and grep need ripgrep, which opencode
would download; then read), prompt 2 (edit, bash; its answer reports the big input), prompt 3 (a
sub-agent through the `task` tool: a child session of its own, prompt cv-sub-1 with a read).
opencode folds right after prompt 2's answer and goes on by itself (a synthetic "Continue if you
have next steps..." prompt: a main call of the plan); Kilo folds before prompt 3 and replays it
after the summary. A title call (no tools) is a side call; the compaction call is its own
assistant message (`summary: true`) in the store: the fold's cost, not a main call.

The folder a user imports: ~/.local/share/<agent>/ (the database `<agent>.db` with its -wal and
-shm, the CLI's own logs, Kilo's storage/), copied whole out of the temp HOME.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ops.drivers.base import (
    PinnedDriver,
    MAIN,
    SUB,
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
from ops.scripted.plan import Plan, Prompt, Tool
from ops.scripted.server import ScriptedServer

MODEL = "claude-sonnet-4-5"
CONTEXT = 50_000  # the model's limit.context: opencode folds when a call's input passes it less the reserve
OUTPUT = 8_000
COMPACT_AT = 150_000  # reported on prompt 2's answer
TIMEOUT = 90.0
SERVE_WAIT = 60.0
# What an opencode compaction request says (its summarization prompt), beside the plan's own.
COMPACTION_MARKERS = ("create a new anchored summary from the conversation history",)
# After an automatic fold opencode goes on by itself: a synthetic user message (its part's metadata
# `compaction_continue`) and a main call with tools, answered as a prompt of the plan.
CONTINUE = "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."
CONTINUE_MARKER = "Continue if you have next steps"


def toolset() -> Toolset:
    return Toolset(
        # `read` lists a folder (glob and grep need ripgrep, which opencode downloads: not offline)
        list_files=lambda project: Tool("read", {"filePath": str(project)}),
        read=lambda path: Tool("read", {"filePath": str(path)}),
        edit=lambda path, old, new: Tool("edit", {"filePath": str(path), "oldString": old, "newString": new}),
        shell=lambda cmd, cwd: Tool("bash", {"command": cmd, "description": "Run the command"}),
        subagent=lambda text: Tool("task", {"description": "Read app.py", "prompt": text, "subagent_type": "general"}),
    )


def config(url: str) -> dict:
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "anthropic": {
                "options": {"baseURL": f"{url}/v1", "apiKey": "sk-ant-scripted"},
                "models": {MODEL: {"name": MODEL, "limit": {"context": CONTEXT, "output": OUTPUT}}},
            }
        },
        "model": f"anthropic/{MODEL}",
        "small_model": f"anthropic/{MODEL}",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow"},
    }


@dataclass
class OpencodeDriver(PinnedDriver):
    app: str = ""  # the CLI's own name: its config folder, data folder and database are named after it
    label: str = ""  # the agent contextviewer must name (a field here: opencode and Kilo share the driver)
    # Run the prompts through one `<cli> serve` (`run --attach`): a Kilo start takes 10 to 25 s on a
    # loaded machine, and this pays it once instead of once per prompt. The store is the same.
    attach: bool = False

    def quiet_env(self) -> dict[str, str]:
        """Switches off what reaches out (updates, the models.dev list, sharing, plugin installs, LSP
        downloads; Kilo's codebase indexing, session upload and presence): nothing of it is offline,
        and it slows each start."""
        switches = ["AUTOUPDATE", "MODELS_FETCH", "SHARE", "LSP_DOWNLOAD", "DEFAULT_PLUGINS"]
        if self.app == "kilo":
            switches += ["CODEBASE_INDEXING", "SESSION_INGEST", "PRESENCE"]
        return {f"{self.app.upper()}_DISABLE_{name}": "1" for name in switches}

    def plan(self, project: Path) -> Plan:
        plan = standard_plan(toolset(), project, compact_at=COMPACT_AT)
        plan.compaction_markers = (*plan.compaction_markers, *COMPACTION_MARKERS)
        plan.prompts.append(Prompt(CONTINUE, CONTINUE_MARKER, [], "Nothing is left to do."))
        return plan

    def run(self, pin: Pin | None = None) -> Run:
        """Run the plan with the pinned CLI, or `pin` (another install of the same package: today's release)."""
        pin = self.installed(pin)
        with workspace(self.key) as (home, project):
            plan = self.plan(project)
            with ScriptedServer(plan) as srv:
                conf = home / ".config" / self.app
                conf.mkdir(parents=True, exist_ok=True)
                (conf / f"{self.app}.json").write_text(json.dumps(config(srv.url), indent=1))
                env = base_env(home, **self.quiet_env())
                steps: list[Step] = []
                notes: list[str] = []
                server = self.serve(pin, project, env, notes) if self.attach else None
                try:
                    prompts = [p.text for p in plan.prompts if p.agent == MAIN and p.marker != CONTINUE_MARKER]
                    for i, text in enumerate(prompts):
                        where = ["--attach", server[1], "--dir", str(project)] if server else []
                        cmd = [str(pin.exe), "run", *where, *(["--continue"] if i else []), text]
                        step = run_step(cmd, project, env, timeout=TIMEOUT)
                        steps.append(step)
                        if step.returncode != 0:
                            break
                finally:
                    if server:
                        kill_group(server[0].pid)
                        server[0].wait(timeout=10)
                    end_daemons(home)
                src = home / ".local" / "share" / self.app
                folder = Path(tempfile.mkdtemp(prefix=f"cv-run-{self.key}-"))
                if src.is_dir():  # the whole data folder, as a user imports it (its logs are skipped)
                    shutil.copytree(src, folder, dirs_exist_ok=True, symlinks=True)
            return Run(
                key=self.key,
                version=pin.version,
                label=self.label,
                folder=folder,
                server=srv,
                plan=plan,
                steps=steps,
                parents={SUB: MAIN},
                triggers={MAIN: ["auto"]},
                allowances=allowances(self.app),
                notes=notes,
            )

    def serve(self, pin: Pin, project: Path, env: dict[str, str], notes: list[str]) -> tuple[subprocess.Popen, str] | None:
        """`<cli> serve` on a free port of 127.0.0.1 (its own process group), once it listens: (process,
        url); None (and a note) when it does not start, and the prompts run without it."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen([str(pin.exe), "serve", "--hostname", "127.0.0.1", "--port", str(port)], cwd=project,
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.monotonic() + SERVE_WAIT
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return proc, f"http://127.0.0.1:{port}"
            except OSError:
                time.sleep(0.2)
        kill_group(proc.pid)
        notes.append(f"`{self.app} serve` did not listen within {SERVE_WAIT:.0f} s: each prompt ran in a process of its own")
        return None


def allowances(app: str) -> list[Allowance]:
    """Request items an opencode (or Kilo) store cannot hold."""
    kilo = [
        Allowance(
            "environment-details",
            "Kilo appends an <environment_details> text (the message time, the working directory) to each user "
            "message it sends; the store keeps the prompt's parts, not that text",
            ("<environment_details>",),
        ),
    ]
    return (kilo if app == "kilo" else []) + [
        Allowance(
            "compaction-question",
            "after a fold opencode sends its compaction message (a user message holding only a `compaction` part) "
            "as the text 'What did we do so far?' before the summary; the store keeps the part, not the text, and "
            "the window shows the fold's summary first",
            ("What did we do so far?",),
        ),
    ]


DRIVER = OpencodeDriver(PINS["opencode"], "opencode", "opencode")
KILO_DRIVER = OpencodeDriver(PINS["kilo"], "kilo", "kilo", attach=True)
DRIVERS = [DRIVER, KILO_DRIVER]
