"""OpenAI Responses API for the scripted server: POST /v1/responses (SSE), GET /v1/models, and a
WebSocket upgrade refused at once (426) so that the client falls back to HTTP. Codex CLI calls it.

Codex 0.171 compacts remotely through /v1/responses itself ("remote compaction v2"): the request's
input ends with a `{"type": "compaction_trigger"}` item and the client expects exactly one
`{"type": "compaction", "encrypted_content": ...}` output item, the opaque summary it sends back as
an input item of type `compaction` on every later call (a window item of kind "summary" whose text
nobody can read). POST /v1/responses/compact, the older endpoint, is answered with the same item.

Input items -> window items: `message` -> one text (or image) item per content part (developer and
system messages are the harness's instructions: View.system, not window items); `reasoning` ->
thinking; `function_call` / `custom_tool_call` (apply_patch) / `local_shell_call` -> tool_call and
their `*_output` -> tool_result, by `call_id`; `compaction` -> summary.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from ops.scripted.plan import Tool
from ops.scripted.exchange import Exchange, send_json, send_sse
from ops.scripted.view import Item, View

# A tool input string holding this is given the id of the agent the request's latest `spawn_agent`
# call started (its output: {"agent_id": ..., "nickname": ...}): how a plan waits for its sub-agent.
SPAWNED = "{spawned_agent_id}"

# Roles whose messages are instructions, not conversation (the system prompt of a Responses request).
INSTRUCTION_ROLES = ("developer", "system")


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
        return part.get("text") or ""
    return None


def _output_text(value: Any) -> str:
    """A tool output: a string, or a list of content parts (text joined)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (_part_text(p) for p in value) if t is not None)
    if isinstance(value, dict) and "content" in value:
        return _output_text(value.get("content"))
    return json.dumps(value, ensure_ascii=False) if value is not None else ""


def items_of(inputs: Any) -> tuple[str, list[Item]]:
    """(instructions, window items) of a Responses `input` (a string is one user text)."""
    if isinstance(inputs, str):
        return "", [Item("user", "text", inputs)]
    system: list[str] = []
    out: list[Item] = []
    for it in inputs or []:
        if not isinstance(it, dict):
            continue
        t = it.get("type") or ("message" if "role" in it else None)
        if t == "message":
            role = it.get("role") or "user"
            content = it.get("content")
            parts = [content] if isinstance(content, str) else content or []
            if role in INSTRUCTION_ROLES:
                system.extend(x for x in (_part_text(p) for p in parts) if x)
                continue
            for p in parts:
                text = _part_text(p)
                if text is not None:
                    out.append(Item(role, "text", text))
                elif isinstance(p, dict) and p.get("type") in ("input_image", "image"):
                    out.append(Item(role, "image"))
                else:
                    out.append(Item(role, "other", json.dumps(p, ensure_ascii=False)[:500]))
        elif t == "reasoning":
            texts = [x for x in (_part_text(p) for p in (it.get("summary") or []) + (it.get("content") or [])) if x]
            out.append(Item("assistant", "thinking", "\n".join(texts)))
        elif t == "function_call":
            out.append(Item("assistant", "tool_call", it.get("arguments") or "", it.get("call_id"), it.get("name")))
        elif t == "custom_tool_call":
            out.append(Item("assistant", "tool_call", it.get("input") or "", it.get("call_id"), it.get("name")))
        elif t == "local_shell_call":
            out.append(Item("assistant", "tool_call", json.dumps(it.get("action"), ensure_ascii=False),
                            it.get("call_id") or it.get("id"), "local_shell"))
        elif t == "tool_search_call":
            out.append(Item("assistant", "tool_call", json.dumps(it.get("arguments"), ensure_ascii=False),
                            it.get("call_id"), "tool_search"))
        elif t == "tool_search_output":
            names = sorted(_offered(it.get("tools")))
            out.append(Item("tool", "tool_result", json.dumps(names), it.get("call_id")))
        elif t == "additional_tools":
            continue  # tools offered (View.tools), not conversation
        elif t in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            out.append(Item("tool", "tool_result", _output_text(it.get("output")), it.get("call_id")))
        elif t in ("compaction", "compaction_summary"):
            out.append(Item("user", "summary", ""))
        elif t == "compaction_trigger":
            continue  # the request's question, not context
        else:
            out.append(Item("user", "other", json.dumps(it, ensure_ascii=False)[:500]))
    return "\n".join(system), out


def _offered(tools: Any, namespace: str = "") -> dict[str, tuple[str, str]]:
    """Tool name -> (its type: "function", "custom", "tool_search", ...; its namespace or "")."""
    out: dict[str, tuple[str, str]] = {}
    for t in tools or []:
        if not isinstance(t, dict):
            continue
        kind = t.get("type") or "function"
        if kind == "namespace":
            out.update(_offered(t.get("tools"), t.get("name") or ""))
            continue
        fn = t.get("function")
        name = t.get("name") or (fn.get("name") if isinstance(fn, dict) else None) or kind
        out[name] = (kind, namespace)
    return out


def _tool_kinds(body: dict) -> dict[str, tuple[str, str]]:
    """Every tool the request offers: its `tools`, and tools an input item adds (`additional_tools`,
    a `tool_search_output`'s finds)."""
    out = _offered(body.get("tools"))
    for it in body.get("input") if isinstance(body.get("input"), list) else []:
        if isinstance(it, dict) and it.get("type") in ("additional_tools", "tool_search_output"):
            out.update(_offered(it.get("tools")))
    return out


