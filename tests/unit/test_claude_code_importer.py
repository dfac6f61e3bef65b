"""The Claude Code importer: real fixtures counted independently, bad input, resume, fuzzing.

Expected numbers are computed here with plain ``json`` over the raw lines, never with the
importer's own helpers (only the documented ``KNOWN_METADATA_TYPES`` set is shared).
"""

import gzip
import io
import json
import os
import tracemalloc
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextviewer.core.records import (
    AgentLink,
    BadLine,
    FoldRecord,
    ImportProgress,
    MessageRecord,
    SessionInfo,
    UsageRecord,
)
from contextviewer.importers.claude_code.parser import KNOWN_METADATA_TYPES, parse
from contextviewer.importers.claude_code.layout import discover
from contextviewer.importers.lines import open_stream
from contextviewer.importers.claude_code.synthetic import write_session
from tests.conftest import claude_code_fixture_files, shared_fixtures_dir
from tests.importers import of


def run(data: bytes, **kwargs) -> list:
    return list(parse(io.BytesIO(data), **kwargs))


def run_file(path: Path, **kwargs) -> list:
    with open(path, "rb") as fh:
        return list(parse(fh, **kwargs))


def info_of(records) -> SessionInfo:
    assert isinstance(records[-1], SessionInfo)
    assert sum(isinstance(r, SessionInfo) for r in records) == 1
    return records[-1]


def line(**fields) -> bytes:
    return json.dumps(fields).encode() + b"\n"


def user(uuid, text="hello", **extra) -> bytes:
    return line(type="user", uuid=uuid, message={"role": "user", "content": text}, **extra)


def subagent_id(path: Path) -> str | None:
    if path.parent.name == "subagents":
        return path.name.removesuffix(".jsonl").removeprefix("agent-")
    return None


# -- independent counting -----------------------------------------------------------------------


def count_independently(path: Path, file_agent: str | None) -> dict:
    """Numbers a correct import must give, from the raw lines with nothing but json."""
    n = Counter()
    seen: dict[str, dict] = {}  # uuid -> its first line's object, without session id and time
    calls: set[tuple] = set()
    links: set[str] = set()
    sidechain_uuids: set[str] = set()
    for raw in path.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            n["bad"] += 1
            continue
        if not isinstance(obj, dict):
            n["bad"] += 1
            continue
        kind = obj.get("type")
        if kind == "queue-operation" and obj.get("operation") == "enqueue":
            content = obj.get("content")
            if isinstance(content, str) and content.strip():
                n["messages"] += 1  # what was typed while the agent worked: a queued user message
            continue
        if kind in KNOWN_METADATA_TYPES:
            data = obj.get("data")
            if kind == "progress" and isinstance(data, dict) and data.get("type") == "agent_progress":
                if isinstance(data.get("agentId"), str) and data["agentId"]:
                    links.add(data["agentId"])
            continue
        uuid = obj.get("uuid")
        if isinstance(uuid, str) and uuid:
            again = {k: v for k, v in obj.items() if k not in ("sessionId", "timestamp")}
            if uuid in seen:
                n["duplicates"] += 1
                message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
                request = obj.get("requestId") if isinstance(obj.get("requestId"), str) and obj["requestId"] else None
                later_record_of_a_call = kind == "assistant" and isinstance(message.get("usage"), dict) and (
                    message.get("id"), request) in calls
                if again != seen[uuid] and not later_record_of_a_call:
                    n["bad"] += 1  # another record under a kept uuid: said, not stored
                continue
            seen[uuid] = again
        n["messages"] += 1
        message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        content = obj.get("content") if kind == "system" else message.get("content")
        if isinstance(content, list):
            n["tool_calls"] += sum(
                1 for b in content if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use")
            )
        if (
            kind == "assistant"
            and isinstance(message.get("id"), str)
            and message["id"]
            and isinstance(message.get("usage"), dict)
            and message.get("model") != "<synthetic>"
        ):
            request = obj.get("requestId")
            calls.add((message["id"], request if isinstance(request, str) and request else None))
        if kind == "system" and obj.get("subtype") in ("compact_boundary", "microcompact_boundary"):
            n["folds"] += 1
        result = obj.get("toolUseResult")
        if kind == "user" and isinstance(result, dict) and isinstance(result.get("agentId"), str) and result["agentId"]:
            links.add(result["agentId"])
        has_agent = isinstance(obj.get("agentId"), str) and obj["agentId"]
        if file_agent is None and obj.get("isSidechain") is True and not has_agent:
            parent = obj.get("parentUuid")
            if not (isinstance(parent, str) and parent in sidechain_uuids):
                n["inline_runs"] += 1
            if isinstance(uuid, str) and uuid:
                sidechain_uuids.add(uuid)
    n["calls"] = len(calls)
    n["links"] = len(links) + n["inline_runs"]
    return n


def image_data_strings(value, found: list[str]) -> list[str]:
    if isinstance(value, dict):
        source = value.get("source")
        if value.get("type") == "image" and isinstance(source, dict) and isinstance(source.get("data"), str):
            if len(source["data"]) >= 64:
                found.append(source["data"])
        for item in value.values():
            image_data_strings(item, found)
    elif isinstance(value, list):
        for item in value:
            image_data_strings(item, found)
    return found


FIXTURES = claude_code_fixture_files()


@pytest.mark.fixtures
@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_counts_match_an_independent_count(path: Path):
    agent = subagent_id(path)
    records = run_file(path, agent_id=agent)
    info = info_of(records)
    want = count_independently(path, agent)

    messages = of(records, MessageRecord)
    assert len(messages) == want["messages"]
    assert len(of(records, UsageRecord)) == want["calls"]
    assert sum(b.kind == "tool_call" for m in messages for b in m.blocks) == want["tool_calls"]
    assert len(of(records, FoldRecord)) == want["folds"]
    assert len([b for b in of(records, BadLine)]) == want["bad"]
    assert info.duplicate_uuids == want["duplicates"]
    assert len(of(records, AgentLink)) == want["links"]
    assert info.bytes_consumed == path.stat().st_size  # every fixture line is complete or parses

    # Every message keeps its raw line, and line numbers point at it.
    raw_lines = path.read_bytes().split(b"\n")
    for m in messages:
        assert m.raw == raw_lines[m.line_no - 1].decode()
        assert isinstance(json.loads(m.raw), dict)
        if agent:
            assert m.agent_id is not None

    # No image data in blocks: it stays in the raw line only.
    data = []
    for raw in raw_lines:
        try:
            image_data_strings(json.loads(raw), data)
        except ValueError:
            pass
    blocks_text = json.dumps([b.as_dict() for m in messages for b in m.blocks], ensure_ascii=False)
    for item in data:
        assert item not in blocks_text


