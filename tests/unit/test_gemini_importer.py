"""The Gemini CLI importer: legacy JSON chats, JSONL with $set/$rewindTo and re-appended ids,
checkpoints, bad input, and every real fixture counted independently with plain ``json``."""

import gzip
import io
import json
from pathlib import Path

import pytest

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.gemini import parser as gemini
from contextviewer.importers.formats import ParseInput
from tests.importers import fixture_files, gemini_counts, of


def run(path: Path, data: bytes | None = None, **kwargs) -> list:
    if data is None:
        data = path.read_bytes()
    return list(gemini.parse(ParseInput(path=path, stream=io.BytesIO(data), **kwargs)))


def jsonl(*objs) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


TOKENS = {"input": 1000, "output": 50, "cached": 600, "thoughts": 30, "tool": 0, "total": 1080}

LEGACY = {
    "sessionId": "3739ef95-aaaa-bbbb-cccc-000000000001",
    "projectHash": "ab" * 32,
    "startTime": "2026-01-16T18:34:00.000Z",
    "lastUpdated": "2026-01-16T18:40:00.000Z",
    "summary": "Fix the failing build",
    "messages": [
        {"id": "u1", "timestamp": "2026-01-16T18:34:01.000Z", "type": "user", "content": [{"text": "Fix the build"}]},
        {
            "id": "g1",
            "timestamp": "2026-01-16T18:34:05.000Z",
            "type": "gemini",
            "content": "Looking.",
            "model": "gemini-2.5-pro",
            "thoughts": [{"subject": "Plan", "description": "Read the log first.", "timestamp": "2026-01-16T18:34:03.000Z"}],
            "tokens": TOKENS,
            "toolCalls": [
                {"id": "c1", "name": "run_shell_command", "args": {"command": "make"}, "status": "success",
                 "result": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "ok"}}}]},
                {"id": "c2", "name": "read_file", "args": {"file_path": "/nope"}, "status": "error",
                 "result": [{"functionResponse": {"id": "c2", "name": "read_file", "response": {"error": "no such file"}}}]},
                {"id": "c3", "name": "write_file", "args": {"file_path": "a.txt"}, "status": "cancelled"},
            ],
        },
        {"id": "i1", "timestamp": "2026-01-16T18:34:06.000Z", "type": "info", "content": "Request cancelled."},
        {"id": "e1", "timestamp": "2026-01-16T18:34:07.000Z", "type": "error", "content": "Quota exceeded"},
        {"id": "w1", "timestamp": "2026-01-16T18:34:08.000Z", "type": "warning", "content": "Slow"},
        {"id": "x1", "timestamp": "2026-01-16T18:34:09.000Z", "type": "mystery", "content": "?", "extra": 1},
        {"id": "g2", "timestamp": "2026-01-16T18:34:10.000Z", "type": "gemini", "content": "Done.", "model": "gemini-2.5-pro"},
        "not an object",
    ],
}