def spawned_agent(body: dict) -> str | None:
    """The agent id of the latest `spawn_agent` call the request holds, from that call's output."""
    spawns = set()
    found = None
    for it in body.get("input") if isinstance(body.get("input"), list) else []:
        if not isinstance(it, dict):
            continue
        if it.get("type") == "function_call" and it.get("name") == "spawn_agent":
            spawns.add(it.get("call_id"))
        elif it.get("type") == "function_call_output" and it.get("call_id") in spawns:
            try:
                found = json.loads(_output_text(it.get("output"))).get("agent_id") or found
            except (ValueError, AttributeError):
                pass
    return found


def _fill(value: Any, agent_id: str | None) -> Any:
    if isinstance(value, str) and SPAWNED in value and agent_id:
        return value.replace(SPAWNED, agent_id)
    if isinstance(value, list):
        return [_fill(v, agent_id) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, agent_id) for k, v in value.items()}
    return value


def encrypted(summary: str) -> str:
    """The opaque `encrypted_content` of a compaction item (here: the summary, base64)."""
    return "scripted:" + base64.b64encode(summary.encode()).decode()


class Responses:
    name = "responses"

    def handles(self, method: str, path: str, headers: dict[str, str]) -> bool:
        p = path.split("?")[0]
        if headers.get("upgrade", "").lower() == "websocket":
            return p.startswith("/v1/responses") or p.endswith("/responses")
        return p.endswith("/responses") or p.endswith("/responses/compact") or (method == "GET" and p.endswith("/models"))

    def view(self, path: str, body: Any) -> View | None:
        if not path.split("?")[0].endswith("/responses") or not isinstance(body, dict):
            return None
        inputs = body.get("input")
        system, items = items_of(inputs)
        instructions = body.get("instructions")
        if isinstance(instructions, str) and instructions:
            system = instructions + ("\n" + system if system else "")
        trigger = isinstance(inputs, list) and bool(inputs) and isinstance(inputs[-1], dict) \
            and inputs[-1].get("type") == "compaction_trigger"
        return View(model=body.get("model") or "", system=system, tools=[n for n in _tool_kinds(body) if n],
                    items=items, compaction=trigger)

    def answer_other(self, handler, ex: Exchange) -> None:
        p = ex.path.split("?")[0]
        if ex.headers.get("upgrade", "").lower() == "websocket":
            return send_json(handler, 426, {"error": {"message": "no websockets here", "type": "invalid_request_error"}})
        if ex.method == "GET":
            return send_json(handler, 200, {"object": "list", "models": [],
                                            "data": [{"id": "scripted", "object": "model", "owned_by": "scripted"}]})
        if p.endswith("/responses/compact"):
            return send_json(handler, 200, {"output": [{"type": "compaction", "encrypted_content": encrypted("")}]})
        send_json(handler, 400, {"error": {"message": "not a responses request", "type": "invalid_request_error"}})

    def answer(self, handler, ex: Exchange) -> None:
        body, reply = ex.body or {}, ex.reply
        rid = f"resp_scr{ex.n:04d}"
        if ex.kind == "compaction":
            item = {"type": "compaction", "id": f"cmp_scr{ex.n:04d}", "encrypted_content": encrypted(reply.text)}
        elif reply.tool is not None:
            reply.tool_id = f"call_{reply.tool_id}"
            if SPAWNED in json.dumps(reply.tool.args):
                reply.tool = Tool(reply.tool.name, _fill(reply.tool.args, spawned_agent(body)))
            kind, namespace = _tool_kinds(body).get(reply.tool.name, ("function", ""))
            if kind == "tool_search":
                item = {"type": "tool_search_call", "id": f"ts_scr{ex.n:04d}", "status": "completed",
                        "call_id": reply.tool_id, "execution": "client", "arguments": reply.tool.args}
            elif kind == "custom":
                args = reply.tool.args
                value = args.get("input", "") if isinstance(args, dict) else str(args)
                item = {"type": "custom_tool_call", "id": f"ctc_scr{ex.n:04d}", "status": "completed",
                        "call_id": reply.tool_id, "name": reply.tool.name, "input": value}
            else:
                item = {"type": "function_call", "id": f"fc_scr{ex.n:04d}", "status": "completed",
                        "call_id": reply.tool_id, "name": reply.tool.name, "arguments": json.dumps(reply.tool.args)}
                if namespace:
                    item["namespace"] = namespace
        else:
            item = {"type": "message", "id": f"msg_scr{ex.n:04d}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}
        usage = {"input_tokens": ex.usage["input"], "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": ex.usage["output"], "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": ex.usage["input"] + ex.usage["output"]}
        base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": body.get("model") or "scripted",
                "status": "in_progress", "output": []}
        events: list[tuple[str | None, Any]] = [("response.created", {"type": "response.created", "response": base})]
        if item["type"] == "message":
            events += [
                ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                "item": {**item, "status": "in_progress", "content": []}}),
                ("response.output_text.delta", {"type": "response.output_text.delta", "output_index": 0,
                                                "content_index": 0, "item_id": item["id"], "delta": reply.text}),
            ]
        else:
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                          "item": item}))
        events += [
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {**base, "status": "completed", "output": [item], "usage": usage}}),
        ]
        send_sse(handler, events)