def _compactions(path: Path):
    """(boundary uuid, preTokens, expected summary uuid) per kept compact_boundary, independently."""
    rows = []
    seen = set()
    for raw in path.read_bytes().split(b"\n"):
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict) or obj.get("type") in KNOWN_METADATA_TYPES:
            continue
        uuid = obj.get("uuid")
        if isinstance(uuid, str) and uuid:
            if uuid in seen:
                continue
            seen.add(uuid)
        rows.append(obj)
    out = []
    for i, obj in enumerate(rows):
        if obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
            pre = obj["compactMetadata"].get("preTokens")
            later = [r for r in rows[i + 1 :] if r.get("isCompactSummary") is True]
            by_parent = [r for r in later if r.get("parentUuid") == obj.get("uuid")]
            expected = (by_parent or later or [{}])[0].get("uuid")
            out.append((obj.get("uuid"), pre if isinstance(pre, int) else None, expected))
    return out


@pytest.mark.fixtures
def test_fixture_compactions_keep_pre_tokens_and_find_their_summary(fixtures_dir: Path):
    checked = 0
    for path in claude_code_fixture_files():
        want = _compactions(path)
        if not want:
            continue
        records = run_file(path)
        folds = [f for f in of(records, FoldRecord) if f.kind == "compact"]
        assert [(f.boundary_uuid, f.tokens_before, f.summary_uuid) for f in folds] == want
        by_uuid = {m.uuid: m for m in of(records, MessageRecord)}
        for fold in folds:
            if fold.summary_uuid:
                summary = by_uuid[fold.summary_uuid]
                assert summary.is_compact_summary
                assert fold.summary_text == "\n".join(b.text for b in summary.blocks if b.kind == "text")
        checked += 1
    assert checked >= 5  # 3 spotter sessions, fasthooks, the catalogue


@pytest.mark.fixtures
def test_spotter_session_details(fixtures_dir: Path):
    path = fixtures_dir / "claude-code" / "marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    records = run_file(path)
    (fold,) = of(records, FoldRecord)
    assert (fold.trigger, fold.tokens_before, fold.logical_parent_uuid) == (
        "auto",
        170251,
        "459e838f-d7ea-4f7d-94ad-2cb4d227dc77",
    )
    assert fold.summary_text.startswith("This session is being continued")
    (link,) = of(records, AgentLink)
    assert (link.agent_id, link.tool_use_id, link.agent_type) == ("a2898e3", "toolu_017pLRuPHYTX5t99EnLyV53m", "Explore")
    usage = of(records, UsageRecord)
    assert all(u.output_is_lower_bound for u in usage)  # every 2.1.39 line has stop_reason null
    assert all(u.context_size > 0 for u in usage)
    info = info_of(records)
    assert info.external_id == "4d5611e5-241a-462a-8d15-5122611a9569"
    assert info.cli_version == "2.1.39" and info.models == ["claude-opus-4-6"]
    assert info.started_at < info.ended_at and info.started_at.tzinfo is not None
    roles = Counter(m.role for m in of(records, MessageRecord))
    assert roles["tool"] > 0 and roles["user"] > 0 and roles["assistant"] > 0 and roles["system"] > 0

    # The compaction's own call reads about the context it summarized.
    acompact = path.with_suffix("") / "subagents" / "agent-acompact-e1f845.jsonl"
    (call,) = of(run_file(acompact, agent_id="acompact-e1f845"), UsageRecord)
    assert call.context_size == 3 + 8681 + 164830
    assert call.cache_write_5m == 8681 and call.agent_id == "acompact-e1f845"


@pytest.mark.fixtures
def test_inline_sidechains_become_linked_runs(fixtures_dir: Path):
    path = fixtures_dir / "claude-code" / "d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    records = run_file(path)
    messages = of(records, MessageRecord)
    side = [m for m in messages if m.is_sidechain]
    assert len(side) == 405
    assert all(m.agent_id and m.agent_id.startswith("sidechain-") for m in side)
    assert all(m.agent_id is None for m in messages if not m.is_sidechain)
    links = of(records, AgentLink)
    assert len(links) == 5
    assert {m.agent_id for m in side} == {link.agent_id for link in links}
    # Each run is linked to the Task call whose prompt is the run's first user text.
    tasks = {}
    for m in messages:
        for b in m.blocks:
            if b.kind == "tool_call" and b.tool_name == "Task":
                tasks[b.tool_id] = b.tool_input["prompt"]
    for link in links:
        assert link.tool_use_id in tasks
        first = min((m for m in side if m.agent_id == link.agent_id), key=lambda m: m.line_no)
        assert first.line_no == link.line_no and first.role == "user"
        assert first.blocks[0].text.strip() == tasks[link.tool_use_id].strip()
        assert link.agent_type == "general-purpose" and link.description
    assert info_of(records).title == "Empty Repo Setup: CLAUDE.md Foundation Created"


@pytest.mark.fixtures
def test_catalogue_titles_unknown_types_and_odd_values(fixtures_dir: Path):
    path = fixtures_dir / "claude-code" / "jazzyalex__agent-sessions__small.jsonl"
    records = run_file(path)
    info = info_of(records)
    assert info.title == "Stage0 small fixture"  # custom-title wins over ai-title and summary
    other = {m.record_type for m in of(records, MessageRecord) if m.role == "other"}
    assert {"mode", "started", "result", "relocated"} <= other
    # 2.1.3xx bookkeeping (issue 33): no message, so no tokens.
    assert not {"frame-link", "atis-latch"} & other
    assert not other & KNOWN_METADATA_TYPES
    # "[trimmed for fixture]" timestamps and versions are ignored, never fatal.
    assert info.cli_version and info.cli_version[0].isdigit()
    assert all(m.timestamp is None or m.timestamp.tzinfo for m in of(records, MessageRecord))
    synthetic = [m for m in of(records, MessageRecord) if m.flags.get("synthetic")]
    assert all(m.model == "<synthetic>" for m in synthetic)
    assert "<synthetic>" not in info.models


