"""The real Claude Code and Codex CLIs, run offline as oracles of the policy lab's auto-compaction
thresholds (`manage.py agent_thresholds`, tests/agents/).

Neither client can reach a provider here: each runs in a throw-away HOME against a fake provider on
127.0.0.1 that records every request body and answers a minimal streamed reply (ops/agent_servers.py). A resumed session
(a prefix of a real session with the last usage rewritten) is fed to the client with a new prompt;
whether the client compacts before answering is observed from outside (a summarization request
before the real one; a compact_boundary / compacted line written to the session file).

Installed by `bin/setup --agents` into var/agents (pinned versions below).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ops.agent_servers import (
    PROMPT,
    AnthropicServer,
    OpenAIServer,
    OpenAIToolCallServer,
    Request,
    anthropic_is_compaction,
    openai_is_compaction,
    recording,
)
from ops.drivers.pins import PINS

CLAUDE_PIN = PINS["claude-code-2.1.197"]
CODEX_PIN = PINS["codex"]
CLAUDE_CODE_VERSION = CLAUDE_PIN.version
CODEX_VERSION = CODEX_PIN.version
TIMEOUT = 60.0
# The formats of these clients' sessions (an Outcome's `agent`).
CLAUDE_CODE = "claude-code"
CODEX = "codex"


def claude_bin(folder: Path | None = None) -> Path:
    """The pinned client, or the one installed in `folder` (`npm install @anthropic-ai/claude-code@X`
    into var/agents/<key>: the other versions `agent_thresholds --claude` measures)."""
    return CLAUDE_PIN.exe if folder is None else folder / "node_modules" / ".bin" / CLAUDE_PIN.bin


def claude_version(folder: Path | None = None) -> str:
    if folder is None:
        return CLAUDE_PIN.installed_version() or "?"
    try:
        return json.loads((folder / "node_modules" / CLAUDE_PIN.package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "?"


def codex_bin(folder: Path | None = None) -> Path:
    """The pinned client, or the one installed in `folder` (another version `agent_thresholds --codex` measures)."""
    return CODEX_PIN.exe if folder is None else folder / "node_modules" / ".bin" / CODEX_PIN.bin


def codex_version(folder: Path | None = None) -> str:
    if folder is None:
        return CODEX_PIN.installed_version() or "?"
    try:
        return json.loads((folder / "node_modules" / CODEX_PIN.package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "?"


def missing_clients() -> str | None:
    """None when both pinned clients are installed, else what is missing and how to get it."""
    problems = [p for p in (CLAUDE_PIN.missing(), CODEX_PIN.missing()) if p]
    return "; ".join(problems) if problems else None


# ---------------------------------------------------------------------------------------------
# Session prefixes


def read_jsonl(path: Path) -> list[dict]:
    out = []
    for line in Path(path).read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def claude_usage_total(usage: dict) -> int:
    """tokenCountWithEstimation's part from the last response: input + cache creation + cache read + output."""
    return sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"))


def claude_turn_ends(records: list[dict]) -> list[int]:
    """Indexes of main-thread assistant records that end a turn with text: the last record of their
    message id, text last, no tool use in the message, and a usage."""
    by_id: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        if r.get("type") == "assistant" and not r.get("isSidechain"):
            by_id.setdefault((r.get("message") or {}).get("id") or f"#{i}", []).append(i)
    out = []
    for idxs in by_id.values():
        blocks = [b for i in idxs for b in (records[i]["message"].get("content") or []) if isinstance(b, dict)]
        last = records[idxs[-1]]["message"]
        if blocks and blocks[-1].get("type") == "text" and not any(b.get("type") == "tool_use" for b in blocks) and last.get("usage"):
            out.append(idxs[-1])
    return sorted(out)


