"""OpenHands importer: v0 trajectories (a JSON list of events) and v1 conversation folders
(base_state.json + events/). Synthetic input written here, then the real fixtures, whose counts are
stated below and checked against plain JSON counting."""

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.openhands import parser as openhands
from contextviewer.importers.formats import ParseInput, head_of
from tests.importers import fixture_files, of, parse_path


def tcm(call_id, name, response_id, usage=None, calls=None, text=None):
    message = {"role": "assistant", "content": text, "tool_calls": calls or []}
    return {
        "function_name": name,
        "tool_call_id": call_id,
        "model_response": {"id": response_id, "model": "claude-x", "choices": [{"message": message}], "usage": usage},
        "total_calls_in_response": len(calls or [1]),
    }


USAGE_A = {  # LiteLLM for Anthropic: prompt_tokens counts cache reads and writes too
    "prompt_tokens": 1000, "completion_tokens": 50,
    "prompt_tokens_details": {"cached_tokens": 600}, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 600,
}
USAGE_B = {"prompt_tokens": 2000, "completion_tokens": 70, "prompt_tokens_details": {"cached_tokens": 1500}}


def v0_events() -> list:
    call_run = {"id": "toolu_run", "function": {"name": "execute_bash", "arguments": json.dumps({"command": "ls"})}}
    call_read = {"id": "toolu_read", "function": {"name": "str_replace_editor", "arguments": json.dumps({"command": "view", "path": "/w"})}}
    metrics = {"token_usages": [{"response_id": "resp-C", "prompt_tokens": 3000, "cache_read_tokens": 2500, "cache_write_tokens": 100, "completion_tokens": 40, "context_window": 200000, "model": "claude-x"}]}
    return [
        {"id": 0, "timestamp": "2025-01-01T10:00:00", "source": "agent", "message": "You are OpenHands", "action": "system",
         "args": {"content": "You are OpenHands agent.", "tools": [{"type": "function", "function": {"name": "execute_bash"}}]}},
        {"id": 1, "timestamp": "2025-01-01T10:00:01", "source": "user", "message": "list files", "action": "message",
         "args": {"content": "list the files, then read /w", "image_urls": None}},
        {"id": 2, "timestamp": "2025-01-01T10:00:02", "source": "environment", "observation": "agent_state_changed",
         "content": "", "extras": {"agent_state": "running"}},
        # One response, two tool calls: one model call, the model's text on the first action only.
        {"id": 3, "timestamp": "2025-01-01T10:00:03", "source": "agent", "message": "Running command: ls", "action": "run",
         "args": {"command": "ls", "thought": "Let me look."},
         "tool_call_metadata": tcm("toolu_run", "execute_bash", "resp-A", USAGE_A, [call_run, call_read], "Let me look.")},
        {"id": 4, "timestamp": "2025-01-01T10:00:03", "source": "agent", "message": "Reading /w", "action": "read",
         "args": {"path": "/w", "thought": ""},
         "tool_call_metadata": tcm("toolu_read", "str_replace_editor", "resp-A", USAGE_A, [call_run, call_read], "Let me look.")},
        {"id": 5, "timestamp": "2025-01-01T10:00:04", "source": "agent", "message": "ran", "cause": 3, "observation": "run",
         "content": "a.txt\nb.txt", "extras": {"metadata": {"exit_code": 0}}, "success": True,
         "tool_call_metadata": tcm("toolu_run", "execute_bash", "resp-A", USAGE_A, [call_run, call_read])},
        {"id": 6, "timestamp": "2025-01-01T10:00:04", "source": "agent", "message": "read", "cause": 4, "observation": "error",
         "content": "no such file", "extras": {},
         "tool_call_metadata": tcm("toolu_read", "str_replace_editor", "resp-A", USAGE_A, [call_run, call_read])},
        # A non-function-calling action: no tool_call_metadata; its observation pairs by cause.
        {"id": 7, "timestamp": "2025-01-01T10:00:05", "source": "agent", "message": "Running python", "action": "run_ipython",
         "args": {"code": "print(1)", "thought": "Try python."}, "llm_metrics": metrics},
        {"id": 8, "timestamp": "2025-01-01T10:00:06", "source": "agent", "cause": 7, "observation": "run_ipython",
         "content": "1", "extras": {}, "llm_metrics": metrics},
        "not an event",
        {"id": 9, "timestamp": "2025-01-01T10:00:07", "source": "agent", "message": "Summarizing", "action": "condensation",
         "args": {"forgotten_events_start_id": 3, "forgotten_events_end_id": 6, "summary": "Listed files; /w is missing.", "summary_offset": 2}},
        {"id": 10, "timestamp": "2025-01-01T10:00:08", "source": "agent", "message": "Done", "action": "message",
         "args": {"content": "Done: a.txt and b.txt."},
         "tool_call_metadata": None},
    ]