@pytest.mark.fixtures
def test_images_are_counted_not_inlined(fixtures_dir: Path):
    path = fixtures_dir / "claude-code" / "moredip__session-share__images-in-tool-results.jsonl"
    records = run_file(path)
    bad = of(records, BadLine)
    assert [(b.line_no, b.reason) for b in bad] == [
        (1, "line 1 is a comment, not JSON"),
        (2, "line 2 is a comment, not JSON"),
    ]
    results = [b for m in of(records, MessageRecord) for b in m.blocks if b.kind == "tool_result"]
    assert any(b.images >= 1 for b in results)
    for m in of(records, MessageRecord):
        for b in m.blocks:
            assert len(b.text) < 100_000


@pytest.mark.fixtures
def test_edge_cases_file(fixtures_dir: Path):
    path = fixtures_dir / "claude-code" / "daaain__claude-code-log__edge_cases.jsonl"
    records = run_file(path)
    reasons = {b.line_no: b.reason for b in of(records, BadLine)}
    assert reasons == {
        13: "line 13 is a JSON string, not a JSON object",
        15: "line 15 is a JSON number, not a JSON object",
        16: "line 16 is a JSON array, not a JSON object",
        # Two lines that reuse a kept line's uuid with other content (read by hand: line 12 is the
        # real prompt of line 11's broken record, line 18 another user message than line 10's).
        12: "line 12: its uuid 'edge_011' is already the uuid of line 11, a different record: not stored again",
        18: "line 18: its uuid 'edge_010' is already the uuid of line 10, a different record: not stored again",
    }
    info = info_of(records)
    assert info.duplicate_uuids == 2
    by_line = {m.line_no: m for m in of(records, MessageRecord)}
    assert by_line[14].role == "other" and by_line[14].record_type == "(none)"  # {"silly": "this"}
    assert by_line[5].role == "tool" and by_line[5].blocks[0].is_error


# -- records from hand-made lines ---------------------------------------------------------------


def test_blocks_roles_and_flags():
    data = b"".join(
        [
            user("u1", "plain text", isMeta=True, timestamp="2026-01-02T03:04:05.678Z"),
            line(
                type="assistant",
                uuid="a1",
                parentUuid="u1",
                requestId="r1",
                isApiErrorMessage=True,
                message={
                    "id": "m1",
                    "model": "claude-x",
                    "stop_reason": None,
                    "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "s"},
                        {"type": "redacted_thinking", "data": "xxx"},
                        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls -la"}},
                        {"type": "server_tool_use", "id": "t2", "name": "web_search", "input": {"q": "x"}},
                        {"type": "document", "source": {"data": "QUJD" * 100}},
                        {"type": "mystery", "text": "kept"},
                    ],
                    "usage": {"input_tokens": 1},
                },
            ),
            line(
                type="user",
                uuid="u2",
                toolUseResult={"stdout": "x"},
                message={
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "is_error": True,
                            "content": [
                                {"type": "text", "text": "a"},
                                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "Z" * 999}},
                                {"type": "text", "text": "b"},
                            ],
                        }
                    ]
                },
            ),
            line(
                type="user",
                uuid="u3",
                message={"content": [{"type": "image", "source": {"media_type": "image/jpeg", "data": "Q" * 500}}, "txt"]},
            ),
            line(type="system", uuid="s1", subtype="api_error", content="retrying", level="error"),
            line(type="system", uuid="s2", subtype="turn_duration", durationMs=5),
            line(type="user", uuid="u4", isCompactSummary=True, isVisibleInTranscriptOnly=True, isSidechain=True,
                 agentId="abc", message={"content": "sum"}),
        ]
    )
    records = run(data)
    m = {r.uuid: r for r in of(records, MessageRecord)}
    assert m["u1"].role == "user" and m["u1"].is_meta and m["u1"].blocks[0].as_dict() == {"kind": "text", "text": "plain text"}
    assert m["u1"].timestamp == datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    a = m["a1"]
    assert (a.role, a.model, a.api_message_id, a.request_id, a.parent_uuid) == ("assistant", "claude-x", "m1", "r1", "u1")
    assert a.flags == {"api_error": True}
    kinds = [(b.kind, b.raw_type) for b in a.blocks]
    assert kinds == [
        ("thinking", None),
        ("thinking", "redacted_thinking"),
        ("tool_call", None),
        ("tool_call", "server_tool_use"),
        ("other", "document"),
        ("other", "mystery"),
    ]
    assert a.blocks[0].text == "hmm"
    assert (a.blocks[2].tool_id, a.blocks[2].tool_name, a.blocks[2].tool_input) == ("t1", "Bash", {"command": "ls -la"})
    assert a.blocks[2].text == '{"command":"ls -la"}'
    assert a.blocks[4].text == "" and a.blocks[5].text == "kept"
    r = m["u2"]
    assert r.role == "tool" and r.flags == {"tool_use_result": True}
    assert (r.blocks[0].tool_id, r.blocks[0].is_error, r.blocks[0].text, r.blocks[0].images) == ("t1", True, "a\nb", 1)
    img = m["u3"]
    assert img.role == "user"
    assert img.blocks[0].as_dict() == {"kind": "image", "media_type": "image/jpeg", "data_size": 500}
    assert img.blocks[1].text == "txt"
    assert m["s1"].role == "system" and m["s1"].subtype == "api_error" and m["s1"].flags == {"api_error": True}
    assert m["s1"].blocks[0].text == "retrying"
    assert m["s2"].subtype == "turn_duration" and m["s2"].blocks == []
    s = m["u4"]
    assert s.is_compact_summary and s.is_sidechain and s.agent_id == "abc"
    assert s.flags == {"visible_in_transcript_only": True}


def test_metadata_types_are_not_messages_and_unknown_types_are_other():
    data = b"".join(line(type=t, uuid=f"x-{t}") for t in sorted(KNOWN_METADATA_TYPES))
    data += line(type="brand-new-kind", uuid="n1", payload={"a": 1}) + line(uuid="n2") + line(type=5)
    records = run(data)
    messages = of(records, MessageRecord)
    assert [(m.role, m.record_type) for m in messages] == [("other", "brand-new-kind"), ("other", "(none)"), ("other", "5")]
    assert not of(records, BadLine)


