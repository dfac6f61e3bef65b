"""Factory Droid (npm `@factory/cli`, bin `droid`), driven offline against the scripted server
(ops/scripted/chat.py, Chat Completions).

No Factory login: ~/.factory/settings.json names a custom model (provider
`generic-chat-completion-api`, `baseUrl` the scripted server, `maxContextLimit` 50,000) and a
`compactionTokenLimit` of 40,000. `droid exec -s <id>` (resume) fetches the session from Factory's
API, so one process runs every prompt: `droid exec --auto high --input-format stream-json
--output-format stream-json`, one `{"role": "user", "content": ...}` line per prompt on stdin (it
queues them); stdin is closed once the session file holds an `agent_turn_outcome` per prompt. The
plan (base.standard_plan) without a sub-agent: Droid's `Task` runs sub-agents through Factory's
daemon, which answers "Could not reach the daemon" here. Prompt 2's last answer reports COMPACT_AT
input tokens, over the compaction limit: Droid compacts before prompt 3 (its summarization request
says "Please summarize the following conversation").

The folder a user imports: ~/.factory/sessions/<cwd, / as ->/ (the session's <id>.jsonl and
<id>.settings.json), copied out of the temp HOME.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

from contextviewer.importers.droid.entry import ENTRY as DROID
from ops.drivers.base import Allowance, MAIN, PinnedDriver, Run, Step, Toolset, base_env, end_daemons, kill_group, standard_plan, workspace
from ops.drivers.pins import PINS, Pin
from ops.scripted.plan import Plan, Tool
from ops.scripted.server import ScriptedServer

LABEL = DROID.name
PACKAGE = "@factory/cli"
MODEL = "scripted-model"
CONTEXT_WINDOW = 50_000
COMPACTION_LIMIT = 40_000
COMPACT_AT = 45_000  # over the compaction limit, under the window
TIMEOUT = 150.0
COMPACTION_MARKERS = ("please summarize the following conversation",)


def toolset() -> Toolset:
    return Toolset(
        list_files=lambda project: Tool("LS", {"directory_path": str(project)}),
        read=lambda path: Tool("Read", {"file_path": str(path)}),
        edit=lambda path, old, new: Tool("Edit", {"file_path": str(path), "old_str": old, "new_str": new}),
        # Droid rejects an Execute call without its risk fields.
        shell=lambda cmd, cwd: Tool("Execute", {"command": cmd, "riskLevelReason": "It reads a file.", "riskLevel": "low"}),
    )


def settings(base_url: str) -> dict:
    return {
        "customModels": [{"model": MODEL, "displayName": "Scripted", "baseUrl": base_url, "apiKey": "sk-scripted",
                          "provider": "generic-chat-completion-api", "maxOutputTokens": 4096,
                          "maxContextLimit": CONTEXT_WINDOW}],
        "compactionTokenLimit": COMPACTION_LIMIT,
    }


def turns_done(sessions: Path) -> int:
    n = 0
    for f in sessions.glob("*/*.jsonl"):
        try:
            n += f.read_text(encoding="utf-8", errors="replace").count('"agent_turn_outcome"')
        except OSError:
            pass
    return n


@dataclass
class DroidDriver(PinnedDriver):
    label: ClassVar[str] = LABEL

    def plan(self, project: Path) -> Plan:
        plan = standard_plan(toolset(), project, compact_at=COMPACT_AT)
        plan.compaction_markers = (*plan.compaction_markers, *COMPACTION_MARKERS)
        return plan

    def run(self, pin: Pin | None = None) -> Run:
        pin = self.installed(pin)
        with workspace(self.key) as (home, project):
            factory = home / ".factory"
            factory.mkdir(parents=True, exist_ok=True)
            plan = self.plan(project)
            prompts = [p.text for p in plan.prompts if p.agent == MAIN]
            with ScriptedServer(plan) as srv:
                (factory / "settings.json").write_text(json.dumps(settings(f"{srv.url}/v1")))
                env = base_env(home)
                cmd = [str(pin.exe), "exec", "--auto", "high", "-m", f"custom:{MODEL}",
                       "--input-format", "stream-json", "--output-format", "stream-json"]
                steps = [stream_step(cmd, project, env, prompts, factory / "sessions")]
                end_daemons(home)
                folder = Path(tempfile.mkdtemp(prefix=f"cv-run-{self.key}-"))
                sessions = factory / "sessions"
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
                triggers={MAIN: [""]},  # Droid logs no compaction trigger
                allowances=allowances(),
                unrecorded=UNRECORDED,
                after_fold_ignores=re_rendered,
                notes=["Droid logs no usage per call (only the last call's, in <id>.settings.json): "
                       "a fold's tokens before and after cannot be read from its files",
                       "no sub-agent: Droid's Task tool needs Factory's daemon"],
            )


def stream_step(cmd: list[str], cwd: Path, env: dict[str, str], prompts: list[str], sessions: Path,
                timeout: float = TIMEOUT) -> Step:
    """Write every prompt as a stream-json user line (Droid queues them), wait until the session file
    holds one turn outcome per prompt, then close stdin and wait for the process to end."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:  # a pipe left unread could fill
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=out, stderr=err, text=True,
                             start_new_session=True)
        for text in prompts:
            p.stdin.write(json.dumps({"role": "user", "content": text}) + "\n")
        p.stdin.flush()
        failed = ""
        while turns_done(sessions) < len(prompts) and p.poll() is None:
            if time.monotonic() - t0 > timeout:
                failed = f"\n[timed out after {timeout:.0f} s]"
                break
            time.sleep(0.3)
        p.stdin.close()
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill_group(p.pid)
            rc, failed = None, failed or "\n[did not end after its input closed]"
        if failed and rc == 0:
            rc = 1
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    return Step(cmd, rc, stdout, stderr + failed, time.monotonic() - t0)


def allowances() -> list[Allowance]:
    return []


# What Droid's files cannot hold: no usage per call (only the last call's, in <id>.settings.json), so
# a fold's tokens before and after; and after a fold it re-renders its reminders (the
# <system-reminder> texts: tools, skills, sub-agents, connectors) into the next requests in an order
# and place its file does not record. The reminder that holds the user's system info stays compared.
UNRECORDED = frozenset({"tokens_before", "tokens_after"})
REMINDER = "<system-reminder>"


def re_rendered(text: str) -> bool:
    return text.lstrip().startswith(REMINDER) and "User system info" not in text


DRIVER = DroidDriver(next(p for p in PINS.values() if p.package == PACKAGE))