def test_v0_events_map_to_messages_tool_pairs_calls_and_a_fold(tmp_path):
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(v0_events(), indent=1))
    assert openhands.sniff(path, head_of(path)) > 0.5
    records = parse_path(openhands.parse, path)
    messages = {m.uuid: m for m in of(records, MessageRecord)}
    # 11 events + the tool list of the system event + the fold's summary.
    assert len(messages) == 11 + 1 + 1
    assert messages["0"].role == "system" and messages["0"].record_type == "system_prompt"
    assert messages["0:tools"].record_type == "tool_definitions"
    assert messages["1"].role == "user" and messages["1"].blocks[0].text.startswith("list the files")
    assert messages["2"].role == "other"
    # Both actions of response A: the text once, one tool call each, one shared call id.
    assert [b.kind for b in messages["3"].blocks] == ["text", "tool_call"]
    assert [b.kind for b in messages["4"].blocks] == ["tool_call"]
    assert messages["3"].blocks[1].tool_input == {"command": "ls"}
    assert messages["4"].blocks[0].tool_input == {"command": "view", "path": "/w"}
    assert messages["3"].api_message_id == messages["4"].api_message_id == "resp-A"
    # Observations are tool results answering their calls; an error stays an error.
    assert messages["5"].role == "tool" and messages["5"].blocks[0].tool_id == "toolu_run"
    assert messages["6"].blocks[0].tool_id == "toolu_read" and messages["6"].blocks[0].is_error
    assert messages["7"].blocks[-1].tool_id == "call-7" and messages["7"].blocks[-1].tool_name == "run_ipython"
    assert messages["8"].role == "tool" and messages["8"].blocks[0].tool_id == "call-7"
    assert messages["10"].role == "assistant"

    calls = {u.api_message_id: u for u in of(records, UsageRecord)}
    assert set(calls) == {"resp-A", "resp-C"}  # A repeated on 4 events, C on 2: one call each
    a = calls["resp-A"]
    assert (a.input_uncached, a.cache_write, a.cache_read, a.output) == (100, 300, 600, 50)
    assert a.message_uuid == "3" and a.context_size == 1000
    c = calls["resp-C"]
    assert (c.input_uncached, c.cache_write, c.cache_read, c.output) == (400, 100, 2500, 40)
    assert c.message_uuid == "7"

    [fold] = of(records, FoldRecord)
    assert fold.boundary_uuid == "9" and messages["9"].subtype == "compact_boundary"
    assert fold.summary_uuid == "9:summary" and messages["9:summary"].is_compact_summary
    assert fold.summary_text == "Listed files; /w is missing."
    # Events 3-6 were forgotten; the system prompt, the task and the python call stay in view.
    assert fold.preserved_uuids == ["0", "0:tools", "1", "7", "8"]

    [bad] = of(records, BadLine)
    assert bad.line_no == 10 and "not an event" in bad.reason
    info = records[-1]
    assert isinstance(info, SessionInfo) and info.external_id.startswith("trajectory-")
    assert info.window == 200000 and info.models == ["claude-x"]