def test_usage_is_deduplicated_per_call():
    def part(uuid, mid, req, out, stop=None, **usage):
        u = {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 5000, "output_tokens": out}
        u.update(usage)
        return line(type="assistant", uuid=uuid, requestId=req, timestamp="2026-01-01T00:00:00Z",
                    message={"id": mid, "model": "claude-x", "stop_reason": stop, "usage": u, "content": []})

    data = b"".join(
        [
            part("a", "m1", "r1", 2, cache_creation={"ephemeral_5m_input_tokens": 60, "ephemeral_1h_input_tokens": 40}),
            part("b", "m1", "r1", 9),
            part("c", "m1", "r1", 4),
            part("d", "m2", "r2", 7, stop="end_turn", input_tokens=999),
            part("e", "m2", "r2", 1, input_tokens=1),
            part("f", "m2", "r3", 1),  # same message id, another request: another call
            line(type="assistant", uuid="g", message={"model": "claude-x", "usage": {"output_tokens": 5}}),  # no id
            line(type="assistant", uuid="h", requestId="r9",
                 message={"id": "m9", "model": "<synthetic>", "usage": {"output_tokens": 0}}),
        ]
    )
    records = run(data)
    calls = {(u.api_message_id, u.request_id): u for u in of(records, UsageRecord)}
    assert list(calls) == [("m1", "r1"), ("m2", "r2"), ("m2", "r3")]
    first = calls[("m1", "r1")]
    assert (first.message_uuid, first.line_no, first.output, first.output_is_lower_bound) == ("a", 1, 9, True)
    assert (first.input_uncached, first.cache_write, first.cache_read, first.context_size) == (3, 100, 5000, 5103)
    assert (first.cache_write_5m, first.cache_write_1h) == (60, 40)
    assert first.timestamp == datetime(2026, 1, 1, tzinfo=UTC)
    second = calls[("m2", "r2")]
    assert (second.input_uncached, second.output, second.output_is_lower_bound) == (999, 7, False)
    assert second.cache_write_5m is None
    info = info_of(records)
    assert info.models == ["claude-x"]


def test_duplicate_uuids_first_wins():
    data = user("u1", "first") + user("u2") + user("u1", "copy") + user("u1", "copy again")
    records = run(data)
    messages = of(records, MessageRecord)
    assert [(m.uuid, m.blocks[0].text) for m in messages] == [("u1", "first"), ("u2", "hello")]
    assert info_of(records).duplicate_uuids == 2


def test_folds_compact_and_microcompact():
    boundary = line(
        type="system", subtype="compact_boundary", uuid="b1", parentUuid=None, logicalParentUuid="u3",
        timestamp="2026-01-01T00:00:00Z",
        compactMetadata={"trigger": "manual", "preTokens": 1234, "postTokens": 99,
                         "preservedSegment": {"headUuid": "u2", "anchorUuid": "b1", "tailUuid": "u3"}},
    )
    data = b"".join(
        [
            user("u1"),
            user("u2", parentUuid="u1"),
            user("u3", parentUuid="u2"),
            boundary,
            user("x1", "unrelated summary", isCompactSummary=True),  # not the boundary's child
            user("s1", "Summary text", isCompactSummary=True, parentUuid="b1"),
            line(type="system", subtype="compact_boundary", uuid="b2",
                 compactMetadata={"trigger": "auto", "preTokens": "[trimmed for fixture]",
                                  "preservedMessages": {"uuids": ["u2", "u3", 7]}}),
            line(type="system", subtype="microcompact_boundary", uuid="b3",
                 microcompactMetadata={"trigger": "auto", "preTokens": 5000, "tokensSaved": 1200,
                                       "compactedToolIds": ["t1"]}),
            line(type="system", subtype="compact_boundary", uuid="b4", compactMetadata="nonsense"),
        ]
    )
    folds = of(run(data), FoldRecord)
    assert [(f.kind, f.boundary_uuid, f.trigger, f.tokens_before, f.tokens_after) for f in folds] == [
        ("compact", "b1", "manual", 1234, 99),
        ("compact", "b2", "auto", None, None),
        ("microcompact", "b3", "auto", 5000, None),
        ("compact", "b4", None, None, None),
    ]
    b1, b2, b3, b4 = folds
    assert (b1.summary_uuid, b1.summary_text, b1.logical_parent_uuid) == ("s1", "Summary text", "u3")
    assert b1.preserved_uuids == ["u2", "u3"]  # head..tail resolved through the parent chain
    assert b1.metadata["preservedSegment"]["anchorUuid"] == "b1"
    assert b2.preserved_uuids == ["u2", "u3"]
    assert b2.summary_uuid is None  # no summary follows it
    assert b3.metadata["tokensSaved"] == 1200 and b3.summary_uuid is None
    assert b4.metadata == {}


