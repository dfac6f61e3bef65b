"""Hermes Agent (NousResearch, PyPI `hermes-agent`), driven offline against the scripted server
(ops/scripted/chat.py, Chat Completions).

`hermes --provider openai-api -m scripted --yolo -z PROMPT` with `OPENAI_BASE_URL` pointing at the
scripted server: one process, one prompt (`-z` has no resume; `hermes chat -q --resume` has, but a
later process does not know the last call's input, so it never folds, and its `delegate_task` runs
in the background, after the process ended). So the plan is one prompt that does what the
standard plan's three do: list (terminal), read (read_file), edit (patch), run a command (terminal;
its answer reports COMPACT_AT input tokens, over Hermes's threshold: half of the 256,000 tokens it
assumes for a model it does not know, so it compacts before the next call), then a sub-agent
(delegate_task: in a `-z` run it runs synchronously, as a child session), then the answer.

0.19.0 compacts in place (its config's `compression.in_place`, true by default); ROTATING runs it with
`compression: {in_place: false}` in ~/.hermes/config.yaml, its legacy way: the session ends
(`end_reason = 'compression'`) and a continuation session holds the compacted list (the sub-agent
then is the continuation's child). The registry runs DRIVER; the conformance test runs both.

The folder a user imports: ~/.hermes (its state.db), copied out of the temp HOME.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from contextviewer.importers.hermes.entry import ENTRY as HERMES
from ops.drivers.base import MAIN, MARKERS, SUB, Allowance, Run, base_env, end_daemons, run_step, workspace
from ops.drivers.pins import PINS, Pin
from ops.scripted.plan import Plan, Prompt, Tool
from ops.scripted.server import ScriptedServer

LABEL = HERMES.name  # the format's name (contextviewer/importers/hermes): Conversation.agent
MODEL = "scripted"
COMPACT_AT = 200_000
TIMEOUT = 180.0
# What Hermes's summarizer request says (agent/context_compressor.py, its preamble).
COMPACTION_MARKERS = ("summarization agent creating a context checkpoint",)
ROTATED = "compression.in_place: false"  # a Run's note: the run compacted by rotating its session


def plan(project: Path) -> Plan:
    sub = f"{MARKERS[3]}: read app.py and list the function names it defines."
    main = Prompt(
        f"{MARKERS[0]}: list the files, read README.md, change 'status: draft' to 'status: final' in notes.txt, "
        "run `cat notes.txt`, then ask a sub-agent which functions app.py defines.",
        MARKERS[0],
        [Tool("terminal", {"command": "ls"}),
         Tool("read_file", {"path": str(project / "README.md")}),
         Tool("patch", {"mode": "replace", "path": str(project / "notes.txt"), "old_string": "status: draft",
                        "new_string": "status: final"}),
         Tool("terminal", {"command": "cat notes.txt"}),
         Tool("delegate_task", {"goal": sub})],
        "notes.txt reads 'status: final'; the sub-agent found greet and farewell.",
        input_tokens={3: COMPACT_AT},
    )
    reader = Prompt(sub, MARKERS[3], [Tool("read_file", {"path": str(project / "app.py")})],
                    "app.py defines greet and farewell.", agent=SUB)
    out = Plan([main, reader])
    out.compaction_markers = (*out.compaction_markers, *COMPACTION_MARKERS)
    return out


@dataclass
class HermesDriver:
    pin: Pin
    in_place: bool = True  # False: compress by rotating the session (config compression.in_place: false)

    @property
    def key(self) -> str:
        return self.pin.key

    @property
    def label(self) -> str:
        return LABEL

    def run(self, pin: Pin | None = None) -> Run:
        """One run on the pinned install, or on `pin` (another install of the same package)."""
        pin = pin or self.pin
        missing = pin.missing()
        if missing:
            raise RuntimeError(missing)
        with workspace(self.key) as (home, project):
            the_plan = plan(project)
            if not self.in_place:
                (home / ".hermes").mkdir(parents=True, exist_ok=True)
                (home / ".hermes" / "config.yaml").write_text("compression:\n  in_place: false\n")
            with ScriptedServer(the_plan) as srv:
                env = base_env(home, OPENAI_BASE_URL=f"{srv.url}/v1", OPENAI_API_KEY="sk-scripted")
                cmd = [str(pin.exe), "--provider", "openai-api", "-m", MODEL, "--yolo", "-z", the_plan.prompts[0].text]
                steps = [run_step(cmd, project, env, timeout=TIMEOUT)]
                end_daemons(home)
                folder = Path(tempfile.mkdtemp(prefix=f"cv-run-{self.key}-"))
                store = home / ".hermes"
                for f in store.glob("state.db*"):
                    shutil.copy2(f, folder / f.name)
            return Run(
                key=self.key,
                version=pin.installed_version() or pin.version,
                label=LABEL,
                folder=folder,
                server=srv,
                plan=the_plan,
                steps=steps,
                parents={SUB: MAIN},
                triggers={MAIN: [""], SUB: []},  # Hermes logs no trigger
                allowances=allowances(),
                unrecorded=UNRECORDED,
                notes=[UNRECORDED_NOTE] + ([] if self.in_place else [ROTATED]),
            )


def allowances() -> list[Allowance]:
    """Request items a Hermes store cannot hold: none (its system prompt is not a message)."""
    return []


# Its store keeps no usage per call: a fold's tokens before and after cannot be read from it.
UNRECORDED = frozenset({"tokens_before", "tokens_after"})
UNRECORDED_NOTE = "Hermes's store keeps no usage per call: a fold's tokens before and after cannot be read from it"


DRIVER = HermesDriver(PINS["hermes"])
ROTATING = HermesDriver(PINS["hermes"], in_place=False)