def test_an_old_condense_observation_is_a_fold_of_everything_before_it(tmp_path):
    events = [
        {"id": 0, "timestamp": "2025-01-01T10:00:00", "source": "user", "action": "message", "args": {"content": "task"}},
        {"id": 1, "timestamp": "2025-01-01T10:00:01", "source": "agent", "action": "message", "args": {"content": "ok"}},
        {"id": 2, "timestamp": "2025-01-01T10:00:02", "source": "agent", "observation": "condense", "content": "The user asked for a task."},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(events))
    records = parse_path(openhands.parse, path)
    [fold] = of(records, FoldRecord)
    assert fold.boundary_uuid == "2" and fold.preserved_uuids == []
    assert fold.summary_text == "The user asked for a task."
    assert [m.uuid for m in of(records, MessageRecord)] == ["0", "1", "2", "2:summary"]


def test_a_v0_uuid_is_the_event_id_and_stays_the_same_when_the_trajectory_grows(tmp_path):
    path = tmp_path / "t.json"
    events = v0_events()
    path.write_text(json.dumps(events[:3]))
    first = parse_path(openhands.parse, path)
    path.write_text(json.dumps(events))
    again = parse_path(openhands.parse, path)
    assert [m.uuid for m in of(first, MessageRecord)] == [m.uuid for m in of(again, MessageRecord)][:4]
    assert first[-1].external_id == again[-1].external_id


def write_v1(folder: Path) -> Path:
    """A v1 conversation folder as the agent-sdk writes it."""
    events = folder / "events"
    events.mkdir(parents=True)
    listed = [
        {"kind": "SystemPromptEvent", "id": "e-sys", "timestamp": "2025-06-01T09:00:00", "source": "agent",
         "system_prompt": {"type": "text", "text": "You are OpenHands."}, "tools": [{"name": "terminal"}]},
        {"kind": "MessageEvent", "id": "e-user", "timestamp": "2025-06-01T09:00:01", "source": "user",
         "llm_message": {"role": "user", "content": [{"type": "text", "text": "fix the bug"}]}},
        {"kind": "ActionEvent", "id": "e-act", "timestamp": "2025-06-01T09:00:02", "source": "agent",
         "thought": [{"type": "text", "text": "Run the tests."}], "reasoning_content": "tests first",
         "tool_name": "terminal", "tool_call_id": "call-1",
         "tool_call": {"id": "call-1", "name": "terminal", "arguments": "{\"command\": \"pytest\"}", "origin": "completion"},
         "llm_response_id": "r-1", "action": {"kind": "TerminalAction", "command": "pytest"}},
        {"kind": "ObservationEvent", "id": "e-obs", "timestamp": "2025-06-01T09:00:03", "source": "environment",
         "tool_name": "terminal", "tool_call_id": "call-1", "action_id": "e-act",
         "observation": {"kind": "TerminalObservation", "content": [{"type": "text", "text": "1 failed"}], "is_error": False}},
        {"kind": "Condensation", "id": "e-cond", "timestamp": "2025-06-01T09:00:04", "source": "environment",
         "forgotten_event_ids": ["e-act", "e-obs"], "summary": "Tests ran: 1 failed.", "summary_offset": 1,
         "llm_response_id": "r-cond"},
        {"kind": "MessageEvent", "id": "e-agent", "timestamp": "2025-06-01T09:00:05", "source": "agent",
         "llm_message": {"role": "assistant", "content": [{"type": "text", "text": "One test fails."}]},
         "llm_response_id": "r-2"},
        {"kind": "ConversationStateUpdateEvent", "id": "e-state", "timestamp": "2025-06-01T09:00:06",
         "source": "environment", "key": "execution_status", "value": "finished"},
    ]
    for n, event in enumerate(listed):
        (events / f"event-{n:05d}-{event['id']}.json").write_text(json.dumps(event))
    (events / "event-00007-broken.json").write_text("{not json")
    usage = lambda rid, prompt, read, out: {  # noqa: E731
        "model": "gpt-x", "prompt_tokens": prompt, "completion_tokens": out, "cache_read_tokens": read,
        "cache_write_tokens": 0, "context_window": 128000, "response_id": rid,
    }
    state = {
        "id": "conv-123", "agent": {"llm": {"model": "gpt-x"}}, "workspace": {"working_dir": "/repo"},
        "stats": {"usage_to_metrics": {
            "agent": {"model_name": "gpt-x", "token_usages": [usage("r-1", 5000, 4000, 30), usage("r-2", 6000, 5000, 20), usage("r-lost", 1, 0, 1)]},
            "condenser": {"model_name": "gpt-x", "token_usages": [usage("r-cond", 7000, 0, 200)]},
        }},
    }
    (folder / "base_state.json").write_text(json.dumps(state))
    return folder