def test_two_x_subagent_links_from_results_and_progress():
    task = {"type": "tool_use", "id": "toolu_1", "name": "Task",
            "input": {"subagent_type": "Explore", "description": "look around", "prompt": "go"}}
    data = b"".join(
        [
            line(type="assistant", uuid="a1", message={"content": [task]}),
            line(type="progress", uuid="p1", parentToolUseID="toolu_1",
                 data={"type": "agent_progress", "agentId": "abc1234"}),
            line(type="progress", uuid="p2", parentToolUseID="toolu_1",
                 data={"type": "agent_progress", "agentId": "abc1234"}),
            line(type="user", uuid="u1", toolUseResult={"agentId": "abc1234", "status": "completed"},
                 message={"content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}]}),
            line(type="user", uuid="u2", toolUseResult={"agentId": "zzz"},
                 message={"content": [{"type": "tool_result", "tool_use_id": "toolu_unknown", "content": "x"}]}),
        ]
    )
    links = of(run(data), AgentLink)
    assert links == [
        AgentLink(agent_id="abc1234", tool_use_id="toolu_1", line_no=2, agent_type="Explore", description="look around"),
        AgentLink(agent_id="zzz", tool_use_id="toolu_unknown", line_no=5),
    ]


def test_agent_id_argument_labels_a_subagent_file():
    data = user("u1", isSidechain=True) + user("u2", isSidechain=True, parentUuid="u1")
    records = run(data, agent_id="a77", agent_type="Plan")
    assert {m.agent_id for m in of(records, MessageRecord)} == {"a77"}
    assert not of(records, AgentLink)  # not inline sidechains: the file is the sub-agent
    info = info_of(records)
    assert (info.agent_id, info.agent_type) == ("a77", "Plan")


def test_timestamps_never_crash():
    values = ["2026-01-01T00:00:00Z", "2026-01-01T01:00:00+01:00", "2026-01-01T00:00:00", "[trimmed for fixture]",
              "", 12345, None, "9999-99-99T99:99:99Z", "0001-01-01T00:00:00+05:00"]
    data = b"".join(user(f"u{i}", timestamp=v) for i, v in enumerate(values))
    records = run(data)
    stamps = [m.timestamp for m in of(records, MessageRecord)]
    assert stamps[0] == stamps[1] == stamps[2] == datetime(2026, 1, 1, tzinfo=UTC)
    assert stamps[3:8] == [None] * 5
    info = info_of(records)
    assert info.ended_at == datetime(2026, 1, 1, tzinfo=UTC)


def test_progress_records_are_emitted_every_n_bytes():
    data = b"".join(user(f"u{i}", "x" * 200) for i in range(50))
    progress = of(run(data, progress_every_bytes=2000), ImportProgress)
    assert len(progress) >= 4
    assert all(b.bytes_read > a.bytes_read for a, b in zip(progress, progress[1:]))


# -- bad input ----------------------------------------------------------------------------------


def test_non_json_line_is_reported_and_the_rest_imported():
    data = user("u1") + b"this is not json\n" + b"// a comment\n" + user("u2")
    records = run(data)
    assert [(b.line_no, b.reason) for b in of(records, BadLine)] == [
        (2, "line 2 is not valid JSON (Expecting value at column 1)"),
        (3, "line 3 is a comment, not JSON"),
    ]
    assert [m.line_no for m in of(records, MessageRecord)] == [1, 4]
    info = info_of(records)
    assert (info.lines, info.bytes_consumed) == (4, len(data))


def test_truncated_last_line_is_not_consumed():
    complete = user("u1") + user("u2")
    data = complete + user("u3")[:25]
    records = run(data)
    (bad,) = of(records, BadLine)
    assert (bad.line_no, bad.offset) == (3, len(complete))
    assert bad.reason == "line 3 is incomplete (the file ends mid-line)"
    assert len(of(records, MessageRecord)) == 2
    info = info_of(records)
    assert (info.bytes_consumed, info.lines) == (len(complete), 2)


def test_last_line_without_newline_that_parses_is_consumed():
    data = user("u1") + user("u2").rstrip(b"\n")
    records = run(data)
    assert not of(records, BadLine) and len(of(records, MessageRecord)) == 2
    assert info_of(records).bytes_consumed == len(data)


def test_invalid_utf8_line():
    bad_line = b'{"type":"user","x":"\xff\xfe"}\n'
    data = user("u1") + b"\n" + user("u2") + b"\n" + b"\n" + user("u3") + bad_line + user("u4")
    records = run(data)
    (bad,) = of(records, BadLine)
    assert bad.reason == "line 7 is not valid UTF-8 (byte 0xff at position 20)"
    assert [m.uuid for m in of(records, MessageRecord)] == ["u1", "u2", "u3", "u4"]


def test_a_50_mb_line_is_imported_reduced_with_low_memory(tmp_path: Path):
    path = tmp_path / "huge.jsonl"
    with open(path, "wb") as fh:
        fh.write(user("u1"))
        fh.write(b'{"type":"user","uuid":"big","message":{"content":"')
        block = b"A" * (1 << 20)
        for _ in range(50):
            fh.write(block)
        fh.write(b'"}}\n')
        fh.write(user("u2"))
    tracemalloc.start()
    try:
        records = run_file(path, max_line_bytes=32 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 << 20
    (bad,) = of(records, BadLine)
    assert bad.line_no == 2 and bad.reason == (
        "line 2 is 50.0 MiB, over the 32.0 MiB limit: imported reduced (1 string shortened, 50.0 MiB not kept)"
    )
    assert [m.uuid for m in of(records, MessageRecord)] == ["u1", "big", "u2"]
    assert info_of(records).bytes_consumed == path.stat().st_size


def test_empty_file():
    records = run(b"")
    assert [(b.line_no, b.reason) for b in of(records, BadLine)] == [(0, "the file is empty")]
    info = info_of(records)
    assert (info.lines, info.bytes_consumed) == (0, 0)


def test_blank_file_is_not_an_error():
    records = run(b"\n  \n\n")
    assert not of(records, BadLine) and not of(records, MessageRecord)
    assert info_of(records).lines == 3


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
        b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(256)),
    ],
    ids=["png", "zip"],
)
def test_binary_file(data):
    records = run(data)
    assert [(b.line_no, b.reason) for b in of(records, BadLine)] == [(0, "binary file, not a JSONL session log")]
    assert not of(records, MessageRecord)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_text_is_read_as_text(encoding):
    data = (user("u1") + b"\n" + user("u2") + b"\n").decode().encode(encoding)
    records = run(data)
    assert not of(records, BadLine)
    assert [m.uuid for m in of(records, MessageRecord)] == ["u1", "u2"]


def test_json_array_file_is_explained_and_its_objects_imported():
    items = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "héllo"}},
        {"type": "assistant", "uuid": "a1", "message": {"id": "m1", "content": [{"type": "text", "text": "hi"}],
                                                        "usage": {"input_tokens": 5}}},
        42,
        {"type": "summary", "summary": "A title"},
    ]
    data = b"\xef\xbb\xbf" + json.dumps(items, indent=2, ensure_ascii=False).encode() + b"\n"
    records = run(data)
    bad = of(records, BadLine)
    assert bad[0].line_no == 0
    assert bad[0].reason.startswith("the file is a JSON array, not JSONL (one JSON object per line)")
    assert (bad[1].line_no, bad[1].reason) == (3, "element 3 of the array is a JSON number, not a JSON object")
    messages = of(records, MessageRecord)
    assert [(m.line_no, m.uuid) for m in messages] == [(1, "u1"), (2, "a1")]
    for m in messages:
        assert json.loads(m.raw)["uuid"] == m.uuid
        assert data[m.offset : m.offset + 1] == b"{"
    assert len(of(records, UsageRecord)) == 1
    assert info_of(records).title == "A title"


