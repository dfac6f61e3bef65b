"""The GitHub Copilot CLI importer (importers/copilot): events.jsonl files written here by a small
generator of events of the shape Copilot CLI 1.0.102 writes (checked on a real run against the
scripted server, ops/drivers/copilot.py, and the schema the CLI ships,
schemas/session-events.schema.json): session.start / resume, user / system / assistant messages,
usage records per call (apiCallId), tool completions, a `task` sub-agent whose events carry its
agentId, a background compaction (messages written between its start and its completion are kept
after the summary), a cancelled one, and a manual one.

Expected numbers are counted here from the events this module writes, never from the importer."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from contextviewer.core.model_specs import ModelSpec
from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.copilot import parser as copilot
from tests.importers import of, parse_path

SID = "00470e54-1403-4d9c-9121-8e8bb7a8f6f2"
SUB = "2f428c34-719e-49dc-a472-469b8833f235"
CWD = "/home/dev/project"
SUMMARY = "<summary>1. Primary request: list, read, edit.\n2. Pending: none.</summary>"


class Session:
    """Events of one Copilot session, as Copilot appends them (ids, parentId chain, timestamps)."""

    def __init__(self):
        self.lines: list[dict] = []
        self.ids = (f"{n:08x}-0000-4000-8000-000000000000" for n in itertools.count(0x1000))
        self.clock = itertools.count()
        self.api = itertools.count()
        self.event("session.start", sessionId=SID, version=1, producer="copilot-agent", copilotVersion="1.0.102",
                   startTime="2026-12-07T14:10:46.627Z", selectedModel="gpt-5-mini",
                   context={"cwd": CWD, "branch": "main"})

    def event(self, type_: str, agent: str | None = None, **data) -> dict:
        n = next(self.clock)
        line = {"type": type_, "data": data, "id": next(self.ids), "timestamp": f"2026-12-07T14:{10 + n // 60:02d}:{n % 60:02d}.000Z",
                "parentId": self.lines[-1]["id"] if self.lines else None}
        if agent:
            line["agentId"] = agent
        self.lines.append(line)
        return line

    def user(self, text: str, agent: str | None = None) -> dict:
        self.event("user.message", agent, content=text,
                   transformedContent=f"<current_datetime>2026-12-07T14:10:46.872+00:00</current_datetime>\n\n{text}")
        return self.event("system.message", agent, role="system", content="You are the GitHub Copilot CLI.")

    def call(self, input_tokens: int, *, text: str = "", tools: list[tuple[str, str, dict]] = (), agent: str | None = None,
             cached: int = 0, chunks: int = 1, failed: bool = False) -> str:
        """One model call: its usage record, then its message(s) (a response in `chunks` parts)."""
        api = f"chatcmpl-{next(self.api)}"
        self.event("assistant.turn_start", agent, turnId="0")
        self.event("session.usage_record", agent, usage={"model": "gpt-5-mini", "inputTokens": input_tokens, "outputTokens": 12,
                                                          "cacheReadTokens": cached, "cacheWriteTokens": 0, "apiCallId": api})
        requests = [{"toolCallId": i, "name": n, "arguments": a, "type": "function"} for i, n, a in tools]
        for part in range(chunks):
            self.event("assistant.message", agent, messageId=f"{api}-m{part}", model="gpt-5-mini", apiCallId=api,
                       content=text if part == chunks - 1 else "", toolRequests=requests if part == chunks - 1 else [])
        for i, n, a in tools:
            self.event("tool.execution_start", agent, toolCallId=i, toolName=n, arguments=a)
            if failed:
                self.result(i, "command exited 1", agent, success=False)
            elif n == "bash":  # the trailer Copilot's bash tool ends its output with
                self.result(i, f"output of {n}\n<shellId: 0 completed with exit code 0>", agent)
            elif n != "task":
                self.result(i, f"output of {n}", agent)
        self.event("assistant.turn_end", agent, turnId="0")
        return api

    def result(self, tool_id: str, text: str, agent: str | None = None, success: bool = True) -> None:
        if success:
            self.event("tool.execution_complete", agent, toolCallId=tool_id, success=True, result={"content": text})
        else:
            self.event("tool.execution_complete", agent, toolCallId=tool_id, success=False, error={"message": text})

    def compaction(self, attempt: str, trigger: str, current: int) -> None:
        self.event("session.compaction_start", compactionAttemptId=attempt, currentTokens=current, tokenLimit=50_000, trigger=trigger)

    def compacted(self, attempt: str, trigger: str, success: bool = True) -> None:
        extra = {"summaryContent": SUMMARY, "preCompactionTokens": 10_723, "postCompactionTokens": 10_585,
                 "compactionTokensUsed": {"requestCount": 1, "inputTokens": 13_873, "outputTokens": 54,
                                          "cacheReadTokens": 0, "cacheWriteTokens": 0, "model": "gpt-5-mini"}}
        self.event("session.compaction_complete", compactionAttemptId=attempt, trigger=trigger, success=success,
                   outcome="applied" if success else "cancelled", **(extra if success else {"error": "Compaction Cancelled"}))

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(ln) + "\n" for ln in self.lines))
        return path


def session() -> Session:
    """Prompt 1 (glob, view; a failed bash); prompt 2 (edit; its next call starts a background
    compaction, a bash call and its result are written while it runs, then it completes; one call
    answered in two chunks); prompt 3 (a task sub-agent that views a file); a manual /compact;
    prompt 4. Then a compaction that the process cancelled."""
    s = Session()
    s.user("list the files, then read README.md")
    s.call(12_146, tools=[("call_1", "glob", {"pattern": "*"})])
    s.call(12_217, tools=[("call_2", "view", {"path": f"{CWD}/README.md"})], cached=10_000)
    s.call(12_308, tools=[("call_3", "bash", {"command": "false", "description": "fail"})], failed=True)
    s.call(12_350, text="README.md says it is a tiny project.")
    s.event("session.shutdown", accountingSnapshot={})
    s.event("session.resume", resumeTime="2026-12-07T14:11:00Z", selectedModel="gpt-5-mini", context={"cwd": CWD})
    s.user("change draft to final in notes.txt, then cat it")
    s.call(42_000, tools=[("call_4", "edit", {"path": f"{CWD}/notes.txt", "old_str": "draft", "new_str": "final"})])
    s.compaction("attempt-1", "threshold", 42_072)
    s.call(12_548, tools=[("call_5", "bash", {"command": "cat notes.txt", "description": "show"})])
    s.compacted("attempt-1", "threshold")
    s.call(12_375, text="notes.txt now reads final.", chunks=2)
    s.user("ask a sub-agent to read app.py")
    s.call(12_580, tools=[("call_6", "task", {"name": "reader", "prompt": "read app.py", "agent_type": "explore",
                                               "description": "Read app.py"})])
    s.event("subagent.started", SUB, toolCallId="call_6", agentName="explore", agentDisplayName="reader",
            agentDescription="Read app.py")
    s.user("read app.py", SUB)
    s.call(11_833, tools=[("call_7", "view", {"path": f"{CWD}/app.py"})], agent=SUB)
    s.call(11_931, text="app.py defines greet.", agent=SUB)
    s.result("call_6", "app.py defines greet.")
    s.event("subagent.completed", SUB, toolCallId="call_6", agentName="explore")
    s.call(12_694, text="The sub-agent found greet.")
    s.compaction("attempt-2", "manual", 10_793)
    s.event("model.turn_started", kind="turn_started", model="gpt-5-mini")
    s.compacted("attempt-2", "manual")
    s.user("which file holds the status line?")
    s.call(12_443, text="notes.txt.")
    s.compaction("attempt-3", "threshold", 45_000)
    s.compacted("attempt-3", "threshold", success=False)
    s.event("session.title_changed", title="Scripted project chores")
    return s


@pytest.fixture
def path(tmp_path) -> Path:
    return session().write(tmp_path / "session-state" / SID / "events.jsonl")


def _main(records):
    return [m for m in of(records, MessageRecord) if m.agent_id is None]


def test_a_copilot_session_is_claimed_by_copilot_alone(path):
    assert [f.name for _s, f in formats.scores(path)] == ["copilot"]
    assert [s.format for s in formats.discover(path.parent.parent).sessions] == ["copilot"]


def test_one_call_per_api_call_with_its_usage_and_the_agents_tools(path):
    lines = session().lines
    records = parse_path(copilot.parse, path)
    calls = of(records, UsageRecord)
    usage = [ln["data"]["usage"] for ln in lines if ln["type"] == "session.usage_record"]
    # 12 usage records: 10 of the main agent (prompts 1-4: 4, 3, 2 and 1 calls), 2 of the sub-agent;
    # the response written in two chunks is one call.
    assert len(usage) == 12
    assert [c.api_message_id for c in calls] == [u["apiCallId"] for u in usage]
    assert [c.agent_id for c in calls].count(SUB) == 2
    second = calls[1]  # inputTokens 12,217 of which 10,000 read from the cache
    assert (second.input_uncached, second.cache_read, second.output) == (2_217, 10_000, 12)
    messages = of(records, MessageRecord)
    tools = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert [b.tool_name for b in tools] == ["glob", "view", "bash", "edit", "bash", "task", "view"]
    results = [b for m in messages if m.role == "tool" for b in m.blocks]
    assert [(b.tool_id, b.is_error) for b in results] == [
        ("call_1", False), ("call_2", False), ("call_3", True), ("call_4", False), ("call_5", False), ("call_7", False), ("call_6", False)]
    assert results[2].text == "command exited 1"
    info = of(records, SessionInfo)[-1]
    assert (info.external_id, info.cwd, info.git_branch, info.cli_version, info.models, info.title) == (
        SID, CWD, "main", "1.0.102", ["gpt-5-mini"], "Scripted project chores")
    assert not of(records, BadLine)


def test_a_prompt_is_stored_as_typed(path):
    users = [m for m in _main(parse_path(copilot.parse, path)) if m.role == "user" and not m.is_compact_summary]
    assert [m.blocks[0].text for m in users] == [
        "list the files, then read README.md", "change draft to final in notes.txt, then cat it",
        "ask a sub-agent to read app.py", "which file holds the status line?"]


def test_the_task_sub_agent_is_inline_and_linked_to_its_call(path):
    records = parse_path(copilot.parse, path)
    links = of(records, AgentLink)
    assert [(x.agent_id, x.tool_use_id, x.agent_type, x.description) for x in links] == [(SUB, "call_6", "explore", "Read app.py")]
    sub = [m for m in of(records, MessageRecord) if m.agent_id == SUB]
    # user + system message, two assistant messages, one tool result
    assert [m.role for m in sub] == ["user", "system", "assistant", "tool", "assistant"]
    assert all(m.agent_kind == "inline" for m in sub)


def test_an_applied_compaction_is_a_fold_keeping_what_was_written_while_it_ran(path):
    lines = session().lines
    records = parse_path(copilot.parse, path)
    folds = of(records, FoldRecord)
    # Three compactions started, two applied (the third was cancelled when the process ended).
    assert [f.trigger for f in folds] == ["auto", "manual"]
    assert [f.tokens_before for f in folds] == [42_072, 10_793]  # currentTokens at compaction_start
    ids = [ln["id"] for ln in lines]
    start, end = (ids.index(ln["id"]) for ln in lines if ln["data"].get("compactionAttemptId") == "attempt-1")
    kept = [ln["id"] for ln in lines[start:end] if ln["type"] in ("assistant.message", "tool.execution_complete")]
    assert len(kept) == 2 and folds[0].preserved_uuids == kept  # the bash call and its result
    assert folds[1].preserved_uuids == []
    assert folds[0].boundary_uuid == ids[end]
    summary = next(m for m in of(records, MessageRecord) if m.uuid == folds[0].summary_uuid)
    assert summary.is_compact_summary and summary.role == "user" and summary.blocks[0].text == SUMMARY == folds[0].summary_text
    assert folds[0].cost == {"calls": 1, "input_uncached": 13_873, "cache_write": 0, "cache_read": 0, "output": 54, "model": "gpt-5-mini"}
    # The boundary comes after the kept messages, so the calls made while the summary was made saw no fold.
    order = [m.uuid for m in of(records, MessageRecord)]
    assert order.index(kept[-1]) < order.index(folds[0].boundary_uuid) < order.index(folds[0].summary_uuid)


def test_bookkeeping_events_are_no_messages(path):
    records = parse_path(copilot.parse, path)
    made = {m.uuid for m in of(records, MessageRecord)}
    bookkeeping = {ln["id"] for ln in session().lines if ln["type"] in (
        "assistant.turn_start", "assistant.turn_end", "tool.execution_start", "session.usage_record", "session.shutdown",
        "session.resume", "session.start", "model.turn_started", "subagent.started", "subagent.completed",
        "session.compaction_start", "session.title_changed")}
    assert bookkeeping and not made & bookkeeping
    # The cancelled compaction's end is no message either (no fold, no marker).
    cancelled = next(ln["id"] for ln in session().lines if ln["data"].get("outcome") == "cancelled")
    assert cancelled not in made


def test_bad_and_unknown_lines(tmp_path):
    s = session()
    s.event("session.future_event", detail="x" * 4000)
    path = s.write(tmp_path / SID / "events.jsonl")
    with open(path, "a") as fh:
        fh.write("{not json\n")
    records = parse_path(copilot.parse, path)
    other = [m for m in of(records, MessageRecord) if m.role == "other"]
    assert len(other) == 1 and other[0].blocks == [] and other[0].record_type == "session.future_event"
    assert [b.line_no for b in of(records, BadLine)] == [len(s.lines) + 1]
    assert isinstance(records[-1], SessionInfo)


def test_a_binary_events_file_is_refused_naming_copilot(tmp_path):
    path = tmp_path / SID / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"\x00\x01\x02" * 100)
    bad = of(parse_path(copilot.parse, path), BadLine)
    assert [b.reason for b in bad] == ["binary file, not a GitHub Copilot CLI events.jsonl"]


def test_an_event_written_twice_is_read_once(tmp_path):
    s = session()
    s.lines.insert(5, s.lines[4])  # the first assistant message twice
    records = parse_path(copilot.parse, s.write(tmp_path / SID / "events.jsonl"))
    assert len(of(records, UsageRecord)) == 12
    assert of(records, SessionInfo)[-1].duplicate_uuids == 1


def test_copilot_compacts_at_80_percent_of_the_prompt_limit():
    rules = formats.harness("copilot")
    assert rules.auto_fold_at(ModelSpec("local", 50_000, 8_000)) == 40_000


def test_a_bash_result_shows_its_output_and_exit_code():
    from contextviewer.viewer.tool_agents import shell_output  # noqa: PLC0415

    # As Copilot 1.0.102 answered `cat notes.txt` in the run here.
    out = shell_output("status: final\n<shellId: 0 completed with exit code 0>")
    assert (out.output, out.exit_code) == ("status: final", 0)
    assert shell_output("boom\n<shellId: 3 completed with exit code 2>\n").exit_code == 2


def test_its_view_and_task_calls_read_as_a_file_and_a_sub_agent():
    from contextviewer.viewer.tool_agents import normalize  # noqa: PLC0415
    from contextviewer.viewer.tool_display import tool_view  # noqa: PLC0415

    # `view` answers with the file's text, unnumbered (README.md in the run here).
    read = tool_view("view", {"path": "/p/README.md"}, "# Scripted project\n\nA tiny project.\n")
    assert read.kind == "read" and read.code is not None and read.code.lines == 3
    task = normalize("task", {"name": "reader", "description": "Read app.py", "prompt": "read app.py", "agent_type": "explore"})
    assert task == ("Task", {"prompt": "read app.py", "description": "Read app.py", "subagent_type": "explore"})


def test_a_log_without_call_ids_or_usage_has_one_call_per_assistant_message_and_says_a_truncation(tmp_path):
    """apiCallId and the usage records are optional in the schema: each assistant message is then a
    call of its own, with no measured usage; a truncation (no summary) is a note, not a fold."""
    s = Session()
    s.user("hello")
    s.event("assistant.message", content="", toolRequests=[{"toolCallId": "c1", "name": "bash", "arguments": {"command": "ls"}}])
    s.result("c1", "file1")
    s.event("assistant.message", content="Done", toolRequests=[])
    s.event("session.truncation", messagesRemovedDuringTruncation=4, tokensRemovedDuringTruncation=1234,
            performedBy="BasicTruncator", tokenLimit=50_000)
    records = parse_path(copilot.parse, s.write(tmp_path / SID / "events.jsonl"))
    calls = of(records, UsageRecord)
    assert len(calls) == 2 and all(c.input_uncached == c.output == 0 for c in calls)
    assert not of(records, FoldRecord)
    note = next(m for m in of(records, MessageRecord) if m.subtype == "truncation")
    assert note.role == "system" and note.blocks[0].text == "GitHub Copilot CLI truncated the conversation (4 messages, 1234 tokens removed)"


def test_reasoning_goes_to_its_message_once_and_a_plain_text_result_is_kept(tmp_path):
    s = Session()
    s.user("hello")
    s.event("assistant.reasoning", reasoningId="r1", content="Think about ls.")
    s.event("assistant.message", content="", reasoningText="", toolRequests=[{"toolCallId": "c1", "name": "bash", "arguments": {"command": "ls"}}])
    s.event("tool.execution_complete", toolCallId="c1", success=True, result="file1\n")
    s.event("assistant.reasoning", reasoningId="r2", content="Done thinking.")
    s.event("assistant.message", content="Done", reasoningText="Done thinking.", toolRequests=[])
    records = parse_path(copilot.parse, s.write(tmp_path / SID / "events.jsonl"))
    assistants = [m for m in of(records, MessageRecord) if m.role == "assistant"]
    assert [[b.text for b in m.blocks if b.kind == "thinking"] for m in assistants] == [["Think about ls."], ["Done thinking."]]
    assert len(assistants) == 2  # the reasoning events are no messages of their own
    (result,) = [b for m in of(records, MessageRecord) if m.role == "tool" for b in m.blocks]
    assert result.text == "file1\n"


def test_a_file_cut_before_its_session_start_is_the_session_of_its_folder(tmp_path):
    s = session()
    s.lines = s.lines[1:]
    records = parse_path(copilot.parse, s.write(tmp_path / SID / "events.jsonl"))
    assert of(records, SessionInfo)[-1].external_id == SID
    assert {m.session_id for m in of(records, MessageRecord)} == {SID}
    older = parse_path(copilot.parse, s.write(tmp_path / "session-state" / f"{SID}.jsonl"))  # an older version's layout
    assert of(older, SessionInfo)[-1].external_id == SID