def test_a_v1_folder_is_one_session(tmp_path):
    folder = write_v1(tmp_path / "conv-123")
    assert openhands.sniff(folder, b"") == 0.9
    event_file = next((folder / "events").iterdir())
    assert openhands.sniff(event_file, head_of(event_file)) == 0.0  # an event alone is no session
    assert openhands.sniff(folder / "base_state.json", head_of(folder / "base_state.json")) == 0.0
    records = parse_path(openhands.parse, folder)
    messages = {m.uuid: m for m in of(records, MessageRecord)}
    assert list(messages) == ["e-sys", "e-sys:tools", "e-user", "e-act", "e-obs", "e-cond", "e-cond:summary", "e-agent", "e-state"]
    assert messages["e-user"].role == "user"
    act = messages["e-act"]
    assert [b.kind for b in act.blocks] == ["thinking", "text", "tool_call"]
    assert act.blocks[2].tool_id == "call-1" and act.blocks[2].tool_input == {"command": "pytest"}
    assert messages["e-obs"].role == "tool" and messages["e-obs"].blocks[0].text == "1 failed"
    assert messages["e-obs"].blocks[0].tool_id == "call-1"
    assert messages["e-state"].role == "other"
    calls = {u.api_message_id: u for u in of(records, UsageRecord)}
    # The condenser's call is the fold's, and a usage with no event has no place: two calls.
    assert set(calls) == {"r-1", "r-2"}
    assert calls["r-1"].message_uuid == "e-act" and calls["r-1"].input_uncached == 1000
    # v1 events name no model, their usage does: the first message of each call carries it.
    assert [(u, m.model) for u, m in messages.items() if m.model] == [("e-act", "gpt-x"), ("e-agent", "gpt-x")]
    assert messages["e-cond"].flags["condenser_usage"]["prompt_tokens"] == 7000
    [fold] = of(records, FoldRecord)
    # Condensation.apply: the kept events, the summary inserted at summary_offset 1 (after the system prompt).
    assert fold.preserved_uuids == ["e-sys", "e-sys:tools", "e-cond:summary", "e-user"]
    assert fold.trigger == "auto"  # no CondensationRequest before it: the condenser's own limit
    assert fold.summary_text == "Tests ran: 1 failed."
    [bad] = of(records, BadLine)
    assert "event-00007-broken.json" in bad.reason and bad.line_no == 8
    info = records[-1]
    assert info.external_id == "conv-123" and info.cwd == "/repo" and info.window == 128000


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"", "empty"), (b"[{\"id\": 0, \"source\": \"user\"", "not valid JSON"), (b"\x00\x01\x02" * 50, "binary"),
     (b"{\"a\": 1}", "not an OpenHands event list")],
)
def test_a_broken_trajectory_is_a_bad_line_never_an_exception(tmp_path, content, reason):
    path = tmp_path / "broken.json"
    path.write_bytes(content)
    records = parse_path(openhands.parse, path)
    assert isinstance(records[0], BadLine) and reason in records[0].reason
    assert isinstance(records[-1], SessionInfo)


@pytest.mark.parametrize(
    "content",
    [
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],  # a message array
        [{"action": "run", "source": "agent", "args": {}}],  # no id, no timestamp
        {"history": [{"role": "system", "content": "x", "message_type": "system_prompt"}], "trajectory": []},
    ],
)
def test_other_json_is_not_claimed(tmp_path, content):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(content))
    assert openhands.sniff(path, head_of(path)) == 0.0