def test_json_array_that_is_too_big_or_broken_is_only_explained():
    items = [{"type": "user", "uuid": f"u{i}", "message": {"content": "x" * 100}} for i in range(50)]
    data = json.dumps(items, indent=1).encode()
    records = run(data, max_line_bytes=1000)
    assert [b.line_no for b in of(records, BadLine)] == [0]
    assert "over the 1000 bytes limit" in of(records, BadLine)[0].reason
    assert not of(records, MessageRecord)

    records = run(b'[\n{"type": "user",\n')
    (bad,) = of(records, BadLine)
    assert bad.line_no == 0 and "could not be read as a whole" in bad.reason


def test_a_line_that_is_an_array_is_just_a_bad_line():
    records = run(b'[1]\n' + user("u1"))
    assert [(b.line_no, b.reason) for b in of(records, BadLine)] == [(1, "line 1 is a JSON array, not a JSON object")]
    assert len(of(records, MessageRecord)) == 1


def test_gzip_file_is_accepted_and_streamed(tmp_path: Path):
    main = write_session(tmp_path / "s", messages=60, seed=5)
    plain = run_file(main)
    packed = tmp_path / "session.jsonl.gz"
    packed.write_bytes(gzip.compress(main.read_bytes()))
    stream, compression = open_stream(packed)
    with stream:
        via_open = list(parse(stream))
    direct = run_file(packed)  # parse also recognizes gzip at offset 0
    assert compression == "gzip"
    key = [(type(r).__name__, getattr(r, "line_no", None), getattr(r, "offset", None)) for r in plain]
    assert [(type(r).__name__, getattr(r, "line_no", None), getattr(r, "offset", None)) for r in via_open] == key
    assert [(type(r).__name__, getattr(r, "line_no", None), getattr(r, "offset", None)) for r in direct] == key
    assert info_of(direct).bytes_consumed == main.stat().st_size


def test_gzip_bomb_is_stopped_at_the_cap(tmp_path: Path):
    import zlib

    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [comp.compress(user("u1") + user("u2"))]
    block = b" " * (1 << 20)
    parts += [comp.compress(block) for _ in range(100)]
    parts.append(comp.flush())
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(b"".join(parts))
    stream, _ = open_stream(path, max_decompressed_bytes=10 << 20)
    with stream:
        records = list(parse(stream))
    bad = of(records, BadLine)
    assert [(b.line_no, b.reason) for b in bad] == [
        (0, "gzip data expands beyond the 10.0 MiB cap; import stopped (possible gzip bomb)")
    ]
    assert [m.uuid for m in of(records, MessageRecord)] == ["u1", "u2"]
    # And when parse opens the gzip itself:
    records = run_file(path, max_decompressed_bytes=10 << 20)
    assert "possible gzip bomb" in of(records, BadLine)[0].reason


# -- resume -------------------------------------------------------------------------------------


def _messages_key(records):
    return [(m.line_no, m.offset, m.uuid, m.role) for m in of(records, MessageRecord)]


def _resume(path: Path, info: SessionInfo) -> list:
    with open(path, "rb") as fh:
        fh.seek(info.bytes_consumed)
        return list(parse(fh, start_offset=info.bytes_consumed, start_line=info.lines))


def test_resume_reads_exactly_the_new_lines(tmp_path: Path):
    source = write_session(tmp_path / "src", messages=80, seed=2).read_bytes()
    lines = source.split(b"\n")[:-1]
    cut = len(lines) // 2
    path = tmp_path / "grow.jsonl"
    path.write_bytes(b"\n".join(lines[:cut]) + b"\n")
    first = run_file(path)
    info = info_of(first)
    assert info.lines == cut and info.bytes_consumed == path.stat().st_size

    with open(path, "ab") as fh:
        fh.write(b"\n".join(lines[cut:]) + b"\n")
    second = _resume(path, info)
    full = run_file(path)
    assert _messages_key(second) == [k for k in _messages_key(full) if k[0] > cut]
    assert _messages_key(first) + _messages_key(second) == _messages_key(full)
    assert not of(second, BadLine)
    assert info_of(second).bytes_consumed == path.stat().st_size
    assert info_of(second).lines == len(lines)


def test_resume_after_a_truncated_line(tmp_path: Path):
    path = tmp_path / "grow.jsonl"
    path.write_bytes(user("u1") + user("u2")[:20])
    info = info_of(run_file(path))
    assert (info.lines, info.bytes_consumed) == (1, len(user("u1")))
    with open(path, "ab") as fh:
        fh.write(user("u2")[20:] + user("u3"))
    second = _resume(path, info)
    assert [(m.line_no, m.uuid) for m in of(second, MessageRecord)] == [(2, "u2"), (3, "u3")]
    assert not of(second, BadLine)


def test_resume_after_a_complete_line_without_newline(tmp_path: Path):
    path = tmp_path / "grow.jsonl"
    path.write_bytes(user("u1") + user("u2").rstrip(b"\n"))
    first = run_file(path)
    info = info_of(first)
    assert [m.uuid for m in of(first, MessageRecord)] == ["u1", "u2"]
    assert info.bytes_consumed == path.stat().st_size
    with open(path, "ab") as fh:
        fh.write(b"\n" + user("u3") + user("u4"))
    second = _resume(path, info)
    assert [(m.line_no, m.uuid) for m in of(second, MessageRecord)] == [(3, "u3"), (4, "u4")]
    assert _messages_key(run_file(path))[2:] == _messages_key(second)


# -- never raises -------------------------------------------------------------------------------

# More examples for a deeper run: CONTEXTVIEWER_FUZZ_EXAMPLES=5000 pytest -k fuzz
FUZZ_EXAMPLES = int(os.environ.get("CONTEXTVIEWER_FUZZ_EXAMPLES", "150"))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
KEYS = ["type", "uuid", "parentUuid", "logicalParentUuid", "message", "content", "isSidechain", "agentId",
        "toolUseResult", "compactMetadata", "microcompactMetadata", "subtype", "timestamp", "requestId", "data",
        "parentToolUseID", "isCompactSummary", "isMeta", "sessionId", "version", "cwd", "gitBranch",
        "customTitle", "aiTitle", "summary"]
