"""The Factory Droid importer (importers/droid): session files written here by a small generator of
lines of the shape Droid 0.225 writes (checked on a real run against the scripted server: `droid exec
--auto high --input-format stream-json` with a custom model, three prompts and an auto-compaction):
``session_start``, the ``context-<prompt id>`` reminders message, user / assistant / tool-result
messages, ``agent_turn_outcome`` and ``compaction_state`` (summary, anchor message), with the
``<id>.settings.json`` beside it (session totals, the last call's usage).

Expected numbers are counted here from the lines this module writes, never from the importer."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from contextviewer.core.records import BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.droid import parser as droid
from tests.importers import of, parse_path

SID = "9f1d3eb2-9559-4557-962e-bfb5b5294b62"
CWD = "/home/dev/project"
FOLDER = "-home-dev-project"
MODEL = "custom:Scripted-0"
SUMMARY = "<summary>1. The user asked to list and edit files; notes.txt now reads final.</summary>"


class Session:
    """Lines of one Droid session, as Droid appends them (ids, parentId chain, timestamps)."""

    def __init__(self):
        self.lines: list[dict] = [{"type": "session_start", "id": SID, "title": "list the files", "owner": "unknown",
                                   "version": 2, "cwd": CWD, "hostId": "h1", "isSessionTitleManuallySet": False}]
        self.ids = (f"{n:08x}-0000-4000-8000-000000000000" for n in itertools.count(0x1000))
        self.clock = itertools.count()
        self.parent: str | None = None
        self.responses = itertools.count()
        self.calls = itertools.count(1)

    def message(self, role: str, content: list[dict], ident: str | None = None, **extra) -> dict:
        n = next(self.clock)
        line = {"type": "message", "id": ident or next(self.ids), **({"parentId": self.parent} if self.parent else {}),
                "timestamp": f"2026-12-07T15:16:{n:02d}.000Z", "message": {"role": role, "content": content, **extra}}
        self.parent = line["id"]
        self.lines.append(line)
        return line

    def prompt(self, text: str) -> dict:
        ident = next(self.ids)
        self.message("user", [{"type": "text", "text": "<system-reminder>\nDeferred tools:\nWebSearch\n</system-reminder>"}],
                     ident=f"context-{ident}")
        return self.message("user", [{"type": "text", "text": text}], ident=ident, interactionMode="auto")

    def assistant(self, content: list[dict]) -> dict:
        return self.message("assistant", content, openaiMessageId=f"chatcmpl-{next(self.responses)}", modelId=MODEL,
                            reasoningEffort="none")

    def tool(self, name: str, args: dict, output: str, error: bool = False) -> str:
        call_id = f"call_{next(self.calls)}"
        self.assistant([{"type": "tool_use", "id": call_id, "name": name, "input": args}])
        self.message("user", [{"type": "tool_result", "tool_use_id": call_id, "is_error": error, "content": output}])
        return call_id

    def answer(self, text: str, turn: str) -> None:
        self.assistant([{"type": "text", "text": text}])
        self.lines.append({"type": "agent_turn_outcome", "turnId": turn, "reason": "completed", "resultKind": "text"})

    def compaction(self, anchor: dict, removed: int) -> dict:
        line = {"type": "compaction_state", "id": next(self.ids), "timestamp": "2026-12-07T15:17:00.000Z",
                "summaryText": SUMMARY, "summaryTokens": 21, "summaryKind": "llm_summary",
                "anchorMessage": {"id": anchor["id"], "index": removed - 1}, "removedCount": removed,
                "systemInfo": {"osName": "linux"}, "systemInfoText": "<system-reminder>User system info</system-reminder>"}
        self.lines.append(line)
        return line

    def write(self, path: Path, settings: dict | None = None) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        if settings is not None:
            droid.settings_path(path).write_text(json.dumps(settings))
        return path


SETTINGS = {"model": MODEL, "tokenUsage": {"inputTokens": 136_310, "outputTokens": 180, "cacheReadTokens": 0},
            "lastCallTokenUsage": {"inputTokens": 13_188, "outputTokens": 8, "cacheReadTokens": 120}}


def session() -> Session:
    """Prompt 1 (LS, Read), prompt 2 (Edit, Execute failing), a compaction whose anchor is prompt 1's
    answer (prompt 2's messages kept), prompt 3 (Grep)."""
    s = Session()
    p1 = s.prompt("list the files, then read README.md")
    s.tool("LS", {"directory_path": CWD}, "README.md\napp.py")
    s.tool("Read", {"file_path": f"{CWD}/README.md"}, "# x\n")
    s.answer("The project holds README.md and app.py.", p1["id"])
    anchor = s.lines[-2]
    p2 = s.prompt("change notes.txt, then run cat notes.txt")
    s.tool("Edit", {"file_path": f"{CWD}/notes.txt", "old_str": "draft", "new_str": "final"}, '{"success":true}')
    s.tool("Execute", {"command": "cat notes.txt"}, "Error: Execute call rejected", error=True)
    s.assistant([{"type": "text", "text": "notes.txt now reads final."}])
    s.compaction(anchor, removed=8)
    s.lines.append({"type": "agent_turn_outcome", "turnId": p2["id"], "reason": "completed", "resultKind": "text"})
    p3 = s.prompt("find greet")
    s.tool("Grep", {"pattern": "greet", "path": CWD}, "app.py:1:def greet")
    s.answer("greet is in app.py.", p3["id"])
    return s


@pytest.fixture
def path(tmp_path) -> Path:
    return session().write(tmp_path / "sessions" / FOLDER / f"{SID}.jsonl", SETTINGS)


def test_a_droid_session_is_claimed_by_droid_alone(path):
    claims = formats.scores(path)
    assert [f.name for _s, f in claims] == ["droid"]
    assert [s.format for s in formats.discover(path.parent).sessions] == ["droid"]
    assert formats.get("droid").companion_files(path) == [droid.settings_path(path)]


def test_one_call_per_assistant_message_the_last_with_the_settings_usage(path):
    lines = session().lines
    records = parse_path(droid.parse, path)
    calls = of(records, UsageRecord)
    assistants = [ln for ln in lines if ln.get("message", {}).get("role") == "assistant"]
    # 2 tool calls + answer, 2 tool calls + answer, 1 tool call + answer, counted from session() above
    assert len(assistants) == 8
    assert [c.api_message_id for c in calls] == [ln["id"] for ln in assistants]
    assert [c.request_id for c in calls] == [f"chatcmpl-{n}" for n in range(8)]
    assert [(c.input_uncached, c.output) for c in calls[:-1]] == [(0, 0)] * 7  # Droid keeps no usage per call
    assert (calls[-1].input_uncached, calls[-1].cache_read, calls[-1].output) == (13_188, 120, 8)
    messages = of(records, MessageRecord)
    tools = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert [b.tool_name for b in tools] == ["LS", "Read", "Edit", "Execute", "Grep"]
    results = [b for m in messages if m.role == "tool" for b in m.blocks]
    assert [(b.tool_id, b.is_error) for b in results] == [("call_1", False), ("call_2", False), ("call_3", False),
                                                            ("call_4", True), ("call_5", False)]
    reminders = [m for m in messages if m.uuid.startswith("context-")]
    assert len(reminders) == 3 and all(m.is_meta and m.role == "user" for m in reminders)
    assert messages[0].flags["session_totals"]["inputTokens"] == 136_310
    info = of(records, SessionInfo)[-1]
    assert (info.external_id, info.cwd, info.title, info.models) == (SID, CWD, "list the files", [MODEL])
    assert not of(records, BadLine)


def test_a_compaction_is_a_fold_keeping_what_follows_its_anchor(path):
    lines = session().lines
    records = parse_path(droid.parse, path)
    [fold] = of(records, FoldRecord)
    state = next(ln for ln in lines if ln["type"] == "compaction_state")
    assert (fold.boundary_uuid, fold.trigger, fold.tokens_before) == (state["id"], None, None)  # Droid logs neither
    ids = [ln.get("id") for ln in lines]
    kept = [ln["id"] for ln in lines[ids.index(state["anchorMessage"]["id"]) + 1:ids.index(state["id"])] if ln["type"] == "message"]
    assert len(kept) == 7  # prompt 2's reminders, prompt, 2 calls, 2 results, answer
    # The system info Droid sends with the summary comes first, then what followed the anchor.
    assert fold.preserved_uuids == [f"{state['id']}:system-info", *kept]
    info = next(m for m in of(records, MessageRecord) if m.uuid == fold.preserved_uuids[0])
    assert info.is_meta and info.blocks[0].text == state["systemInfoText"]
    summary = next(m for m in of(records, MessageRecord) if m.uuid == fold.summary_uuid)
    assert summary.is_compact_summary and summary.blocks[0].text == SUMMARY == fold.summary_text
    assert fold.metadata["summary_kind"] == "llm_summary" and fold.metadata["removed_count"] == 8


def test_without_its_settings_file_every_call_is_of_zero_usage(tmp_path):
    path = session().write(tmp_path / FOLDER / f"{SID}.jsonl")
    calls = of(parse_path(droid.parse, path), UsageRecord)
    assert len(calls) == 8 and all(c.context_size == 0 and c.output == 0 for c in calls)


def test_bad_lines_are_said_and_the_rest_is_kept(tmp_path):
    s = session()
    s.lines.append({"type": "future_line", "id": "f1", "data": "x"})
    path = s.write(tmp_path / FOLDER / f"{SID}.jsonl")
    with open(path, "a") as fh:
        fh.write("{not json\n")
    records = parse_path(droid.parse, path)
    assert [b.line_no for b in of(records, BadLine)] == [len(s.lines) + 1]
    other = [m for m in of(records, MessageRecord) if m.role == "other"]
    assert [m.uuid for m in other] == ["f1"]
    assert len(of(records, UsageRecord)) == 8 and isinstance(records[-1], SessionInfo)


def test_a_binary_file_is_refused_naming_droid(tmp_path):
    path = tmp_path / FOLDER / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"type": "session_start"}\n\x00\x01\x02' * 50)
    reasons = [b.reason for b in of(parse_path(droid.parse, path), BadLine)]
    assert reasons and "Factory Droid" in reasons[0]


def test_claude_code_and_pi_files_are_not_droids(tmp_path):
    claude = tmp_path / "c.jsonl"
    claude.write_text(json.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
                                  "message": {"role": "user", "content": "hi"}}) + "\n")
    pi = tmp_path / "p.jsonl"
    pi.write_text(json.dumps({"type": "session", "version": 3, "id": "x", "timestamp": "t", "cwd": "/"}) + "\n"
                  + json.dumps({"type": "message", "id": "a", "parentId": None, "timestamp": "t",
                                "message": {"role": "user", "content": "hi"}}) + "\n")
    for p in (claude, pi):
        assert droid.sniff(p, p.read_bytes()) == 0.0
