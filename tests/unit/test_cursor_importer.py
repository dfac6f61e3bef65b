"""The Cursor importer (``~/.cursor/projects/<project>/agent-transcripts/``, issue 39). No Cursor agent
runs here (it needs a cursor.com login) and no transcripts under an open license were found, so they are
written by tests/cursor_transcripts.py from the facts other readers of them record (the parser's
docstring names each source: HulkInTherapy/potsherd's docs/formats/cursor.md, wesm/agentsview).

Expected numbers are counted by hand from the records that module writes (its docstring lists them),
never taken from the importer: one model call per assistant record; Cursor records no usage, no model, no
tool results (in JSONL) and no compaction."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.cursor import entry as cursor
from contextviewer.importers.cursor.parser import recover_cwd, stamp
from contextviewer.importers.formats import ParseInput
from tests.cursor_transcripts import (
    AGENT,
    CHAT,
    CWD,
    PROJECT,
    TEXT_CHAT,
    chat_records,
    write_chat,
    write_projects,
    write_text_chat,
)
from tests.importers import fixture_files, of


def read(path: Path, agent_id: str | None = None) -> list:
    fmt = formats.claim(path)
    assert fmt is not None and fmt.name == "cursor", [(s, f.name) for s, f in formats.scores(path)]
    with open(path, "rb") as fh:
        return list(fmt.parse(ParseInput(path=path, stream=fh, agent_id=agent_id)))


def test_transcripts_are_claimed_by_cursor_alone_and_grouped_with_their_sub_agents(tmp_path):
    projects = write_projects(tmp_path / "projects")
    files = [p for p in projects.rglob("*") if p.is_file()]
    assert len(files) == 3
    for path in files:
        assert [f.name for _, f in formats.scores(path)] == ["cursor"], path
    found = formats.discover(projects)
    groups = {s.main.name: [x.agent_id for x in s.subagents] for s in found.sessions}
    assert groups == {f"{CHAT}.jsonl": [AGENT], f"{TEXT_CHAT}.txt": []}
    assert "~/.cursor/projects" in formats.get("cursor").locations


def test_a_chat_its_messages_calls_and_tool_calls(tmp_path):
    records = read(write_chat(tmp_path / "projects"))
    assert not of(records, BadLine)
    messages = of(records, MessageRecord)
    # By hand: 11 records; user at 1, 6, 8; assistant at 2, 3, 4, 5, 7, 9, 10, 11 (11 a copy of 10, kept).
    assert len(messages) == 11 and Counter(m.role for m in messages) == {"user": 3, "assistant": 8}
    assert [m.uuid for m in messages][-2:] == [f"{CHAT}:10", f"{CHAT}:11"]
    tools = [b.tool_name for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert tools == ["ReadFile", "Glob", "Shell", "ApplyPatch", "Subagent", "Grep path"]
    assert not [b for m in messages for b in m.blocks if b.kind == "tool_result"]  # Cursor writes none
    calls = of(records, UsageRecord)
    assert len(calls) == 8 and all(c.input_uncached == c.output == 0 and c.model is None for c in calls)
    assert all(m.flags.get("usage_unmeasured") for m in messages if m.role == "assistant")
    injected = next(m for m in messages if m.uuid == f"{CHAT}:6")
    assert injected.is_meta and injected.flags["injected"]
    assert not of(records, FoldRecord)
    [info] = of(records, SessionInfo)
    assert (info.external_id, info.cwd) == (CHAT, CWD)  # /home/dev/my_proj: its slug is the project folder's name
    assert info.title == "add a health check endpoint and wire it into the router"
    assert info.started_at.isoformat() == "2026-05-08T00:35:00+00:00"  # 6:05 AM at UTC+5:30


def test_the_sub_agent_is_read_and_linked_to_the_one_spawn_call(tmp_path):
    main = write_chat(tmp_path / "projects")
    [link] = of(read(main), AgentLink)
    assert (link.agent_id, link.tool_use_id, link.agent_type) == (AGENT, f"{CHAT}:5:2", "explore")
    child = read(main.parent / "subagents" / f"{AGENT}.jsonl", agent_id=AGENT)
    messages = of(child, MessageRecord)
    # By hand: user, two assistant records -> 2 calls, 1 tool call.
    assert [m.role for m in messages] == ["user", "assistant", "assistant"]
    assert len(of(child, UsageRecord)) == 2
    assert [b.tool_name for m in messages for b in m.blocks if b.kind == "tool_call"] == ["Read"]
    assert not of(child, AgentLink)


def test_two_spawn_calls_leave_the_sub_agents_unlinked(tmp_path):
    main = write_chat(tmp_path / "projects")
    records = chat_records()
    records.insert(5, records[4])
    main.write_text("\n".join(json.dumps(r) for r in records))
    assert not of(read(main), AgentLink)  # no id joins a call to its file: not guessed


def test_an_earlier_text_transcript(tmp_path):
    records = read(write_text_chat(tmp_path / "projects"))
    messages = of(records, MessageRecord)
    # By hand: user; assistant (thinking + the Shell call); tool (its result); assistant (the prose after).
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    call = next(b for b in messages[1].blocks if b.kind == "tool_call")
    assert (call.tool_name, call.tool_input) == ("Shell", {"command": "ls", "working_directory": CWD})
    [result] = messages[2].blocks
    assert (result.tool_id, result.text) == (call.tool_id, "README.md\nsrc")
    assert messages[1].blocks[0].kind == "thinking" and messages[3].blocks[0].text == "Two entries: README.md and src."
    assert len(of(records, UsageRecord)) == 2


def test_a_text_transcript_beside_its_jsonl_is_left_to_it(tmp_path):
    projects = tmp_path / "projects"
    folder = projects / PROJECT / "agent-transcripts"
    folder.mkdir(parents=True)
    (folder / "c1.jsonl").write_text(json.dumps(chat_records()[0]))
    (folder / "c1.txt").write_text("user:\n<user_query>\nhi\n</user_query>\n")
    assert [s.main.name for s in formats.discover(projects).sessions] == ["c1.jsonl"]


def test_a_broken_line_is_said_naming_cursor_and_the_rest_kept(tmp_path):
    main = write_chat(tmp_path / "projects")
    main.write_text(main.read_text() + '\n{"role": "assistant", "message": {"content": [{"type": "te')
    records = read(main)
    [bad] = of(records, BadLine)
    assert bad.line_no == 12 and "Cursor transcript line 12" in bad.reason and "not JSON" in bad.reason
    assert len(of(records, MessageRecord)) == 11
    # The sub-agent beside it is read whole.
    assert len(of(read(main.parent / "subagents" / f"{AGENT}.jsonl", AGENT), MessageRecord)) == 3


def test_a_binary_transcript_is_refused_naming_cursor(tmp_path):
    path = tmp_path / "projects" / PROJECT / "agent-transcripts" / "c" / "c.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"role": "user", "message": {"content": []}}\n\x00\x01\x02' * 50)
    records = list(formats.get("cursor").parse(ParseInput(path=path, stream=open(path, "rb"))))  # noqa: SIM115
    reasons = [b.reason for b in of(records, BadLine)]
    assert reasons and "Cursor transcript" in reasons[0]


def test_timestamps_read_their_offset():
    assert stamp("<timestamp>Monday, May 4, 2026, 12:47 AM (UTC+5:30)</timestamp>").isoformat() == "2026-05-03T19:17:00+00:00"
    assert stamp("<timestamp>Monday, May 4, 2026, 1:00 PM (UTC-3:30)</timestamp>").isoformat() == "2026-05-04T16:30:00+00:00"
    assert stamp("<timestamp>Monday, May 4, 2026, 1:00 PM</timestamp>").isoformat() == "2026-05-04T13:00:00+00:00"
    assert stamp("no stamp") is None


def test_the_working_folder_is_corroborated_never_guessed():
    assert recover_cwd("home-dev-my-proj", [{"path": "/home/dev/my_proj/src/a.ts"}]) == "/home/dev/my_proj"
    assert recover_cwd("home-dev-other", [{"path": "/home/dev/my_proj/src/a.ts"}]) is None
    assert recover_cwd("1769488977462", [{"path": "/tmp/x"}]) is None  # a window with no folder open


def test_look_alikes_are_not_cursors(tmp_path):
    claude = tmp_path / "c.jsonl"
    claude.write_text(json.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
                                  "message": {"role": "user", "content": "hi"}}) + "\n")
    chat = tmp_path / "chat.jsonl"
    chat.write_text("\n".join(json.dumps(r) for r in ({"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"})))
    notes = tmp_path / "agent-transcripts" / "notes.txt"
    notes.parent.mkdir()
    notes.write_text("some notes\nuser: alice\n")
    for p in (claude, chat, notes):
        assert cursor.sniff(p, p.read_bytes()) == 0.0, p


def _other_samples():
    from tests.integration.ingest.test_every_format import SAMPLES

    return [pytest.param(s, id=s.id) for s in SAMPLES if not s.fixture and s.agent != "cursor"]


@pytest.mark.parametrize("sample", _other_samples())
def test_cursor_claims_no_file_of_another_format(sample, tmp_path):
    root = sample.write(tmp_path, None)
    paths = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
    for path in paths:
        with open(path, "rb") as fh:
            head = fh.read(64 * 1024)
        assert cursor.sniff(path, head) == 0.0, path


@pytest.mark.parametrize("path", fixture_files(".", "*/*"))
def test_cursor_claims_no_real_fixture(path):
    if path is None or not path.is_file():
        return
    with open(path, "rb") as fh:
        assert cursor.sniff(path, fh.read(64 * 1024)) == 0.0


def test_its_tools_read_as_people_read_them(tmp_path):
    from contextviewer.viewer.tool_display import tool_view

    records = read(write_chat(tmp_path / "projects"))
    calls = {b.tool_name: b.tool_input for m in of(records, MessageRecord) for b in m.blocks if b.kind == "tool_call"}
    shell = tool_view("Shell", calls["Shell"])
    assert (shell.kind, shell.command) == ("bash", "npm test")
    assert tool_view("ReadFile", calls["ReadFile"]).kind == "read"
    glob = tool_view("Glob", calls["Glob"])
    assert (glob.kind, glob.pattern, glob.path) == ("search", "src/**/*.ts", CWD)
    patch = tool_view("ApplyPatch", calls["ApplyPatch"])
    assert patch.kind == "edit" and patch.diffs[0].path.endswith("src/health.ts")
    assert tool_view("Subagent", calls["Subagent"]).kind == "task"
    assert tool_view("StrReplace", {"path": "a.ts", "old_string": "x", "new_string": "y"}).kind == "edit"