def test_a_trajectory_whose_first_event_is_bigger_than_the_sniffed_head_is_still_claimed(tmp_path):
    events = v0_events()
    events[0]["args"]["content"] = "x" * 100_000
    path = tmp_path / "big.json"
    path.write_text(json.dumps(events))
    assert openhands.sniff(path, head_of(path)) > 0.5


# -- the real fixtures ----------------------------------------------------------------------------

# file -> (events, tool calls, tool results, model calls), as a person counts them: a `finish`
# action is the agent's last word, not a tool call (OpenHands replays it as text; it is never run).
FIXTURE_COUNTS = {
    "All-Hands-AI__OpenHands__basic.json": (4, 1, 1, 2),
    "All-Hands-AI__OpenHands__basic_interactions.json": (6, 0, 0, 1),
    "All-Hands-AI__OpenHands__wrong_initial_state.json": (8, 3, 3, 4),
}


def count_independently(path: Path) -> tuple[int, int, int, int]:
    events = json.loads(path.read_text())
    calls = sum(1 for e in events if "action" in e and e["action"] != "finish" and e.get("tool_call_metadata"))
    results = sum(1 for e in events if "observation" in e and e.get("tool_call_metadata"))
    responses = {e["tool_call_metadata"]["model_response"]["id"] for e in events
                 if e.get("tool_call_metadata") and e["tool_call_metadata"]["model_response"].get("usage")}
    return len(events), calls, results, len(responses)


@pytest.mark.parametrize("path", fixture_files("openhands", "*.json"), ids=lambda p: p.name if p else "absent")
def test_every_fixture_imports_with_the_counts_a_person_would_count(path):
    expected = FIXTURE_COUNTS[path.name]
    assert count_independently(path) == expected
    assert formats.claim(path).name == "openhands"
    records = parse_path(openhands.parse, path)
    messages = of(records, MessageRecord)
    tool_calls = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    results = [b for m in messages for b in m.blocks if b.kind == "tool_result"]
    assert (len(messages), len(tool_calls), len(results), len(of(records, UsageRecord))) == expected
    assert not of(records, BadLine)
    # Every result answers a call made before it; uuids are the event ids.
    seen = set()
    for m in messages:
        for b in m.blocks:
            if b.kind == "tool_call":
                seen.add(b.tool_id)
            elif b.kind == "tool_result":
                assert b.tool_id in seen
    assert [m.uuid for m in messages] == [str(e["id"]) for e in json.loads(path.read_text())]
    # The agent's finish: its last words, with the (never executed) call's id kept aside.
    for e, m in zip(json.loads(path.read_text()), messages):
        if e.get("action") == "finish":
            assert m.role == "assistant" and [b.kind for b in m.blocks] == ["text"]
            assert m.blocks[0].text.startswith(e["args"]["thought"] or e["message"])
            assert m.flags["tool_call"]["id"] == e["tool_call_metadata"]["tool_call_id"]
    # Every call's measured input adds up to the prompt the log reports.
    by_id = {}
    for e in json.loads(path.read_text()):
        response = (e.get("tool_call_metadata") or {}).get("model_response") or {}
        if response.get("usage"):
            by_id.setdefault(response["id"], response["usage"])
    for call in of(records, UsageRecord):
        assert call.context_size == by_id[call.api_message_id]["prompt_tokens"]
        assert call.output == by_id[call.api_message_id]["completion_tokens"]



# -- odd values never cost an event ----------------------------------------------------------------

ODD = st.one_of(st.none(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=5), st.booleans(),
                st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.none(), max_size=2))


@given(st.lists(st.tuples(st.integers(0, 10), st.integers(0, 20), ODD), max_size=12))
@settings(max_examples=80, deadline=None)
def test_any_field_of_any_type_is_read_without_losing_the_event(changes):
    events = [e for e in v0_events() if isinstance(e, dict)]
    for index, key_index, value in changes:
        event = events[index % len(events)]
        keys = sorted(event)
        event[keys[key_index % len(keys)]] = value
    records = list(openhands.parse(ParseInput(path=Path("t.json"), stream=io.BytesIO(json.dumps(events).encode()))))
    assert isinstance(records[-1], SessionInfo)
    # A bad value where an event's kind is told (NaN, an infinity, a NUL) is said, and the event still kept.
    assert all(", so it was kept as a" in b.reason for b in of(records, BadLine))
    assert len(of(records, MessageRecord)) >= len(events)  # every event is a message (or two)