def test_a_legacy_chat_imports_with_tool_results_after_their_calls_and_usage_per_gemini_message(tmp_path):
    path = tmp_path / "session-2026-01-16T18-34-3739ef95.json"
    records = run(path, json.dumps(LEGACY, indent=2).encode())
    messages = of(records, MessageRecord)
    # 8 elements, one not an object; c1 and c2 have results, c3 has none (nothing invented).
    assert [(m.role, m.uuid) for m in messages] == [
        ("user", "u1"),
        ("assistant", "g1"),
        ("tool", "g1/tool/c1"),
        ("tool", "g1/tool/c2"),
        ("system", "i1"),
        ("system", "e1"),
        ("system", "w1"),
        ("other", "x1"),
        ("assistant", "g2"),
    ]
    g1 = messages[1]
    assert [b.kind for b in g1.blocks] == ["thinking", "text", "tool_call", "tool_call", "tool_call"]
    assert g1.blocks[0].text == "Plan\n\nRead the log first."
    assert [(b.tool_id, b.tool_name, b.tool_input) for b in g1.blocks[2:]] == [
        ("c1", "run_shell_command", {"command": "make"}),
        ("c2", "read_file", {"file_path": "/nope"}),
        ("c3", "write_file", {"file_path": "a.txt"}),
    ]
    ok, failed = messages[2].blocks[0], messages[3].blocks[0]
    assert (ok.kind, ok.tool_id, ok.text, ok.is_error) == ("tool_result", "c1", "ok", False)
    assert (failed.tool_id, failed.text, failed.is_error) == ("c2", "no such file", True)
    assert [m.subtype for m in messages[4:7]] == ["info", "error", "warning"]
    assert messages[5].flags == {"api_error": True}
    assert messages[7].record_type == "mystery" and json.loads(messages[7].raw)["extra"] == 1
    assert {m.session_id for m in messages} == {LEGACY["sessionId"]}

    (call,) = of(records, UsageRecord)  # g2 has no tokens: no model call
    assert (call.api_message_id, call.message_uuid, call.model) == ("g1", "g1", "gemini-2.5-pro")
    # input includes cached; output leaves the thinking tokens out (§7), so they are added.
    assert (call.input_uncached, call.cache_read, call.cache_write, call.output) == (400, 600, 0, 80)
    assert call.reasoning == 30  # the thinking tokens, apart (of the output)

    (bad,) = of(records, BadLine)
    assert bad.line_no == 8 and "not a JSON object" in bad.reason
    info = records[-1]
    assert isinstance(info, SessionInfo)
    assert info.external_id == LEGACY["sessionId"] and info.title == "Fix the failing build"
    assert info.models == ["gemini-2.5-pro"] and info.started_at.isoformat().startswith("2026-01-16T18:34:00")


