"""A local HTTP server on 127.0.0.1 that speaks the OpenAI chat completions and the Anthropic
Messages protocols, answering from a script: the network edge of the provider tests.

    with FakeProvider(["429", "ok"]) as server:
        server.url("openai")  # http://127.0.0.1:PORT/v1
        server.requests       # every request received (path, headers, JSON body)

Script steps: "ok", "429", "500", "malformed" (not JSON), "slow:<seconds>" (answers ok after a
delay), "hang" (sleeps longer than any timeout), "redirect" (307 to /stolen). After the script, `then` repeats ("ok").
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SUMMARY = """## Goal
Fix the failing tests (answered by the fake {protocol} server).

## State and what is done
- The transcript had {users} USER lines and {tools} TOOL lines.

## Next steps
- Run the suite again.

## Constraints and preferences
- Keep the API stable."""


class FakeProvider:
    def __init__(self, script=(), then: str = "ok", text: str | None = None):
        self.script = list(script)
        self.then = then
        self.text = text
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, protocol: str) -> str:
        return f"http://127.0.0.1:{self.port}" + ("/v1" if protocol == "openai" else "")

    def count(self) -> int:
        with self.lock:
            return len(self.requests)

    def _next_step(self) -> str:
        with self.lock:
            return self.script.pop(0) if self.script else self.then

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body: bytes, headers: dict | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                protocol = "anthropic" if self.path.rstrip("/").endswith("/v1/messages") else "openai"
                with fake.lock:
                    fake.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body, "protocol": protocol})
                step = fake._next_step()
                if step == "429":
                    return self._send(429, json.dumps({"error": {"message": "rate limited", "type": "rate_limit_error"}}).encode(), {"retry-after": "0"})
                if step == "500":
                    return self._send(500, json.dumps({"error": {"message": "upstream exploded", "type": "api_error"}}).encode())
                if step == "redirect":
                    return self._send(307, b"{}", {"Location": f"http://127.0.0.1:{fake.port}/stolen"})
                if step == "malformed":
                    return self._send(200, b"{this is not json")
                if step == "hang":
                    time.sleep(30)
                    return
                if step.startswith("slow:"):
                    time.sleep(float(step.split(":", 1)[1]))
                self._send(200, json.dumps(self._answer(protocol, body or {})).encode())

            def _answer(self, protocol: str, body: dict) -> dict:
                messages = body.get("messages") or []
                prompt = messages[-1]["content"] if messages else ""
                lines = prompt.split("\n") if isinstance(prompt, str) else []
                system = body.get("system") or next((m["content"] for m in messages if m.get("role") == "system"), "")
                if "name coding-agent sessions" in str(system):  # a title request
                    text = fake.text or '"Stripe billing migration"'
                else:
                    text = None
                text = text or fake.text or SUMMARY.format(
                    protocol=protocol,
                    users=sum(1 for ln in lines if ln.startswith("USER: ")),
                    tools=sum(1 for ln in lines if ln.startswith("TOOL ")),
                )
                if protocol == "openai":
                    return {
                        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body.get("model", "m"),
                        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280},
                    }
                return {
                    "id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model", "m"),
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": 1100, "output_tokens": 90, "cache_read_input_tokens": 100,
                              "cache_creation_input_tokens": 0},
                }

        return Handler
