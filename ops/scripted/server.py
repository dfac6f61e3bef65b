"""The scripted model server: one ThreadingHTTPServer on a free port of 127.0.0.1 that speaks every
protocol an adapter is registered for (Anthropic Messages, OpenAI Responses, Chat Completions,
Gemini), answers each request from a Plan (ops/scripted/plan.py) and records it as an Exchange.

Every request is classified the same way whatever its protocol:
- "compaction": the adapter says so (a protocol-level trigger) or its last user text holds one of the
  plan's compaction markers; answered with the plan's summary;
- "main": it offers tools and a user text holds a prompt's marker; answered with that prompt's next
  tool call, or its answer once every tool call was made;
- "side": anything else that asks the model (titles, memory notes, checks); answered with side text;
- "other": not a model call (token counting, model lists, telemetry); answered as the protocol wants.

The usage reported is the plan's where it sets one, else len(request JSON) / 4, so the agent's own
accounting (and auto-compaction) runs on numbers the test knows. Usage lives in `Exchange.usage`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ops.scripted.adapters import all_adapters
from ops.scripted.exchange import Adapter, Exchange, Reply, estimate, send_json
from ops.scripted.plan import Plan
from ops.scripted.view import View


class ScriptedServer:
    def __init__(self, plan: Plan, adapters: list[Adapter] | None = None):
        if adapters is None:
            adapters = all_adapters()
        self.plan = plan
        self.adapters = adapters
        self.exchanges: list[Exchange] = []
        self.issued: dict[int, int] = {}  # prompt index -> tool calls issued
        self.tool_seq = 0
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, client_address: None  # clients drop connections
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def calls(self, kind: str = "main", agent: str | None = None) -> list[Exchange]:
        with self.lock:
            return [e for e in self.exchanges if e.kind == kind and (agent is None or e.agent == agent)]

    # -- one request ------------------------------------------------------------------------

    def handle(self, handler: BaseHTTPRequestHandler, method: str, body: Any) -> None:
        headers = {k.lower(): v for k, v in handler.headers.items()}
        adapter = next((a for a in self.adapters if a.handles(method, handler.path, headers)), None)
        with self.lock:
            ex = Exchange(len(self.exchanges), adapter.name if adapter else "", method, handler.path, headers, body)
            self.exchanges.append(ex)
        if adapter is None:
            return send_json(handler, 404, {"error": {"message": f"no scripted route for {method} {handler.path}"}})
        view = adapter.view(handler.path, body) if method == "POST" else None
        if view is None:
            return adapter.answer_other(handler, ex)
        with self.lock:
            self._decide(ex, view, body)
        adapter.answer(handler, ex)

    def _decide(self, ex: Exchange, view: View, body: Any) -> None:
        ex.view = view
        plan = self.plan
        if view.compaction or plan.is_compaction(view.last_user_text()):
            ex.kind, ex.reply = "compaction", Reply(text=plan.summary)
            ex.usage = {"input": plan.compaction_input or estimate(body), "output": max(1, len(plan.summary) // 4)}
            return
        p = plan.prompt_for(view.user_texts()) if view.tools else None
        if p is None:
            ex.kind, ex.reply = "side", Reply(text=plan.side_text)
            ex.usage = {"input": estimate(body), "output": max(1, len(plan.side_text) // 4)}
            return
        prompt = plan.prompts[p]
        step = self.issued.get(p, 0)
        ex.kind, ex.prompt, ex.agent, ex.step = "main", p, prompt.agent, step
        if step < len(prompt.tools):
            self.issued[p] = step + 1
            self.tool_seq += 1
            ex.reply = Reply(tool=prompt.tools[step], tool_id=f"scr{self.tool_seq:04d}")
            out = len(json.dumps(prompt.tools[step].args)) // 4 + 10
        else:
            ex.reply = Reply(text=prompt.answer)
            out = max(1, len(prompt.answer) // 4)
        ex.usage = {"input": prompt.input_tokens.get(step) or estimate(body), "output": out}


def _handler(outer: ScriptedServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _read(self):
            n = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(n) if n else b""
            if raw and "zstd" in (self.headers.get("content-encoding") or ""):
                raw = _unzstd(raw)
            if raw and "gzip" in (self.headers.get("content-encoding") or ""):
                import gzip  # noqa: PLC0415

                raw = gzip.decompress(raw)
            try:
                return json.loads(raw) if raw else None
            except ValueError:
                return {"_raw": raw[:2000].decode("utf-8", "replace")}

        def do_POST(self):
            outer.handle(self, "POST", self._read())

        def do_GET(self):
            outer.handle(self, "GET", None)

        do_HEAD = do_GET

    return Handler


def _unzstd(raw: bytes) -> bytes:
    try:
        import zstandard  # noqa: PLC0415

        return zstandard.ZstdDecompressor().decompress(raw, max_output_size=1 << 28)
    except Exception:
        return raw