@dataclass
class ClaudePrefix:
    """A prefix of a real Claude Code session that ends with an assistant text turn end."""

    source: Path
    records: list[dict]
    session_id: str
    model: str

    @property
    def last(self) -> dict:
        return self.records[-1]

    @property
    def recorded_output(self) -> int:
        return int(self.last["message"]["usage"].get("output_tokens") or 0)

    def with_model(self, model: str) -> ClaudePrefix:
        """The prefix resumed with another model: `claude --model` and its assistant lines' model
        ("[1m]" asks for the 1M window; the lines keep the API's name without it)."""
        records = copy.deepcopy(self.records)
        for r in records:
            if isinstance(r.get("message"), dict) and r["message"].get("model"):
                r["message"]["model"] = model.replace("[1m]", "")
        return ClaudePrefix(self.source, records, self.session_id, model)

    def with_usage(self, total: int) -> list[dict]:
        """The records with the last response's usage (every split record of its message id) set so
        that input + cache creation + cache read + output = total (output kept as recorded)."""
        out = copy.deepcopy(self.records)
        mid = out[-1]["message"].get("id")
        output = min(self.recorded_output, total)
        for r in out:
            m = r.get("message") or {}
            if r.get("type") == "assistant" and (m is out[-1]["message"] or (mid and m.get("id") == mid)) and m.get("usage"):
                u = m["usage"]
                u.update({"input_tokens": total - output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                          "output_tokens": output})
                u.pop("cache_creation", None)
        return out


def claude_prefix(path: Path, nth_end: int = 0) -> ClaudePrefix:
    records = read_jsonl(path)
    ends = claude_turn_ends(records)
    if not ends:
        raise ValueError(f"{path.name}: no assistant turn end with text and usage")
    cut = ends[nth_end]
    recs = records[: cut + 1]
    last = recs[-1]
    return ClaudePrefix(Path(path), recs, last.get("sessionId") or str(uuid.uuid4()), last["message"].get("model") or "")


# ---------------------------------------------------------------------------------------------
# Running the clients


class AgentRunError(RuntimeError):
    pass


@dataclass
class Outcome:
    client: str
    version: str
    compacted: bool
    requests: list[Request]
    returncode: int | None
    stdout: str
    stderr: str
    session_lines: list[dict] = field(default_factory=list)
    detail: str = ""

    @property
    def ok(self) -> bool:
        """The client ran to its answer: exit 0 and at least one model request."""
        return self.returncode == 0 and bool(self.model_requests)

    def check(self) -> Outcome:
        if not self.ok:
            raise AgentRunError(f"{self.client} {self.version} did not run to its answer (exit {self.returncode}): "
                                f"{(self.stderr or self.stdout).strip()[-1500:]}")
        return self

    @property
    def model_requests(self) -> list[Request]:
        return [r for r in self.requests if r.method == "POST" and r.path.split("?")[0] in ("/v1/messages", "/v1/responses")]


def _run(cmd: list[str], cwd: Path, env: dict, timeout: float) -> tuple[int | None, str, str]:
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        def s(x):
            return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")

        return None, s(e.stdout), s(e.stderr) + f"\n[timed out after {timeout:.0f} s]"


def _base_env(home: Path) -> dict:
    keep = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TZ") if k in os.environ}
    return {**keep, "HOME": str(home), "USERPROFILE": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local" / "share"), "TMPDIR": str(home / "tmp"),
            "NO_COLOR": "1", "CI": "1"}


def _claude_env(home: Path, port: int) -> dict:
    return {**_base_env(home), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": "x",
            "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            # Attachments (skill listing, nested memory, ...) are computed under a 1 s deadline, so on a
            # busy machine some miss it and the count after the last usage varies run to run: off.
            "CLAUDE_CODE_DISABLE_ATTACHMENTS": "1"}


@dataclass
class _ClaudeRun:
    requests: list
    rc: int
    out: str
    err: str
    new_lines: list[dict]


def _resume_claude(home: Path, records: list[dict], session_id: str, model: str, timeout: float,
                   extra_env: dict | None = None, folder: Path | None = None) -> _ClaudeRun:
    """Write ``records`` (``cwd`` set to a project folder in ``home``) where Claude Code keeps the
    session, then run `claude --resume <session_id> -p PROMPT` there against a fake Anthropic server."""
    (home / "tmp").mkdir()
    cwd = home / "project"
    cwd.mkdir()
    (home / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True, "numStartups": 1}))
    # Claude Code names a project folder after its cwd with every character other than [a-zA-Z0-9] as "-".
    project_dir = home / ".claude" / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))
    project_dir.mkdir(parents=True)
    records = copy.deepcopy(records)
    for r in records:
        if "cwd" in r:
            r["cwd"] = str(cwd)
    session_file = project_dir / f"{session_id}.jsonl"
    session_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    with recording(AnthropicServer) as server:
        env = {**_claude_env(home, server.port), **(extra_env or {})}
        cmd = [str(claude_bin(folder)), "--resume", session_id, "-p", PROMPT]
        if model:
            cmd += ["--model", model]
        rc, out, err = _run(cmd, cwd, env, timeout)
        requests = list(server.requests)
    lines = read_jsonl(session_file) if session_file.exists() else []
    return _ClaudeRun(requests, rc, out, err, lines[len(records):])


