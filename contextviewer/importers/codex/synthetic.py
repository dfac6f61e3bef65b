"""Synthetic Codex CLI rollouts, for tests and the import benchmark.

Pure (no Django), deterministic for a seed, streaming (written line by line) and fast (text comes
from slices of the corpus of ``synthetic.py``). A rollout holds what a 0.104-era Codex writes:
``session_meta`` with the base instructions, developer and environment items, then turns of
``user_message`` + the user item + ``turn_context``; per model call a reasoning item (readable
summary + encrypted content), the assistant text (with its ``agent_message`` copy), one or two
``exec_command`` function calls, a ``token_count`` (written twice, as Codex does) and the outputs;
``task_complete`` at each turn's end; and a remote compaction (``compacted`` with a
``replacement_history`` ending in an encrypted ``compaction`` item, then ``context_compacted``)
whenever the context passes 90 % of the window, and at the latest when half of the target is
written.

Nothing here counts what it wrote for the tests: tests count the file itself.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

from contextviewer.importers.claude_code.synthetic import _snippet

MODEL = "gpt-5.3-codex"
WINDOW = 258_400
HARNESS_TOKENS = 9_000  # tool definitions: in every call, never in the rollout
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class _Rollout:
    def __init__(self, rng: random.Random, path: Path, session_id: str):
        self.rng = rng
        self.path = path
        self.fh = open(path, "wb", buffering=1 << 20)  # noqa: SIM115 - closed by close()
        self.session_id = session_id
        self.clock = datetime(2026, 2, 23, 12, 0, tzinfo=UTC).timestamp()
        self.bytes = 0
        self.context = 0  # tokens in the window (what the next call reads), estimated at 4 chars/token
        self.total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0,
                      "reasoning_output_tokens": 0, "total_tokens": 0}
        self.calls = 0
        self.prompts: list[str] = []
        self.compacted = False
        self.last_event: dict = {}
        self.compaction_item = "compaction"

    def close(self) -> None:
        self.fh.close()

    def line(self, kind: str, payload: dict, advance: float = 0.4) -> None:
        self.clock += advance * (0.5 + self.rng.random())
        ts = datetime.fromtimestamp(self.clock, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        data = (_dumps({"timestamp": ts, "type": kind, "payload": payload}) + "\n").encode("utf-8")
        self.fh.write(data)
        self.bytes += len(data)

    def item(self, payload: dict, chars: int = 0) -> None:
        self.line("response_item", payload)
        self.context += chars // 4

    def start(self, cwd: str) -> None:
        instructions = _snippet(self.rng, "prose", 12_000)
        self.line("session_meta", {"id": self.session_id, "timestamp": "2026-02-23T12:00:00.000Z", "cwd": cwd,
                                   "originator": "codex_cli_rs", "cli_version": "0.104.0", "source": "cli",
                                   "model_provider": "openai", "base_instructions": {"text": instructions},
                                   "git": {"commit_hash": "0" * 40, "branch": "main"}})
        self.context = HARNESS_TOKENS + len(instructions) // 4
        developer = _snippet(self.rng, "prose", 4_000)
        self.item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": developer}]}, len(developer))
        env = f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>bash</shell>\n</environment_context>"
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": env}]}, len(env))

    def usage(self, output: int) -> None:
        self.calls += 1
        cached = int(self.context * 0.9) // 128 * 128
        last = {"input_tokens": self.context, "cached_input_tokens": cached, "output_tokens": output,
                "reasoning_output_tokens": output // 3, "total_tokens": self.context + output}
        for name in self.total:
            self.total[name] += last[name]
        event = {"type": "token_count", "info": {"total_token_usage": dict(self.total), "last_token_usage": last,
                                                 "model_context_window": WINDOW},
                 "rate_limits": {"primary": {"used_percent": 3.0, "window_minutes": 300, "resets_at": 1771850000}}}
        self.line("event_msg", event)
        self.last_event = event
        self.context += output

    def call(self, rng: random.Random, last: bool) -> None:
        summary = _snippet(rng, "prose", rng.randint(40, 160))
        self.line("event_msg", {"type": "agent_reasoning", "text": summary})
        self.item({"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}], "content": None,
                   "encrypted_content": "gAAAAB" + "x" * rng.randint(800, 3000)})
        text = _snippet(rng, "prose", rng.randint(80, 600))
        self.line("event_msg", {"type": "agent_message", "message": text})
        self.item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}],
                   "phase": "final_answer" if last else "commentary"}, len(text))
        ids = []
        if not last:
            for _ in range(rng.choice((1, 1, 2))):
                cmd = rng.choice(("rg -n 'def ' src", "pytest -q tests/unit", "sed -n '1,200p' src/app/core.py", "git diff"))
                args = _dumps({"cmd": cmd, "workdir": "/srv/app", "yield_time_ms": 10000})
                call_id = f"call_{self.calls:05d}{len(ids)}{rng.randrange(1 << 40):010x}"
                ids.append(call_id)
                self.item({"type": "function_call", "name": "exec_command", "arguments": args, "call_id": call_id}, len(args))
        self.usage(rng.randint(60, 900))
        for call_id in ids:
            kind = rng.choice(("code", "json", "log", "files"))
            out = _snippet(rng, kind, rng.randint(300, 9_000))
            self.item({"type": "function_call_output", "call_id": call_id,
                       "output": f"Chunk ID: {call_id[-6:]}\nWall time: 0.2 seconds\nProcess exited with code 0\nOutput:\n{out}"},
                      len(out))
        self.line("turn_context", {"turn_id": f"turn-{self.calls}", "cwd": "/srv/app", "approval_policy": "never",
                                   "sandbox_policy": {"type": "danger-full-access"}, "model": MODEL, "effort": "medium",
                                   "summary": "auto"})
        self.line("event_msg", self.last_event)  # Codex writes the same total again

    def turn(self, rng: random.Random) -> None:
        prompt = _snippet(rng, "prose", rng.randint(40, 400))
        self.prompts.append(prompt)
        self.line("event_msg", {"type": "task_started", "turn_id": f"turn-{self.calls}", "model_context_window": WINDOW})
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}, len(prompt))
        self.line("event_msg", {"type": "user_message", "message": prompt, "images": []})
        self.line("turn_context", {"turn_id": f"turn-{self.calls}", "cwd": "/srv/app", "approval_policy": "never",
                                   "sandbox_policy": {"type": "danger-full-access"}, "model": MODEL, "effort": "medium",
                                   "summary": "auto"})
        steps = rng.randint(2, 8)
        for n in range(steps):
            self.call(rng, last=n == steps - 1)
        self.line("event_msg", {"type": "task_complete", "turn_id": f"turn-{self.calls}", "last_agent_message": "done"})

    def compact(self) -> None:
        kept = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": p}]} for p in self.prompts[-20:]]
        if self.compaction_item == "compaction_summary":
            # 0.6x: an undo snapshot rides along in the history (and as its own item before it).
            ghost = {"type": "ghost_snapshot", "ghost_commit": {
                "id": f"{self.rng.getrandbits(160):040x}", "parent": f"{self.rng.getrandbits(160):040x}",
                "preexisting_untracked_files": [], "preexisting_untracked_dirs": []}}
            self.line("response_item", ghost)
            kept.append(ghost)
        kept.append({"type": self.compaction_item, "encrypted_content": "gAAAAB" + "y" * 12_000})
        self.line("compacted", {"message": "", "replacement_history": kept})
        self.line("event_msg", {"type": "context_compacted"})
        self.context = HARNESS_TOKENS + sum(len(p) for p in self.prompts[-20:]) // 4 + 3_000
        self.compacted = True


def write_rollout(
    dir: str | Path,  # noqa: A002
    *,
    target_bytes: int = 1_000_000,
    seed: int = 0,
    compaction_item: str = "compaction",
) -> Path:
    """Write one synthetic rollout under ``dir/sessions/2026/02/23`` and return its path. Stops at
    the end of the first turn after the file reaches ``target_bytes`` (and the compaction happened).
    ``compaction_item="compaction_summary"``: the 0.6x layout, whose encrypted summary item had
    that name and whose history carries a ``ghost_snapshot`` (an undo snapshot, not context)."""
    rng = random.Random(seed)
    session_id = "019c8a00-0000-7000-8000-{:012x}".format(rng.randrange(1 << 48))
    folder = Path(dir) / "sessions" / "2026" / "02" / "23"
    folder.mkdir(parents=True, exist_ok=True)
    r = _Rollout(rng, folder / f"rollout-2026-02-23T12-00-00-{session_id}.jsonl", session_id)
    try:
        r.compaction_item = compaction_item
        r.start("/srv/app")
        while True:
            r.turn(rng)
            if r.context >= WINDOW * 0.9 or (not r.compacted and r.bytes >= target_bytes / 2):
                r.compact()
            if r.bytes >= target_bytes and r.compacted:
                break
    finally:
        r.close()
    return r.path
