"""The Qwen Code importer (importers/qwen): chat logs written here by a small generator of lines of the
shape Qwen Code 0.24.4 writes (checked on a real run against the scripted server, ops/drivers/qwen.py):
the Claude-like envelope with Gemini-style ``parts``, ``tool_result`` lines, ``ui_telemetry`` and
``chat_compression`` system lines, and a sub-agent file with its meta file.

Expected numbers are counted here from the lines this module writes, never from the importer."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from contextviewer.core.harness import Harness
from contextviewer.core.model_specs import ModelSpec
from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.qwen import parser as qwen
from tests.importers import of, parse_path

SID = "3f1c2a9e-0000-4000-8000-00000000c0de"
CWD = "/home/dev/project"
SUMMARY = "<state_snapshot>\n<overall_goal>fix the parser</overall_goal>\n</state_snapshot>"
REMINDER = "<system-reminder>\nThe current date is: Monday.\n</system-reminder>"


class Session:
    """Lines of one Qwen Code session, as the CLI appends them (uuid chain, timestamps)."""

    def __init__(self, agent_id: str | None = None):
        self.lines: list[dict] = []
        self.agent_id = agent_id
        self.ids = (f"{agent_id or 'main'}-{n:04d}" for n in itertools.count())
        self.clock = (f"2026-12-07T06:{n // 60:02d}:{n % 60:02d}.000Z" for n in itertools.count())
        self.parent: str | None = None
        self.responses = itertools.count()

    def _line(self, kind: str, **extra) -> dict:
        uuid = next(self.ids)
        line = {"uuid": uuid, "parentUuid": self.parent, "sessionId": SID, "timestamp": next(self.clock), "type": kind,
                "cwd": CWD, "version": "0.24.4", **extra}
        if self.agent_id:
            line.update(agentId=self.agent_id, agentName="general-purpose", isSidechain=True)
        self.parent = uuid
        self.lines.append(line)
        return line

    def user(self, text: str) -> dict:
        return self._line("user", provenance="real_user", message={"role": "user", "parts": [{"text": text}]})

    def telemetry(self, input_tokens: int, output: int = 10, **event) -> dict:
        return self._line("system", provenance="system", subtype="ui_telemetry", systemPayload={"uiEvent": {
            "event.name": "qwen-code.api_response", "response_id": f"chatcmpl-{next(self.responses)}", "model": "qwen3-coder",
            "input_token_count": input_tokens, "output_token_count": output, "cached_content_token_count": 0,
            "thoughts_token_count": 0, **event}})

    def snapshot(self) -> dict:
        return self._line("system", provenance="system", subtype="attribution_snapshot",
                          systemPayload={"snapshot": {"type": "attribution-snapshot", "promptCount": 1}})

    def model(self, parts: list[dict], input_tokens: int | None, output: int = 10, cached: int = 0) -> dict:
        extra = {}
        if input_tokens is not None:
            extra["usageMetadata"] = {"promptTokenCount": input_tokens, "candidatesTokenCount": output, "thoughtsTokenCount": 2,
                                      "totalTokenCount": input_tokens + output + 2, "cachedContentTokenCount": cached}
        return self._line("assistant", provenance="assistant_output", model="qwen3-coder",
                          message={"role": "model", "parts": parts}, **extra)

    def call(self, call_id: str, name: str, args: dict, input_tokens: int | None) -> dict:
        return self.model([{"functionCall": {"id": call_id, "name": name, "args": args}}], input_tokens)

    def result(self, call_id: str, name: str, output: str, error: bool = False, display=None) -> dict:
        response = {"error": output} if error else {"output": output}
        return self._line("tool_result", provenance="tool_result",
                          message={"role": "user", "parts": [{"functionResponse": {"id": call_id, "name": name, "response": response}}]},
                          toolCallResult={"callId": call_id, "status": "error" if error else "success", "resultDisplay": display})

    def compression(self, reason: str, original: int, history: list[dict]) -> dict:
        return self._line("system", provenance="system", subtype="chat_compression", systemPayload={
            "info": {"originalTokenCount": original, "newTokenCount": 900, "newTokenCountIsEstimated": True,
                     "compressionStatus": 1, "triggerReason": reason, "originalTokenCountIsEstimated": reason != "manual"},
            "compressedHistory": history, "completedToolCallIds": []})

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def summary_history(*extra: dict) -> list[dict]:
    return [
        {"role": "user", "parts": [{"text": f"{SUMMARY}\n\nResume the prior task using the summary above."}]},
        {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
        *extra,
    ]


def main_session() -> Session:
    """Prompt 1 (glob, read), prompt 2 (shell; a big input), an auto compression written after prompt 3's
    line (prompt 3 also in the compressed history), prompt 3 with a sub-agent, a manual /compress."""
    s = Session()
    s.user("list the files, then read README.md")
    s.snapshot()
    s.telemetry(17_000)
    s.call("call_1", "glob", {"pattern": "*"}, 17_000)
    s.result("call_1", "glob", "README.md\napp.py")
    s.call("call_2", "read_file", {"file_path": f"{CWD}/README.md"}, 17_100)
    s.result("call_2", "read_file", "# Project")
    s.model([{"text": "thinking...", "thought": True}, {"text": "It is a tiny project."}], 17_200, cached=1_000)
    s.user("run cat notes.txt")
    s.call("call_3", "run_shell_command", {"command": "cat notes.txt"}, 17_300)
    s.result("call_3", "run_shell_command", "Output: status: final",
             display={"type": "shell_result", "exitCode": 0, "output": "status: final"})
    s.model([{"text": "notes.txt says final."}], 170_000)
    s.user("ask a sub-agent to read app.py")
    s.snapshot()
    s.telemetry(19_000, 66)  # the compression call
    s.compression("token_limit", 170_086, summary_history(
        {"role": "user", "parts": [{"text": "Recently accessed file:\n\n## README.md\n# Project"}]},
        {"role": "user", "parts": [{"text": REMINDER}, {"text": "ask a sub-agent to read app.py"}]},
    ))
    s.call("call_4", "agent", {"description": "Read app.py", "prompt": "read app.py", "subagent_type": "general-purpose"}, 15_000)
    s.telemetry(14_000, subagent_id="general-purpose-call_4")  # the sub-agent's call, in the parent's file
    s.result("call_4", "agent", "greet and farewell", display={
        "type": "task_execution", "subagentName": "general-purpose", "taskDescription": "Read app.py", "status": "completed"})
    s.model([{"text": "The sub-agent found greet and farewell."}], 18_000)
    s.telemetry(19_100, 66)
    s.compression("manual", 18_010, summary_history())
    s.user("which file holds the status?")
    s.model([{"text": "notes.txt"}], 16_000)
    return s


def sub_session() -> Session:
    s = Session(agent_id="general-purpose-call_4")
    s.user("read app.py")
    s.model([], 14_000)  # the round's usage on a line of its own ...
    s.call("call_5", "read_file", {"file_path": f"{CWD}/app.py"}, None)  # ... then its function call
    s.result("call_5", "read_file", "def greet(): ...")
    s.model([{"text": "greet and farewell"}], 14_100)
    return s


def write_project(root: Path) -> Path:
    """~/.qwen/projects/<project>/ as Qwen Code lays it out: chats/<id>.jsonl, subagents/<id>/agent-*.jsonl + meta."""
    main = main_session().write(root / "chats" / f"{SID}.jsonl")
    sub = sub_session().write(root / "subagents" / SID / "agent-general-purpose-call_4.jsonl")
    sub.with_name("agent-general-purpose-call_4.meta.json").write_text(json.dumps(
        {"agentId": "general-purpose-call_4", "agentType": "general-purpose", "toolUseId": "call_4", "parentSessionId": SID}))
    return main


@pytest.fixture
def project(tmp_path) -> Path:
    write_project(tmp_path)
    return tmp_path


def _messages(records) -> list[MessageRecord]:
    return of(records, MessageRecord)


def test_a_qwen_log_is_qwen_code_not_claude_code(project):
    main = project / "chats" / f"{SID}.jsonl"
    claims = formats.scores(main)
    assert claims[0][1].name == "qwen-code"
    assert all(score < claims[0][0] for score, _ in claims[1:])
    found = formats.discover(project)
    assert [(s.format, s.main, [x.agent_id for x in s.subagents]) for s in found.sessions] == [
        ("qwen-code", main, ["general-purpose-call_4"])]
    assert found.sessions[0].subagents[0].agent_type == "general-purpose"


def test_calls_tools_and_usage_are_the_assistant_lines(project):
    lines = main_session().lines
    records = parse_path(qwen.parse, project / "chats" / f"{SID}.jsonl")
    calls = of(records, UsageRecord)
    with_usage = [ln for ln in lines if ln["type"] == "assistant" and "usageMetadata" in ln]
    assert [c.api_message_id for c in calls] == [ln["uuid"] for ln in with_usage]  # not the telemetry, not the compressions
    third = calls[2]
    assert (third.input_uncached, third.cache_read, third.output) == (16_200, 1_000, 12)  # input - cached; output + thoughts
    tool_calls = [b for m in _messages(records) for b in m.blocks if b.kind == "tool_call"]
    assert [b.tool_name for b in tool_calls] == ["glob", "read_file", "run_shell_command", "agent"]
    results = [b for m in _messages(records) if m.role == "tool" for b in m.blocks]
    assert [b.tool_id for b in results] == ["call_1", "call_2", "call_3", "call_4"]
    assert results[2].extra == {"exit_code": 0}
    assert not of(records, BadLine)


def test_bookkeeping_lines_are_no_messages(project):
    records = parse_path(qwen.parse, project / "chats" / f"{SID}.jsonl")
    kept = {m.uuid for m in _messages(records)}
    bookkeeping = [ln["uuid"] for ln in main_session().lines if ln.get("subtype") in ("ui_telemetry", "attribution_snapshot")]
    assert bookkeeping and not kept & set(bookkeeping)


def test_a_compression_is_a_fold_whose_rebuilt_history_comes_before_the_prompt_it_ran_for(project):
    records = parse_path(qwen.parse, project / "chats" / f"{SID}.jsonl")
    messages = _messages(records)
    folds = of(records, FoldRecord)
    assert [f.trigger for f in folds] == ["auto", "manual"]
    # tokens_before: the input measured on the last call before each fold (Qwen Code's own figure is an estimate)
    assert [f.tokens_before for f in folds] == [170_000, 18_000]
    assert folds[0].metadata["qwen_original_tokens"] == 170_086 and folds[0].tokens_after is None
    assert folds[0].summary_text.startswith(SUMMARY)
    texts = [(m.role, m.subtype, m.blocks[0].text[:20] if m.blocks else "") for m in messages]
    at = texts.index(("system", "compact_boundary", "Qwen Code compressed"))
    assert [t[:2] for t in texts[at:at + 5]] == [("system", "compact_boundary"), ("user", None), ("assistant", None),
                                                 ("user", None), ("user", None)]
    assert texts[at + 4][2] == "ask a sub-agent to r"  # the prompt, after what the compression rebuilt
    assert sum(1 for m in messages for b in m.blocks if b.text == "ask a sub-agent to read app.py") == 1  # not twice
    summary = next(m for m in messages if m.uuid == folds[0].summary_uuid)
    assert summary.is_compact_summary and summary.role == "user"


def test_the_fold_cost_is_the_compression_call_the_telemetry_recorded(project):
    folds = of(parse_path(qwen.parse, project / "chats" / f"{SID}.jsonl"), FoldRecord)
    assert [f.cost["input_uncached"] for f in folds] == [19_000, 19_100]
    assert [f.cost["calls"] for f in folds] == [1, 1]


def test_the_sub_agent_is_linked_and_its_round_is_one_call(project):
    records = parse_path(qwen.parse, project / "chats" / f"{SID}.jsonl")
    assert [(link.agent_id, link.tool_use_id, link.agent_type) for link in of(records, AgentLink)] == [
        ("general-purpose-call_4", "call_4", "general-purpose")]
    path = project / "subagents" / SID / "agent-general-purpose-call_4.jsonl"
    with open(path, "rb") as fh:
        sub = list(qwen.parse(ParseInput(path=path, stream=fh, agent_id="general-purpose-call_4")))
    calls = of(sub, UsageRecord)
    assert len(calls) == 2  # the usage line and its function-call line are one call
    msgs = _messages(sub)
    assert msgs[1].api_message_id == msgs[2].api_message_id == calls[0].api_message_id
    assert all(m.agent_id == "general-purpose-call_4" and m.is_sidechain for m in msgs)
    assert of(sub, SessionInfo)[-1].agent_id == "general-purpose-call_4"


@pytest.mark.parametrize(("content", "reason"), [
    (b"not json\n", "line 1"),
    (b'[1, 2]\n', "not a JSON object"),
])
def test_bad_lines_are_reported_and_nothing_crashes(tmp_path, content, reason):
    path = tmp_path / "chats" / "s.jsonl"
    path.parent.mkdir()
    lines = main_session().lines[:3]
    path.write_bytes(content + "".join(json.dumps(ln) + "\n" for ln in lines).encode())
    records = parse_path(qwen.parse, path)
    assert any(reason in b.reason for b in of(records, BadLine))
    assert len(_messages(records)) == 1 and isinstance(records[-1], SessionInfo)


def test_an_unknown_line_type_is_kept_with_no_text(tmp_path):
    s = Session()
    s.user("hello")
    s._line("future_record", payload={"text": "x" * 5000})
    path = s.write(tmp_path / "chats" / "s.jsonl")
    records = parse_path(qwen.parse, path)
    other = [m for m in _messages(records) if m.role == "other"]
    assert len(other) == 1 and other[0].blocks == [] and other[0].raw == json.dumps(s.lines[1])


def test_qwen_code_compresses_at_167k_of_a_200k_window():
    rules: Harness = formats.harness("qwen-code")
    spec = ModelSpec("unknown-model", 200_000, 32_000)
    assert rules.auto_fold_at(spec) == 167_000  # min(0.85 x 200k, 200k - 20k - 13k)
    assert rules.auto_fold_at(ModelSpec("big", 1_000_000, 64_000)) == 850_000


def test_a_line_written_twice_is_read_once(tmp_path):
    s = main_session()
    s.lines.insert(4, s.lines[3])  # an assistant line (a call) twice
    records = parse_path(qwen.parse, s.write(tmp_path / "chats" / "s.jsonl"))
    calls = of(records, UsageRecord)
    assert len(calls) == len({c.api_message_id for c in calls}) == sum(1 for ln in main_session().lines if "usageMetadata" in ln)
    assert of(records, SessionInfo)[-1].duplicate_uuids == 1


def test_another_record_under_a_kept_uuid_is_said_with_both_lines(tmp_path):
    s = main_session()
    again = dict(s.lines[3], timestamp="2030-01-01T00:00:00Z")  # the same record written again later: silent
    other = json.loads(json.dumps(s.lines[1]))  # another record that reuses line 2's uuid
    other["message"] = {"role": "user", "parts": [{"text": "a different prompt"}]}
    s.lines[4:4] = [again, other]
    records = parse_path(qwen.parse, s.write(tmp_path / "chats" / "s.jsonl"))
    bad = of(records, BadLine)
    assert [(b.line_no, b.reason) for b in bad] == [
        (6, f"line 6: its uuid {other['uuid']!r} is already the uuid of line 2, a different record: not stored again")]
    assert of(records, SessionInfo)[-1].duplicate_uuids == 2
