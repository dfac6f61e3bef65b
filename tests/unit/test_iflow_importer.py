"""The iFlow CLI importer (``~/.iflow/projects/<project>/session-<uuid>.jsonl``, issue 39). No iFlow CLI runs
here (it needs an iflow.cn login), so the sessions are written by tests/iflow_sessions.py from the facts of
wesm/agentsview's iFlow reader and of the real iFlow 1.0.0 log it keeps as test data (the parser's
docstring names each source; that log was read, not copied here: nothing the search tools bring is
committed).

Expected numbers are counted by hand, never taken from the importer, from the lines
tests/iflow_sessions.py writes (its docstring lists them)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.iflow import entry as iflow
from tests.iflow_sessions import (
    CWD,
    MAIN,
    MODEL,
    PROJECT,
    SECOND,
    SUMMARY,
    USAGE,
    VERSION,
    main_lines,
    write_projects,
    write_session,
)
from tests.importers import of, parse_path, shared_fixtures_dir



def read(path: Path) -> list:
    fmt = formats.claim(path)
    assert fmt is not None and fmt.name == "iflow", [(s, f.name) for s, f in formats.scores(path)]
    return parse_path(fmt.parse, path)


def test_a_session_is_claimed_by_iflow_alone_and_found_in_its_folder(tmp_path):
    root = write_projects(tmp_path / ".iflow" / "projects")
    for path in (root / PROJECT).iterdir():
        assert [f.name for _, f in formats.scores(path)][:1] == ["iflow"]
        # Claude Code sees the envelope too (0.9), below iFlow's own marks.
        assert max(s for s, f in formats.scores(path) if f.name != "iflow") < iflow.sniff(path, path.read_bytes())
    found = formats.discover(tmp_path / ".iflow")
    assert sorted(s.main.name for s in found.sessions if s.format == "iflow") == sorted(
        [f"session-{MAIN}.jsonl", f"session-{SECOND}.jsonl"])
    assert "~/.iflow/projects" in formats.get("iflow").locations


def test_messages_calls_tools_fold_and_the_session_info(tmp_path):
    records = read(write_session(tmp_path, MAIN, main_lines()))
    assert not of(records, BadLine)
    messages = of(records, MessageRecord)
    markers = [m for m in messages if m.subtype == "compact_boundary"]
    messages = [m for m in messages if m.subtype != "compact_boundary"]
    # By hand (tests/iflow_sessions.py): 14 lines, 14 messages: user 1, 12 (the summary), 13; assistant 2, 3,
    # 4, 7, 8, 10, 14; tool 5, 6, 9, 11; lines 4 and 8 only repeat a call.
    assert len(messages) == 14 and len(markers) == 1
    assert Counter(m.role for m in messages) == {"user": 3, "assistant": 7, "tool": 4}
    assert [m.line_no for m in messages if m.role == "tool"] == [5, 6, 9, 11]
    assert [m.line_no for m in messages if m.is_meta] == [4, 8]
    assert all(not m.blocks for m in messages if m.is_meta)
    tools = [(b.tool_id, b.tool_name) for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert tools == [("c1", "run_shell_command"), ("c2", "read_file"), ("c3", "replace"), ("c4", "task")]
    results = {b.tool_id: b for m in messages for b in m.blocks if b.kind == "tool_result"}
    assert set(results) == {"c1", "c2", "c3", "c4"}
    assert results["c1"].text == "1 failed, 4 passed" and not results["c1"].is_error
    assert results["c3"].is_error and results["c3"].text == "Failed to edit: old_string not found"
    # Model calls: runs of assistant lines 2-4, 7-8, 10, 14; usage the last non-zero of each run.
    calls = of(records, UsageRecord)
    assert [c.line_no for c in calls] == [2, 7, 10, 14]
    for call in calls:
        i, cw, cr, o = USAGE.get(call.line_no, (0, 0, 0, 0))
        assert (call.input_uncached, call.cache_write, call.cache_read, call.output) == (i, cw, cr, o)
    by_call = Counter(m.api_message_id for m in messages if m.role == "assistant")
    assert sorted(by_call.values()) == [1, 1, 2, 3]
    assert [m.line_no for m in messages if m.flags.get("usage_unmeasured")] == [10]
    # The summary line: a fold with its marker before it; no trigger or tokens (iFlow records none).
    [fold] = of(records, FoldRecord)
    summary = next(m for m in messages if m.is_compact_summary)
    assert (fold.boundary_uuid, fold.summary_uuid, fold.summary_text) == (markers[0].uuid, summary.uuid, SUMMARY)
    assert (fold.trigger, fold.tokens_before) == (None, None)
    order = [m.uuid for m in of(records, MessageRecord)]
    assert order.index(markers[0].uuid) + 1 == order.index(summary.uuid)
    # No sub-agent transcript is written anywhere known: the task call is read in the parent only.
    assert not of(records, AgentLink)
    [info] = of(records, SessionInfo)
    assert (info.external_id, info.title, info.cwd, info.git_branch, info.cli_version, info.models) == (
        MAIN, "Fix the failing test in parser.py", CWD, "main", VERSION, [MODEL])


def test_a_broken_session_is_refused_naming_iflow_and_its_neighbour_is_read(tmp_path):
    root = write_projects(tmp_path / "projects")
    broken = root / PROJECT / f"session-{MAIN}.jsonl"
    text = broken.read_text()
    broken.write_text(text + '{"uuid": "x", "type": "assistant", "message": {"content": [\n[1, 2]\n{"message": {}}\n')
    records = read(broken)
    bad = of(records, BadLine)
    assert [b.line_no for b in bad] == [15, 16, 17]
    assert all(b.reason.startswith("iFlow CLI session log: ") for b in bad), [b.reason for b in bad]
    assert "not a JSON object" in bad[1].reason and "no type" in bad[2].reason
    # What was read before the broken lines is kept whole, and the other session of the folder too.
    assert len([m for m in of(records, MessageRecord) if m.subtype != "compact_boundary"]) == 14
    other = read(root / PROJECT / f"session-{SECOND}.jsonl")
    assert not of(other, BadLine) and len(of(other, MessageRecord)) == 2
    [call] = of(other, UsageRecord)
    assert (call.input_uncached, call.output) == (0, 0)


def test_a_binary_file_is_refused_naming_iflow(tmp_path):
    from contextviewer.importers.formats import ParseInput

    path = tmp_path / f"session-{MAIN}.jsonl"
    path.write_bytes(json.dumps(main_lines()[0]).encode() + b"\n\x00\x01\x02" * 50)
    records = list(formats.get("iflow").parse(ParseInput(path=path, stream=open(path, "rb"))))  # noqa: SIM115
    reasons = [b.reason for b in of(records, BadLine)]
    assert reasons and all("iFlow CLI session" in r for r in reasons)


def test_look_alikes_are_not_iflows_and_iflow_claims_none_of_theirs(tmp_path):
    # Claude Code's own envelope: a bare uuid sessionId, Anthropic tool results.
    claude = tmp_path / "c.jsonl"
    claude.write_text(json.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "5de701fc-7454",
                                  "message": {"role": "user", "content": "hi"}}) + "\n")
    assert iflow.sniff(claude, claude.read_bytes()) == 0.0
    assert formats.claim(claude).name == "claude-code"
    # A name alone claims nothing.
    named = tmp_path / "session-abc.jsonl"
    named.write_text(claude.read_text())
    assert iflow.sniff(named, named.read_bytes()) == 0.0
    # Every other format's fixture file (../shared/fixtures, where present) is not iFlow's.
    root = shared_fixtures_dir()
    for path in sorted(root.rglob("*")) if root is not None else ():
        if path.is_file():
            with path.open("rb") as f:
                assert iflow.sniff(path, f.read(64 * 1024)) == 0.0, path
    # And iFlow's files are claimed by no other format first.
    root = write_projects(tmp_path / "projects")
    for path in (root / PROJECT).iterdir():
        assert formats.claim(path).name == "iflow"