def run_claude(prefix: ClaudePrefix, usage_total: int, timeout: float = TIMEOUT, keep_home: bool = False,
               folder: Path | None = None, extra_env: dict | None = None) -> Outcome:
    """Resume `prefix` (last usage = usage_total) in a temp HOME with `claude --resume <id> -p PROMPT`
    against a fake Anthropic server; compacted = a summarization request came before the real one.
    `folder`: another installed version (claude_bin); `extra_env`: e.g. CLAUDE_CODE_AUTO_COMPACT_WINDOW."""
    home = Path(tempfile.mkdtemp(prefix="cv-claude-home-"))
    try:
        run = _resume_claude(home, prefix.with_usage(usage_total), prefix.session_id, prefix.model, timeout, extra_env, folder)
        summarized = [r for r in run.requests if r.method == "POST" and anthropic_is_compaction(r.body)]
        boundary = any(r.get("type") == "system" and r.get("subtype") == "compact_boundary" for r in run.new_lines)
        detail = f"summarization requests: {len(summarized)}, compact_boundary written: {boundary}"
        if keep_home:
            detail += f", home: {home}"
        return Outcome(CLAUDE_CODE, claude_version(folder), bool(summarized) and boundary,
                       run.requests, run.rc, run.out, run.err, run.new_lines, detail)
    finally:
        if not keep_home:
            shutil.rmtree(home, ignore_errors=True)


def codex_turn_ends(records: list[dict]) -> list[int]:
    """Indexes of `task_complete` events that close a turn whose last model call left a usage
    (a token_count with last_token_usage) and whose last item is an assistant message."""
    out, last_usage, last_item = [], False, None
    for i, r in enumerate(records):
        p = r.get("payload") or {}
        if r.get("type") == "event_msg" and p.get("type") == "token_count":
            last_usage = bool((p.get("info") or {}).get("last_token_usage"))
        elif r.get("type") == "response_item":
            last_item = p
        elif r.get("type") == "event_msg" and p.get("type") == "task_complete":
            if last_usage and last_item and last_item.get("type") == "message" and last_item.get("role") == "assistant":
                out.append(i)
    return out


@dataclass
class CodexPrefix:
    """A prefix of a real Codex rollout that ends with a completed turn."""

    source: Path
    records: list[dict]
    session_id: str
    model: str

    @property
    def last_usage_index(self) -> int:
        return max(i for i, r in enumerate(self.records)
                   if (r.get("payload") or {}).get("type") == "token_count" and (r["payload"].get("info") or {}).get("last_token_usage"))

    @property
    def recorded_output(self) -> int:
        u = self.records[self.last_usage_index]["payload"]["info"]["last_token_usage"]
        return int(u.get("output_tokens") or 0)

    def with_model(self, model: str) -> CodexPrefix:
        """The rollout resumed with another model: the config's `model` and its turn contexts'."""
        records = copy.deepcopy(self.records)
        for r in records:
            if r.get("type") == "turn_context" and isinstance(r.get("payload"), dict):
                r["payload"]["model"] = model
        return CodexPrefix(self.source, records, self.session_id, model)

    def with_usage(self, total: int) -> list[dict]:
        """The records with the last response's total_tokens = total (output kept as recorded)."""
        out = copy.deepcopy(self.records)
        info = out[self.last_usage_index]["payload"]["info"]
        u = info["last_token_usage"]
        output = min(int(u.get("output_tokens") or 0), total)
        delta = total - int(u.get("total_tokens") or 0)
        u.update({"input_tokens": total - output, "cached_input_tokens": 0, "output_tokens": output, "total_tokens": total})
        tot = info.get("total_token_usage")
        if isinstance(tot, dict):
            tot["total_tokens"] = max(total, int(tot.get("total_tokens") or 0) + delta)
            tot["input_tokens"] = max(0, tot["total_tokens"] - int(tot.get("output_tokens") or 0))
        return out


