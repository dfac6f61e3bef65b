"""The real Claude Code and Codex CLIs, run offline as oracles of the policy lab's auto-compaction
thresholds (`manage.py agent_thresholds`, tests/agents/).

Neither client can reach a provider here: each runs in a throw-away HOME against a fake provider on
127.0.0.1 that records every request body and answers a minimal streamed reply. A resumed session
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
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CLAUDE_CODE_VERSION = "2.1.197"
CODEX_VERSION = "0.171.0"
AGENTS_DIR = Path(__file__).resolve().parent.parent / "var" / "agents"
PROMPT = "say ok"
TIMEOUT = 60.0


def claude_bin() -> Path:
    return AGENTS_DIR / "node_modules" / ".bin" / "claude"


def codex_bin() -> Path:
    return AGENTS_DIR / "node_modules" / ".bin" / "codex"


def installed_version(package: str) -> str | None:
    try:
        return json.loads((AGENTS_DIR / "node_modules" / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def missing_clients() -> str | None:
    """None when both pinned clients are installed, else what is missing and how to get it."""
    wanted = {"@anthropic-ai/claude-code": (CLAUDE_CODE_VERSION, claude_bin()), "@openai/codex": (CODEX_VERSION, codex_bin())}
    problems = []
    for package, (version, exe) in wanted.items():
        found = installed_version(package)
        if found != version or not exe.exists():
            problems.append(f"{package}@{version} (found: {found or 'nothing'})")
    if problems:
        return f"the real agent clients are not installed in {AGENTS_DIR}: {', '.join(problems)}; run `bin/setup --agents`"
    return None


# ---------------------------------------------------------------------------------------------
# Fake providers


@dataclass
class Request:
    method: str
    path: str
    headers: dict
    body: dict | None


class FakeServer:
    """A ThreadingHTTPServer on a free port of 127.0.0.1 that records every request."""

    def __init__(self):
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, client_address: None  # clients drop connections; that is fine
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def record(self, handler, body) -> Request:
        r = Request(handler.command, handler.path, {k.lower(): v for k, v in handler.headers.items()}, body)
        with self.lock:
            self.requests.append(r)
        return r

    def answer(self, handler, req: Request) -> None:  # pragma: no cover - overridden
        handler.send_error(404)

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _read(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                if raw and "zstd" in (self.headers.get("content-encoding") or ""):
                    raw = _unzstd(raw)
                try:
                    return json.loads(raw) if raw else None
                except ValueError:
                    return {"_raw": raw[:2000].decode("utf-8", "replace")}

            def do_POST(self):
                outer.answer(self, outer.record(self, self._read()))

            def do_GET(self):
                outer.answer(self, outer.record(self, None))

            do_HEAD = do_GET

        return Handler


def _unzstd(raw: bytes) -> bytes:
    try:
        import zstandard  # noqa: PLC0415

        return zstandard.ZstdDecompressor().decompress(raw, max_output_size=1 << 28)
    except Exception:
        return raw


def _sse(handler, events: list[tuple[str, dict]]) -> None:
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("cache-control", "no-cache")
    handler.send_header("connection", "close")
    handler.end_headers()
    for name, data in events:
        handler.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        handler.wfile.flush()
    handler.close_connection = True


def _json(handler, status: int, data) -> None:
    raw = json.dumps(data).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


SUMMARY_TEXT = (
    "<analysis>The user asked for a short answer.</analysis>\n<summary>1. Primary Request and Intent: say ok.\n"
    "2. Pending Tasks: none.</summary>"
)


class AnthropicServer(FakeServer):
    """Anthropic Messages API: POST /v1/messages (stream) answered with a short text and a usage."""

    def is_compaction(self, body: dict | None) -> bool:
        return _anthropic_is_compaction(body)

    def answer(self, handler, req: Request) -> None:
        path = req.path.split("?")[0]
        if req.method == "POST" and path == "/v1/messages/count_tokens":
            return _json(handler, 200, {"input_tokens": 1000})
        if req.method != "POST" or path != "/v1/messages":
            return _json(handler, 404, {"type": "error", "error": {"type": "not_found_error", "message": "not here"}})
        body = req.body or {}
        text = SUMMARY_TEXT if self.is_compaction(body) else "ok"
        model = body.get("model", "claude")
        msg_id = f"msg_{uuid.uuid4().hex[:24]}"
        usage = {"input_tokens": 1000, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not body.get("stream"):
            return _json(handler, 200, {
                "id": msg_id, "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {**usage, "output_tokens": 20},
            })
        _sse(handler, [
            ("message_start", {"type": "message_start", "message": {
                "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": usage}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                               "usage": {"output_tokens": 20}}),
            ("message_stop", {"type": "message_stop"}),
        ])


def _anthropic_is_compaction(body: dict | None) -> bool:
    """Claude Code's summarization request: its last user message asks for a summary of the conversation."""
    if not body or not body.get("messages"):
        return False
    last = body["messages"][-1]
    content = last.get("content")
    texts = [content] if isinstance(content, str) else [b.get("text", "") for b in content or [] if isinstance(b, dict)]
    joined = "\n".join(texts)
    return "summary of the conversation" in joined.lower() and "<summary>" in joined.lower()


