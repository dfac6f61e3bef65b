"""The message-array importer: every shape it reads (OpenAI Chat, Anthropic Messages, Responses
items, LangChain serialized messages), what it refuses to claim, bad input, and the real LangChain
fixture counted independently with plain ``json``."""

import io
import json
from pathlib import Path

import pytest

from contextviewer.core.records import BadLine, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.messages import parser as messages
from contextviewer.importers.formats import ParseInput
from tests.importers import fixture_files, of


def run(path: Path, value=None) -> list:
    data = path.read_bytes() if value is None else (value if isinstance(value, bytes) else json.dumps(value).encode())
    return list(messages.parse(ParseInput(path=path, stream=io.BytesIO(data))))


def kinds(m: MessageRecord) -> list[str]:
    return [b.kind for b in m.blocks]


OPENAI_CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
    {"role": "assistant", "content": None, "reasoning_content": "Need the tool.",
     "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "not json"}}],
     "usage": {"prompt_tokens": 120, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 100}}},
    {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "noon"}]},
    {"role": "assistant", "content": "18C at noon.", "function_call": {"name": "log", "arguments": "{}"}},
    {"role": "function", "name": "log", "content": "logged"},
]


def test_openai_chat_messages_keep_tool_calls_results_and_measured_usage(tmp_path):
    records = run(tmp_path / "chat.json", OPENAI_CHAT)
    ms = of(records, MessageRecord)
    assert [(m.role, m.record_type) for m in ms] == [
        ("system", "system_prompt"), ("user", "user"), ("assistant", "assistant"),
        ("tool", "tool"), ("tool", "tool"), ("assistant", "assistant"), ("tool", "function"),
    ]
    assert [m.uuid for m in ms] == [f"chat:{n}" for n in range(1, 8)]
    assert kinds(ms[1]) == ["text", "image"] and ms[1].blocks[1].media_type == "image/png"
    assert kinds(ms[2]) == ["thinking", "tool_call", "tool_call"]
    weather, clock = ms[2].blocks[1:]
    assert (weather.tool_id, weather.tool_name, weather.tool_input) == ("call_1", "get_weather", {"city": "Paris"})
    assert (clock.tool_input, clock.text) == ("not json", "not json")
    assert [(m.blocks[0].tool_id, m.blocks[0].text) for m in ms[3:5]] == [("call_1", "18C"), ("call_2", "noon")]
    # A legacy function_call gets an id from its place, and the function result that follows takes it.
    legacy_call = ms[5].blocks[1]
    assert legacy_call.tool_id and ms[6].blocks[0].tool_id == legacy_call.tool_id
    (call,) = of(records, UsageRecord)  # only the message that carries usage
    assert (call.message_uuid, call.input_uncached, call.cache_read, call.output) == ("chat:3", 20, 100, 30)
    assert messages.images(ms[1].raw) == [{"media_type": "image/png", "data": "iVBORw0KGgo="}]


def test_an_anthropic_request_body_keeps_its_system_prompt_and_tools(tmp_path):
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "Be careful."}],
        "tools": [{"name": "bash", "description": "run", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "List files"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "ls", "signature": "sig"},
                                              {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b", "is_error": False}]},
            {"role": "assistant", "content": "Two files.", "usage": {"input_tokens": 5, "cache_creation_input_tokens": 100,
                                                                    "cache_read_input_tokens": 900, "output_tokens": 7}},
        ],
    }
    records = run(tmp_path / "request.json", body)
    ms = of(records, MessageRecord)
    assert [(m.role, m.record_type) for m in ms] == [
        ("system", "system_prompt"), ("system", "tools"), ("user", "user"), ("assistant", "assistant"),
        ("tool", "user"), ("assistant", "assistant"),
    ]
    system, tools = ms[0], ms[1]
    assert system.blocks[0].text == "Be careful."
    assert json.loads(system.raw)["max_tokens"] == 1024 and "messages" not in json.loads(system.raw)
    assert [(b.kind, b.tool_name) for b in tools.blocks] == [("other", "bash")]
    assert kinds(ms[3]) == ["thinking", "tool_call"] and ms[4].blocks[0].tool_id == "toolu_1"
    assert ms[3].model == "claude-sonnet-4-5"
    (call,) = of(records, UsageRecord)
    assert (call.input_uncached, call.cache_write, call.cache_read, call.output) == (5, 100, 900, 7)
    assert records[-1].models == ["claude-sonnet-4-5"]