def codex_prefix(path: Path, nth_end: int = -1) -> CodexPrefix:
    records = read_jsonl(path)
    ends = codex_turn_ends(records)
    if not ends:
        raise ValueError(f"{path.name}: no completed turn with a usage")
    recs = records[: ends[nth_end] + 1]
    meta = next(r["payload"] for r in recs if r.get("type") == "session_meta")
    model = next((r["payload"].get("model") for r in reversed(recs) if r.get("type") == "turn_context"), None) or "gpt-5"
    return CodexPrefix(Path(path), recs, meta.get("id") or meta.get("session_id"), model)


def run_codex(prefix: CodexPrefix, usage_total: int, timeout: float = TIMEOUT, keep_home: bool = False,
              folder: Path | None = None, mid_turn: int | None = None) -> Outcome:
    """Resume `prefix` (last usage = usage_total) in a temp HOME with
    `codex exec --skip-git-repo-check resume <id> PROMPT` against a fake OpenAI server; compacted =
    a compaction request (local summarization prompt or /responses/compact) or a `compacted` line.
    `mid_turn`: the client's first answer is a shell call reporting that total (OpenAIToolCallServer),
    so the decision observed is its mid-turn check before the follow-up request."""
    home = Path(tempfile.mkdtemp(prefix="cv-codex-home-"))
    try:
        (home / "tmp").mkdir()
        cwd = home / "project"
        cwd.mkdir()
        records = prefix.with_usage(usage_total)
        for r in records:
            p = r.get("payload") or {}
            if "cwd" in p:
                p["cwd"] = str(cwd)
            sp = p.get("sandbox_policy")
            if isinstance(sp, dict) and "writable_roots" in sp:
                sp["writable_roots"] = [str(cwd)]
        ts = records[0].get("timestamp", "2026-01-01T00:00:00Z")
        day = home / ".codex" / "sessions" / ts[:4] / ts[5:7] / ts[8:10]
        day.mkdir(parents=True)
        name = prefix.source.name.split("__")[-1]
        if not name.startswith("rollout-"):
            name = f"rollout-{ts[:19].replace(':', '-')}-{prefix.session_id}.jsonl"
        rollout = day / name
        rollout.write_text("".join(json.dumps(r) + "\n" for r in records))
        with recording(OpenAIServer if mid_turn is None else OpenAIToolCallServer) as server:
            if mid_turn is not None:
                server.usage_total, server.called = mid_turn, False
            (home / ".codex" / "config.toml").write_text(
                f'model = "{prefix.model}"\nopenai_base_url = "http://127.0.0.1:{server.port}/v1"\n'
                'check_for_update_on_startup = false\n[analytics]\nenabled = false\n')
            # Older versions (0.58) read the provider's address from OPENAI_BASE_URL only.
            env = {**_base_env(home), "OPENAI_API_KEY": "x", "CODEX_HOME": str(home / ".codex"),
                   "OPENAI_BASE_URL": f"http://127.0.0.1:{server.port}/v1"}
            cmd = [str(codex_bin(folder)), "exec", "--skip-git-repo-check", "resume", prefix.session_id, PROMPT]
            rc, out, err = _run(cmd, cwd, env, timeout)
            requests = list(server.requests)
        lines = read_jsonl(rollout) if rollout.exists() else []
        new_lines = lines[len(records):]
        compact_requests = [r for r in requests if r.method == "POST" and (r.path.split("?")[0] == "/v1/responses/compact"
                                                                              or openai_is_compaction(r.body))]
        compacted_line = any(r.get("type") == "compacted" for r in new_lines)
        detail = f"compaction requests: {len(compact_requests)}, compacted line written: {compacted_line}"
        if keep_home:
            detail += f", home: {home}"
        return Outcome(CODEX, codex_version(folder), bool(compact_requests) or compacted_line,
                       requests, rc, out, err, new_lines, detail)
    finally:
        if not keep_home:
            shutil.rmtree(home, ignore_errors=True)


