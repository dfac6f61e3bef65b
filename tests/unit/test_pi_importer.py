"""The pi importer (importers/pi): session files written here by a small generator of entries of the
shape pi 0.73.1 writes (checked on a real run against the scripted server, ops/drivers/pi.py): the
session header, model and thinking-level changes, user / assistant / toolResult messages with their
usage, and compaction entries (summary, firstKeptEntryId, tokensBefore).

Expected numbers are counted here from the entries this module writes, never from the importer."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from contextviewer.core.model_specs import ModelSpec
from contextviewer.core.records import BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.pi import parser as pi
from tests.importers import of, parse_path

SID = "01a24f21-35d2-7221-899c-32d25a8bb5e3"
CWD = "/home/dev/project"
SUMMARY = "## Goal\nFix the parser.\n## Progress\nREADME read, notes edited."


class Session:
    """Entries of one pi session, as pi appends them (ids, parentId chain, timestamps)."""

    def __init__(self):
        self.lines: list[dict] = [{"type": "session", "version": 3, "id": SID, "timestamp": "2026-12-07T06:11:46.259Z", "cwd": CWD}]
        self.ids = (f"{n:08x}" for n in itertools.count(0x1000))
        self.clock = itertools.count()
        self.parent: str | None = None
        self.responses = itertools.count()

    def entry(self, kind: str, **extra) -> dict:
        n = next(self.clock)
        line = {"type": kind, "id": next(self.ids), "parentId": self.parent, "timestamp": f"2026-12-07T06:12:{n:02d}.000Z", **extra}
        self.parent = line["id"]
        self.lines.append(line)
        return line

    def start(self) -> None:
        self.entry("model_change", provider="local", modelId="qwen2.5-coder")
        self.entry("thinking_level_change", thinkingLevel="off")

    def user(self, text: str) -> dict:
        return self.entry("message", message={"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})

    def assistant(self, content: list[dict], input_tokens: int, output: int = 10, cached: int = 0) -> dict:
        stop = "toolUse" if any(c["type"] == "toolCall" for c in content) else "stop"
        return self.entry("message", message={
            "role": "assistant", "content": content, "api": "openai-completions", "provider": "local", "model": "qwen2.5-coder",
            "usage": {"input": input_tokens, "output": output, "cacheRead": cached, "cacheWrite": 0,
                      "totalTokens": input_tokens + output + cached},
            "stopReason": stop, "timestamp": 2, "responseId": f"chatcmpl-{next(self.responses)}"})

    def call(self, call_id: str, name: str, args: dict, input_tokens: int) -> dict:
        return self.assistant([{"type": "toolCall", "id": call_id, "name": name, "arguments": args}], input_tokens)

    def result(self, call_id: str, name: str, text: str, error: bool = False) -> dict:
        return self.entry("message", message={"role": "toolResult", "toolCallId": call_id, "toolName": name,
                                              "content": [{"type": "text", "text": text}], "isError": error, "timestamp": 3})

    def compaction(self, first_kept: str, tokens_before: int) -> dict:
        return self.entry("compaction", summary=SUMMARY, firstKeptEntryId=first_kept, tokensBefore=tokens_before,
                          details={"readFiles": [], "modifiedFiles": []}, fromHook=False)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def session() -> Session:
    """Prompt 1 (bash, read), prompt 2 (edit; a big answer), a compaction that keeps prompt 2's turn,
    prompt 3, then a compaction that keeps everything from prompt 2 on, and prompt 4."""
    s = Session()
    s.start()
    s.user("list the files, then read README.md")
    s.call("call_1", "bash", {"command": "ls"}, 1_400)
    s.result("call_1", "bash", "README.md\napp.py\n")
    s.call("call_2", "read", {"path": f"{CWD}/README.md"}, 1_500)
    s.result("call_2", "read", "# Project\n")
    s.assistant([{"type": "thinking", "thinking": "short"}, {"type": "text", "text": "A tiny project."}], 1_600, cached=200)
    kept = s.user("change draft to final in notes.txt")
    s.call("call_3", "edit", {"path": f"{CWD}/notes.txt", "edits": [{"oldText": "draft", "newText": "final"}]}, 1_700)
    s.result("call_3", "edit", "Could not find the text", error=True)
    s.assistant([{"type": "text", "text": "Done."}], 40_000, output=9)
    s.compaction(kept["id"], 40_009)
    s.user("read app.py")
    s.call("call_4", "read", {"path": f"{CWD}/app.py"}, 2_000)
    s.result("call_4", "read", "def greet(): ...")
    s.assistant([{"type": "text", "text": "greet"}], 2_100, output=8)
    s.compaction(kept["id"], 2_108)
    s.user("which file holds the status?")
    s.assistant([{"type": "text", "text": "notes.txt"}], 2_200)
    return s


@pytest.fixture
def path(tmp_path) -> Path:
    return session().write(tmp_path / "--home-dev-project--" / f"2026-12-07T06-11-46-259Z_{SID}.jsonl")


def test_a_pi_session_is_claimed_by_pi_alone(path):
    claims = formats.scores(path)
    assert [f.name for _s, f in claims] == ["pi"]
    assert [s.format for s in formats.discover(path.parent).sessions] == ["pi"]


def test_one_call_per_assistant_message_with_its_usage(path):
    lines = session().lines
    records = parse_path(pi.parse, path)
    calls = of(records, UsageRecord)
    assistants = [ln for ln in lines if ln.get("message", {}).get("role") == "assistant"]
    assert [c.api_message_id for c in calls] == [ln["id"] for ln in assistants]
    assert [c.request_id for c in calls] == [ln["message"]["responseId"] for ln in assistants]
    third = calls[2]
    assert (third.input_uncached, third.cache_read, third.output) == (1_600, 200, 10)
    messages = of(records, MessageRecord)
    tools = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert [b.tool_name for b in tools] == ["bash", "read", "edit", "read"]
    results = [b for m in messages if m.role == "tool" for b in m.blocks]
    assert [(b.tool_id, b.is_error) for b in results] == [("call_1", False), ("call_2", False), ("call_3", True), ("call_4", False)]
    info = of(records, SessionInfo)[-1]
    assert (info.external_id, info.cwd, info.models) == (SID, CWD, ["qwen2.5-coder"])
    assert not of(records, BadLine)


def test_a_compaction_is_a_fold_with_its_summary_its_kept_entries_and_pis_own_tokens_before(path):
    lines = session().lines
    records = parse_path(pi.parse, path)
    folds = of(records, FoldRecord)
    assert [f.tokens_before for f in folds] == [40_009, 2_108]
    assert [f.trigger for f in folds] == [None, None]  # pi does not log what triggered it
    compactions = [ln for ln in lines if ln["type"] == "compaction"]
    assert [f.boundary_uuid for f in folds] == [c["id"] for c in compactions]
    ids = [ln.get("id") for ln in lines]
    first, second = (ids.index(c["firstKeptEntryId"]) for c in compactions)
    kept_1 = [ln["id"] for ln in lines[first:ids.index(compactions[0]["id"])] if ln["type"] == "message"]
    assert folds[0].preserved_uuids == kept_1
    # The second keeps from the same entry on, across the first compaction (its marker and summary left out).
    kept_2 = [ln["id"] for ln in lines[second:ids.index(compactions[1]["id"])] if ln["type"] == "message"]
    assert folds[1].preserved_uuids == kept_2
    summary = next(m for m in of(records, MessageRecord) if m.uuid == folds[0].summary_uuid)
    assert summary.is_compact_summary and summary.blocks[0].text == SUMMARY == folds[0].summary_text


def test_bookkeeping_entries_are_no_messages(path):
    records = parse_path(pi.parse, path)
    made = {m.uuid for m in of(records, MessageRecord)}
    bookkeeping = {ln["id"] for ln in session().lines if ln["type"] in ("model_change", "thinking_level_change")}
    assert bookkeeping and not made & bookkeeping


def test_bad_and_unknown_lines(tmp_path):
    s = session()
    s.entry("future_entry", data={"text": "x" * 4000})
    path = s.write(tmp_path / "--p--" / "s.jsonl")
    with open(path, "a") as fh:
        fh.write("{not json\n")
    records = parse_path(pi.parse, path)
    other = [m for m in of(records, MessageRecord) if m.role == "other"]
    assert len(other) == 1 and other[0].blocks == []
    assert [b.line_no for b in of(records, BadLine)] == [len(s.lines) + 1]
    assert isinstance(records[-1], SessionInfo)


def test_pi_compacts_at_the_window_less_its_16k_reserve():
    rules = formats.harness("pi")
    assert rules.auto_fold_at(ModelSpec("local", 50_000, 32_000)) == 50_000 - 16_384
    assert rules.auto_fold_at(ModelSpec("big", 200_000, 64_000)) == 200_000 - 16_384


def test_an_entry_written_twice_is_read_once(tmp_path):
    s = session()
    s.lines.insert(6, s.lines[5])  # an assistant message (a call) twice
    records = parse_path(pi.parse, s.write(tmp_path / "--p--" / "s.jsonl"))
    calls = of(records, UsageRecord)
    assert len(calls) == len({c.api_message_id for c in calls}) == sum(1 for ln in session().lines if ln.get("message", {}).get("role") == "assistant")
    assert of(records, SessionInfo)[-1].duplicate_uuids == 1


def test_another_entry_under_a_kept_id_is_said_with_both_lines(tmp_path):
    s = session()
    again = dict(s.lines[5], timestamp="2030-01-01T00:00:00.000Z")  # the same entry written again later: silent
    other = json.loads(json.dumps(s.lines[5]))  # another entry that reuses line 6's id
    other["message"]["content"] = [{"type": "text", "text": "another answer"}]
    s.lines[6:6] = [again, other]
    records = parse_path(pi.parse, s.write(tmp_path / "--p--" / "s.jsonl"))
    assert [(b.line_no, b.reason) for b in of(records, BadLine)] == [
        (8, f"line 8: its id {other['id']!r} is already the id of line 6, a different record: not stored again")]
    assert of(records, SessionInfo)[-1].duplicate_uuids == 2
