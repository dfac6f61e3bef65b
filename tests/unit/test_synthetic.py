"""The synthetic session generator: realistic, importable, deterministic, streaming and fast.

Every expectation is counted from the written files with plain json, not taken from the generator.
"""

import json
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, UsageRecord
from contextviewer.importers.claude_code.parser import parse
from contextviewer.importers.claude_code.layout import discover
from contextviewer.importers.claude_code.synthetic import write_session


def rows(path: Path) -> list[dict]:
    return [json.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]


def parse_file(path: Path, **kwargs) -> list:
    with open(path, "rb") as fh:
        return list(parse(fh, **kwargs))


def of(records, kind):
    return [r for r in records if isinstance(r, kind)]


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Path:
    return write_session(tmp_path_factory.mktemp("synthetic"), target_bytes=2_000_000, seed=3)


def test_a_2_mb_session_imports_cleanly(session: Path):
    size = session.stat().st_size
    assert 2_000_000 <= size < 3_000_000
    records = parse_file(session)
    assert of(records, BadLine) == []
    folds = of(records, FoldRecord)
    links = of(records, AgentLink)
    assert len(folds) == 1 and len(links) == 1
    assert records[-1].bytes_consumed == size

    # The fold's preTokens is the measured context of the last model call before the boundary.
    last_context = None
    boundary = None
    for row in rows(session):
        if row["type"] == "assistant":
            u = row["message"]["usage"]
            last_context = u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
        if row["type"] == "system" and row.get("subtype") == "compact_boundary":
            boundary = row
            break
    assert boundary is not None
    assert boundary["compactMetadata"]["preTokens"] == last_context
    (fold,) = folds
    assert fold.tokens_before == last_context and fold.trigger == "auto"
    summary = next(m for m in of(records, MessageRecord) if m.uuid == fold.summary_uuid)
    assert summary.is_compact_summary and summary.parent_uuid == boundary["uuid"]
    assert fold.logical_parent_uuid == boundary["logicalParentUuid"]


def test_the_session_looks_like_claude_code_2_1(session: Path):
    data = rows(session)
    kinds = Counter(r["type"] for r in data)
    assert {"user", "assistant", "system", "progress", "file-history-snapshot"} <= set(kinds)
    # Responses are split one block per line, sharing message.id and requestId.
    per_call = Counter((r["message"]["id"], r["requestId"]) for r in data if r["type"] == "assistant")
    assert max(per_call.values()) >= 2
    assert all(r["message"]["stop_reason"] is None for r in data if r["type"] == "assistant")
    blocks = Counter(r["message"]["content"][0]["type"] for r in data if r["type"] == "assistant")
    assert {"thinking", "text", "tool_use"} <= set(blocks)
    results = [r for r in data if r["type"] == "user" and isinstance(r["message"]["content"], list)]
    assert results and all("toolUseResult" in r for r in results)
    # The uuid chain holds: every parentUuid names an earlier line (or is a root).
    seen = set()
    for r in data:
        if r["type"] in ("user", "assistant", "system"):
            assert r["parentUuid"] is None or r["parentUuid"] in seen
            seen.add(r["uuid"])
    # Cache reads grow call after call until the fold, then start again lower.
    contexts = []
    for r in data:
        if r["type"] == "system" and r.get("subtype") == "compact_boundary":
            contexts.append("fold")
        elif r["type"] == "assistant":
            u = r["message"]["usage"]
            value = u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
            if not contexts or contexts[-1] != value:
                contexts.append(value)
    cut = contexts.index("fold")
    before, after = contexts[:cut], contexts[cut + 1 :]
    assert before == sorted(before) and after == sorted(after)
    assert after[0] < before[-1]


def test_subagent_and_compaction_files(session: Path):
    (found,) = discover(session.parent)
    assert found.main == session
    agents = {a.agent_id: a for a in found.subagents}
    assert len(agents) == 2
    (compaction,) = [a for a in agents.values() if a.is_compaction]
    (explore,) = [a for a in agents.values() if not a.is_compaction]
    assert explore.agent_type == "Explore"

    main = parse_file(session)
    (link,) = of(main, AgentLink)
    assert link.agent_id == explore.agent_id and link.agent_type == "Explore"
    task_ids = [b.tool_id for m in of(main, MessageRecord) for b in m.blocks if b.tool_name == "Task"]
    assert task_ids == [link.tool_use_id]

    sub = parse_file(explore.path, agent_id=explore.agent_id)
    assert of(sub, BadLine) == []
    assert {m.agent_id for m in of(sub, MessageRecord)} == {explore.agent_id}
    assert all(m.is_sidechain for m in of(sub, MessageRecord)) and of(sub, UsageRecord)
    assert sub[-1].external_id == main[-1].external_id

    comp = parse_file(compaction.path, agent_id=compaction.agent_id)
    (call,) = of(comp, UsageRecord)
    (fold,) = of(main, FoldRecord)
    assert call.context_size == fold.tokens_before


def test_deterministic_for_a_seed(tmp_path: Path):
    def files(folder: Path) -> dict[str, bytes]:
        return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    write_session(tmp_path / "a", messages=60, seed=11)
    write_session(tmp_path / "b", messages=60, seed=11)
    write_session(tmp_path / "c", messages=60, seed=12)
    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert files(tmp_path / "a") != files(tmp_path / "c")


def test_messages_target_and_switches(tmp_path: Path):
    main = write_session(tmp_path / "m", messages=50, seed=1, subagent=False, compaction=False)
    data = rows(main)
    count = sum(r["type"] in ("user", "assistant", "system") for r in data)
    assert 50 <= count < 150
    assert not any(r.get("subtype") == "compact_boundary" for r in data)
    assert not (main.parent / main.name.removesuffix(".jsonl")).exists()
    records = parse_file(main)
    assert not of(records, FoldRecord) and not of(records, AgentLink) and not of(records, BadLine)


def test_streaming(tmp_path: Path):
    tracemalloc.start()
    try:
        main = write_session(tmp_path / "big", target_bytes=6_000_000, seed=4)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert main.stat().st_size >= 6_000_000
    assert peak < 6_000_000  # nothing like the file is held in memory


def test_a_large_session_reaches_its_target_size(tmp_path: Path):
    # How fast it is written is a figure for `bench`, not a test: here, that it gets there.
    main = write_session(tmp_path / "big", target_bytes=12_000_000, seed=4)
    assert main.stat().st_size >= 12_000_000
