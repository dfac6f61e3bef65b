"""What the scripted server records of each request (an Exchange: its classification, the reply
and the usage it reported), the interface a protocol adapter implements, and the wire helpers the
adapters share. The adapters (anthropic.py, responses.py, chat.py, gemini.py) import this module,
the server (server.py) imports them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from ops.scripted.plan import Tool
from ops.scripted.view import View


@dataclass
class Reply:
    text: str = ""
    tool: Tool | None = None
    tool_id: str | None = None


@dataclass
class Exchange:
    n: int  # order of arrival, from 0
    protocol: str  # the adapter's name
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    view: View | None = None
    kind: str = "other"  # main | compaction | side | other
    prompt: int | None = None  # index into plan.prompts (main)
    agent: str = ""  # the prompt's agent ("main" or a sub-agent's name); "" for side and other
    step: int | None = None  # which response of the prompt (0 = first)
    reply: Reply | None = None
    usage: dict[str, int] = field(default_factory=dict)  # {"input": n, "output": m} as reported

    @property
    def is_model_call(self) -> bool:
        return self.kind in ("main", "compaction", "side")


class Adapter(Protocol):
    name: str

    def handles(self, method: str, path: str, headers: dict[str, str]) -> bool: ...

    def view(self, path: str, body: Any) -> View | None:
        """The request as a View, or None when it is not a model call (answered by `answer_other`)."""

    def answer(self, handler: BaseHTTPRequestHandler, ex: Exchange) -> None:
        """Write the response for a model call: ex.reply and ex.usage are set."""

    def answer_other(self, handler: BaseHTTPRequestHandler, ex: Exchange) -> None: ...


def estimate(body: Any) -> int:
    return max(1, len(json.dumps(body, ensure_ascii=False)) // 4)


def send_json(handler, status: int, data) -> None:
    raw = json.dumps(data).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)



def send_sse(handler, events: list[tuple[str | None, Any]], done: str | None = None) -> None:
    """Server-sent events: (event name or None, data) each; `done` ends the stream as a last data line
    (Chat Completions' "[DONE]")."""
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("cache-control", "no-cache")
    handler.send_header("connection", "close")
    handler.end_headers()
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        handler.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
        handler.wfile.flush()
    if done is not None:
        handler.wfile.write(f"data: {done}\n\n".encode())
    handler.close_connection = True
