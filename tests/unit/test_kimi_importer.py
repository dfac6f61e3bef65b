"""Kimi CLI session folders (importers/kimi), on folders this test writes from the format's facts
(Kimi CLI 1.51.0's own source and what it wrote here, offline: ops/drivers/kimi.py; the real CLI's
run is tests/agents/test_kimi_conformance.py). The generator below writes what Kimi writes: a
context.jsonl of Chat Completions messages between `_checkpoint` and `_usage` records, the file a
compaction set aside (context_1.jsonl), the new file that starts with the compaction output and the
copies of the two messages it kept, wire.jsonl's StatusUpdates, state.json and a sub-agent folder.
The expected counts are counted from what the generator wrote (its lists), not from the importer."""

from __future__ import annotations

import json
from pathlib import Path

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.kimi.parser import group, parse
from tests.importers import of, parse_path

SID = "0b7e6f4e-1111-4222-8333-444455556666"
SYSTEM = {"role": "_system_prompt", "content": "You are Kimi Code CLI.\nThe current working directory is `/home/dev/app`."}


def cp(n: int) -> dict:
    return {"role": "_checkpoint", "id": n}


def usage(n: int) -> dict:
    return {"role": "_usage", "token_count": n}


def call(call_id: str, name: str, args: dict) -> dict:
    return {"role": "assistant", "tool_calls": [{"type": "function", "id": call_id, "function": {"name": name, "arguments": json.dumps(args)}}]}


def result(call_id: str, text: str) -> dict:
    return {"role": "tool", "content": [{"type": "text", "text": "<system>Done.</system>"}, {"type": "text", "text": text}],
            "tool_call_id": call_id}


PROMPT_2 = {"role": "user", "content": "now edit it"}
ANSWER_1 = {"role": "assistant", "content": [{"type": "think", "think": "easy"}, {"type": "text", "text": "Two files."}]}
# (record, input before, context after) per model call, in the order written.
BEFORE = [
    SYSTEM, cp(0), {"role": "user", "content": "list the files"}, cp(1),
    usage(1000), call("c1", "Glob", {"pattern": "*"}), usage(1010), result("c1", "a.py\nb.py"), cp(2),
    usage(1100), ANSWER_1, usage(1120), cp(3), PROMPT_2,
]
SUMMARY = "<summary>Listed two files.</summary>"
AFTER = [
    SYSTEM, cp(0),
    {"role": "user", "content": [{"type": "text", "text": "<system>Previous context has been compacted. Here is the compaction output:</system>"},
                                 {"type": "text", "text": SUMMARY}]},
    ANSWER_1, PROMPT_2, usage(60), cp(1),
    usage(900), call("c2", "Agent", {"description": "Read", "prompt": "read b.py", "subagent_type": "coder"}), usage(930),
    {"role": "tool", "content": "agent_id: a1b2c3\nresumed: false\nstatus: completed\n\n[summary]\nb.py prints b", "tool_call_id": "c2"},
    cp(2), usage(990), {"role": "assistant", "content": "b.py prints b."}, usage(999),
]
# The main calls' usage as wire.jsonl reports it: (input_other, cache read, output, message id).
STATUS = [(1000, 0, 10, "m1"), (900, 200, 20, "m2"), (700, 200, 30, "m3"), (990, 0, 9, "m4")]


def wire(status: list[tuple]) -> list[dict]:
    events = [{"type": "metadata", "protocol_version": "1.10"},
              {"timestamp": 1796650000.0, "message": {"type": "TurnBegin", "payload": {"user_input": "list the files"}}}]
    for n, (inp, read, out, mid) in enumerate(status):
        if n == 2:
            events.append({"timestamp": 1796650010.0, "message": {"type": "CompactionBegin", "payload": {}}})
        events.append({"timestamp": 1796650001.0 + n, "message": {"type": "StatusUpdate", "payload": {
            "max_context_tokens": 100000, "message_id": mid,
            "token_usage": {"input_other": inp, "input_cache_read": read, "input_cache_creation": 0, "output": out}}}})
    events.append({"timestamp": 1796650020.0, "message": {"type": "SubagentEvent", "payload": {"event": {
        "type": "StatusUpdate", "payload": {"token_usage": {"input_other": 5, "output": 1}}}}}})
    return events


