"""SWE-agent importer (.traj): messages from the history (what the model saw), else from the
trajectory steps; the action as a tool call and the observation as its result; one model call per
step with no measured usage (the log has only totals). Synthetic input first, then the real
fixtures, whose counts are stated below and checked against plain JSON counting."""

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextviewer.core.records import BadLine, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.swe_agent import parser as swe_agent
from contextviewer.importers.formats import ParseInput, head_of
from tests.importers import fixture_files, of, parse_path


def fc_traj() -> dict:
    """Function calling: tool_calls in the history, three steps in the trajectory."""
    def call(cid, name, args):
        return [{"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]

    history = [
        {"role": "system", "content": "SETTING: you are an autonomous programmer", "agent": "main", "message_type": "system_prompt"},
        {"role": "user", "content": [{"type": "text", "text": "Fix issue #1", "cache_control": {"type": "ephemeral"}}], "agent": "main", "message_type": "observation"},
        {"role": "assistant", "content": "Look around.", "thought": "Look around.", "action": "ls -F", "agent": "main",
         "message_type": "action", "tool_calls": call("c1", "bash", {"command": "ls -F"})},
        {"role": "tool", "content": "src/ tests/", "agent": "main", "message_type": "observation", "tool_call_ids": ["c1"]},
        {"role": "assistant", "content": "Same id again.", "action": "ls src", "agent": "main", "message_type": "action",
         "tool_calls": call("c1", "bash", {"command": "ls src"})},
        {"role": "tool", "content": "a.py", "agent": "main", "message_type": "observation", "tool_call_ids": ["c1"]},
        {"role": "assistant", "content": "Submit.", "action": "submit", "agent": "main", "message_type": "action",
         "tool_calls": call("c2", "submit", {})},
        {"role": "tool", "content": "diff --git a/a.py b/a.py", "agent": "main", "message_type": "observation", "tool_call_ids": ["c2"]},
    ]
    steps = [{"thought": "t", "action": a, "observation": "o", "response": "r", "state": "{}", "execution_time": 0.1}
             for a in ("ls -F", "ls src", "submit")]
    info = {"exit_status": "submitted", "submission": "diff --git a/a.py b/a.py",
            "model_stats": {"instance_cost": 0.12, "tokens_sent": 9000, "tokens_received": 300, "api_calls": 3}}
    config = json.dumps({"agent": {"model": {"name": "gpt-4o"}}})
    return {"trajectory": steps, "history": history, "info": info, "replay_config": config, "environment": "main"}


def test_history_messages_tool_pairs_and_one_unmeasured_call_per_step(tmp_path):
    path = tmp_path / "inst-1" / "inst-1.traj"
    path.parent.mkdir()
    path.write_text(json.dumps(fc_traj(), indent=2))
    assert swe_agent.sniff(path, head_of(path)) == 0.9
    records = parse_path(swe_agent.parse, path)
    messages = of(records, MessageRecord)
    # 8 history messages + the info message at the end.
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "other"]
    assert messages[0].record_type == "system_prompt"
    assert messages[1].blocks[0].text == "Fix issue #1"
    calls = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert [(b.tool_id, b.tool_name, b.tool_input) for b in calls] == [
        ("c1", "bash", {"command": "ls -F"}), ("c1", "bash", {"command": "ls src"}), ("c2", "submit", {}),
    ]
    results = [b for m in messages for b in m.blocks if b.kind == "tool_result"]
    assert [(b.tool_id, b.text) for b in results] == [("c1", "src/ tests/"), ("c1", "a.py"), ("c2", "diff --git a/a.py b/a.py")]
    assert all(m.model == "gpt-4o" for m in messages if m.role == "assistant")

    usage = of(records, UsageRecord)
    assert len(usage) == 3  # the three steps, with nothing measured
    assert all((u.input_uncached, u.cache_write, u.cache_read, u.output) == (0, 0, 0, 0) for u in usage)
    assistants = [m for m in messages if m.role == "assistant"]
    assert [u.message_uuid for u in usage] == [m.uuid for m in assistants]
    assert all(m.flags["usage_unmeasured"] for m in assistants)
    assert messages[0].flags["model_stats"]["tokens_sent"] == 9000
    info = messages[-1]
    assert info.record_type == "info"
    assert "exit status: submitted" in info.blocks[0].text and "diff --git" in info.blocks[0].text
    assert "trajectory" not in json.loads(info.raw) and json.loads(info.raw)["environment"] == "main"
    session = records[-1]
    assert isinstance(session, SessionInfo) and session.title == "inst-1" and session.models == ["gpt-4o"]
    assert session.external_id.startswith("inst-1-")


def test_text_actions_become_calls_named_by_their_first_word(tmp_path):
    history = [
        {"role": "system", "content": "sys", "message_type": "system_prompt"},
        {"role": "user", "content": "demo", "message_type": "demonstration", "is_demo": True},
        {"role": "user", "content": "the issue", "message_type": "observation"},
        {"role": "assistant", "content": "DISCUSSION\n```\nfind_file setup.py\n```", "action": "find_file setup.py\n", "message_type": "action"},
        {"role": "user", "content": "Found 1 matches", "message_type": "observation"},
        {"role": "assistant", "content": "```\nsubmit\n```", "action": "submit", "message_type": "action"},
    ]
    path = tmp_path / "plain.traj"
    path.write_text(json.dumps({"history": history, "trajectory": []}))
    records = parse_path(swe_agent.parse, path)
    messages = of(records, MessageRecord)
    assert [m.role for m in messages] == ["system", "user", "user", "assistant", "tool", "assistant"]
    assert messages[1].is_meta and not messages[2].is_meta  # the demonstration opens no turn
    call = messages[3].blocks[-1]
    assert (call.kind, call.tool_id, call.tool_name, call.tool_input) == ("tool_call", "step-1", "find_file", "find_file setup.py\n")
    assert messages[4].blocks[0].tool_id == "step-1" and messages[4].blocks[0].text == "Found 1 matches"
    # No trajectory: one call per assistant message; no info yet (the run has no exit status).
    assert len(of(records, UsageRecord)) == 2
    assert messages[-1].blocks[-1].tool_name == "submit"


def test_without_history_the_trajectory_gives_the_messages(tmp_path):
    steps = [
        {"action": "ls", "observation": "a.py", "response": "Let me list.\n```\nls\n```", "thought": "Let me list.",
         "query": [{"role": "system", "content": "sys"}, {"role": "user", "content": "the issue"}]},
        {"action": "submit", "observation": "diff", "response": "Done.", "thought": "Done."},
    ]
    path = tmp_path / "old.traj"
    path.write_text(json.dumps({"trajectory": steps, "info": {"model_stats": {"api_calls": 2}}}))
    records = parse_path(swe_agent.parse, path)
    messages = of(records, MessageRecord)
    assert [(m.uuid, m.role) for m in messages] == [
        ("prompt:1", "system"), ("prompt:2", "user"), ("step:1", "assistant"), ("step:1:observation", "tool"),
        ("step:2", "assistant"), ("step:2:observation", "tool"),
    ]
    assert messages[2].blocks[-1].tool_name == "ls" and messages[3].blocks[0].tool_id == messages[2].blocks[-1].tool_id
    assert len(of(records, UsageRecord)) == 2


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"", "empty"), (b"{\"history\": [", "not valid JSON"), (b"[1, 2]", "not a SWE-agent trajectory"),
     (b"{\"history\": [1, {\"role\": \"user\", \"content\": \"x\"}]}", "history message 1 is a JSON number")],
)
def test_a_broken_trajectory_is_a_bad_line_never_an_exception(tmp_path, content, reason):
    path = tmp_path / "broken.traj"
    path.write_bytes(content)
    records = parse_path(swe_agent.parse, path)
    assert any(isinstance(r, BadLine) and reason in r.reason for r in records)
    assert isinstance(records[-1], SessionInfo)