class OpenAIServer(FakeServer):
    """OpenAI Responses API: POST /v1/responses (SSE); a WebSocket upgrade is refused at once (426) so
    the client falls back to HTTP. Codex 0.171.0 compacts remotely through /v1/responses itself
    (remote compaction v2, see `_openai_is_compaction`); POST /v1/responses/compact, the older remote
    compaction endpoint, is recorded and answered too (best-effort shape; 0.171.0 does not call it)."""

    def answer(self, handler, req: Request) -> None:
        path = req.path.split("?")[0]
        if req.headers.get("upgrade", "").lower() == "websocket":
            return _json(handler, 426, {"error": {"message": "no websockets here", "type": "invalid_request_error"}})
        if req.method == "GET" and path.startswith("/v1/models"):
            return _json(handler, 200, {"models": [], "data": []})
        if req.method == "POST" and path == "/v1/responses/compact":
            return _json(handler, 200, {"output": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": PROMPT}]},
                {"type": "compaction", "encrypted_content": "fake-encrypted-summary"},
            ]})
        if req.method != "POST" or path != "/v1/responses":
            return _json(handler, 404, {"error": {"message": f"not here: {path}", "type": "invalid_request_error"}})
        body = req.body or {}
        rid = f"resp_{uuid.uuid4().hex[:24]}"
        if _openai_is_compaction(body):
            # Remote compaction (v2): the input ends with a `compaction_trigger` item and the client
            # expects exactly one `compaction` output item (an opaque, encrypted summary).
            item = {"type": "compaction", "id": f"cmp_{uuid.uuid4().hex[:24]}", "encrypted_content": "fake-encrypted-summary"}
            delta = None
        else:
            item = {"type": "message", "id": f"msg_{uuid.uuid4().hex[:24]}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "ok", "annotations": []}]}
            delta = "ok"
        usage = {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 2,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 1002}
        base = {"id": rid, "object": "response", "model": body.get("model", "gpt-5"), "status": "in_progress", "output": []}
        events = [("response.created", {"type": "response.created", "response": base})]
        if delta is not None:
            events += [
                ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                "item": {**item, "status": "in_progress", "content": []}}),
                ("response.output_text.delta", {"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
                                                "item_id": item["id"], "delta": delta}),
            ]
        else:
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}))
        events += [
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {**base, "status": "completed", "output": [item], "usage": usage}}),
        ]
        _sse(handler, events)


def _openai_is_compaction(body: dict | None) -> bool:
    """Codex's compaction request: remote compaction v2 ends its input with a `compaction_trigger`
    item; the local (summarizing) compaction sends its checkpoint prompt as the last input."""
    if not body or not isinstance(body.get("input"), list) or not body["input"]:
        return False
    last = body["input"][-1]
    if isinstance(last, dict) and last.get("type") == "compaction_trigger":
        return True
    raw = json.dumps(last)
    return "CONTEXT CHECKPOINT COMPACTION" in raw or "handoff summary" in raw.lower()


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


