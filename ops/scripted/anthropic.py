"""Anthropic Messages API for the scripted server: POST /v1/messages (SSE when `stream`, else JSON) and
POST /v1/messages/count_tokens. Claude Code, opencode and Kilo (provider `anthropic`) call it."""

from __future__ import annotations

import json
import uuid
from typing import Any

from ops.scripted.exchange import Exchange, estimate, send_json, send_sse
from ops.scripted.view import Item, View


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def items_of(messages: list) -> list[Item]:
    out: list[Item] = []
    for m in messages or []:
        if not isinstance(m, dict):
            continue
        role = m.get("role") or "user"
        content = m.get("content")
        if isinstance(content, str):
            out.append(Item(role, "text", content))
            continue
        for b in content or []:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text":
                out.append(Item(role, "text", b.get("text", "")))
            elif t == "tool_use":
                out.append(Item(role, "tool_call", json.dumps(b.get("input"), ensure_ascii=False), b.get("id"), b.get("name")))
            elif t == "tool_result":
                out.append(Item("tool", "tool_result", _text(b.get("content")), b.get("tool_use_id")))
            elif t in ("thinking", "redacted_thinking"):
                out.append(Item(role, "thinking", b.get("thinking", "")))
            elif t == "image":
                out.append(Item(role, "image"))
            else:
                out.append(Item(role, "other", json.dumps(b, ensure_ascii=False)[:500]))
    return out


class Anthropic:
    name = "anthropic"

    def handles(self, method: str, path: str, headers: dict[str, str]) -> bool:
        return path.split("?")[0].startswith("/v1/messages")

    def view(self, path: str, body: Any) -> View | None:
        if path.split("?")[0] != "/v1/messages" or not isinstance(body, dict):
            return None
        system = body.get("system")
        return View(
            model=body.get("model") or "",
            system=_text(system) if not isinstance(system, str) else system,
            tools=[t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)],
            items=items_of(body.get("messages")),
        )

    def answer_other(self, handler, ex: Exchange) -> None:
        if ex.path.split("?")[0] == "/v1/messages/count_tokens":
            return send_json(handler, 200, {"input_tokens": estimate(ex.body)})
        send_json(handler, 404, {"type": "error", "error": {"type": "not_found_error", "message": "not here"}})

    def answer(self, handler, ex: Exchange) -> None:
        body, reply = ex.body or {}, ex.reply
        model = body.get("model", "claude")
        msg_id = f"msg_scr{ex.n:04d}{uuid.uuid4().hex[:12]}"
        if reply.tool is not None:
            block = {"type": "tool_use", "id": f"toolu_{reply.tool_id}", "name": reply.tool.name, "input": reply.tool.args}
            reply.tool_id = block["id"]
            stop = "tool_use"
        else:
            block = {"type": "text", "text": reply.text}
            stop = "end_turn"
        usage = {"input_tokens": ex.usage["input"], "output_tokens": ex.usage["output"],
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not body.get("stream"):
            return send_json(handler, 200, {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                                            "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage})
        start = {**block, "input": {}} if reply.tool is not None else {"type": "text", "text": ""}
        delta = ({"type": "input_json_delta", "partial_json": json.dumps(reply.tool.args)} if reply.tool is not None
                 else {"type": "text_delta", "text": reply.text})
        send_sse(handler, [
            ("message_start", {"type": "message_start", "message": {
                "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": ex.usage["output"]}}),
            ("message_stop", {"type": "message_stop"}),
        ])