def test_other_json_objects_are_not_claimed(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"sessionId": "x", "messages": [{"type": "user", "content": "hi"}]}))
    assert swe_agent.sniff(path, head_of(path)) == 0.0
    events = tmp_path / "events.json"
    events.write_text(json.dumps([{"id": 0, "source": "user", "action": "message", "timestamp": "t"}]))
    assert swe_agent.sniff(events, head_of(events)) == 0.0


# -- the real fixtures ----------------------------------------------------------------------------

# file -> (messages, tool calls, tool results, model calls), as a person counts them: the history
# messages (+ 1 info message when info has an exit status), the history's tool_calls, the
# tool_call_ids answered, and the trajectory steps (else the assistant messages).
FIXTURE_COUNTS = {
    "SWE-agent__SWE-agent__function_calling_simple.traj": (12, 5, 5, 5),
    "SWE-agent__SWE-agent__marshmallow-code__marshmallow-1867.traj": (29, 13, 13, 13),
}


def count_independently(path: Path) -> tuple[int, int, int, int]:
    doc = json.loads(path.read_text())
    history = doc.get("history", [])
    info = 1 if (doc.get("info") or {}).get("exit_status") else 0
    calls = sum(len(m.get("tool_calls") or []) for m in history)
    results = sum(len(m.get("tool_call_ids") or []) for m in history)
    steps = len(doc.get("trajectory") or []) or sum(1 for m in history if m["role"] == "assistant")
    return len(history) + info, calls, results, steps