def run_claude(prefix: ClaudePrefix, usage_total: int, timeout: float = TIMEOUT, keep_home: bool = False) -> Outcome:
    """Resume `prefix` (last usage = usage_total) in a temp HOME with `claude --resume <id> -p PROMPT`
    against a fake Anthropic server; compacted = a summarization request came before the real one."""
    home = Path(tempfile.mkdtemp(prefix="cv-claude-home-"))
    try:
        (home / "tmp").mkdir()
        cwd = home / "project"
        cwd.mkdir()
        (home / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True, "numStartups": 1}))
        # Claude Code names a project folder after its cwd with every character other than [a-zA-Z0-9] as "-".
        project_dir = home / ".claude" / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))
        project_dir.mkdir(parents=True)
        records = prefix.with_usage(usage_total)
        for r in records:
            if "cwd" in r:
                r["cwd"] = str(cwd)
        session_file = project_dir / f"{prefix.session_id}.jsonl"
        session_file.write_text("".join(json.dumps(r) + "\n" for r in records))
        with AnthropicServer() as server:
            env = {**_base_env(home), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.port}", "ANTHROPIC_API_KEY": "x",
                   "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                   "DISABLE_ERROR_REPORTING": "1",
                   # Attachments (skill listing, nested memory, ...) are computed under a 1 s deadline, so on a
                   # busy machine some miss it and the count after the last usage varies run to run: off.
                   "CLAUDE_CODE_DISABLE_ATTACHMENTS": "1"}
            cmd = [str(claude_bin()), "--resume", prefix.session_id, "-p", PROMPT]
            if prefix.model:
                cmd += ["--model", prefix.model]
            rc, out, err = _run(cmd, cwd, env, timeout)
            requests = list(server.requests)
        lines = read_jsonl(session_file) if session_file.exists() else []
        new_lines = lines[len(records):]
        summarized = [r for r in requests if r.method == "POST" and _anthropic_is_compaction(r.body)]
        boundary = any(r.get("type") == "system" and r.get("subtype") == "compact_boundary" for r in new_lines)
        detail = f"summarization requests: {len(summarized)}, compact_boundary written: {boundary}"
        if keep_home:
            detail += f", home: {home}"
        return Outcome("claude-code", installed_version("@anthropic-ai/claude-code") or "?", bool(summarized) and boundary,
                       requests, rc, out, err, new_lines, detail)
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


def run_codex(prefix: CodexPrefix, usage_total: int, timeout: float = TIMEOUT, keep_home: bool = False) -> Outcome:
    """Resume `prefix` (last usage = usage_total) in a temp HOME with
    `codex exec --skip-git-repo-check resume <id> PROMPT` against a fake OpenAI server; compacted =
    a compaction request (local summarization prompt or /responses/compact) or a `compacted` line."""
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
        with OpenAIServer() as server:
            (home / ".codex" / "config.toml").write_text(
                f'model = "{prefix.model}"\nopenai_base_url = "http://127.0.0.1:{server.port}/v1"\n'
                'check_for_update_on_startup = false\n[analytics]\nenabled = false\n')
            env = {**_base_env(home), "OPENAI_API_KEY": "x", "CODEX_HOME": str(home / ".codex")}
            cmd = [str(codex_bin()), "exec", "--skip-git-repo-check", "resume", prefix.session_id, PROMPT]
            rc, out, err = _run(cmd, cwd, env, timeout)
            requests = list(server.requests)
        lines = read_jsonl(rollout) if rollout.exists() else []
        new_lines = lines[len(records):]
        compact_requests = [r for r in requests if r.method == "POST" and (r.path.split("?")[0] == "/v1/responses/compact"
                                                                              or _openai_is_compaction(r.body))]
        compacted_line = any(r.get("type") == "compacted" for r in new_lines)
        detail = f"compaction requests: {len(compact_requests)}, compacted line written: {compacted_line}"
        if keep_home:
            detail += f", home: {home}"
        return Outcome("codex", installed_version("@openai/codex") or "?", bool(compact_requests) or compacted_line,
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
    real = [r for r in outcome.model_requests if not _anthropic_is_compaction(r.body)]
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
