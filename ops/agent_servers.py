"""Fake providers on 127.0.0.1 for the real agent clients (ops/agents.py runs them against these):
`AnthropicServer` (the Messages API Claude Code calls) and `OpenAIServer` (the Responses API Codex
calls), each a ThreadingHTTPServer on a free port in a thread of its own that records every request
body and answers a minimal streamed reply; `anthropic_is_compaction` and `openai_is_compaction` tell
a client's compaction request from a real one. `recording(kind)` lends the process's one server of
a kind, started the first time it is asked for: a test session or an `agent_thresholds` run starts
each fake provider once, and each client run reads only its own requests.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROMPT = "say ok"  # the prompt the runners send (ops/agents.py); OpenAIServer's compaction answer repeats it


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
        self.in_use = threading.Lock()  # one client run at a time on a shared server (recording)
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


_SHARED: dict[type, FakeServer] = {}
_SHARED_LOCK = threading.Lock()


@contextmanager
def recording(kind: type[FakeServer]) -> Iterator[FakeServer]:
    """The process's one server of `kind`, started the first time (its thread is a daemon: it ends
    with the process), lent to one client run at a time with its recorded requests cleared."""
    with _SHARED_LOCK:
        server = _SHARED.get(kind)
        if server is None:
            server = _SHARED[kind] = kind().__enter__()
    with server.in_use:
        with server.lock:
            server.requests.clear()
        yield server


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
        return anthropic_is_compaction(body)

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


def anthropic_is_compaction(body: dict | None) -> bool:
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
    (remote compaction v2, see `openai_is_compaction`); POST /v1/responses/compact, the older remote
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
        if openai_is_compaction(body):
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


class OpenAIToolCallServer(OpenAIServer):
    """OpenAI Responses API whose first answer with tools offered is a `shell` call reporting
    `total_tokens` = `usage_total` (set before each run): the client runs the command and, before
    the follow-up request, checks its limit mid-turn (Codex 0.58.0 checks only there). Every other
    request is answered as OpenAIServer does."""

    usage_total = 0
    called = False

    def answer(self, handler, req: Request) -> None:
        body = req.body or {}
        if (req.method != "POST" or req.path.split("?")[0] != "/v1/responses" or self.called
                or not body.get("tools") or openai_is_compaction(body)):
            return super().answer(handler, req)
        self.called = True
        rid = f"resp_{uuid.uuid4().hex[:24]}"
        item = {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:20]}", "call_id": f"call_{uuid.uuid4().hex[:20]}",
                "name": "shell", "arguments": json.dumps({"command": ["echo", "ok"]}), "status": "completed"}
        usage = {"input_tokens": self.usage_total - 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": self.usage_total}
        base = {"id": rid, "object": "response", "model": body.get("model", "gpt-5"), "status": "in_progress", "output": []}
        _sse(handler, [
            ("response.created", {"type": "response.created", "response": base}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {**base, "status": "completed", "output": [item], "usage": usage}}),
        ])


def openai_is_compaction(body: dict | None) -> bool:
    """Codex's compaction request: remote compaction v2 ends its input with a `compaction_trigger`
    item; the local (summarizing) compaction sends its checkpoint prompt as the last input."""
    if not body or not isinstance(body.get("input"), list) or not body["input"]:
        return False
    last = body["input"][-1]
    if isinstance(last, dict) and last.get("type") == "compaction_trigger":
        return True
    raw = json.dumps(last)
    return "CONTEXT CHECKPOINT COMPACTION" in raw or "handoff summary" in raw.lower()
