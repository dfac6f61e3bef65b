"""Gemini API for the scripted server: POST .../models/<model>:generateContent (JSON),
:streamGenerateContent (SSE with `?alt=sse`, else a JSON array of chunks) and :countTokens. Gemini
CLI (GOOGLE_GEMINI_BASE_URL) calls it.

A request's `contents[]` holds turns of role user / model whose `parts` are `text` (`thought: true`
makes it thinking), `functionCall {name, args, id?}`, `functionResponse {name, response, id?}` or
`inlineData`. Tool ids: the server answers every functionCall with an `id` (`call_scrNNNN`); Gemini
CLI 0.61 keeps that id (in its log as `<name>__<id>`: the importer takes the prefix off) and sends it
back on the call and its functionResponse in every later main request, so calls and results pair by
id (its own `<name>_<time>_<n>` is used only when the model sends none). A part without an id
gets `<name>#<ordinal>`: the function name and how many calls of that name came before it in the
request; a functionResponse without an id answers the oldest call of its name not answered yet
(and takes that call's id), which a log of the same history can produce the same way.
"""

from __future__ import annotations

import json
from typing import Any

from ops.scripted.exchange import Exchange, estimate, send_json, send_sse
from ops.scripted.view import Item, View

_METHODS = (":generateContent", ":streamGenerateContent", ":countTokens")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = content.get("parts")
    return "\n".join(
        p.get("text", "")
        for p in content or []
        if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
    )


def _response_text(response: Any) -> str:
    """A functionResponse's `response` as the window shows it: its `output` (or `error`) text."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        for key in ("output", "error", "content"):
            if isinstance(response.get(key), str):
                return response[key]
    return json.dumps(response, ensure_ascii=False)


def items_of(contents: list) -> list[Item]:
    out: list[Item] = []
    called: dict[str, int] = {}  # name -> calls without id so far
    open_calls: dict[str, list[str]] = {}  # name -> ids of the calls not answered yet, oldest first
    for c in contents or []:
        if not isinstance(c, dict):
            continue
        role = "assistant" if c.get("role") == "model" else (c.get("role") or "user")
        for p in c.get("parts") or []:
            if not isinstance(p, dict):
                continue
            if isinstance(p.get("text"), str):
                out.append(Item(role, "thinking" if p.get("thought") else "text", p["text"]))
            elif isinstance(p.get("functionCall"), dict):
                fc = p["functionCall"]
                name = fc.get("name") or ""
                tid = fc.get("id")
                if not tid:
                    tid = f"{name}#{called.get(name, 0)}"
                    called[name] = called.get(name, 0) + 1
                open_calls.setdefault(name, []).append(tid)
                out.append(Item(role, "tool_call", json.dumps(fc.get("args"), ensure_ascii=False), tid, name))
            elif isinstance(p.get("functionResponse"), dict):
                fr = p["functionResponse"]
                name = fr.get("name") or ""
                waiting = open_calls.get(name) or []
                tid = fr.get("id")
                if tid and tid in waiting:
                    waiting.remove(tid)
                elif not tid:
                    tid = waiting.pop(0) if waiting else f"{name}#unanswered"
                out.append(Item("tool", "tool_result", _response_text(fr.get("response")), tid, name))
            elif isinstance(p.get("inlineData"), dict):
                out.append(Item(role, "image"))
            else:
                out.append(Item(role, "other", json.dumps(p, ensure_ascii=False)[:500]))
    return out


def _method(path: str) -> str:
    p = path.split("?")[0]
    return next((m for m in _METHODS if p.endswith(m)), "")


class Gemini:
    name = "gemini"

    def handles(self, method: str, path: str, headers: dict[str, str]) -> bool:
        p = path.split("?")[0]
        return "/models" in p and (bool(_method(path)) or method == "GET")

    def view(self, path: str, body: Any) -> View | None:
        if _method(path) not in (":generateContent", ":streamGenerateContent") or not isinstance(body, dict):
            return None
        model = path.split("?")[0].rsplit("/models/", 1)[-1].split(":")[0]
        tools = [
            d.get("name", "")
            for t in body.get("tools") or []
            if isinstance(t, dict)
            for d in t.get("functionDeclarations") or []
            if isinstance(d, dict)
        ]
        return View(model=model, system=_text(body.get("systemInstruction")), tools=tools, items=items_of(body.get("contents")))

    def answer_other(self, handler, ex: Exchange) -> None:
        if _method(ex.path) == ":countTokens":
            return send_json(handler, 200, {"totalTokens": estimate(ex.body)})
        if ex.method == "GET":
            return send_json(handler, 200, {"models": [{"name": "models/gemini-2.5-pro", "displayName": "scripted"}]})
        send_json(
            handler, 400, {"error": {"code": 400, "message": "not a scripted Gemini request", "status": "INVALID_ARGUMENT"}}
        )

    def answer(self, handler, ex: Exchange) -> None:
        reply = ex.reply
        model = ex.view.model if ex.view else "gemini"
        if reply.tool is not None:
            reply.tool_id = f"call_{reply.tool_id}"
            part = {"functionCall": {"id": reply.tool_id, "name": reply.tool.name, "args": reply.tool.args}}
        else:
            part = {"text": reply.text}
        usage = {
            "promptTokenCount": ex.usage["input"],
            "candidatesTokenCount": ex.usage["output"],
            "totalTokenCount": ex.usage["input"] + ex.usage["output"],
        }
        chunk = {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": f"scr{ex.n:04d}",
        }
        if _method(ex.path) == ":generateContent":
            return send_json(handler, 200, chunk)
        if "alt=sse" in ex.path:
            return send_sse(handler, [(None, chunk)])
        send_json(handler, 200, [chunk])