# -- the CLI's conversation folder (OpenHands CLI 1.16.0): sub-agents, the summary's place ---------


def _event(folder: Path, n: int, event: dict) -> None:
    (folder / "events").mkdir(parents=True, exist_ok=True)
    (folder / "events" / f"event-{n:05d}-{event['id']}.json").write_text(json.dumps(event))


def _msg(eid, source, text, rid=None):
    role = "user" if source == "user" else "assistant"
    event = {"kind": "MessageEvent", "id": eid, "timestamp": "2026-12-07T14:54:58", "source": source,
             "llm_message": {"role": role, "content": [{"type": "text", "text": text}]}}
    return {**event, "llm_response_id": rid} if rid else event


def _act(eid, call_id, tool, args, rid):
    return {"kind": "ActionEvent", "id": eid, "timestamp": "2026-12-07T14:54:59", "source": "agent", "thought": [],
            "tool_name": tool, "tool_call_id": call_id, "llm_response_id": rid,
            "tool_call": {"id": call_id, "name": tool, "arguments": json.dumps(args), "origin": "completion"}}


def _obs(eid, call_id, tool, text, **observation):
    return {"kind": "ObservationEvent", "id": eid, "timestamp": "2026-12-07T14:55:00", "source": "environment",
            "tool_name": tool, "tool_call_id": call_id,
            "observation": {"content": [{"type": "text", "text": text}], "is_error": False, **observation}}


def write_cli_conversation(root: Path) -> Path:
    """~/.openhands/conversations/ as the CLI writes it (the layout of a run of OpenHands CLI 1.16.0
    against the scripted server, ops/drivers/openhands_cli.py): one conversation whose terminal call
    ran `ls`, a /condense (a CondensationRequest, then the Condensation: it forgot the call, its
    result and the first answer, its summary at offset 2, after the system prompt and the prompt),
    then a task call whose sub-agent wrote subagents/<id>/."""
    conv = root / "53c3a935577e4dd1a1660b1a97ba394c"
    meta = {"exit_code": 0, "pid": -1, "working_dir": "/w/project", "py_interpreter_path": "/usr/bin/python",
            "prefix": "", "suffix": "\n[The command completed with exit code 0.]"}
    events = [
        {"kind": "SystemPromptEvent", "id": "e-sys", "timestamp": "2026-12-07T14:54:57", "source": "agent",
         "system_prompt": {"type": "text", "text": "You are OpenHands agent"}, "tools": [{"name": "terminal"}]},
        _msg("e-u1", "user", "list the files"),
        _act("e-a1", "call_1", "terminal", {"command": "ls", "security_risk": "LOW"}, "r-0"),
        _obs("e-o1", "call_1", "terminal", "README.md  app.py", kind="TerminalObservation", metadata=meta),
        _msg("e-m1", "agent", "Two files.", "r-1"),
        {"kind": "CondensationRequest", "id": "e-req", "timestamp": "2026-12-07T14:55:10", "source": "environment"},
        {"kind": "Condensation", "id": "e-cond", "timestamp": "2026-12-07T14:55:11", "source": "environment",
         "forgotten_event_ids": ["e-a1", "e-o1", "e-m1"], "summary": "Listed two files.", "summary_offset": 2,
         "llm_response_id": "r-c"},
        _msg("e-u2", "user", "ask a sub-agent to read app.py"),
        _act("e-a2", "call_2", "task", {"description": "Read app.py", "prompt": "read app.py", "subagent_type": "default",
                                        "security_risk": "LOW"}, "r-2"),
        _obs("e-o2", "call_2", "task", "app.py defines greet.", kind="TaskObservation", task_id="task_00000001"),
        _msg("e-m2", "agent", "It defines greet.", "r-3"),
    ]
    for n, event in enumerate(events):
        _event(conv, n, event)
    usage = lambda rid, prompt: {"model": "openai/scripted", "prompt_tokens": prompt, "completion_tokens": 9,  # noqa: E731
                                 "cache_read_tokens": 0, "cache_write_tokens": 0, "context_window": 0, "response_id": rid}
    state = {"id": "53c3a935-577e-4dd1-a166-0b1a97ba394c", "workspace": {"working_dir": "/w/project"},
             "stats": {"usage_to_metrics": {
                 "agent": {"model_name": "openai/scripted", "token_usages": [usage(r, 8000 + i) for i, r in enumerate(["r-0", "r-1", "r-2", "r-3"])]},
                 "condenser": {"model_name": "openai/scripted", "token_usages": [usage("r-c", 1000)]}}}}
    (conv / "base_state.json").write_text(json.dumps(state))
    sub = conv / "subagents" / "e3496a737fb1451ebb1a48e9985978d2"
    for n, event in enumerate([
        {"kind": "SystemPromptEvent", "id": "s-sys", "timestamp": "2026-12-07T14:56:14", "source": "agent",
         "system_prompt": {"type": "text", "text": "You are OpenHands agent"}},
        {**_msg("s-u1", "user", "read app.py"), "sender": "OpenHands Agent"},
        _msg("s-m1", "agent", "app.py defines greet.", "r-s0"),
    ]):
        _event(sub, n, event)
    (sub / "base_state.json").write_text(json.dumps({"id": "e3496a73-7fb1-451e-bb1a-48e9985978d2", "stats": {
        "usage_to_metrics": {"agent": {"token_usages": [usage("r-s0", 7000)]}}}}))
    return root