def bisect(run, lo: int, hi: int, on_step=None) -> int:
    """The smallest usage in (lo, hi] at which run(usage).compacted (run(lo) must not compact, run(hi)
    must): a plain bisection, one client run per step (about log2(hi - lo) runs)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        compacted = run(mid).check().compacted
        if on_step:
            on_step(mid, compacted)
        if compacted:
            hi = mid
        else:
            lo = mid
    return hi


# ---------------------------------------------------------------------------------------------
# The rule's count after the last usage, and the session the lab replays


# The fixture prefixes the checks use: (file under <fixtures>/<client folder>, which turn end).
# Claude Code: main sessions on claude-opus-4-6 (a model for which Claude Code 2.1.197 compacts
# proactively; see docs/policy-lab.md "Checked against the real clients").
CLAUDE_PREFIXES = (
    ("marot__spotter__subagent.jsonl", 0),
    ("marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl", 0),
)
# Codex: real gpt-5.x rollouts (gpt-5.3-codex) cut after a completed turn.
CODEX_PREFIXES = (
    ("madshn__localpush__rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl", 0),
    ("madshn__localpush__rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl", 0),
)


def _est_content(content, chars_per_token: int = 4) -> int:
    """Claude Code's rough estimate of a message content: round(chars / 4) per text block (tool
    results by their content, tool uses by name + JSON input, images 2,000)."""
    if isinstance(content, str):
        return round(len(content) / chars_per_token)
    n = 0
    for b in content or []:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            n += round(len(b.get("text", "")) / chars_per_token)
        elif t == "tool_result":
            n += _est_content(b.get("content") or "", chars_per_token)
        elif t == "tool_use":
            n += round(len(b.get("name", "") + json.dumps(b.get("input") or {}, separators=(",", ":"))) / chars_per_token)
        elif t in ("image", "document"):
            n += 2000
        elif t == "thinking":
            n += round(len(b.get("thinking", "")) / chars_per_token)
        else:
            n += round(len(json.dumps(b, separators=(",", ":"))) / chars_per_token)
    return n


def claude_rule_tail(outcome: Outcome) -> int:
    """The rule's estimate (round(chars/4)) of every message after the last response, taken from what
    the client itself sent: the messages after the last assistant message of its real request
    (the new prompt and whatever Claude Code attached to it)."""
    real = [r for r in outcome.model_requests if not anthropic_is_compaction(r.body)]
    if not real:
        raise AgentRunError("no real request to read the new prompt from")
    msgs = real[-1].body["messages"]
    last_assistant = max((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), default=-1)
    return sum(_est_content(m.get("content")) for m in msgs[last_assistant + 1:])


def codex_rule_tail(prefix: CodexPrefix) -> int:
    """The rule's estimate (bytes/4 of each serialized item) of the items recorded after the last
    response. Codex checks before a new turn records its input, so the prompt is not counted."""
    return sum(len(json.dumps(r["payload"]).encode()) // 4 for r in prefix.records[prefix.last_usage_index + 1:]
               if r.get("type") == "response_item")


def claude_lab_records(prefix: ClaudePrefix, usage_total: int, probe: Outcome, tail: int) -> list[dict]:
    """The session as a client that did not compact would have recorded it: the prefix (last usage =
    usage_total), then the lines the real client wrote for the new prompt in a run that did not
    compact (the prompt, its attachments, the reply), the reply measured at usage_total + tail."""
    if probe.compacted:
        raise ValueError("the probe run compacted: it cannot give the next exchange")
    records = prefix.with_usage(usage_total)
    cwd = next((r["cwd"] for r in reversed(records) if r.get("cwd")), None)
    out = copy.deepcopy(probe.session_lines)
    for r in out:
        if cwd and "cwd" in r:
            r["cwd"] = cwd
        m = r.get("message") or {}
        if r.get("type") == "assistant" and isinstance(m.get("usage"), dict):
            m["usage"].update({"input_tokens": usage_total + tail, "cache_creation_input_tokens": 0,
                               "cache_read_input_tokens": 0, "output_tokens": 1})
            m["model"] = prefix.model or m.get("model")
    return records + out


def codex_lab_records(prefix: CodexPrefix, usage_total: int, probe: Outcome) -> list[dict]:
    """The rollout as a client that did not compact would have recorded it: the prefix (last usage =
    usage_total), then the lines the real client wrote for the new turn in a run that did not
    compact, the reply measured at usage_total + the new items' bytes/4."""
    if probe.compacted:
        raise ValueError("the probe run compacted: it cannot give the next exchange")
    records = prefix.with_usage(usage_total)
    cwd = next(((r.get("payload") or {}).get("cwd") for r in records if (r.get("payload") or {}).get("cwd")), None)
    out = copy.deepcopy(probe.session_lines)
    added = sum(len(json.dumps(r["payload"]).encode()) // 4 for r in out
                if r.get("type") == "response_item" and (r["payload"].get("role") != "assistant"))
    for r in out:
        p = r.get("payload") or {}
        if cwd and "cwd" in p:
            p["cwd"] = cwd
        if p.get("type") == "token_count" and isinstance(p.get("info"), dict):
            p["info"]["last_token_usage"] = {"input_tokens": usage_total + added, "cached_input_tokens": 0,
                                             "output_tokens": 1, "reasoning_output_tokens": 0,
                                             "total_tokens": usage_total + added + 1}
    return records + out


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# ---------------------------------------------------------------------------------------------
# Resuming a whole session file as it is (the export checks, tests/agents/test_resume_exports.py)