def test_responses_api_items_become_messages_calls_results_and_thinking(tmp_path):
    body = {
        "model": "gpt-5",
        "instructions": "Answer briefly.",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "2+2?"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Add."}], "encrypted_content": "x"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "calc", "arguments": "{\"expr\": \"2+2\"}"},
            {"type": "function_call_output", "call_id": "call_9", "output": "4"},
            {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "4"}]},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        ],
    }
    ms = of(run(tmp_path / "responses.json", body), MessageRecord)
    assert [(m.role, m.uuid) for m in ms] == [
        ("system", "responses:system"), ("user", "responses:1"), ("assistant", "rs_1"), ("assistant", "fc_1"),
        ("tool", "responses:4"), ("assistant", "msg_1"), ("other", "ws_1"),
    ]
    assert ms[0].record_type == "system_prompt" and ms[0].blocks[0].text == "Answer briefly."
    assert kinds(ms[2]) == ["thinking"] and ms[2].blocks[0].text == "Add."
    assert (ms[3].blocks[0].tool_id, ms[3].blocks[0].tool_input) == ("call_9", {"expr": "2+2"})
    assert (ms[4].blocks[0].tool_id, ms[4].blocks[0].text) == ("call_9", "4")


def test_langchain_messages_in_both_serializations_with_usage_per_ai_message(tmp_path):
    items = [
        {"type": "system", "data": {"content": "Be helpful.", "type": "system", "id": None}},
        {"type": "human", "data": {"content": "Read a.txt", "type": "human", "id": "h1"}},
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"], "kwargs": {
            "id": "ai1", "content": [{"type": "text", "text": "Reading."},
                                     {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.txt"}}],
            "tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}, "id": "t1", "type": "tool_call"},
                           {"name": "ls", "args": {}, "id": "t2", "type": "tool_call"}],
            "response_metadata": {"id": "msg_A", "model_name": "claude-x"},
            "usage_metadata": {"input_tokens": 6720, "output_tokens": 116, "total_tokens": 6836,
                               "input_token_details": {"cache_read": 0, "cache_creation": 6717}}}},
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"], "kwargs": {
            "id": "tm1", "content": "hello", "tool_call_id": "t1", "status": "success"}},
        {"type": "tool", "data": {"content": "boom", "tool_call_id": "t2", "status": "error", "id": "tm2", "type": "tool"}},
        {"type": "ai", "data": {"content": "Done.", "id": "ai2", "type": "ai", "tool_calls": []}},
    ]
    records = run(tmp_path / "lc.json", items)
    ms = of(records, MessageRecord)
    assert [(m.role, m.uuid) for m in ms] == [
        ("system", "lc:1"), ("user", "h1"), ("assistant", "ai1"), ("tool", "tm1"), ("tool", "tm2"), ("assistant", "ai2"),
    ]
    # t1 is written twice (content block and tool_calls): one tool call.
    assert [(b.kind, b.tool_id) for b in ms[2].blocks] == [("text", None), ("tool_call", "t1"), ("tool_call", "t2")]
    assert ms[4].blocks[0].is_error and not ms[3].blocks[0].is_error
    (call,) = of(records, UsageRecord)  # ai2 has no usage_metadata
    assert (call.api_message_id, call.message_uuid, call.model) == ("msg_A", "ai1", "claude-x")
    # usage_metadata is normalized: input_tokens includes cache reads and writes (6720 = 3 + 6717).
    assert (call.input_uncached, call.cache_write, call.cache_read, call.output) == (3, 6717, 0, 116)


def test_duplicate_ids_and_odd_elements_never_stop_the_import(tmp_path):
    items = [{"role": "user", "content": "a", "id": "same"}, {"role": "user", "content": "b", "id": "same"}, 7,
             {"role": "assistant", "content": "c"}]
    records = run(tmp_path / "dups.json", items)
    assert [m.uuid for m in of(records, MessageRecord)] == ["same", "dups:4"]
    assert [b.line_no for b in of(records, BadLine)] == [2, 3]  # the second "same" is said, not dropped silently
    assert records[-1].duplicate_uuids == 1 and records[-1].external_id == "dups"


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "the file is empty"),
        (b"[{\"role\": \"user\",", "not valid JSON"),
        (b"{\"hello\": 1}", "no messages"),
        (b"\x00\x01\x02" * 100, "binary file"),
    ],
)
def test_unreadable_files_say_why(tmp_path, data, words):
    records = run(tmp_path / "x.json", data)
    assert any(isinstance(r, BadLine) and words in r.reason for r in records), records
    assert isinstance(records[-1], SessionInfo)


