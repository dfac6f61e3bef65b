"""Mistral Vibe 3.0 session folders read by the vibe format, on SYNTHETIC folders written here in the
layout Vibe 3.0.3 wrote when run for real (tests/vibe_folders.py). The expected figures are what the
generator wrote (its prompts, responses, tool calls and journal usage), not what the importer
returns. The real CLI is checked by tests/agents/test_vibe_conformance.py."""

from __future__ import annotations

import json

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.vibe import parser as vibe
from tests.importers import of, parse_path
from tests.vibe_folders import CHILD, MODEL, SUMMARY, TASK, make_session


def test_a_session_folder_is_claimed_by_vibe_and_read_whole(tmp_path):
    w = make_session(tmp_path)
    assert formats.claim(w.folder).name == "vibe"
    assert formats.claim(w.folder / "meta.json").name == "vibe"  # one of its files: the folder is read
    assert formats.claim(next((w.folder / "chunks").iterdir())).name == "vibe"
    found = formats.discover(tmp_path)
    assert [(s.format, s.main) for s in found.sessions] == [("vibe", w.folder)]


def test_messages_calls_and_tools_equal_what_was_written(tmp_path):
    w = make_session(tmp_path)
    records = parse_path(vibe.parse, w.folder)
    assert not of(records, BadLine)
    messages = of(records, MessageRecord)
    users = [m for m in messages if m.role == "user" and not m.is_meta]
    assert [m.blocks[0].text for m in users] == w.prompts
    calls = of(records, UsageRecord)
    assert len(calls) == w.responses == 7  # 3 + 2 + 2 responses written, the two reads in ONE response
    blocks = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert [(b.tool_id, b.tool_name) for b in blocks] == w.tool_calls  # the model's ids and names, not the store's
    assert blocks[0].tool_input == {"command": "ls"}  # as the model asked (the store adds timeout_seconds)
    both = next(m for m in messages if len([b for b in m.blocks if b.kind == "tool_call"]) == 2)
    assert [b.tool_id for b in both.blocks] == ["call_ra", "call_rb"]
    results = {b.tool_id: b.text for m in messages for b in m.blocks if b.kind == "tool_result"}
    assert json.loads(results["call_rb"]) == {"content": "beta", "path": "b.md"}


def test_only_the_last_turns_calls_are_measured(tmp_path):
    w = make_session(tmp_path)
    calls = of(parse_path(vibe.parse, w.folder), UsageRecord)
    measured = [(c.input_uncached, c.output) for c in calls if c.context_size]
    assert measured == w.measured  # the journal of turn 3; Vibe keeps no per-call usage for the turns before
    assert {c.model for c in calls} == {MODEL}


def test_the_compaction_is_a_fold_with_what_vibe_injected_and_kept(tmp_path):
    w = make_session(tmp_path)
    records = parse_path(vibe.parse, w.folder)
    [fold] = of(records, FoldRecord)
    assert fold.trigger == "auto"
    assert fold.tokens_before == w.last_context_before_fold  # the generation before the journal
    assert fold.summary_text == SUMMARY
    assert fold.cost["calls"] == 1 and (fold.cost["input_uncached"], fold.cost["output"]) == w.compaction_usage
    by_uuid = {m.uuid: m for m in of(records, MessageRecord)}
    holder = by_uuid[fold.summary_uuid]
    assert holder.is_compact_summary and len(holder.blocks) == 4  # preamble, two re-sent prompts, the summary
    kept = [by_uuid[u].blocks[0].text for u in fold.preserved_uuids]
    assert kept == ["a.md now says gamma.", "now count the lines of a.md"]
    info = of(records, SessionInfo)[-1]
    assert info.cwd == "/work/demo" and info.title == w.prompts[0]