def resume_claude_file(records: list[dict], session_id: str, *, model: str = "", timeout: float = TIMEOUT,
                       auto_compact: bool = False) -> Outcome:
    """Resume the session `records` (written unchanged but for `cwd`, set to the temp project) with
    `claude --resume <session_id> -p PROMPT` against a fake Anthropic server. Auto-compaction is off
    unless asked (DISABLE_AUTO_COMPACT): the request is then what the client loads from the file."""
    home = Path(tempfile.mkdtemp(prefix="cv-claude-home-"))
    try:
        run = _resume_claude(home, records, session_id, model, timeout,
                             None if auto_compact else {"DISABLE_AUTO_COMPACT": "1"})
        summarized = [r for r in run.requests if r.method == "POST" and anthropic_is_compaction(r.body)]
        return Outcome(CLAUDE_CODE, CLAUDE_PIN.installed_version() or "?", bool(summarized),
                       run.requests, run.rc, run.out, run.err, run.new_lines, f"summarization requests: {len(summarized)}")
    finally:
        shutil.rmtree(home, ignore_errors=True)


def resume_codex_file(records: list[dict], session_id: str, *, model: str = "", file_name: str = "",
                      timeout: float = TIMEOUT) -> Outcome:
    """Resume the rollout `records` (unchanged but for `cwd`) with
    `codex exec --skip-git-repo-check resume <session_id> PROMPT` against a fake OpenAI server, the
    file under .codex/sessions/YYYY/MM/DD/ (its `file_name`, else rollout-<first timestamp>-<id>.jsonl)."""
    home = Path(tempfile.mkdtemp(prefix="cv-codex-home-"))
    try:
        (home / "tmp").mkdir()
        cwd = home / "project"
        cwd.mkdir()
        records = copy.deepcopy(records)
        for r in records:
            p = r.get("payload") or {}
            if "cwd" in p:
                p["cwd"] = str(cwd)
            sp = p.get("sandbox_policy")
            if isinstance(sp, dict) and "writable_roots" in sp:
                sp["writable_roots"] = [str(cwd)]
        ts = records[0].get("timestamp", "2026-01-01T00:00:00Z")
        day = home / ".codex" / "sessions" / ts[:4] / ts[5:7] / ts[8:10]
        day.mkdir(parents=True)
        rollout = day / (file_name or f"rollout-{ts[:19].replace(':', '-')}-{session_id}.jsonl")
        rollout.write_text("".join(json.dumps(r) + "\n" for r in records))
        with recording(OpenAIServer) as server:
            (home / ".codex" / "config.toml").write_text(
                f'model = "{model or "gpt-5"}"\nopenai_base_url = "http://127.0.0.1:{server.port}/v1"\n'
                'check_for_update_on_startup = false\n[analytics]\nenabled = false\n')
            env = {**_base_env(home), "OPENAI_API_KEY": "x", "CODEX_HOME": str(home / ".codex")}
            cmd = [str(codex_bin()), "exec", "--skip-git-repo-check", "resume", session_id, PROMPT]
            rc, out, err = _run(cmd, cwd, env, timeout)
            requests = list(server.requests)
        lines = read_jsonl(rollout) if rollout.exists() else []
        compact_requests = [r for r in requests if r.method == "POST" and openai_is_compaction(r.body)]
        return Outcome(CODEX, CODEX_PIN.installed_version() or "?", bool(compact_requests), requests, rc, out, err,
                       lines[len(records):], f"compaction requests: {len(compact_requests)}")
    finally:
        shutil.rmtree(home, ignore_errors=True)