def test_jsonl_last_write_wins_rewinds_are_flagged_and_a_history_rewrite_is_a_fold(tmp_path):
    path = tmp_path / "chats" / "session-2026-04-29T21-39-abcd1234.jsonl"
    path.parent.mkdir()
    data = jsonl(
        {"sessionId": "s-1", "projectHash": "h", "startTime": "2026-04-29T21:39:22Z", "lastUpdated": "2026-04-29T21:39:22Z", "kind": "main"},
        {"id": "u1", "timestamp": "2026-04-29T21:39:30Z", "type": "user", "content": [{"text": "first"}]},
        {"id": "g1", "timestamp": "2026-04-29T21:39:31Z", "type": "gemini", "content": "", "model": "gemini-3-flash"},
        # g1 re-appended with its tool call and tokens: the later line wins, the place stays.
        {"id": "g1", "timestamp": "2026-04-29T21:39:31Z", "type": "gemini", "content": "", "model": "gemini-3-flash", "tokens": TOKENS,
         "toolCalls": [{"id": "t1", "name": "ls", "args": {}, "status": "success", "result": [{"functionResponse": {"id": "t1", "name": "ls", "response": {"output": "a b"}}}]}]},
        {"$set": {"lastUpdated": "2026-04-29T21:39:40Z", "summary": "Listing files"}},
        {"id": "u2", "timestamp": "2026-04-29T21:39:50Z", "type": "user", "content": "second"},
        {"id": "g2", "timestamp": "2026-04-29T21:39:51Z", "type": "gemini", "content": "answer two", "tokens": TOKENS},
        {"$rewindTo": "u2"},
        "this line is not JSON",
        {"id": "u3", "timestamp": "2026-04-29T21:40:00Z", "type": "user", "content": "second, again"},
        {"$set": {"lastUpdated": "2026-04-29T21:41:00Z", "messages": [
            {"id": "sum", "type": "user", "content": [{"text": "<state_snapshot>goal: list files</state_snapshot>"}]},
            {"id": "ack", "type": "gemini", "content": [{"text": "Got it."}]},
            {"id": "u3", "type": "user", "content": "second, again (masked)"},
        ]}},
        {"id": "g3", "timestamp": "2026-04-29T21:41:10Z", "type": "gemini", "content": "three"},
    ).replace(b'"this line is not JSON"', b"this line is not JSON")
    records = run(path, data)
    messages = of(records, MessageRecord)
    assert [m.uuid for m in messages] == [
        "u1", "g1", "g1/tool/t1", "u2", "g2", "u3",
        "session-2026-04-29T21-39-abcd1234:set:11", "sum", "ack", "g3",
    ]
    g1 = messages[1]
    assert [b.kind for b in g1.blocks] == ["tool_call"] and json.loads(g1.raw)["tokens"] == TOKENS
    # $rewindTo drops the target and what follows from the view: kept, flagged.
    assert [m.uuid for m in messages if m.flags.get("rewound")] == ["u2", "g2"]
    assert messages[3].flags == {"rewound": True, "rewound_at_line": 8}
    # A rewrite keeps the content first read (the later copy may be masked).
    assert messages[5].blocks[0].text == "second, again"
    marker = messages[6]
    assert (marker.role, marker.subtype, marker.is_meta) == ("system", "compact_boundary", True)
    assert "$set" in json.loads(marker.raw)
    assert messages[7].is_compact_summary and messages[7].flags == {"history_rewrite": True}
    (fold,) = of(records, FoldRecord)
    assert (fold.kind, fold.boundary_uuid, fold.summary_uuid) == ("compact", marker.uuid, "sum")
    assert fold.summary_text == "<state_snapshot>goal: list files</state_snapshot>"
    # The new list in its order (what the next request carries first), the summary where it stands.
    assert fold.preserved_uuids == ["sum", "ack", "u3"] and fold.metadata["archived"] == 2  # u1 and g1 (u2, g2 were rewound)
    assert fold.tokens_before == TOKENS["input"] and fold.trigger == "auto"  # the last call's input; after the user's turn

    calls = of(records, UsageRecord)
    assert [c.api_message_id for c in calls] == ["g1", "g2"]  # a rewound call was still made
    (bad,) = of(records, BadLine)
    assert bad.line_no == 9 and "not valid JSON" in bad.reason
    info = records[-1]
    assert info.external_id == "s-1" and info.title == "Listing files" and info.duplicate_uuids == 1
    assert info.bytes_consumed == len(data)


def test_an_unknown_rewind_target_empties_the_view_as_gemini_cli_does(tmp_path):
    data = jsonl(
        {"sessionId": "s-2", "projectHash": "h"},
        {"id": "a", "type": "user", "content": "one"},
        {"id": "b", "type": "gemini", "content": "two"},
        {"$rewindTo": "zzz"},
        {"id": "c", "type": "user", "content": "three"},
    )
    messages = of(run(tmp_path / "session-x.jsonl", data), MessageRecord)
    assert [(m.uuid, bool(m.flags.get("rewound"))) for m in messages] == [("a", True), ("b", True), ("c", False)]


def test_a_checkpoint_history_pairs_calls_and_responses_without_ids(tmp_path):
    doc = {"history": [
        {"role": "user", "parts": [{"text": "What is in this image?"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]},
        {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"path": "a"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"output": "contents"}}}]},
        {"role": "model", "parts": [{"text": "A cat.", "thought": False}]},
    ]}
    path = tmp_path / "checkpoint-mytag.json"
    path.write_text(json.dumps(doc))
    assert gemini.sniff(path, path.read_bytes()) >= 0.9
    records = run(path)
    messages = of(records, MessageRecord)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[0].uuid == "checkpoint-mytag:1" and messages[0].session_id == "checkpoint-mytag"
    image = messages[0].blocks[1]
    assert (image.kind, image.media_type, image.data_size) == ("image", "image/png", 12)
    call, result = messages[1].blocks[0], messages[2].blocks[0]
    assert call.tool_id and result.tool_id == call.tool_id and result.text == "contents"
    assert gemini.images(messages[0].raw) == [{"media_type": "image/png", "data": "iVBORw0KGgo="}]
    enriched = gemini.enrich({"raw": messages[0].raw, "blocks": [b.as_dict() for b in messages[0].blocks]})
    assert enriched["blocks"][1]["data"] == "iVBORw0KGgo="
    assert not of(records, UsageRecord)