@pytest.mark.parametrize("path", fixture_files("swe-agent", "*.traj"), ids=lambda p: p.name if p else "absent")
def test_every_fixture_imports_with_the_counts_a_person_would_count(path):
    expected = FIXTURE_COUNTS[path.name]
    assert count_independently(path) == expected
    assert formats.claim(path).name == "swe-agent"
    records = parse_path(swe_agent.parse, path)
    messages = of(records, MessageRecord)
    calls = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    results = [b for m in messages for b in m.blocks if b.kind == "tool_result"]
    assert (len(messages), len(calls), len(results), len(of(records, UsageRecord))) == expected
    assert not of(records, BadLine)
    # Each result answers the call just before it (ids are reused in the marshmallow run).
    open_calls: list[str] = []
    for m in messages:
        for b in m.blocks:
            if b.kind == "tool_call":
                open_calls.append(b.tool_id)
            elif b.kind == "tool_result":
                assert open_calls and open_calls.pop() == b.tool_id
    assert not open_calls
    doc = json.loads(path.read_text())
    stats = (doc.get("info") or {}).get("model_stats")
    if stats:
        assert messages[0].flags["model_stats"] == stats
        assert stats["api_calls"] == expected[3]  # the totals agree: one call per step


# -- odd values never cost a message ---------------------------------------------------------------

ODD = st.one_of(st.none(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=5), st.booleans(),
                st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.none(), max_size=2))


@given(st.lists(st.tuples(st.integers(0, 10), st.integers(0, 20), ODD), max_size=12))
@settings(max_examples=80, deadline=None)
def test_any_field_of_any_type_is_read_without_losing_the_message(changes):
    doc = fc_traj()
    history = doc["history"]
    for index, key_index, value in changes:
        message = history[index % len(history)]
        keys = sorted(message)
        message[keys[key_index % len(keys)]] = value
    records = list(swe_agent.parse(ParseInput(path=Path("t.traj"), stream=io.BytesIO(json.dumps(doc).encode()))))
    assert isinstance(records[-1], SessionInfo)
    assert not of(records, BadLine)
    assert len(of(records, MessageRecord)) == len(history) + 1  # + the info message
