"""The scripted model server (ops/scripted/) through the official SDKs, as the agents reach it: each
prompt's tool calls one per response, then its answer; a compaction request gets the summary; a
call without tools is a side call; the usage reported is the plan's where it sets one; every
request is recorded with the window it carried."""

from __future__ import annotations

import anthropic
import openai
import pytest

from ops.scripted.plan import Plan, Prompt, Tool
from ops.scripted.server import ScriptedServer

TOOLS_A = [{"name": "Read", "description": "read a file", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]
TOOLS_O = [{"type": "function", "function": {"name": "read", "description": "read a file",
                                              "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


def _plan(tool_name: str) -> Plan:
    return Plan([Prompt("mk-1: read a.txt", "mk-1", [Tool(tool_name, {"path": "a.txt"})], "It says hi.", input_tokens={1: 150_000})])


@pytest.fixture
def anthropic_server():
    with ScriptedServer(_plan("Read")) as srv:
        yield srv, anthropic.Anthropic(base_url=srv.url, api_key="x", max_retries=0)


def test_anthropic_tool_call_then_answer_with_the_plans_usage(anthropic_server):
    srv, client = anthropic_server
    first = client.messages.create(model="m", max_tokens=100, tools=TOOLS_A, messages=[{"role": "user", "content": "mk-1: read a.txt"}])
    (call,) = first.content
    assert (first.stop_reason, call.type, call.name, call.input) == ("tool_use", "tool_use", "Read", {"path": "a.txt"})
    history = [
        {"role": "user", "content": "mk-1: read a.txt"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": call.id, "name": "Read", "input": call.input}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "hi"}]},
    ]
    with client.messages.stream(model="m", max_tokens=100, tools=TOOLS_A, messages=history) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == "It says hi." and final.usage.input_tokens == 150_000
    mains = srv.calls("main")
    assert [e.step for e in mains] == [0, 1] and mains[0].reply.tool_id == call.id
    window = mains[1].view.items
    assert [(i.kind, i.tool_id) for i in window] == [("text", None), ("tool_call", call.id), ("tool_result", call.id)]


def test_anthropic_compaction_and_side_calls_are_not_main_calls(anthropic_server):
    srv, client = anthropic_server
    summary = client.messages.create(model="m", max_tokens=100, tools=TOOLS_A, messages=[
        {"role": "user", "content": "mk-1: read a.txt"},
        {"role": "assistant", "content": "It says hi."},
        {"role": "user", "content": "Your task is to create a detailed summary of the conversation so far."},
    ])
    title = client.messages.create(model="m", max_tokens=20, messages=[{"role": "user", "content": "Give this chat a title"}])
    assert summary.content[0].text == srv.plan.summary and title.content[0].text == srv.plan.side_text
    assert [e.kind for e in srv.exchanges] == ["compaction", "side"] and not srv.calls("main")
    assert client.messages.count_tokens(model="m", messages=[{"role": "user", "content": "x"}]).input_tokens > 0


def test_chat_completions_stream_and_json():
    with ScriptedServer(_plan("read")) as srv:
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="x", max_retries=0)
        first = client.chat.completions.create(model="m", tools=TOOLS_O, messages=[
            {"role": "system", "content": "be brief"}, {"role": "user", "content": "mk-1: read a.txt"}])
        (call,) = first.choices[0].message.tool_calls
        assert (call.function.name, call.function.arguments) == ("read", '{"path": "a.txt"}')
        chunks = list(client.chat.completions.create(model="m", tools=TOOLS_O, stream=True, stream_options={"include_usage": True}, messages=[
            {"role": "system", "content": "be brief"}, {"role": "user", "content": "mk-1: read a.txt"},
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": "hi"}]))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        usage = next(c.usage for c in chunks if c.usage)
        assert text == "It says hi." and usage.prompt_tokens == 150_000
        last = srv.calls("main")[-1]
        assert last.view.system == "be brief"
        assert [(i.kind, i.tool_id) for i in last.view.items] == [("text", None), ("tool_call", call.id), ("tool_result", call.id)]
        assert [m.id for m in client.models.list()] == ["scripted"]
