"""The Antigravity CLI importer (``~/.gemini/antigravity-cli/conversations/<uuid>.trajectory.json``, issue 39).
The CLI does not run here (it needs a Google login; npm's ``antigravity-cli`` is a 0.0.1 placeholder) and no
public trajectories under an open license were found, so the files are written by
tests/antigravity_trajectories.py from the facts other readers record (the parser's docstring names each
source: wesm/agentsview, wk23aau/GPI, volcanlock/antigravity2api-nodejs).

Expected numbers are counted by hand from the steps that module writes (its docstring lists them, step by
step), never taken from the importer: one message per step (a checkpoint adds its boundary marker), one
model call per generation with usage, a planner step no such generation claims a call of its own."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.antigravity_cli import entry as agy
from tests.antigravity_trajectories import (
    CHILD,
    CWD,
    MAIN,
    MODEL,
    PROMPT,
    SUMMARY,
    USAGE,
    main_trajectory,
    write_home,
    write_trajectory,
)
from tests.importers import fixture_files, of, parse_path


def read(path):
    fmt = formats.claim(path)
    assert fmt is not None and fmt.name == "antigravity-cli", [(s, f.name) for s, f in formats.scores(path)]
    return parse_path(fmt.parse, path)


def test_a_trajectory_is_claimed_by_it_alone_and_found_with_its_sub_agent(tmp_path):
    folder = write_home(tmp_path / "antigravity-cli")
    for path in folder.iterdir():
        assert [f.name for _, f in formats.scores(path)] == ["antigravity-cli"]
    found = formats.discover(folder)
    [session] = [s for s in found.sessions if s.format == "antigravity-cli"]
    assert session.main.name == f"{MAIN}.trajectory.json"
    assert [(s.path.name, s.agent_id) for s in session.subagents] == [(f"{CHILD}.trajectory.json", CHILD)]
    assert "~/.gemini/antigravity-cli/conversations" in formats.get("antigravity-cli").locations


def test_messages_tools_and_the_conversation_info(tmp_path):
    records = read(write_home(tmp_path / "antigravity-cli") / f"{MAIN}.trajectory.json")
    assert not of(records, BadLine)
    messages = [m for m in of(records, MessageRecord) if m.subtype != "compact_boundary"]
    # By hand (tests/antigravity_trajectories.py): 12 steps; user 0, 6 (the checkpoint's summary), 10;
    # assistant 1, 4, 7, 11; tool 2, 3, 5, 9; other 8.
    assert len(messages) == 12
    assert Counter(m.role for m in messages) == {"user": 3, "assistant": 4, "tool": 4, "other": 1}
    assert [m.uuid.rsplit(":", 1)[1] for m in messages if m.role == "tool"] == ["2", "3", "5", "9"]
    tools = [(b.tool_id, b.tool_name) for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert tools == [("c1", "view_file"), ("c2", "run_command"), ("c3", "replace_file_content"),
                     ("c4", "invoke_subagent"), ("c5", "grep_search")]
    results = {b.tool_id: b for m in messages for b in m.blocks if b.kind == "tool_result"}
    assert set(results) == {"c1", "c2", "c3", "c5"}  # nothing in the facts answers a sub-agent call
    assert (results["c2"].text, results["c2"].extra) == ("1 failed, 3 passed", {"exit_code": 1})
    assert results["c3"].text == "-    return a - b\n+    return a + b"
    assert [b.kind for b in messages[1].blocks] == ["thinking", "text", "tool_call", "tool_call"]
    assert messages[1].blocks[3].tool_input == {"CommandLine": "pytest -q", "Cwd": CWD}
    [info] = of(records, SessionInfo)
    assert (info.external_id, info.title, info.cwd, info.models) == (MAIN, PROMPT, CWD, [MODEL])
    assert info.started_at.isoformat() == "2026-03-02T10:00:00.123456+00:00"
    assert info.ended_at.isoformat() == "2026-03-02T10:00:11.123456+00:00"


def test_each_generation_with_usage_is_a_call(tmp_path):
    records = read(write_trajectory(tmp_path))
    calls = of(records, UsageRecord)
    # By hand: generations 0, 1, 2 (their usage in USAGE, output with the thinking in it), then step 11
    # alone (generation 3's usage is empty: a failed generation).
    assert [c.message_uuid.rsplit(":", 1)[1] for c in calls] == ["1", "4", "7", "11"]
    for c, (i, o, t, cr) in zip(calls, USAGE.values(), strict=False):
        assert (c.input_uncached, c.cache_read, c.cache_write, c.output, c.reasoning or 0, c.model) == (i, cr, 0, o, t, MODEL)
    assert (calls[3].input_uncached, calls[3].output, calls[3].model) == (0, 0, None)
    by_uuid = {m.uuid: m for m in of(records, MessageRecord)}
    assert by_uuid[f"{MAIN}:11"].flags.get("usage_unmeasured") is True
    assert by_uuid[f"{MAIN}:7"].api_message_id == calls[2].api_message_id


def test_the_checkpoint_is_a_fold(tmp_path):
    records = read(write_trajectory(tmp_path))
    [fold] = of(records, FoldRecord)
    assert (fold.kind, fold.trigger, fold.tokens_before, fold.summary_uuid) == ("compact", None, None, f"{MAIN}:6")
    assert fold.summary_text == f"User requests: {PROMPT}\n{SUMMARY}"
    uuids = [m.uuid for m in of(records, MessageRecord)]
    assert uuids.index(f"{MAIN}:5") < uuids.index(fold.boundary_uuid) == uuids.index(f"{MAIN}:6") - 1


def test_the_sub_agent_is_linked_to_its_call_and_read(tmp_path):
    folder = write_home(tmp_path / "antigravity-cli")
    [link] = of(read(folder / f"{MAIN}.trajectory.json"), AgentLink)
    assert (link.agent_id, link.tool_use_id, link.agent_type, link.description) == (
        CHILD, "c4", "reviewer", "Review the fix in calc.py")
    child = read(folder / f"{CHILD}.trajectory.json")
    # By hand: a prompt and a planner response; one generation, input 400 / output 20.
    assert Counter(m.role for m in of(child, MessageRecord)) == {"user": 1, "assistant": 1}
    [call] = of(child, UsageRecord)
    assert (call.input_uncached, call.output) == (400, 20)


def test_a_broken_trajectory_is_refused_naming_the_agent_and_its_neighbour_is_read(tmp_path):
    folder = write_home(tmp_path / "antigravity-cli")
    broken = folder / f"{MAIN}.trajectory.json"
    broken.write_text(broken.read_text()[:-300])  # cut off mid-write
    assert formats.claim(broken).name == "antigravity-cli"
    [bad] = of(read(broken), BadLine)
    assert "not valid JSON" in bad.reason and "Antigravity CLI trajectory" in bad.reason
    child = read(folder / f"{CHILD}.trajectory.json")
    assert not of(child, BadLine) and len(of(child, MessageRecord)) == 2


def test_a_step_that_is_not_an_object_is_said_and_the_rest_kept(tmp_path):
    doc = main_trajectory()
    doc["steps"].append("garbage")
    records = read(write_trajectory(tmp_path, doc))
    [bad] = of(records, BadLine)
    assert bad.line_no == 13 and "Antigravity CLI trajectory step 12" in bad.reason
    assert len([m for m in of(records, MessageRecord) if m.subtype != "compact_boundary"]) == 12


def test_look_alikes_are_not_its(tmp_path):
    path = tmp_path / "x.trajectory.json"
    path.write_text(json.dumps({"cascadeId": MAIN, "steps": [{"type": "user", "content": "hi"}]}))
    assert agy.sniff(path, path.read_bytes()) == 0.0
    path.write_text(json.dumps({"steps": [{"type": "CORTEX_STEP_TYPE_USER_INPUT"}]}))  # no ids
    assert agy.sniff(path, path.read_bytes()) == 0.0
    path.write_text(json.dumps({"id": "traj", "trajectory": [], "info": {}}))  # SWE-agent's shape
    assert agy.sniff(path, path.read_bytes()) == 0.0


def _other_samples():
    from tests.integration.ingest.test_every_format import SAMPLES

    return [pytest.param(s, id=s.id) for s in SAMPLES if not s.fixture and s.agent != "antigravity-cli"]


@pytest.mark.parametrize("sample", _other_samples())
def test_it_claims_no_file_of_another_format(sample, tmp_path):
    root = sample.write(tmp_path, None)
    paths = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
    for path in paths:
        with open(path, "rb") as fh:
            assert agy.sniff(path, fh.read(64 * 1024)) == 0.0, path


@pytest.mark.parametrize("path", fixture_files(".", "*/*"))
def test_it_claims_no_real_fixture(path):
    if path is None or not path.is_file():
        return
    with open(path, "rb") as fh:
        assert agy.sniff(path, fh.read(64 * 1024)) == 0.0


def test_no_other_format_claims_its_files(tmp_path):
    folder = write_home(tmp_path / "antigravity-cli")
    for path in folder.iterdir():
        with open(path, "rb") as fh:
            head = fh.read(64 * 1024)
        others = [e.name for e in formats.entries() if e.name != "antigravity-cli" and e.sniff(path, head) > 0]
        assert others == [], path


def test_its_tools_read_as_people_read_them(tmp_path):
    from contextviewer.viewer.tool_display import tool_view

    records = read(write_trajectory(tmp_path))
    calls = {b.tool_id: b for m in of(records, MessageRecord) for b in m.blocks if b.kind == "tool_call"}
    results = {b.tool_id: b for m in of(records, MessageRecord) for b in m.blocks if b.kind == "tool_result"}
    run = tool_view("run_command", calls["c2"].tool_input, results["c2"].text, False, results["c2"].extra)
    assert (run.kind, run.command, run.bash.exit_code) == ("bash", "pytest -q", 1)
    assert tool_view("view_file", calls["c1"].tool_input, results["c1"].text).kind == "read"
    assert tool_view("replace_file_content", calls["c3"].tool_input).kind == "edit"
    assert tool_view("invoke_subagent", calls["c4"].tool_input).kind == "task"
    grep = tool_view("grep_search", calls["c5"].tool_input, results["c5"].text)
    assert (grep.kind, grep.pattern) == ("search", "add(")
