"""OpenAI Chat Completions for the scripted server: POST .../chat/completions (SSE when `stream`, else
JSON) and GET .../models. Qwen Code, pi and Cline (provider `openai`) call it."""

from __future__ import annotations

import json
import time
from typing import Any

from ops.scripted.exchange import Exchange, send_json, send_sse
from ops.scripted.view import Item, View


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") in ("text", "input_text"))


def items_of(messages: list) -> tuple[str, list[Item]]:
    system: list[str] = []
    out: list[Item] = []
    for m in messages or []:
        if not isinstance(m, dict):
            continue
        role = m.get("role") or "user"
        if role in ("system", "developer"):
            system.append(_text(m.get("content")))
            continue
        if role == "tool":
            out.append(Item("tool", "tool_result", _text(m.get("content")), m.get("tool_call_id")))
            continue
        if m.get("reasoning_content"):
            out.append(Item(role, "thinking", m["reasoning_content"]))
        content = m.get("content")
        if isinstance(content, list):
            # One item per part, in order: an agent sends its reminders and the prompt as parts of
            # one message (Qwen Code), and the log keeps only some of them.
            for part in content:
                if not isinstance(part, dict):
                    continue
                if part.get("type") in ("text", "input_text") and part.get("text"):
                    out.append(Item(role, "text", part["text"]))
                elif part.get("type") in ("image_url", "input_image"):
                    out.append(Item(role, "image"))
        elif content:
            out.append(Item(role, "text", _text(content)))
        for c in m.get("tool_calls") or []:
            fn = (c or {}).get("function") or {}
            out.append(Item(role, "tool_call", fn.get("arguments") or "", c.get("id"), fn.get("name")))
    return "\n".join(system), out


class Chat:
    name = "chat"

    def handles(self, method: str, path: str, headers: dict[str, str]) -> bool:
        p = path.split("?")[0]
        return p.endswith("/chat/completions") or (method == "GET" and p.endswith("/models"))

    def view(self, path: str, body: Any) -> View | None:
        if not path.split("?")[0].endswith("/chat/completions") or not isinstance(body, dict):
            return None
        system, items = items_of(body.get("messages"))
        tools = [((t or {}).get("function") or {}).get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]
        return View(model=body.get("model") or "", system=system, tools=tools, items=items)

    def answer_other(self, handler, ex: Exchange) -> None:
        if ex.method == "GET":
            return send_json(handler, 200, {"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "scripted"}]})
        send_json(handler, 400, {"error": {"message": "not a chat completion request", "type": "invalid_request_error"}})

    def answer(self, handler, ex: Exchange) -> None:
        body, reply = ex.body or {}, ex.reply
        cid, created, model = f"chatcmpl-scr{ex.n:04d}", int(time.time()), body.get("model") or "scripted"
        usage = {"prompt_tokens": ex.usage["input"], "completion_tokens": ex.usage["output"],
                 "total_tokens": ex.usage["input"] + ex.usage["output"]}
        if reply.tool is not None:
            reply.tool_id = f"call_{reply.tool_id}"
            call = {"id": reply.tool_id, "type": "function",
                    "function": {"name": reply.tool.name, "arguments": json.dumps(reply.tool.args)}}
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": reply.text}, "stop"
        if not body.get("stream"):
            return send_json(handler, 200, {"id": cid, "object": "chat.completion", "created": created, "model": model,
                                            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage})
        head = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
        if reply.tool is not None:
            delta = {"role": "assistant", "content": None, "tool_calls": [{"index": 0, **call}]}
        else:
            delta = {"role": "assistant", "content": reply.text}
        send_sse(handler, [
            (None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            (None, {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
            (None, {**head, "choices": [], "usage": usage}),
        ], done="[DONE]")