def test_a_subagent_chat_belongs_to_its_parent_session_and_tool_calls_link_it(tmp_path):
    sub = tmp_path / "chats" / "parent-session" / "child-1.jsonl"
    sub.parent.mkdir(parents=True)
    data = jsonl({"sessionId": "child-1", "projectHash": "h", "kind": "subagent"}, {"id": "a", "type": "user", "content": "task"})
    messages = of(run(sub, data), MessageRecord)
    assert (messages[0].session_id, messages[0].agent_id, messages[0].is_sidechain) == ("parent-session", "child-1", True)
    main = dict(LEGACY, messages=[{"id": "g", "type": "gemini", "content": "", "toolCalls": [
        {"id": "call-9", "name": "delegate", "args": {}, "agentId": "child-1", "description": "look around"}]}])
    links = of(run(tmp_path / "session-main.json", json.dumps(main).encode()), AgentLink)
    assert [(link.agent_id, link.tool_use_id, link.description) for link in links] == [("child-1", "call-9", "look around")]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "the file is empty"),
        (bytes(range(256)) * 8, "binary file"),
        (b'{"sessionId": "s", "messages": [', "not valid JSON"),
        (b"\xff\xfe{}", "not valid UTF-8"),
    ],
)
def test_unreadable_files_say_why_and_never_raise(tmp_path, data, words):
    records = run(tmp_path / "session-bad.json", data)
    assert any(isinstance(r, BadLine) and words in r.reason for r in records), records
    assert isinstance(records[-1], SessionInfo)


def test_a_file_over_the_cap_is_refused_whole_and_gzip_is_read(tmp_path):
    data = json.dumps(LEGACY).encode()
    records = run(tmp_path / "session-big.json", data, max_line_bytes=100)
    assert of(records, MessageRecord) == [] and "limit" in of(records, BadLine)[0].reason
    from contextviewer.importers.lines import open_stream

    path = tmp_path / "session-z.json.gz"
    path.write_bytes(gzip.compress(data))
    stream, compression = open_stream(path)
    with stream:
        records = list(gemini.parse(ParseInput(path=path, stream=stream)))
    assert compression == "gzip" and len(of(records, MessageRecord)) == 9


def test_sniff_claims_gemini_chats_only(tmp_path):
    chats = tmp_path / "chats"
    chats.mkdir()
    legacy = chats / "session-2026-01-16T18-34-3739ef95.json"
    legacy.write_text(json.dumps(LEGACY))
    lines = chats / "session-2026-04-29T21-39-abcd1234.jsonl"
    lines.write_bytes(jsonl({"sessionId": "s", "projectHash": "h"}, {"id": "u", "type": "user", "content": "hi"}))
    for path in (legacy, lines):
        assert gemini.sniff(path, path.read_bytes()) >= 0.9
        assert formats.claim(path).name == "gemini"
    others = {
        "claude.jsonl": jsonl({"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "hi"}}),
        "chat.json": json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]).encode(),
        "events.json": json.dumps([{"action": "run", "source": "agent", "args": {}}]).encode(),
        "notes.txt": b"hello",
    }
    for name, data in others.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert gemini.sniff(path, data) == 0.0, name


# -- the real fixtures, counted independently ------------------------------------------------------