def write_jsonl(path: Path, lines: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def write_session(root: Path, status: list[tuple] = STATUS) -> Path:
    folder = root / "5d41402abc4b2a76b9719d911017c592" / SID
    write_jsonl(folder / "context_1.jsonl", BEFORE)
    write_jsonl(folder / "context.jsonl", AFTER)
    write_jsonl(folder / "wire.jsonl", wire(status))
    (folder / "state.json").write_text(json.dumps({"version": 1, "custom_title": "Files and a sub-agent"}))
    sub = folder / "subagents" / "a1b2c3"
    write_jsonl(sub / "context.jsonl", [SYSTEM, cp(0), {"role": "user", "content": "read b.py"}, cp(1), usage(300),
                                        {"role": "assistant", "content": "b.py prints b"}, usage(305)])
    (sub / "meta.json").write_text(json.dumps({"agent_id": "a1b2c3", "subagent_type": "coder", "description": "Read"}))
    return folder


def messages_of(lines: list[dict]) -> list[dict]:
    return [m for m in lines if not m["role"].startswith("_")]


def test_a_session_folder_gives_its_messages_calls_tools_and_fold(tmp_path):
    records = parse_path(parse, write_session(tmp_path))
    messages = [m for m in of(records, MessageRecord) if m.subtype != "compact_boundary"]
    # Every message of both files, less the two copies the compaction wrote (ANSWER_1, PROMPT_2).
    assert len(messages) == len(messages_of(BEFORE)) + len(messages_of(AFTER)) - 2
    calls = of(records, UsageRecord)
    answered = [m for m in messages_of(BEFORE) + messages_of(AFTER)[3:] if m["role"] == "assistant"]
    assert len(calls) == len(answered) == len(STATUS)
    assert [(c.input_uncached, c.cache_read, c.output, c.request_id) for c in calls] == STATUS
    # The log has no times: the wire's (its TurnBegin for the prompt, each StatusUpdate for its answer).
    assert messages[0].timestamp.timestamp() == 1796650000.0
    assert [c.timestamp.timestamp() for c in calls] == [1796650001.0 + n for n in range(len(STATUS))]
    tools = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert [(b.tool_name, b.tool_id) for b in tools] == [("Glob", "c1"), ("Agent", "c2")]
    (fold,) = of(records, FoldRecord)
    assert fold.trigger == "auto" and fold.summary_text == SUMMARY
    # What it kept: ANSWER_1 and PROMPT_2 as first written (context_1.jsonl lines 11 and 14).
    assert fold.preserved_uuids == ["context_1:11", "context_1:14"]
    summary = next(m for m in messages if m.is_compact_summary)
    assert summary.role == "user" and summary.uuid == fold.summary_uuid
    (link,) = of(records, AgentLink)
    assert (link.agent_id, link.tool_use_id, link.agent_type) == ("a1b2c3", "c2", "coder")
    info = of(records, SessionInfo)[-1]
    assert (info.external_id, info.title, info.cwd, info.window) == (SID, "Files and a sub-agent", "/home/dev/app", 100000)


def test_without_matching_status_updates_the_usage_records_give_input_and_output(tmp_path):
    calls = of(parse_path(parse, write_session(tmp_path, STATUS[:2])), UsageRecord)
    # (input before, after - before) from the _usage records around each answer.
    assert [(c.input_uncached, c.output) for c in calls] == [(1000, 10), (1100, 20), (900, 30), (990, 9)]


def test_a_sub_agent_is_read_with_its_session(tmp_path):
    folder = write_session(tmp_path)
    found = formats.discover(tmp_path)
    assert [(s.format, s.main.name, [(f.agent_id, f.agent_type) for f in s.subagents]) for s in found.sessions] == [
        ("kimi", SID, [("a1b2c3", "coder")])]
    (alone,) = group([folder / "subagents" / "a1b2c3"])
    assert alone.main is None and alone.session_id == SID


def test_a_manual_compaction_is_said_so(tmp_path):
    folder = write_session(tmp_path)
    events = wire(STATUS)
    at = next(i for i, e in enumerate(events) if e.get("message", {}).get("type") == "CompactionBegin")
    events.insert(at, {"timestamp": 1796650009.0, "message": {"type": "TurnBegin", "payload": {"user_input": "/compact"}}})
    write_jsonl(folder / "wire.jsonl", events)
    (fold,) = of(parse_path(parse, folder), FoldRecord)
    assert fold.trigger == "manual"


def test_bad_lines_are_said_and_the_rest_is_read(tmp_path):
    folder = write_session(tmp_path)
    with open(folder / "context.jsonl", "a") as fh:
        fh.write('{"role": "assistant", "content": "cut\n["a list"]\n')
    records = parse_path(parse, folder)
    reasons = [b.reason for b in of(records, BadLine)]
    assert len(reasons) == 2 and "not JSON" in reasons[0] and "not a Kimi CLI context record" in reasons[1]
    assert len(of(records, UsageRecord)) == len(STATUS)


def test_a_folder_without_its_context_is_refused_by_name(tmp_path):
    (tmp_path / "s").mkdir()
    (bad,) = of(parse_path(parse, tmp_path / "s"), BadLine)
    assert "no Kimi CLI session folder" in bad.reason


def test_its_files_are_kimi_and_look_alikes_are_not(tmp_path):
    folder = write_session(tmp_path)
    assert formats.claim(folder / "context_1.jsonl").name == "kimi"
    assert formats.claim(folder).name == "kimi"
    other = tmp_path / "chat.jsonl"
    write_jsonl(other, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    claimed = formats.claim(other)
    assert claimed is None or claimed.name != "kimi"


def test_an_undo_set_aside_file_is_not_read_twice(tmp_path):
    # revert_to: context.jsonl moved aside, the new one holds its lines up to the checkpoint gone back
    # to (the first prompt and its calls, BEFORE[:8]), then what came next.
    folder = tmp_path / "h" / SID
    after_undo = BEFORE[:8] + [cp(2), {"role": "user", "content": "try again"}, cp(3), usage(1200),
                               {"role": "assistant", "content": "Again."}, usage(1210)]
    write_jsonl(folder / "context_1.jsonl", BEFORE)
    write_jsonl(folder / "context.jsonl", after_undo)
    records = parse_path(parse, folder)
    messages = of(records, MessageRecord)
    copied = len(messages_of(BEFORE[:8]))
    assert len(messages) == len(messages_of(BEFORE)) + len(messages_of(after_undo)) - copied
    assert not of(records, FoldRecord)
    assert [(c.input_uncached, c.output) for c in of(records, UsageRecord)] == [(1000, 10), (1100, 20), (1200, 10)]


def test_its_edit_reads_as_an_edit():
    """StrReplaceFile takes {path, edit: {old, new}} (as Kimi CLI 1.51 ran it in tests/agents, with the
    call ops/drivers/kimi.py's plan makes), or a list of such edits: the Edit and MultiEdit views."""
    from contextviewer.viewer.tool_agents import normalize

    one = normalize("StrReplaceFile", {"path": "/p/app.py", "edit": {"old": "a - b", "new": "a + b"}})
    assert one == ("Edit", {"file_path": "/p/app.py", "old_string": "a - b", "new_string": "a + b"})
    two = normalize("StrReplaceFile", {"path": "/p/app.py", "edit": [{"old": "1", "new": "2"}, {"old": "3", "new": "4"}]})
    assert two == ("MultiEdit", {"file_path": "/p/app.py", "edits": [{"old_string": "1", "new_string": "2"},
                                                                     {"old_string": "3", "new_string": "4"}]})