def test_bad_input_is_said_with_the_agents_name_and_nothing_else_is_lost(tmp_path):
    good = make_session(tmp_path, sid="aaaa0000-good")
    bad = make_session(tmp_path, sid="bbbb0000-bad")
    # CURRENT names a generation that is not there: said, and the newest generation there is read.
    (bad.folder / "CURRENT").write_text(json.dumps({"generation": "0000000000000099"}))
    records = parse_path(vibe.parse, bad.folder)
    [said] = of(records, BadLine)
    assert said.reason.startswith("Mistral Vibe: CURRENT names generation 0000000000000099, which has no manifest")
    assert "read the newest generation there is, 0000000000000040" in said.reason
    assert len(of(records, UsageRecord)) == bad.responses
    # A history chunk gone: said by its name; the session's other parts still read.
    manifest = json.loads((bad.folder / "generations" / "0000000000000040" / "manifest.json").read_text())
    (bad.folder / "chunks" / f"{manifest['projection_state']['chunks'][0]}.json").unlink()
    said = [b.reason for b in of(parse_path(vibe.parse, bad.folder), BadLine)]
    assert any(r.startswith("Mistral Vibe: chunks/") and "is missing from the session folder" in r for r in said)
    # The folder beside it loses nothing, a stray broken chunk in it neither.
    (good.folder / "chunks" / "broken.json").write_text("{not json")
    found = formats.discover(tmp_path)
    assert sorted(s.main.name for s in found.sessions) == ["aaaa0000-good", "bbbb0000-bad"]
    records = parse_path(vibe.parse, good.folder)
    assert not of(records, BadLine) and len(of(records, UsageRecord)) == good.responses


def test_a_file_outside_a_session_folder_is_not_vibes(tmp_path):
    (tmp_path / "meta.json").write_text("{}")
    assert vibe.sniff(tmp_path / "meta.json", b"{}") == 0.0
    [said] = of(parse_path(vibe.parse, tmp_path / "meta.json"), BadLine)
    assert "not a Mistral Vibe session folder" in said.reason


def test_a_bash_result_reads_as_a_command_run_with_its_exit_code_and_output(tmp_path):
    from contextviewer.viewer.tool_display import tool_view  # noqa: PLC0415

    w = make_session(tmp_path)
    messages = of(parse_path(vibe.parse, w.folder), MessageRecord)
    result = next(b for m in messages for b in m.blocks if b.kind == "tool_result" and b.tool_id == "call_ls")
    assert json.loads(result.text)["stdout"] == "a.md\nb.md\n"  # the text stays what the model was sent
    view = tool_view("bash", {"command": "ls"}, result.text, result.is_error, result.extra)
    assert (view.bash.exit_code, view.bash.stdout, view.bash.stderr) == (0, "a.md\nb.md\n", "")
    read = next(b for m in messages for b in m.blocks if b.kind == "tool_result" and b.tool_id == "call_ra")
    assert read.extra is None
    view = tool_view("read_file", {"path": "a.md"}, read.text, read.is_error, read.extra)
    assert view.kind == "read" and view.code is not None and "alpha" in str(view.code) and '"content"' not in str(view.code)


def test_a_sub_agent_is_its_child_folder_linked_to_the_run_typescript_call_that_spawned_it(tmp_path):
    w = make_session(tmp_path, child=True)
    [group] = formats.discover(tmp_path).sessions  # the child folder is read under its parent, not alone
    assert group.main == w.folder and [(s.path.name, s.agent_id) for s in group.subagents] == [(CHILD, CHILD)]
    records = parse_path(vibe.parse, w.folder)
    assert len(of(records, UsageRecord)) == w.responses == 9
    messages = of(records, MessageRecord)
    blocks = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert [(b.tool_id, b.tool_name) for b in blocks] == w.tool_calls
    [link] = of(records, AgentLink)
    assert (link.agent_id, link.tool_use_id, link.agent_type, link.description) == (CHILD, "call_ts", "reader", TASK)
    # The runtime's notification, sent after the spawn's result, as one text (its parts joined).
    at = next(i for i, m in enumerate(messages) if any(b.tool_id == "call_ts" and b.kind == "tool_result" for b in m.blocks))
    assert messages[at + 1].is_meta and messages[at + 1].blocks[0].text.endswith("completed turn 1.\"}\n\na.md holds alpha.")
    sub = list(vibe.parse(ParseInput(path=tmp_path / CHILD, agent_id=CHILD)))  # as the import reads it
    assert not of(sub, BadLine)
    assert [m.agent_id for m in of(sub, MessageRecord)] == [CHILD] * 4 and len(of(sub, UsageRecord)) == 2