# (file, messages, model calls, tool calls) as a person counts them by reading each file.
FIXTURE_COUNTS = {
    "Mai0313__VibeCodingTracker__test_conversation_gemini.json": (4 + 7, 3, 7),
    "jazzyalex__agent-sessions__jsonl_v040.jsonl": (3 + 1, 2, 1),
    "jazzyalex__agent-sessions__large.json": (7 + 2, 1, 2),
    "jazzyalex__agent-sessions__schema_drift.json": (2, 0, 0),
    "jazzyalex__agent-sessions__small.json": (2, 1, 0),
}


@pytest.mark.fixtures
@pytest.mark.parametrize("path", fixture_files("gemini-cli") or [None], ids=lambda p: p.name[:50] if p else "absent")
def test_every_fixture_parses_with_the_counts_a_person_would_count(path):
    if path is None:
        pytest.skip("../shared/fixtures is absent")
    assert formats.claim(path).name == "gemini"
    records = run(path)
    messages = of(records, MessageRecord)
    tool_calls = sum(1 for m in messages for b in m.blocks if b.kind == "tool_call")
    counted = gemini_counts(path)
    assert counted == FIXTURE_COUNTS[path.name]
    assert (len(messages), len(of(records, UsageRecord)), tool_calls) == counted
    assert of(records, BadLine) == []
    assert len({m.uuid for m in messages}) == len(messages)
    # Every tool result answers a call of the message just before it.
    for before, m in zip(messages, messages[1:]):
        if m.role == "tool" and m.record_type == "toolCall":
            calls = {b.tool_id for x in messages if x.uuid == m.uuid.split("/tool/")[0] for b in x.blocks if b.kind == "tool_call"}
            assert m.blocks[0].tool_id in calls
    # Re-reading gives the same uuids (how re-imports store nothing twice).
    assert [m.uuid for m in of(run(path), MessageRecord)] == [m.uuid for m in messages]


@pytest.mark.parametrize("odd_type", [["info"], {"a": 1}])
def test_a_message_whose_type_is_a_list_or_object_is_other_and_the_rest_of_the_file_imports(tmp_path, odd_type):
    """A message type that is not a string (found while splitting the parser: it raised TypeError and
    the file stopped there) is kept as "other"; the messages after it are read."""
    path = tmp_path / "chats" / "session-2026-04-29T21-39-abcd1234.jsonl"
    path.parent.mkdir()
    data = jsonl(
        {"sessionId": "s-odd", "projectHash": "h", "startTime": "2026-04-29T21:39:22Z", "lastUpdated": "2026-04-29T21:39:22Z"},
        {"id": "u1", "timestamp": "2026-04-29T21:39:30Z", "type": "user", "content": "first"},
        {"id": "x1", "timestamp": "2026-04-29T21:39:31Z", "type": odd_type, "content": "odd"},
        {"id": "u2", "timestamp": "2026-04-29T21:39:32Z", "type": "user", "content": "after the odd one"},
    )
    records = run(path, data)
    messages = of(records, MessageRecord)
    assert [m.role for m in messages][-3:] == ["user", "other", "user"]
    assert not [b for b in of(records, BadLine) if b.line_no == 0]


def _call(mid: str, cid: str, name: str, output: str, tokens: int) -> dict:
    """A 0.61 model turn that asked for one tool: the call id as the log keeps it (<name>__<model's id>)."""
    return {"id": mid, "type": "gemini", "content": "", "model": "gemini-2.5-flash", "tokens": {**TOKENS, "input": tokens, "cached": 0},
            "toolCalls": [{"id": f"{name}__{cid}", "name": name, "args": {}, "status": "success",
                           "result": [{"functionResponse": {"id": f"{name}__{cid}", "name": name, "response": {"output": output}}}]}]}


def _response(mid: str, cid: str, name: str, output: str) -> dict:
    return {"id": mid, "type": "user", "content": [{"functionResponse": {"id": f"{name}__{cid}", "name": name, "response": {"output": output}}}]}


