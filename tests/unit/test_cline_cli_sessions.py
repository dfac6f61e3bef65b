"""The Cline CLI's session folders (npm ``cline`` 3.x: ``~/.cline/data/sessions/<id>/``) read by the
cline format, on SYNTHETIC folders written here in the layout the CLI writes (a manifest
``<id>.json``, the lead's ``<id>.messages.json``, a ``spawn_agent`` sub-agent's
``agent_<agentId>.messages.json``). The expected figures are what the generator wrote, not what
the importer returns. The real CLI is checked by tests/agents/test_cline_conformance.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from contextviewer.core.records import AgentLink, BadLine, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.cline import parser as cline
from tests.cline_folders import make_task
from tests.importers import of, parse_path

START_MS = 1_800_000_000_000
MODEL = "local-model"


@dataclass
class Session:
    folder: Path
    lead: list = field(default_factory=list)
    subs: dict = field(default_factory=dict)  # agent id -> its messages
    calls: list = field(default_factory=list)  # (agent id or None, metrics) per assistant message with metrics
    spawn_ids: list = field(default_factory=list)


def _metrics(n: int, read: int = 0, write: int = 0) -> dict:
    return {"inputTokens": n, "outputTokens": 20 + n % 7, "cacheReadTokens": read, "cacheWriteTokens": write}


def make_session(root: Path, sid: str = "1800000000000_abcde", prompt: str = "tidy the notes file",
                 sub_task: str | None = "read app.py and name its functions", cached: bool = False) -> Session:
    """One CLI session folder: a prompt, a run_commands call (result objects), an editor call (a
    string result), a spawn_agent call when ``sub_task`` (its sub-agent reads a file), an answer."""
    folder = root / sid
    folder.mkdir(parents=True)
    s = Session(folder)
    ts = iter(range(START_MS, START_MS + 10_000, 100))

    def assistant(conv: list, blocks: list, agent: str | None, tokens: int) -> None:
        m = _metrics(tokens, *((tokens // 2, 100) if cached else (0, 0)))
        conv.append({"id": f"msg_{len(conv)}_{agent or 'lead'}", "role": "assistant", "content": blocks, "ts": next(ts),
                     "modelInfo": {"id": MODEL, "provider": "openai-compatible"}, "metrics": m})
        s.calls.append((agent, m))

    def result(conv: list, call_id: str, name: str, content) -> None:
        conv.append({"id": f"msg_{len(conv)}_r", "role": "user", "ts": next(ts),
                     "content": [{"type": "tool_result", "tool_use_id": call_id, "name": name, "content": content}]})

    lead = s.lead
    lead.append({"id": "u-1", "role": "user", "ts": next(ts),
                 "content": [{"type": "text", "text": f'<user_input mode="act">{prompt}</user_input>'}]})
    assistant(lead, [{"type": "tool_use", "id": "call_1", "name": "run_commands", "input": {"commands": ["ls"]}}], None, 5000)
    result(lead, "call_1", "run_commands", [{"query": "ls", "result": "app.py\nnotes.txt\n", "success": True}])
    assistant(lead, [{"type": "text", "text": "Editing."},
                     {"type": "tool_use", "id": "call_2", "name": "editor",
                      "input": {"path": "/p/notes.txt", "old_text": "draft", "new_text": "final"}}], None, 5200)
    result(lead, "call_2", "editor", '{"query":"edit:/p/notes.txt","result":"Edited","success":true}')
    if sub_task is not None:
        sub_id = "agent_1800000000500_xyz12"
        s.spawn_ids.append("call_3")
        assistant(lead, [{"type": "tool_use", "id": "call_3", "name": "spawn_agent",
                          "input": {"systemPrompt": "Answer briefly.", "task": sub_task}}], None, 5400)
        sub: list = [{"id": "su-1", "role": "user", "ts": next(ts), "content": [{"type": "text", "text": sub_task}]}]
        assistant(sub, [{"type": "tool_use", "id": "call_4", "name": "read_files", "input": {"files": [{"path": "/p/app.py"}]}}],
                  sub_id, 2300)
        result(sub, "call_4", "read_files", [{"query": "/p/app.py", "result": "1 | def greet(): pass", "success": True}])
        assistant(sub, [{"type": "text", "text": "It defines greet."}], sub_id, 2400)
        s.subs[sub_id] = sub
        result(lead, "call_3", "spawn_agent", '{"text":"It defines greet.","iterations":2,"finishReason":"completed"}')
        (folder / f"{sub_id}.messages.json").write_text(json.dumps({
            "version": 1, "agent": "subagent", "sessionId": f"{sid}__{sub_id}", "taskType": "subagent_task",
            "origin": {"source": "cli", "mode": "subagent", "sessionId": f"{sid}__{sub_id}", "parentThreadId": sid,
                       "subagent": sub_id, "version": "3.0.65"},
            "messages": sub}, indent=2))
    assistant(lead, [{"type": "text", "text": "Done: notes.txt is final."}], None, 5600)
    (folder / f"{sid}.messages.json").write_text(json.dumps({
        "version": 1, "agent": "lead", "sessionId": sid,
        "origin": {"source": "cli", "mode": "user", "sessionId": sid, "version": "3.0.65"},
        "messages": lead, "system_prompt": "You are a coding agent."}, indent=2))
    (folder / f"{sid}.json").write_text(json.dumps({
        "version": 1, "session_id": sid, "source": "cli", "started_at": "2027-01-15T08:00:00.000Z",
        "ended_at": "2027-01-15T08:00:09.000Z", "status": "completed", "provider": "openai-compatible", "model": MODEL,
        "cwd": "/p", "prompt": f'<user_input mode="act">{prompt}</user_input>',
        "metadata": {"title": prompt, "usage": {"inputTokens": 1}}}, indent=2))
    return s


def _parsed(folder: Path):
    records = parse_path(cline.parse, folder)
    return records, of(records, MessageRecord)


def test_a_session_folder_is_the_lead_with_its_sub_agent_and_one_call_per_answer(tmp_path):
    s = make_session(tmp_path / "sessions", cached=True)
    records, messages = _parsed(s.folder)
    assert not of(records, BadLine)
    lead = [m for m in messages if m.agent_id is None]
    sub_id = next(iter(s.subs))
    sub = [m for m in messages if m.agent_id == sub_id]
    assert len(lead) == len(s.lead) and len(sub) == len(s.subs[sub_id]) and len(messages) == len(lead) + len(sub)
    assert [m.role for m in lead] == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"]
    # every message keeps its element exactly; the prompt shows what was sent, without the runtime's wrapper
    for record, element in zip(lead, s.lead, strict=True):
        assert json.loads(record.raw) == element and record.uuid == element["id"] and record.session_id == s.folder.name
    assert lead[0].blocks[0].text == "tidy the notes file" and "<user_input" in lead[0].raw
    # a tool result of result objects is their compact JSON (as sent); a string result stays as is
    results = [b for m in lead for b in m.blocks if b.kind == "tool_result"]
    assert results[0].text == json.dumps(s.lead[2]["content"][0]["content"], separators=(",", ":"))
    assert results[1].text == s.lead[4]["content"][0]["content"] and results[1].tool_name == "editor"
    calls = [b for m in lead for b in m.blocks if b.kind == "tool_call"]
    assert [(b.tool_id, b.tool_name) for b in calls] == [("call_1", "run_commands"), ("call_2", "editor"), ("call_3", "spawn_agent")]
    # one call per assistant message with metrics; inputTokens counts the cached tokens
    usage = of(records, UsageRecord)
    assert len(usage) == len(s.calls) == 6
    by_uuid = {m.uuid: m for m in messages}
    for (agent, m), call in zip([c for c in s.calls if c[0] is None] + [c for c in s.calls if c[0]],
                                [u for u in usage if u.agent_id is None] + [u for u in usage if u.agent_id], strict=True):
        assert call.agent_id == agent and by_uuid[call.message_uuid].role == "assistant"
        assert json.loads(by_uuid[call.message_uuid].raw)["metrics"] == m
        assert (call.input_uncached, call.cache_read, call.cache_write, call.output) == (
            m["inputTokens"] - m["cacheReadTokens"] - m["cacheWriteTokens"], m["cacheReadTokens"], m["cacheWriteTokens"], m["outputTokens"])
        assert call.context_size == m["inputTokens"] and call.model == MODEL
    # the sub-agent hangs under the spawn_agent call that started it
    (link,) = of(records, AgentLink)
    assert (link.agent_id, link.tool_use_id) == (sub_id, "call_3")
    info = records[-1]
    assert isinstance(info, SessionInfo)
    assert (info.external_id, info.title, info.cwd, info.cli_version, info.models) == (
        s.folder.name, "tidy the notes file", "/p", "3.0.65", [MODEL])


def test_the_folder_and_each_of_its_files_are_claimed_as_the_session(tmp_path):
    root = tmp_path / "sessions"
    s = make_session(root)
    make_session(root, sid="1800000000999_fghij", sub_task=None)
    (root / "notes").mkdir()
    (root / "notes" / "other.messages.json").write_text("{}")  # not <folder>.messages.json: not a session
    for path in (s.folder, *sorted(s.folder.iterdir())):
        fmt = formats.claim(path)
        assert fmt is not None and fmt.name == "cline", path.name
        assert [(g.main, g.subagents) for g in fmt.sessions([path])] == [(s.folder, [])]
    assert formats.claim(root / "notes") is None and formats.claim(root / "notes" / "other.messages.json") is None
    found = formats.discover(root)
    assert sorted(g.main.name for g in found.sessions) == ["1800000000000_abcde", "1800000000999_fghij"]
    assert {g.format for g in found.sessions} == {"cline"}
    # the VS Code extension's task folders are still read as before, beside them
    task = make_task(tmp_path / "tasks", "cline").folder
    task_records = parse_path(cline.parse, task)
    assert not of(task_records, BadLine) and of(task_records, UsageRecord)


def test_a_sub_agent_whose_task_text_differs_hangs_under_the_spawn_call_before_it(tmp_path):
    s = make_session(tmp_path, sub_task="look at app.py")
    sub_file = next(s.folder.glob("agent_*.messages.json"))
    doc = json.loads(sub_file.read_text())
    doc["messages"][0]["content"][0]["text"] = "look at app.py (with the parent's notes)"
    sub_file.write_text(json.dumps(doc))
    records, _ = _parsed(s.folder)
    (link,) = of(records, AgentLink)
    assert link.tool_use_id == "call_3"


def test_broken_files_are_said_and_lose_nothing_else(tmp_path):
    s = make_session(tmp_path)
    sid = s.folder.name
    sub_file = next(s.folder.glob("agent_*.messages.json"))
    sub_file.write_text('{"messages": [')  # cut short
    lead_file = s.folder / f"{sid}.messages.json"
    doc = json.loads(lead_file.read_text())
    doc["messages"].insert(1, "not a message")
    lead_file.write_text(json.dumps(doc))
    records, messages = _parsed(s.folder)
    reasons = [b.reason for b in of(records, BadLine)]
    assert any(sub_file.name in r for r in reasons) and any("message 2 is a JSON string" in r for r in reasons), reasons
    assert len(messages) == len(s.lead) and len(of(records, UsageRecord)) == 4 and not of(records, AgentLink)
    assert isinstance(records[-1], SessionInfo)
    # a lead file that is not a messages object, or not JSON at all: said, and the session still ends
    for text, said in (('["a", "list"]', "not a Cline CLI messages object"), ('{"messages": 3}', "no message array"),
                       ("\x00\x01binary", "")):
        lead_file.write_text(text)
        records, messages = _parsed(s.folder)
        bad = of(records, BadLine)
        assert bad and said in " ".join(b.reason for b in bad) and not [m for m in messages if m.agent_id is None]
        assert isinstance(records[-1], SessionInfo)


@pytest.fixture
def project(db):
    from contextviewer.accounts.services import get_or_create_project

    return get_or_create_project("Cline CLI project")


@pytest.mark.django_db
def test_an_import_of_the_sessions_folder_gives_a_conversation_per_session_and_the_sub_agent_under_its_parent(project, tmp_path):
    from contextviewer.conversations.models import Conversation
    from contextviewer.ingest import files as ingest

    root = tmp_path / "sessions"
    plain = make_session(root, sid="1800000000999_fghij", sub_task=None)
    s = make_session(root)
    report = ingest.import_path(project, root)
    assert not report.refused and not report.errors
    tops = Conversation.objects.filter(project=project, parent__isnull=True)
    assert sorted(c.external_id for c in tops) == sorted([plain.folder.name, s.folder.name])
    assert {c.agent for c in Conversation.objects.filter(project=project)} == {"cline"}
    parent = tops.get(external_id=s.folder.name)
    child = Conversation.objects.get(project=project, parent=parent)
    assert parent.model_calls.count() == 4 and child.model_calls.count() == 2
    assert parent.tool_call_count == 3 and child.tool_call_count == 1
    assert tops.get(external_id=plain.folder.name).model_calls.count() == 3
    again = ingest.import_path(project, root)
    assert sum(f.added_messages for f in again.files) == 0
    assert Conversation.objects.filter(project=project).count() == 3