def test_sniff_claims_message_arrays_and_nothing_else(tmp_path):
    mine = {
        "chat.json": OPENAI_CHAT,
        "body.json": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        "input.json": {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]},
    }
    others = {
        "openhands.json": [{"id": 1, "source": "agent", "action": "run", "args": {}, "message": "x", "timestamp": "t"}],
        "swe.traj": {"history": [{"role": "user", "content": "x", "agent": "main", "message_type": "observation"}], "info": {}},
        "claude.json": [{"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "x"}}],
        "gemini.json": {"sessionId": "s", "projectHash": "h", "messages": [{"id": "m", "type": "user", "content": "x"}]},
        "checkpoint.json": [{"role": "user", "parts": [{"text": "x"}]}, {"role": "model", "parts": [{"text": "y"}]}],
        "lines.jsonl": b'{"role": "user", "content": "a"}\n{"role": "assistant", "content": "b"}\n',
        "empty.json": [],
        "numbers.json": [1, 2, 3],
    }
    for name, value in mine.items():
        path = tmp_path / name
        path.write_text(json.dumps(value))
        assert messages.sniff(path, path.read_bytes()) > 0, name
        assert formats.claim(path).name == "messages", name
    for name, value in others.items():
        path = tmp_path / name
        path.write_bytes(value if isinstance(value, bytes) else json.dumps(value).encode())
        assert messages.sniff(path, path.read_bytes()) == 0.0, name


def test_a_large_array_is_sniffed_from_its_first_elements(tmp_path):
    items = [{"role": "user" if n % 2 == 0 else "assistant", "content": "x" * 500} for n in range(400)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(items, indent=1))
    head = formats.head_of(path)
    assert len(head) < path.stat().st_size
    assert messages.sniff(path, head) > 0
    assert len(of(run(path), MessageRecord)) == 400


# -- the real fixture, counted independently --------------------------------------------------------


# (messages, model calls, tool calls) as a person counts them reading the file.
FIXTURE_COUNTS = {"langchain-ai__deepagents__summarization_seed_messages.json": (6, 3, 2)}


def count_independently(path: Path) -> tuple[int, int, int]:
    items = json.loads(path.read_text(encoding="utf-8"))
    calls = sum(1 for x in items if x["id"][-1] == "AIMessage" and isinstance(x["kwargs"].get("usage_metadata"), dict))
    tool_calls = {c["id"] for x in items if x["id"][-1] == "AIMessage" for c in x["kwargs"].get("tool_calls", [])}
    return len(items), calls, len(tool_calls)


@pytest.mark.fixtures
@pytest.mark.parametrize("path", fixture_files("langchain-messages") or [None], ids=lambda p: p.name[:50] if p else "absent")
def test_the_langchain_fixture_parses_with_the_counts_a_person_would_count(path):
    if path is None:
        pytest.skip("../shared/fixtures is absent")
    assert formats.claim(path).name == "messages"
    records = run(path)
    ms = of(records, MessageRecord)
    counted = count_independently(path)
    assert counted == FIXTURE_COUNTS[path.name]
    tool_calls = sum(1 for m in ms for b in m.blocks if b.kind == "tool_call")
    assert (len(ms), len(of(records, UsageRecord)), tool_calls) == counted
    assert of(records, BadLine) == []
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert [m.uuid for m in ms] == [x["kwargs"]["id"] for x in raw]
    # Every tool result answers a call made before it.
    made = set()
    for m in ms:
        made |= {b.tool_id for b in m.blocks if b.kind == "tool_call"}
        if m.role == "tool":
            assert m.blocks[0].tool_id in made
    # LangChain's normalized input: uncached + cache write + cache read = input_tokens.
    for call, item in zip(of(records, UsageRecord), [x for x in raw if x["kwargs"].get("usage_metadata")]):
        assert call.input_uncached + call.cache_write + call.cache_read == item["kwargs"]["usage_metadata"]["input_tokens"]