def test_the_cli_folder_reads_its_sub_agent_under_the_task_call_and_the_summary_where_it_was_sent(tmp_path):
    root = write_cli_conversation(tmp_path / "conversations")
    (found,) = formats.discover(root).sessions  # one conversation: its sub-agent's folder is read with it
    assert found.format == "openhands" and found.main.name == "53c3a935577e4dd1a1660b1a97ba394c"
    assert [(s.path.name, s.agent_id) for s in found.subagents] == [("e3496a737fb1451ebb1a48e9985978d2",) * 2]
    records = parse_path(openhands.parse, found.main)
    (link,) = of(records, AgentLink)
    # The task call is event 9 of the folder (e-a2); its description and subagent_type name the child.
    assert (link.agent_id, link.tool_use_id, link.line_no, link.agent_type, link.description) == (
        "e3496a737fb1451ebb1a48e9985978d2", "call_2", 9, "default", "Read app.py")
    (fold,) = of(records, FoldRecord)
    # Condensation.apply: the kept events (system prompt, first prompt, the later prompt), the summary
    # at offset 2; the CondensationRequest before it makes its trigger unknown (/condense or an overflow).
    assert fold.preserved_uuids == ["e-sys", "e-sys:tools", "e-u1", "e-cond:summary"]
    assert fold.trigger is None and fold.metadata["requested"] is True
    messages = {m.uuid: m for m in of(records, MessageRecord)}
    # What the model got for `ls` (TerminalObservation.to_llm_content), as the CLI's request carried it.
    assert messages["e-o1"].blocks[0].text == (
        "README.md  app.py\n[The command completed with exit code 0.]\n[Current working directory: /w/project]\n"
        "[Python interpreter: /usr/bin/python]\n[Command finished with exit code 0]")
    # Four agent calls (r-0 .. r-3); the condenser's r-c is the fold's.
    assert sorted(u.api_message_id for u in of(records, UsageRecord)) == ["r-0", "r-1", "r-2", "r-3"]
    sub = parse_path(openhands.parse, found.subagents[0].path)
    assert [m.uuid for m in of(sub, MessageRecord) if m.role in ("user", "assistant")] == ["s-u1", "s-m1"]
    assert not of(sub, AgentLink)  # read as a sub-agent, it names no child (parse_path: agent_id unset, no subagents/)