TYPES = ["user", "assistant", "system", "progress", "summary", "custom-title", "ai-title", "attachment", "weird"]
block_like = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "thinking", "tool_use", "tool_result", "image", "redacted_thinking", "doc"])},
    optional={"text": json_values, "thinking": json_values, "id": json_values, "name": st.sampled_from(["Task", "Bash"]),
              "input": json_values, "tool_use_id": json_values, "content": json_values, "is_error": json_values,
              "source": json_values},
)
message_like = st.fixed_dictionaries(
    {},
    optional={"id": st.sampled_from(["m1", "m2"]) | json_values, "model": st.sampled_from(["x", "<synthetic>"]),
              "content": st.lists(block_like | json_values, max_size=4) | json_values,
              "usage": st.dictionaries(st.sampled_from(["input_tokens", "output_tokens", "cache_creation",
                                                         "cache_read_input_tokens"]), json_values, max_size=4),
              "stop_reason": json_values},
)
record_like = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES) | json_values},
    optional={
        "uuid": st.sampled_from(["a", "b", "c"]) | json_values,
        "parentUuid": st.sampled_from(["a", "b", None]) | json_values,
        "message": message_like | json_values,
        "subtype": st.sampled_from(["compact_boundary", "microcompact_boundary", "api_error"]) | json_values,
        "compactMetadata": st.dictionaries(st.sampled_from(["preTokens", "trigger", "preservedSegment",
                                                            "preservedMessages"]), json_values) | json_values,
        "isSidechain": st.booleans() | json_values,
        "isCompactSummary": st.booleans(),
        "toolUseResult": st.fixed_dictionaries({}, optional={"agentId": json_values}) | json_values,
        "data": st.fixed_dictionaries({"type": st.just("agent_progress")}, optional={"agentId": json_values})
        | json_values,
        "timestamp": st.sampled_from(["2026-01-01T00:00:00Z", "nope"]) | json_values,
        **{k: json_values for k in KEYS if k not in ("type", "uuid", "parentUuid", "message", "subtype",
                                                     "compactMetadata", "isSidechain", "isCompactSummary",
                                                     "toolUseResult", "data", "timestamp")},
    },
)


def check_never_raises(data: bytes, **kwargs):
    records = run(data, **kwargs)
    info = info_of(records)
    assert 0 <= info.bytes_consumed <= max(len(data), 0) or data[:2] == b"\x1f\x8b"
    for r in records[:-1]:
        assert not isinstance(r, SessionInfo)
    for bad in of(records, BadLine):
        # The per-line safety net must not be what kept the import alive.
        assert "unexpected error" not in bad.reason and "could not be read (" not in bad.reason, bad.reason
    return records


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=3000), cap=st.integers(1, 200), chunk=st.integers(1, 64))
def test_fuzz_random_bytes(data, cap, chunk):
    check_never_raises(data, max_line_bytes=cap, chunk_size=chunk)
    check_never_raises(data)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(record_like | json_values, max_size=12), prefix=st.sampled_from([b"", b"[", b"\xef\xbb\xbf"]))
def test_fuzz_random_records(rows, prefix):
    data = prefix + b"".join(json.dumps(r).encode() + b"\n" for r in rows)
    check_never_raises(data)


def _sample_lines() -> list[bytes]:
    root = shared_fixtures_dir()
    picked: list[bytes] = []
    if root is not None:
        for name in ("jazzyalex__agent-sessions__small.jsonl", "daaain__claude-code-log__edge_cases.jsonl",
                     "oneryalcin__fasthooks__sample_main_transcript.jsonl"):
            path = root / "claude-code" / name
            if path.is_file():
                picked += [raw for raw in path.read_bytes().split(b"\n") if raw and len(raw) < 20_000]
    if not picked:
        picked = [user("u1"), line(type="system", subtype="compact_boundary", uuid="b", compactMetadata={})]
    return picked


SAMPLE_LINES = _sample_lines()


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_mutated_fixture_lines(data):
    picks = data.draw(st.lists(st.sampled_from(SAMPLE_LINES), min_size=1, max_size=6))
    out = []
    for raw in picks:
        op = data.draw(st.sampled_from(["keep", "truncate", "flip", "insert", "delete"]))
        if op != "keep" and raw:
            i = data.draw(st.integers(0, len(raw) - 1))
            if op == "truncate":
                raw = raw[:i]
            elif op == "flip":
                raw = raw[:i] + bytes([raw[i] ^ data.draw(st.integers(1, 255))]) + raw[i + 1 :]
            elif op == "insert":
                raw = raw[:i] + data.draw(st.binary(min_size=1, max_size=5)) + raw[i:]
            else:
                raw = raw[:i] + raw[i + data.draw(st.integers(1, 50)) :]
        out.append(raw)
    blob = b"\n".join(out) + data.draw(st.sampled_from([b"", b"\n"]))
    records = check_never_raises(blob)
    for m in of(records, MessageRecord):
        assert m.role in ("user", "assistant", "system", "tool", "other")


def test_deep_nesting_does_not_crash():
    records = run(user("u0") + b"[" * 100_000 + b"\n" + user("u1") + b'{"a":' * 50_000 + b"1" + b"}" * 50_000 + b"\n")
    assert [m.uuid for m in of(records, MessageRecord)] == ["u0", "u1"]
    assert [b.line_no for b in of(records, BadLine)] == [2, 4]
    # A file that starts with such a line is taken for a JSON array, and explained.
    records = run(b"[" * 100_000 + b"\n" + user("u1"))
    assert [b.line_no for b in of(records, BadLine)] == [0]


# -- discovery ----------------------------------------------------------------------------------


