"""The Codex CLI importer: what a person sees of a rollout (messages, paired tool calls, one model
call per call Codex made, one fold per compaction, thinking), what it survives (bad lines, a grown
file), and every real rollout of ../shared/fixtures/codex read with counts stated here and checked
against an independent count of the raw JSON."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest

from contextviewer.core.records import BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.codex import parser as codex
from tests.importers import fixture_files, of

SID = "019c0000-aaaa-7bbb-8ccc-000000000001"


# -- synthetic rollouts ---------------------------------------------------------------------------


def env(kind: str, payload: dict, ts: str = "2026-02-23T12:00:00.000Z") -> dict:
    return {"timestamp": ts, "type": kind, "payload": payload}


def meta(**extra) -> dict:
    return env("session_meta", {"id": SID, "timestamp": "2026-02-23T11:59:59.000Z", "cwd": "/work/app",
                                "originator": "codex_cli_rs", "cli_version": "0.104.0", "source": "cli",
                                "git": {"branch": "main"}, **extra})


def user(text: str) -> dict:
    return env("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def assistant(text: str) -> dict:
    return env("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})


def reasoning(summary: str | None = "Looking at the tests", encrypted: bool = True) -> dict:
    return env("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}] if summary else [],
                                 "content": None, "encrypted_content": "gAAAAB..." if encrypted else None})


def call(call_id: str, cmd: str = "ls") -> dict:
    return env("response_item", {"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["bash", "-lc", cmd]}),
                                 "call_id": call_id})


def output(call_id: str, text: str = "a.txt\n") -> dict:
    return env("response_item", {"type": "function_call_output", "call_id": call_id, "output": text})


def usage(total_in: int, total_out: int, last_in: int, cached: int, last_out: int, window: int = 258400) -> dict:
    def u(i, c, o):
        return {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "reasoning_output_tokens": 0, "total_tokens": i + o}

    return env("event_msg", {"type": "token_count", "info": {"total_token_usage": u(total_in, 0, total_out),
                                                             "last_token_usage": u(last_in, cached, last_out),
                                                             "model_context_window": window}, "rate_limits": None})


def turn_context(model: str = "gpt-5.3-codex") -> dict:
    return env("turn_context", {"cwd": "/work/app", "model": model, "approval_policy": "never"})


def event(kind: str, **fields) -> dict:
    return env("event_msg", {"type": kind, **fields})


def write(path: Path, lines: list) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines), encoding="utf-8")
    return path


def parse_file(path: Path, start_offset: int = 0, start_line: int = 0) -> list:
    with open(path, "rb") as fh:
        fh.seek(start_offset)
        return list(codex.parse(fh, path=path, start_offset=start_offset, start_line=start_line))


def blocks(records, kind: str):
    return [b for m in of(records, MessageRecord) for b in m.blocks if b.kind == kind]


# A session of two turns: a tool call answered, then a custom tool (apply_patch) and a web search.
def two_turns() -> list:
    return [
        meta(base_instructions={"text": "You are Codex, a coding agent."}),
        user("<environment_context>\n  <cwd>/work/app</cwd>\n</environment_context>"),
        turn_context(),
        user("Fix the failing test in parser.py"),
        event("user_message", message="Fix the failing test in parser.py", images=[]),
        event("token_count", info=None, rate_limits={"primary": {"used_percent": 1.0}}),
        reasoning(),
        event("agent_message", message="Running the tests first."),
        assistant("Running the tests first."),
        call("call_1", "pytest -q"),
        usage(10_000, 200, 10_000, 0, 200),
        output("call_1", '{"output":"1 failed","metadata":{"exit_code":1,"duration_seconds":0.5}}'),
        turn_context(),
        usage(10_000, 200, 10_000, 0, 200),  # the same call written again
        env("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": "call_2", "name": "apply_patch",
                              "input": "*** Begin Patch\n*** Update File: parser.py\n*** End Patch"}),
        env("response_item", {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "pytest"}}),
        usage(21_000, 500, 11_000, 9_984, 300),
        env("response_item", {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Success. Updated parser.py"}),
        reasoning(None, encrypted=True),
        assistant("Fixed: the offset was computed before the BOM was stripped."),
        usage(33_500, 700, 12_500, 11_008, 200),
        event("task_complete", last_agent_message="Fixed"),
        user("Thanks, now run the full suite"),
        event("exec_command_end", call_id="call_9", exit_code=0, stdout="ok"),
    ]


def test_a_rollout_reads_as_messages_with_paired_tool_calls(tmp_path):
    records = parse_file(write(tmp_path / f"rollout-2026-02-23T12-00-00-{SID}.jsonl", two_turns()))
    messages = of(records, MessageRecord)
    assert [m.role for m in messages] == [
        "system",  # the base instructions: the system prompt
        "user", "user",
        "assistant", "assistant", "assistant",  # reasoning, text, shell call
        "tool",
        "assistant", "assistant",  # apply_patch, web search
        "tool",
        "assistant", "assistant",  # reasoning, text
        "user",
        "other",  # exec_command_end kept as an event
    ]
    assert messages[0].record_type == "system_prompt" and messages[0].blocks[0].text == "You are Codex, a coding agent."
    assert messages[1].is_meta and not messages[2].is_meta  # environment context vs the typed prompt
    calls = blocks(records, "tool_call")
    results = blocks(records, "tool_result")
    assert [(c.tool_name, c.tool_id) for c in calls] == [("shell", "call_1"), ("apply_patch", "call_2"), ("web_search", None)]
    assert calls[0].tool_input == {"command": ["bash", "-lc", "pytest -q"]}
    assert calls[1].tool_input.startswith("*** Begin Patch")
    assert [(r.tool_id, r.is_error) for r in results] == [("call_1", True), ("call_2", False)]  # exit code 1 is an error
    assert len({m.uuid for m in messages}) == len(messages)
    assert messages[2].uuid == f"{SID}:4"
    assert all(m.session_id == SID for m in messages)
    # event_msg copies of user and agent messages are not messages of their own
    assert sum(1 for m in messages if "Running the tests first." in [b.text for b in m.blocks]) == 1

    info = records[-1]
    assert isinstance(info, SessionInfo)
    assert info.external_id == SID and info.cwd == "/work/app" and info.cli_version == "0.104.0"
    assert info.git_branch == "main" and info.window == 258400 and info.models == ["gpt-5.3-codex"]
    assert info.title == "Fix the failing test in parser.py"
    assert info.started_at.isoformat().startswith("2026-02-23T11:59:59")
    assert not of(records, BadLine)


def test_one_model_call_per_distinct_total_on_the_first_message_it_wrote(tmp_path):
    records = parse_file(write(tmp_path / "r.jsonl", two_turns()))
    calls = of(records, UsageRecord)
    # 5 token_count events: one info null, one repeating the first total: 3 calls.
    assert len(calls) == 3
    by_uuid = {m.uuid: m for m in of(records, MessageRecord)}
    firsts = [by_uuid[c.message_uuid] for c in calls]
    assert [m.record_type for m in firsts] == ["reasoning", "custom_tool_call", "reasoning"]
    assert [m.line_no for m in firsts] == [7, 15, 19]
    assert [(c.input_uncached, c.cache_read, c.output) for c in calls] == [(10_000, 0, 200), (1_016, 9_984, 300), (1_492, 11_008, 200)]
    assert [c.api_message_id for c in calls] == [f"{SID}:call:1", f"{SID}:call:2", f"{SID}:call:3"]
    assert {c.model for c in calls} == {"gpt-5.3-codex"}
    assert [c.reasoning for c in calls] == [0, 0, 0]  # recorded (reasoning_output_tokens), here 0


def test_a_call_says_its_reasoning_tokens_where_codex_records_them(tmp_path):
    lines = two_turns()
    for line in lines:
        info = line.get("payload", {}).get("info") if line.get("type") == "event_msg" else None
        if info:
            info["last_token_usage"]["reasoning_output_tokens"] = info["last_token_usage"]["output_tokens"] // 4
    calls = of(parse_file(write(tmp_path / "r.jsonl", lines)), UsageRecord)
    assert [c.reasoning for c in calls] == [50, 75, 50]  # a quarter of each call's output (200, 300, 200)
    del_key = [dict(line) for line in lines]
    for line in del_key:
        info = line.get("payload", {}).get("info") if line.get("type") == "event_msg" else None
        if info:
            info["last_token_usage"].pop("reasoning_output_tokens")
    calls = of(parse_file(write(tmp_path / "s.jsonl", del_key)), UsageRecord)
    assert [c.reasoning for c in calls] == [None, None, None]  # not recorded: not 0


def test_a_token_count_written_before_its_items_goes_to_the_run_after_it(tmp_path):
    # Codex 0.39 writes the token_count first, then the call's items.
    lines = [meta(), turn_context("gpt-5"), user("Go"),
             usage(5_645, 810, 5_645, 5_504, 810), reasoning(None, encrypted=False), assistant("Scanning"), call("c1"), output("c1"),
             turn_context("gpt-5"),
             usage(11_467, 1_054, 5_822, 0, 244), reasoning(None, encrypted=False), assistant("Done")]
    records = parse_file(write(tmp_path / "r.jsonl", lines))
    calls = of(records, UsageRecord)
    by_uuid = {m.uuid: m for m in of(records, MessageRecord)}
    assert [by_uuid[c.message_uuid].line_no for c in calls] == [5, 11]
    assert [(c.input_uncached, c.cache_read) for c in calls] == [(141, 5_504), (5_822, 0)]


def test_no_call_from_null_info_zero_usage_or_an_unknown_shape(tmp_path):
    lines = [meta(), user("Go"),
             event("token_count", info=None),
             usage(0, 0, 0, 0, 0),  # an empty total (written after a remote compaction)
             event("token_count", info={"prompt": 1420, "completion": 910}),
             assistant("ok")]
    records = parse_file(write(tmp_path / "r.jsonl", lines))
    assert of(records, UsageRecord) == []
    others = [m for m in of(records, MessageRecord) if m.role == "other"]
    assert len(others) == 1 and others[0].flags == {"unread_usage": True}  # kept, not measured


def test_reasoning_is_thinking_with_encrypted_content_counted_as_redacted(tmp_path):
    lines = [meta(), user("Go"),
             env("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Plan** read the file"},
                                                                    {"type": "summary_text", "text": "then patch it"}],
                                   "content": [{"type": "reasoning_text", "text": "raw chain"}], "encrypted_content": "gAAA"}),
             reasoning(None, encrypted=False)]
    records = parse_file(write(tmp_path / "r.jsonl", lines))
    first, second = [m for m in of(records, MessageRecord) if m.record_type == "reasoning"]
    assert [(b.kind, b.text, b.raw_type) for b in first.blocks] == [
        ("thinking", "**Plan** read the file", None), ("thinking", "then patch it", None), ("thinking", "raw chain", None),
        ("thinking", "", "redacted_thinking")]
    assert first.role == "assistant"
    assert [(b.kind, b.text) for b in second.blocks] == [("thinking", "")]  # reasoning happened, nothing logged


def test_a_local_compaction_is_one_fold_with_its_summary_and_the_kept_prompts(tmp_path):
    lines = [meta(), turn_context(), user("Port the parser to Rust"), assistant("Started."),
             usage(150_000, 100, 150_000, 0, 100),
             user("Keep the public API unchanged"), assistant("Noted."),
             env("compacted", {"message": "Another language model started to solve this problem: parser ported halfway.",
                               "replacement_history": [
                                   {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Port the parser to Rust"}]},
                                   {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Keep the public API unchanged"}]},
                                   {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Another language model ... (summary)"}]},
                               ]}),
             event("context_compacted"),
             turn_context(),
             user("Continue")]
    records = parse_file(write(tmp_path / "r.jsonl", lines))
    folds = of(records, FoldRecord)
    assert len(folds) == 1  # compacted + context_compacted: one compaction
    fold = folds[0]
    by_uuid = {m.uuid: m for m in of(records, MessageRecord)}
    boundary, summary = by_uuid[fold.boundary_uuid], by_uuid[fold.summary_uuid]
    assert boundary.role == "system" and boundary.subtype == "compact_boundary"
    assert summary.is_compact_summary and summary.blocks[0].text.startswith("Another language model")
    assert fold.summary_text == summary.blocks[0].text
    assert [by_uuid[u].blocks[0].text for u in fold.preserved_uuids] == ["Port the parser to Rust", "Keep the public API unchanged"]
    assert fold.tokens_before == 150_000
    messages = of(records, MessageRecord)
    assert messages.index(boundary) + 1 == messages.index(summary)  # the boundary, then the summary


def test_a_remote_compaction_renders_what_it_kept_and_a_bare_event_is_a_fold_too(tmp_path):
    lines = [meta(), user("Build the dashboard"), assistant("Here is the plan: three pages."),
             env("compacted", {"message": "", "replacement_history": [
                 {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Build the dashboard"}]},
                 {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Here is the plan: three pages."}],
                  "phase": "final_answer"},
                 {"type": "compaction", "encrypted_content": "x" * 500}]}),
             event("context_compacted"),
             user("Go on"), assistant("ok"),
             env("compacted", {"message": ""}),  # old builds: no summary, no history
             user("And now?"),
             event("context_compacted"),  # an event without a compacted line
             assistant("done")]
    records = parse_file(write(tmp_path / "r.jsonl", lines))
    folds = of(records, FoldRecord)
    assert len(folds) == 3
    remote, bare, event_only = folds
    # the encrypted summary heads the new window: a message that says it is encrypted (no text)
    assert remote.summary_uuid == f"{SID}:4:summary" and remote.metadata["remote"] is True
    summary = next(r for r in of(records, MessageRecord) if r.uuid == remote.summary_uuid)
    assert summary.is_compact_summary and [(b.kind, b.raw_type, b.text) for b in summary.blocks] == [("other", "encrypted_summary", "")]
    assert remote.summary_text.startswith("[The new context keeps these 2 items; the compaction summary itself is encrypted]")
    assert "USER: Build the dashboard" in remote.summary_text and "ASSISTANT: Here is the plan: three pages." in remote.summary_text
    assert len(remote.preserved_uuids) == 2
    assert bare.summary_text == "" and bare.summary_uuid is None
    assert event_only.line_no == 10 and event_only.boundary_uuid == f"{SID}:10"
    markers = [m for m in of(records, MessageRecord) if m.subtype == "compact_boundary"]
    assert [m.line_no for m in markers] == [4, 8, 10]


def test_a_remote_compaction_with_a_message_beside_its_encrypted_item_is_still_encrypted(tmp_path):
    # The shared fixtures trimmed the empty message to a placeholder ("[trimmed for fixture]"): the
    # review dashboard then showed a 6-token summary (issue 36, item 5). The summary is the
    # encrypted item whatever text sits beside it; the text is kept as a detail.
    lines = [meta(), user("Build the dashboard"),
             env("compacted", {"message": "[trimmed for fixture]", "replacement_history": [
                 {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Build the dashboard"}]},
                 {"type": "compaction", "encrypted_content": "x" * 500}]}),
             user("Go on"), assistant("ok")]
    records = parse_file(write(tmp_path / "r.jsonl", lines))
    (fold,) = of(records, FoldRecord)
    summary = next(r for r in of(records, MessageRecord) if r.uuid == fold.summary_uuid)
    assert [(b.kind, b.raw_type) for b in summary.blocks] == [("other", "encrypted_summary")]
    assert fold.metadata["message"] == "[trimmed for fixture]" and "trimmed" not in fold.summary_text


def test_bad_lines_are_reported_and_the_rest_imports(tmp_path):
    lines = [meta(), user("Go"), "{not json", "[1, 2]", '"a string"', assistant("ok")]
    path = write(tmp_path / "r.jsonl", lines)
    with open(path, "ab") as fh:
        fh.write(b'{"timestamp": "2026-02-23T12:00:00Z", "type": "response_item", "payl')  # cut mid-line
    records = parse_file(path)
    bad = of(records, BadLine)
    assert [b.line_no for b in bad] == [3, 4, 5, 7]
    assert "not valid JSON" in bad[0].reason and "incomplete" in bad[3].reason
    assert [m.role for m in of(records, MessageRecord)] == ["user", "assistant"]
    assert records[-1].lines == 6


def test_unknown_lines_and_bare_items_are_kept_as_they_are(tmp_path):
    lines = [{"id": SID, "timestamp": "2025-06-01T10:00:00Z", "instructions": None, "git": None},  # pre-envelope meta
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Old rollout"}]},
             {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "c1"},
             {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
             env("world_state", {"full": True, "state": {}}),
             {"something": "else"}]
    records = parse_file(write(tmp_path / "rollout-2025-06-01T10-00-00-x.jsonl", lines))
    messages = of(records, MessageRecord)
    assert [(m.role, m.record_type) for m in messages] == [
        ("user", "message"), ("assistant", "function_call"), ("tool", "function_call_output"),
        ("other", "world_state"), ("other", "(none)")]
    assert messages[-1].raw == json.dumps(lines[-1])
    assert records[-1].external_id == SID


def test_a_grown_file_continues_with_the_same_uuids_and_calls(tmp_path):
    lines = two_turns()
    path = write(tmp_path / "r.jsonl", lines[:13])
    first = parse_file(path)
    info = first[-1]
    write(path, lines)
    whole = parse_file(path)
    rest = parse_file(path, info.bytes_consumed, info.lines)
    old = {m.uuid for m in of(first, MessageRecord)}
    new = [m.uuid for m in of(rest, MessageRecord)]
    assert not old & set(new)
    assert old | set(new) == {m.uuid for m in of(whole, MessageRecord)}
    # the call already counted is not counted again; the later ones keep their numbers
    ids = lambda recs: [(c.api_message_id, c.message_uuid) for c in of(recs, UsageRecord)]  # noqa: E731
    assert ids(first) == ids(whole)[:1]
    assert ids(rest) == ids(whole)[1:]
    assert rest[-1].title == whole[-1].title and rest[-1].external_id == SID


def test_sniff_claims_rollouts_only(tmp_path):
    rollout = write(tmp_path / f"rollout-2026-02-23T12-00-00-{SID}.jsonl", two_turns())
    assert formats.claim(rollout).name == "codex"
    history = write(tmp_path / "history.jsonl", [{"session_id": SID, "ts": 1, "text": "hello"}])
    assert formats.claim(history) is None
    claude = write(tmp_path / "claude.jsonl", [{"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
                                                "message": {"role": "user", "content": "hi"}}])
    assert formats.claim(claude).name == "claude-code"
    assert codex.sniff(claude, claude.read_bytes()) == 0.0


def test_the_archive_and_dated_layouts_are_sessions_of_one_file_each(tmp_path):
    dated = tmp_path / "sessions" / "2026" / "02" / "23"
    dated.mkdir(parents=True)
    (tmp_path / "archived_sessions").mkdir()
    a = write(dated / f"rollout-2026-02-23T12-00-00-{SID}.jsonl", two_turns())
    b = write(tmp_path / "archived_sessions" / "rollout-2026-01-02T09-00-00-019c0000-aaaa-7bbb-8ccc-000000000002.jsonl",
              [meta(), user("old")])
    found = formats.discover(tmp_path)
    assert sorted((s.format, s.main) for s in found.sessions) == sorted([("codex", a), ("codex", b)])
    assert codex.FORMAT.locations == ("~/.codex/sessions", "~/.codex/archived_sessions")


def test_an_image_in_a_user_message_is_an_image_block_with_its_data_in_the_raw_line(tmp_path):
    data = "iVBORw0KGgo" + "A" * 40
    lines = [meta(), env("response_item", {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "What is this?"}, {"type": "input_image", "image_url": f"data:image/png;base64,{data}"}]})]
    records = parse_file(write(tmp_path / "r.jsonl", lines))
    message = of(records, MessageRecord)[0]
    assert [(b.kind, b.media_type, b.data_size) for b in message.blocks] == [("text", None, 0), ("image", "image/png", len(data))]
    assert codex.images(message.raw) == [{"type": "base64", "media_type": "image/png", "data": data}]
    enriched = codex.enrich({"raw": message.raw, "blocks": [b.as_dict() for b in message.blocks]})
    assert enriched["blocks"][1]["data"] == data


def test_parse_never_raises_on_odd_values(tmp_path):
    odd = [env("response_item", {"type": "message", "role": 5, "content": {"weird": True}}),
           env("response_item", {"type": "function_call", "name": None, "arguments": 12}),
           env("response_item", {"type": "reasoning", "summary": "plain", "content": [None, 3]}),
           env("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": "x"}, "last_token_usage": {}}}),
           env("compacted", {"message": None, "replacement_history": [None, 1, {"type": "message"}]}),
           env("event_msg", {"type": None}),
           {"type": "response_item", "payload": None},
           env("session_meta", {"id": 7})]
    records = list(codex.parse(io.BytesIO("".join(json.dumps(o) + "\n" for o in odd).encode())))
    assert not of(records, BadLine)
    assert isinstance(records[-1], SessionInfo)
    # The first session_meta is the session's (no message) and a token_count with no numbers is no
    # call: the 6 other lines are messages.
    assert len(of(records, MessageRecord)) == 6
    assert of(records, UsageRecord) == []


# -- the real rollouts ------------------------------------------------------------------------------

# Stated per file: messages, model calls, tool calls, tool results, folds. Checked below against an
# independent count of the raw JSON (independent_counts), and the parser against both.
FIXTURE_COUNTS = {
    "Mai0313__VibeCodingTracker__test_conversation_codex.jsonl": (57, 19, 18, 18, 0),
    "jazzyalex__agent-sessions__codex_050_legacy.jsonl": (3, 0, 0, 0, 0),
    "jazzyalex__agent-sessions__codex_051_usage.jsonl": (2, 0, 0, 0, 0),
    "jazzyalex__agent-sessions__codex_052_raw.jsonl": (5, 0, 0, 0, 0),
    "jazzyalex__agent-sessions__codex_053_rate_limit.jsonl": (2, 1, 0, 0, 0),
    "jazzyalex__agent-sessions__large.jsonl": (17, 1, 1, 1, 0),
    "jazzyalex__agent-sessions__schema_drift.jsonl": (5, 0, 1, 1, 0),
    "jazzyalex__agent-sessions__small.jsonl": (102, 1, 8, 6, 7),
    "madshn__localpush__rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl": (342, 81, 105, 104, 0),
    "madshn__localpush__rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl": (287, 28, 118, 118, 0),
    "madshn__localpush__rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl": (1305, 286, 372, 365, 1),
    "madshn__localpush__rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl": (12, 1, 1, 0, 0),
    "madshn__localpush__rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl": (30, 6, 5, 5, 0),
}

# event_msg kinds that only repeat a response item or mark progress (formats.md §2).
_REPEATS = {"user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content",
            "agent_reasoning_section_break", "task_started", "task_complete"}


def independent_counts(path: Path) -> tuple[int, int, int, int, int]:
    """(messages, model calls, tool calls, tool results, folds) counted from the raw lines by the
    rules of formats.md §2, without the importer."""
    messages = calls = tool_calls = results = folds = metas = 0
    totals: set[str] = set()
    last_fold = None  # "compacted" or "event" while only bookkeeping followed it
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        kind, payload = obj.get("type"), obj.get("payload")
        if not isinstance(payload, dict):  # a bare item
            payload = obj
            if "role" in obj or kind in ("function_call", "function_result", "tool_call", "tool_result", "message"):
                kind = "response_item"
        ptype = payload.get("type")
        if kind == "session_meta":
            metas += 1
            base = payload.get("base_instructions")
            text = base.get("text") if isinstance(base, dict) else payload.get("instructions")
            messages += metas > 1 or (isinstance(text, str) and bool(text.strip()))
        elif kind == "turn_context":
            continue
        elif kind == "response_item":
            messages += 1
            last_fold = None
            if isinstance(ptype, str) and ptype.endswith("_call"):
                tool_calls += 1
            elif isinstance(ptype, str) and (ptype.endswith("_output") or ptype in ("function_result", "tool_result")):
                results += 1
        elif kind == "compacted":
            message = payload.get("message")
            history = payload.get("replacement_history")
            encrypted = isinstance(history, list) and any(isinstance(i, dict) and i.get("type") == "compaction" for i in history)
            # the summary: its text, or (remote compaction) a message saying it is encrypted
            messages += 1 + ((isinstance(message, str) and bool(message.strip())) or encrypted)
            folds += last_fold != "event"
            last_fold = "compacted"
        elif kind == "event_msg" and ptype == "token_count":
            info = payload.get("info")
            if info is None:
                continue
            if not isinstance(info.get("total_token_usage"), dict):
                messages += 1
                continue
            total = json.dumps(info["total_token_usage"], sort_keys=True)
            last = info.get("last_token_usage") or {}
            if total not in totals and (last.get("input_tokens") or last.get("output_tokens")):
                calls += 1
            totals.add(total)
        elif kind == "event_msg" and ptype == "context_compacted":
            if last_fold != "compacted":
                folds += 1
                messages += 1
            last_fold = "event"
        elif kind == "event_msg" and ptype in _REPEATS:
            continue
        else:
            messages += 1
    return messages, calls, tool_calls, results, folds


def test_the_stated_counts_cover_every_fixture_file(fixtures_dir):
    assert sorted(p.name for p in (fixtures_dir / "codex").iterdir()) == sorted(FIXTURE_COUNTS)


@pytest.mark.parametrize("path", fixture_files("codex"), ids=lambda p: p.name[:60] if p else "absent")
def test_every_fixture_rollout_imports_with_its_counts(path):
    stated = FIXTURE_COUNTS[path.name]
    assert independent_counts(path) == stated
    assert formats.claim(path).name == "codex"
    records = parse_file(path)
    messages = of(records, MessageRecord)
    got = (len(messages), len(of(records, UsageRecord)), len(blocks(records, "tool_call")),
           len(blocks(records, "tool_result")), len(of(records, FoldRecord)))
    assert got == stated
    assert not of(records, BadLine)
    assert len({m.uuid for m in messages}) == len(messages)
    uuids = {m.uuid for m in messages}
    for call in of(records, UsageRecord):
        assert call.message_uuid in uuids
    for fold in of(records, FoldRecord):
        assert fold.boundary_uuid in uuids and set(fold.preserved_uuids) <= uuids
    info = records[-1]
    assert isinstance(info, SessionInfo) and info.external_id
    assert info.lines == len(path.read_bytes().splitlines())


def test_the_remote_compaction_of_the_real_rollout_keeps_its_tail(fixtures_dir):
    path = fixtures_dir / "codex" / "madshn__localpush__rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
    records = parse_file(path)
    (fold,) = of(records, FoldRecord)
    raw = [json.loads(line) for line in path.read_text().splitlines()]
    compacted = next(i for i, o in enumerate(raw, 1) if o["type"] == "compacted")
    history = raw[compacted - 1]["payload"]["replacement_history"]
    assert fold.line_no == compacted and fold.metadata["remote"] is True
    assert Counter(i["type"] for i in history) == Counter({"message": 39, "compaction": 1})
    # every kept message that appeared earlier in the file is found again: same role and text (the
    # history re-encodes images, so their data differs)
    def key(item):
        return item["role"], [c.get("text") for c in item["content"] if c.get("type") != "input_image"]

    earlier = [key(o["payload"]) for o in raw[: compacted - 1]
               if o["type"] == "response_item" and o["payload"].get("type") == "message"]
    expected = sum(1 for i in history if i["type"] == "message" and key(i) in earlier)
    assert len(fold.preserved_uuids) == expected == 38
    # the call before the fold is the fold's size
    tokens = [o for o in raw[: compacted - 1] if o["type"] == "event_msg" and o["payload"]["type"] == "token_count"
              and o["payload"]["info"] and o["payload"]["info"]["last_token_usage"]["input_tokens"]]
    assert fold.tokens_before == tokens[-1]["payload"]["info"]["last_token_usage"]["input_tokens"]


@pytest.mark.fixtures
def test_a_fold_with_no_call_since_the_fold_before_has_no_window_before_it(fixtures_dir):
    # Checked by hand (the rollout's event types in order, and each token_count's
    # last_token_usage.input_tokens): a context_compacted event at line 19, a token_count of 16,341
    # at 22, compactions at 26, 47, 69 and 81, two token_counts with no usage at 86 and 87 (no
    # call), compactions at 89 and 111. Only the fold at 26 has a call since the fold before it;
    # the five after it showed that call's 16,341 as their window before.
    folds = of(parse_file(fixtures_dir / "codex" / "jazzyalex__agent-sessions__small.jsonl"), FoldRecord)
    assert [f.line_no for f in folds] == [19, 26, 47, 69, 81, 89, 111]
    assert [f.tokens_before for f in folds] == [None, 16341, None, None, None, None, None]


def test_two_compactions_in_a_row_the_second_has_no_window_before_it(tmp_path):
    lines = [meta(), user("Port the parser"), assistant("Started."), usage(150_000, 100, 150_000, 0, 100),
             env("compacted", {"message": "First summary."}), event("context_compacted"),
             env("compacted", {"message": "Second summary, nothing asked in between."}), event("context_compacted"),
             user("Continue"), assistant("Going on."), usage(160_000, 200, 9_000, 0, 100),
             env("compacted", {"message": "Third summary."}), event("context_compacted")]
    folds = of(parse_file(write(tmp_path / "r.jsonl", lines)), FoldRecord)
    assert [f.tokens_before for f in folds] == [150_000, None, 9_000]


def test_the_synthetic_rollout_of_the_benchmark_reads_like_a_real_one(tmp_path):
    from contextviewer.importers.codex import synthetic as codex_synthetic

    path = codex_synthetic.write_rollout(tmp_path, target_bytes=400_000, seed=3)
    assert path.parent == tmp_path / "sessions" / "2026" / "02" / "23" and formats.claim(path).name == "codex"
    records = parse_file(path)
    messages, calls, tool_calls, results, folds = independent_counts(path)
    assert not of(records, BadLine)
    assert len(of(records, MessageRecord)) == messages
    assert len(of(records, UsageRecord)) == calls and calls > 10
    assert len(blocks(records, "tool_call")) == tool_calls == results == len(blocks(records, "tool_result"))
    assert len(of(records, FoldRecord)) == folds >= 1
    assert codex_synthetic.write_rollout(tmp_path / "again", target_bytes=400_000, seed=3).read_bytes() == path.read_bytes()


def test_a_0_6x_remote_compaction_is_recognised_and_its_undo_snapshot_is_not_context(tmp_path):
    """Codex 0.6x named the encrypted summary item ``compaction_summary`` and wrote a
    ``ghost_snapshot`` (an undo snapshot) into the replacement history (issue 20, item 3)."""
    from contextviewer.importers.codex import synthetic as codex_synthetic

    path = codex_synthetic.write_rollout(tmp_path, target_bytes=60_000, seed=3, compaction_item="compaction_summary")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    compacted = [obj for obj in lines if obj["type"] == "compacted"]
    assert compacted and all(
        any(i["type"] == "ghost_snapshot" for i in c["payload"]["replacement_history"]) for c in compacted
    )
    kept_prompts = [
        sum(1 for i in c["payload"]["replacement_history"] if i["type"] == "message") for c in compacted
    ]
    folds = of(parse_file(path), FoldRecord)
    assert len(folds) == len(compacted)
    for fold, kept in zip(folds, kept_prompts):
        assert fold.metadata["remote"] is True
        assert fold.summary_text.startswith(
            f"[The new context keeps these {kept} items; the compaction summary itself is encrypted]"
        )
        assert "COMPACTION_SUMMARY" not in fold.summary_text and "GHOST_SNAPSHOT" not in fold.summary_text
        assert "ghost_commit" not in fold.summary_text


def test_a_lone_compaction_summary_item_is_a_fold(tmp_path):
    lines = [meta(), user("Build it"), assistant("ok"),
             env("response_item", {"type": "compaction_summary", "encrypted_content": "gAAAA" + "z" * 50}),
             user("Go on")]
    records = parse_file(write(tmp_path / "r.jsonl", lines))
    (fold,) = of(records, FoldRecord)
    assert fold.metadata["remote"] is True and fold.summary_text == "[encrypted compaction summary: not readable]"


def test_a_compaction_in_a_turn_of_its_own_is_manual_and_one_before_a_prompt_auto(tmp_path):
    """0.171 writes no trigger: a compaction in a turn that holds a prompt (before it: Codex compacts
    before it sends the turn's first request) is auto; one in a turn without a prompt is a /compact."""
    remote = {"message": "", "replacement_history": [{"type": "compaction", "encrypted_content": "x" * 50}]}
    lines = [meta(), event("task_started"), user("First"), assistant("ok"), usage(1000, 10, 1000, 0, 10),
             event("task_complete"),
             event("task_started"), env("compacted", remote), user("Second"), assistant("ok"),
             usage(2000, 20, 1000, 0, 10), event("task_complete"),
             event("task_started"), env("compacted", remote), event("task_complete")]
    folds = of(parse_file(write(tmp_path / "r.jsonl", lines)), FoldRecord)
    assert [f.trigger for f in folds] == ["auto", "manual"]


def test_a_sub_agent_rollout_is_read_under_the_thread_that_spawned_it(tmp_path):
    """0.171: spawn_agent's sub-agent writes its own rollout whose session_meta names its parent
    (parent_thread_id, source.subagent.thread_spawn); the parent's call output names the child."""
    from contextviewer.core.records import AgentLink

    child_id = "019c0000-aaaa-7bbb-8ccc-00000000000c"
    spawn = env("response_item", {"type": "function_call", "name": "spawn_agent", "namespace": "multi_agent_v1",
                                  "arguments": json.dumps({"message": "read app.py"}), "call_id": "call_spawn"})
    answered = output("call_spawn", json.dumps({"agent_id": child_id, "nickname": "Bernoulli"}))
    parent = write(tmp_path / f"rollout-2026-02-23T12-00-00-{SID}.jsonl", [meta(), user("Ask a sub-agent"), spawn, answered])
    child_meta = env("session_meta", {"id": child_id, "session_id": SID, "parent_thread_id": SID, "cwd": "/work/app",
                                      "source": {"subagent": {"thread_spawn": {"parent_thread_id": SID, "depth": 1,
                                                                               "agent_nickname": "Bernoulli", "agent_role": None}}}})
    child = write(tmp_path / f"rollout-2026-02-23T12-00-01-{child_id}.jsonl", [child_meta, user("read app.py")])
    [session] = codex.group([child, parent])
    assert session.main == parent and [(s.path, s.agent_id) for s in session.subagents] == [(child, child_id)]
    [link] = of(parse_file(parent), AgentLink)
    assert (link.agent_id, link.tool_use_id, link.description) == (child_id, "call_spawn", "Bernoulli")
    [alone] = codex.group([child])  # its parent not among the paths: linked to the one imported before
    assert alone.main is None and alone.session_id == SID and alone.subagents[0].agent_id == child_id
    [info] = of(parse_file(child), SessionInfo)
    assert info.agent_id == child_id
