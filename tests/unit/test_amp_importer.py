"""The Amp importer (``~/.local/share/amp/threads/T-<uuid>.json``, issue 39). No Amp CLI runs here (it
needs an ampcode.com login) and no public thread files under an open license were found, so the threads
are written by tests/amp_threads.py from the facts other readers of Amp's threads record (the parser's
docstring names each source: wesm/agentsview, ryoppippi/ccusage, cross_agent_session_resumer).

Expected numbers are counted by hand from the thread that module writes (its docstring lists them),
never taken from the importer: one model call per assistant message; Amp's ``inputTokens`` is the
uncached input (its ``totalInputTokens`` = input + cache writes + cache reads)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.amp import entry as amp
from tests.amp_threads import LEGACY, MAIN, MODEL, SUMMARY, USAGE, legacy_thread, main_thread, write_thread, write_threads
from tests.importers import fixture_files, of, parse_path


def read(path: Path) -> list:
    fmt = formats.claim(path)
    assert fmt is not None and fmt.name == "amp", [(s, f.name) for s, f in formats.scores(path)]
    return parse_path(fmt.parse, path)


def test_a_thread_is_claimed_by_amp_alone_and_found_in_its_folder(tmp_path):
    folder = write_threads(tmp_path / "amp" / "threads")
    for path in folder.iterdir():
        assert [f.name for _, f in formats.scores(path)] == ["amp"]
    found = formats.discover(tmp_path / "amp")
    assert sorted(s.main.name for s in found.sessions if s.format == "amp") == sorted([f"{LEGACY}.json", f"{MAIN}.json"])
    assert "~/.local/share/amp/threads" in formats.get("amp").locations


def test_messages_calls_tools_and_the_thread_info(tmp_path):
    records = read(write_thread(tmp_path))
    assert not of(records, BadLine)
    messages = [m for m in of(records, MessageRecord) if m.subtype != "compact_boundary"]
    # By hand (tests/amp_threads.py): 12 messages and the info summary; user 0, 4, 10 and the summary;
    # assistant 1, 3, 5, 7, 9, 11; tool (results only) 2, 6, 8.
    assert len(messages) == 13
    assert Counter(m.role for m in messages) == {"user": 4, "assistant": 6, "tool": 3}
    assert [m.uuid.rsplit(":", 1)[1] for m in messages if m.role == "tool"] == ["2", "6", "8"]
    tools = [(b.tool_id, b.tool_name) for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert tools == [("t1", "Bash"), ("t2", "Read"), ("t3", "edit_file"), ("t4", "Task")]
    results = {b.tool_id: b for m in messages for b in m.blocks if b.kind == "tool_result"}
    assert set(results) == {"t1", "t2", "t3", "t4"}
    assert (results["t1"].text, results["t1"].extra) == ("1 failed, 4 passed", {"exit_code": 1})
    assert results["t3"].is_error and results["t3"].text == "[rejected-by-user]"
    assert results["t4"].text == "docs/parser.md line 12 describes split()."
    assert [b.kind for b in messages[1].blocks] == ["thinking", "tool_call"]
    # Amp keeps no transcript of a Task sub-agent in the thread: no sub-agent, no link.
    assert not of(records, AgentLink) and all(m.agent_id is None for m in messages)
    [info] = of(records, SessionInfo)
    assert (info.external_id, info.title, info.cwd, info.models) == (MAIN, "Fix the parser", "/home/dev/proj", [MODEL])
    assert info.started_at.isoformat() == "2026-01-08T09:50:00+00:00"
    assert info.ended_at.isoformat() == "2026-01-08T09:50:20+00:00"  # meta.traces' last endTime
    assert messages[0].flags["relationships"][0]["type"] == "handoff"


def test_each_assistant_message_is_a_call_with_its_own_usage(tmp_path):
    records = read(write_thread(tmp_path))
    calls = {c.api_message_id.rsplit(":", 1)[1]: c for c in of(records, UsageRecord)}
    assert sorted(calls, key=int) == ["1", "3", "5", "7", "9", "11"]
    for mid, (uncached, write, read_, out) in USAGE.items():
        c = calls[str(mid)]
        assert (c.input_uncached, c.cache_write, c.cache_read, c.output, c.model) == (uncached, write, read_, out, MODEL)
    # Message 9 has no usage: a call of zero usage, flagged unmeasured (shown as estimated).
    assert (calls["9"].input_uncached, calls["9"].output) == (0, 0)
    by_uuid = {m.uuid: m for m in of(records, MessageRecord)}
    assert by_uuid[f"{MAIN}:9"].flags.get("usage_unmeasured") is True
    assert by_uuid[f"{MAIN}:11"].flags.get("state") == "cancelled"


def test_the_info_summary_is_a_fold(tmp_path):
    records = read(write_thread(tmp_path))
    [fold] = of(records, FoldRecord)
    uuids = [m.uuid for m in of(records, MessageRecord)]
    assert (fold.kind, fold.trigger, fold.tokens_before, fold.summary_uuid, fold.summary_text) == (
        "compact", None, None, f"{MAIN}:12", SUMMARY)
    # The marker stands right before the summary, after message 9 and before message 10.
    assert uuids.index(fold.boundary_uuid) == uuids.index(f"{MAIN}:12") - 1
    assert uuids.index(f"{MAIN}:9") < uuids.index(fold.boundary_uuid) < uuids.index(f"{MAIN}:10")
    summary = next(m for m in of(records, MessageRecord) if m.uuid == f"{MAIN}:12")
    assert summary.is_compact_summary and summary.role == "user"


def test_a_thread_of_before_message_usage_reads_its_ledger(tmp_path):
    records = read(write_thread(tmp_path, legacy_thread()))
    calls = of(records, UsageRecord)
    # By hand: the ledger's two events, input 120 / output 30 and 200 / 12, at messages 1 and 2.
    assert [(c.api_message_id, c.input_uncached, c.output, c.cache_read) for c in calls] == [
        (f"{LEGACY}:1", 120, 30, 0), (f"{LEGACY}:2", 200, 12, 0)]
    assert of(records, SessionInfo)[0].models == ["claude-haiku-4-5-20251001"]


def test_uuids_are_stable_when_the_thread_is_written_again(tmp_path):
    path = write_thread(tmp_path)
    first = [m.uuid for m in of(read(path), MessageRecord)]
    thread = main_thread()
    thread["v"] += 1
    thread["messages"].append({"role": "user", "messageId": 13, "content": [{"type": "text", "text": "thanks"}]})
    write_thread(tmp_path, thread)
    again = [m.uuid for m in of(read(path), MessageRecord)]
    assert again[: len(first)] == first and again[-1] == f"{MAIN}:13"


def test_a_broken_thread_is_refused_naming_amp_and_its_neighbour_is_read(tmp_path):
    folder = write_threads(tmp_path / "threads")
    broken = folder / f"{MAIN}.json"
    broken.write_text(broken.read_text()[:-200])  # cut off mid-write
    assert formats.claim(broken).name == "amp"
    [bad] = of(read(broken), BadLine)
    assert "not valid JSON" in bad.reason and "an Amp thread" in bad.reason
    # The other thread of the folder is read whole.
    other = read(folder / f"{LEGACY}.json")
    assert not of(other, BadLine) and len(of(other, MessageRecord)) == 3


def test_a_message_that_is_not_an_object_is_said_and_the_rest_kept(tmp_path):
    thread = main_thread()
    thread["messages"].insert(2, "garbage")
    records = read(write_thread(tmp_path, thread))
    [bad] = of(records, BadLine)
    assert bad.line_no == 3 and "Amp thread message 3" in bad.reason
    assert len([m for m in of(records, MessageRecord) if m.subtype != "compact_boundary"]) == 13


def test_a_look_alike_with_another_id_is_not_amps(tmp_path):
    thread = main_thread()
    thread["id"] = "0b9d0362-e377-4f2f-9780-3e637f90eaec"  # no T- prefix
    path = tmp_path / "thread.json"
    path.write_text(json.dumps(thread))
    assert amp.sniff(path, path.read_bytes()) == 0.0
    body = tmp_path / "T-abc.json"  # Amp's name, a chat body's content
    body.write_text(json.dumps({"id": "T-abc", "messages": [{"role": "user", "content": "hi"}]}))
    assert amp.sniff(body, body.read_bytes()) == 0.0


def _other_samples():
    from tests.integration.ingest.test_every_format import SAMPLES

    return [pytest.param(s, id=s.id) for s in SAMPLES if not s.fixture and s.agent != "amp"]


@pytest.mark.parametrize("sample", _other_samples())
def test_amp_claims_no_file_of_another_format(sample, tmp_path):
    root = sample.write(tmp_path, None)
    paths = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
    for path in paths:
        with open(path, "rb") as fh:
            head = fh.read(64 * 1024)
        assert amp.sniff(path, head) == 0.0, path


@pytest.mark.parametrize("path", fixture_files(".", "*/*"))
def test_amp_claims_no_real_fixture(path):
    if path is None or not path.is_file():
        return
    with open(path, "rb") as fh:
        assert amp.sniff(path, fh.read(64 * 1024)) == 0.0


def test_its_tools_read_as_people_read_them(tmp_path):
    from contextviewer.viewer.tool_display import tool_view

    records = read(write_thread(tmp_path))
    calls = {b.tool_id: b for m in of(records, MessageRecord) for b in m.blocks if b.kind == "tool_call"}
    results = {b.tool_id: b for m in of(records, MessageRecord) for b in m.blocks if b.kind == "tool_result"}
    bash = tool_view(calls["t1"].tool_name, calls["t1"].tool_input, results["t1"].text, False, results["t1"].extra)
    assert (bash.kind, bash.command, bash.bash.exit_code) == ("bash", "pytest -q tests/test_parser.py", 1)
    assert tool_view("Read", calls["t2"].tool_input, results["t2"].text).kind == "read"
    assert tool_view("edit_file", calls["t3"].tool_input).kind == "edit"
    assert tool_view("Task", calls["t4"].tool_input, results["t4"].text).kind == "task"
    assert tool_view("create_file", {"path": "a.py", "content": "x = 1\n"}).kind == "write"
    assert tool_view("glob", {"filePattern": "**/*.py"}).pattern == "**/*.py"
    assert tool_view("look_at", {"path": "shot.png", "objective": "what is shown"}).kind == "read"