def test_discover_layouts(tmp_path: Path):
    project = tmp_path / "projects" / "-home-me-app"
    (project / "s1" / "subagents").mkdir(parents=True)
    (project / "s1.jsonl").write_bytes(user("u1", sessionId="s1"))
    (project / "s1" / "subagents" / "agent-a1.jsonl").write_bytes(user("x", sessionId="s1"))
    (project / "s1" / "subagents" / "agent-a1.meta.json").write_text('{"agentType": "Explore", "spawnDepth": 1}')
    (project / "s1" / "subagents" / "agent-acompact-ff00aa.jsonl").write_bytes(user("y", sessionId="s1"))
    (project / "s1" / "tool-results").mkdir()
    (project / "s1" / "tool-results" / "abc.txt").write_text("big output")
    (project / "s2.jsonl.gz").write_bytes(gzip.compress(user("u2", sessionId="s2")))
    (project / "agent-1234abcd.jsonl").write_bytes(user("z", sessionId="s2"))  # 2.0.x, beside its session
    (project / "agent-99999999.jsonl").write_bytes(user("w", sessionId="gone"))  # its session is absent
    (project / "notes.txt").write_text("not a session")
    orphan = tmp_path / "projects" / "-other" / "s3" / "subagents"
    orphan.mkdir(parents=True)
    (orphan / "agent-b2.jsonl").write_bytes(user("v", sessionId="s3"))

    found = discover(tmp_path / "projects")
    by_id = {s.session_id: s for s in found}
    assert set(by_id) == {"s1", "s2", "gone", "s3"}
    s1 = by_id["s1"]
    assert s1.main == project / "s1.jsonl"
    assert [(a.path.name, a.agent_id, a.agent_type, a.is_compaction) for a in s1.subagents] == [
        ("agent-a1.jsonl", "a1", "Explore", False),
        ("agent-acompact-ff00aa.jsonl", "acompact-ff00aa", None, True),
    ]
    assert by_id["s2"].main == project / "s2.jsonl.gz"
    assert [a.agent_id for a in by_id["s2"].subagents] == ["1234abcd"]
    assert by_id["gone"].main == project / "agent-99999999.jsonl" and by_id["gone"].subagents == []
    assert by_id["s3"].main is None and [a.agent_id for a in by_id["s3"].subagents] == ["b2"]

    # Single files.
    (one,) = discover(project / "s1" / "subagents" / "agent-a1.jsonl")
    assert one.main is None and one.session_id == "s1" and one.subagents[0].agent_type == "Explore"
    (one,) = discover(project / "s1.jsonl")
    assert one.main == project / "s1.jsonl" and len(one.subagents) == 2
    (one,) = discover(project / "notes.txt")
    assert one.main == project / "notes.txt" and one.subagents == []
    (one,) = discover(project / "agent-1234abcd.jsonl")
    assert one.main is None and one.session_id == "s2"
    assert discover(tmp_path / "missing") == []


@pytest.mark.fixtures
def test_discover_fixture_folder(fixtures_dir: Path):
    found = discover(fixtures_dir / "claude-code")
    mains = {s.main.name: s for s in found if s.main}
    spotter = mains["marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl"]
    assert sorted((a.agent_id, a.is_compaction) for a in spotter.subagents) == [
        ("a2898e3", False),
        ("acompact-e1f845", True),
    ]
    jazzy = mains["jazzyalex__agent-sessions__0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl"]
    assert [(a.agent_id, a.agent_type) for a in jazzy.subagents] == [("a0ad4f44468bdf20d", "general-purpose")]
    assert len(mains["moredip__session-share__0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"].subagents) == 5
    listed = {s.main for s in found if s.main} | {a.path for s in found for a in s.subagents}
    assert listed == set(claude_code_fixture_files())


def _assistant_line(uuid: str, msg_id: str, output: int, stop: str | None, request_id: str | None = "req_1") -> bytes:
    fields = dict(type="assistant", uuid=uuid, parentUuid=None, sessionId="s1", requestId=request_id,
                  message={"id": msg_id, "model": "claude-opus-4-6", "role": "assistant", "stop_reason": stop,
                           "content": [{"type": "text", "text": "The summary."}],
                           "usage": {"input_tokens": 3, "cache_creation_input_tokens": 900,
                                     "cache_read_input_tokens": 169_038, "output_tokens": output}})
    if request_id is None:
        del fields["requestId"]
    return line(**fields)


def test_a_call_written_again_under_its_uuid_takes_the_last_records_output(tmp_path):
    """Claude Code writes a response first as a streaming placeholder (6 output tokens, no
    stop_reason), then again under the same uuid with the real output (issue 22, item 4)."""
    path = tmp_path / "agent-acompact-0a1b2c.jsonl"
    path.write_bytes(_assistant_line("u1", "msg_A", 6, None) + _assistant_line("u1", "msg_A", 8_217, "end_turn"))
    (call,) = of(run_file(path), UsageRecord)
    assert (call.output, call.output_is_lower_bound) == (8_217, False)
    assert call.input_uncached + call.cache_write + call.cache_read == 169_941


def test_the_2_1_compaction_file_has_the_summarizer_call_from_its_last_record(tmp_path):
    main = write_session(tmp_path, messages=80, seed=2, subagent=False, compaction_replay=True)
    (acompact,) = (tmp_path / main.stem / "subagents").glob("agent-acompact-*.jsonl")
    parent_ids = {json.loads(x)["message"]["id"] for x in main.read_text().splitlines() if '"type":"assistant"' in x}
    lines = [json.loads(x) for x in acompact.read_text().splitlines()]
    own = [o for o in lines if o["type"] == "assistant" and o["message"]["id"] not in parent_ids]
    assert len(own) == 2 and own[0]["uuid"] == own[1]["uuid"]  # the placeholder and the final record
    calls = {c.api_message_id: c for c in of(run_file(acompact, agent_id=acompact.stem[6:]), UsageRecord)}
    assert calls[own[0]["message"]["id"]].output == own[-1]["message"]["usage"]["output_tokens"]
    # Every other call of the file is one of the parent's, replayed (ingest leaves them out).
    assert len(calls) > 10 and set(calls) - {own[0]["message"]["id"]} <= parent_ids


def test_another_record_under_a_kept_uuid_is_said_with_both_lines(tmp_path):
    from tests.sessions import session_lines

    lines = [json.loads(x) for x in session_lines(2)]
    first_user = next(n for n, o in enumerate(lines) if o.get("type") == "user")
    resumed = dict(lines[first_user], sessionId="another-session", timestamp="2030-01-01T00:00:00Z")
    other = json.loads(json.dumps(lines[first_user]))
    other["message"] = {"role": "user", "content": "another prompt"}
    lines += [resumed, other]  # the same record written again on a resume (silent), then another record
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))
    records = run_file(path)
    bad = of(records, BadLine)
    n = len(lines)
    assert [(b.line_no, b.reason) for b in bad] == [
        (n, f"line {n}: its uuid {other['uuid']!r} is already the uuid of line {first_user + 1}, a different record: "
            "not stored again")]
    assert of(records, SessionInfo)[-1].duplicate_uuids == 2