def test_gemini_0_61_resumes_are_not_folds_a_compression_is_and_each_result_is_stored_once(tmp_path):
    """Gemini CLI 0.61 as it writes its JSONL (ops/drivers/gemini.py ran it): every process opening the
    chat writes a metadata line and `$set.messages` (its fresh history, then the one it resumed, which
    repeats each result as `<id>_response`); a compression writes the new list with the kept messages
    under new ids; a result is in the call's record and in the user turn that sent it."""
    path = tmp_path / "chats" / "session-2026-12-07T06-11-06986e12.jsonl"
    path.parent.mkdir()
    meta = {"sessionId": "s-61", "projectHash": "h", "startTime": "2026-12-07T06:11:00Z", "lastUpdated": "2026-12-07T06:11:00Z", "kind": "main"}
    ctx = {"id": "ctx", "type": "user", "content": [{"text": "<session_context>..."}]}
    p1 = {"id": "p1", "type": "user", "content": [{"text": "prompt one"}]}
    g1 = _call("g1", "c1", "list_directory", "a b", 100)
    r1 = _response("r1", "c1", "list_directory", "a b")
    a1 = {"id": "a1", "type": "gemini", "content": "answer one", "tokens": {**TOKENS, "input": 110, "cached": 0}}
    p2 = {"id": "p2", "type": "user", "content": [{"text": "prompt two"}]}
    g2 = _call("g2", "c2", "run_shell_command", "ok", 600_000)
    as_content = [
        ctx, p1, {"id": "g1", "type": "gemini", "content": [{"functionCall": {"id": "list_directory__c1", "name": "list_directory", "args": {}}}]},
        {**_response("g1_response", "c1", "list_directory", "a b")}, r1, {"id": "a1", "type": "gemini", "content": [{"text": "answer one"}]},
    ]
    data = jsonl(
        meta, {"$set": {"messages": [ctx]}}, p1, {"$set": {"lastUpdated": "x"}}, g1, r1, a1,
        # the resume: a metadata line, the fresh history, the resumed one (with a copy of r1)
        meta, {"$set": {"messages": [ctx]}}, {"$set": {"sessionId": "s-61"}}, {"$set": {"messages": as_content}},
        p2, g2,
        # the compression, within prompt 2: the kept messages come back under new ids
        {"$set": {"sessionId": "s-61"}},
        {"$set": {"messages": [
            ctx, {"id": "sum", "type": "user", "content": [{"text": "<state_snapshot>s</state_snapshot>"}]},
            {"id": "ack", "type": "gemini", "content": [{"text": "Got it. Thanks for the additional context!"}]},
            {"id": "p2copy", "type": "user", "content": [{"text": "prompt two"}]},
            {"id": "g2copy", "type": "gemini", "content": [{"functionCall": {"id": "run_shell_command__c2", "name": "run_shell_command", "args": {}}}]},
        ]}},
        _response("r2", "c2", "run_shell_command", "ok"),
        {"id": "a2", "type": "gemini", "content": "answer two", "tokens": {**TOKENS, "input": 120, "cached": 0}},
    )
    records = run(path, data)
    messages = of(records, MessageRecord)
    assert [m.uuid for m in messages] == [
        "ctx", "p1", "g1", "r1", "a1", "p2", "g2", "session-2026-12-07T06-11-06986e12:set:15", "sum", "ack", "r2", "a2",
    ]
    # Tool ids as the API carried them; each call and each result once.
    calls = [b.tool_id for m in messages for b in m.blocks if b.kind == "tool_call"]
    results = [b.tool_id for m in messages for b in m.blocks if b.kind == "tool_result"]
    assert calls == results == ["c1", "c2"]
    (fold,) = of(records, FoldRecord)
    assert fold.summary_uuid == "sum" and fold.preserved_uuids == ["ctx", "sum", "ack", "p2", "g2"]
    assert (fold.trigger, fold.tokens_before) == ("auto", 600_000)
    assert [c.api_message_id for c in of(records, UsageRecord)] == ["g1", "a1", "g2", "a2"]
