"""mini-swe-agent importer (``*.traj.json``): the v1 layout (``mini-swe-agent-1``: one ```bash
block per assistant turn, ``<returncode>`` observations as user messages) on the three real
fixtures, and the current ``mini-swe-agent-1.1`` layout (tool calls, ``tool`` messages,
``extra.actions``, the ``exit`` message) on trajectories built here from the source's layout
(agents/default.py, models/utils/actions_toolcall.py and actions_text.py, environments/local.py of
SWE-agent/mini-swe-agent), so a fresh clone without ../shared still tests it."""

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from contextviewer.core.records import BadLine, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.mini_swe_agent import parser as mini_swe_agent
from contextviewer.importers.formats import head_of
from tests.importers import fixture_files, of, parse_path

# The numbers SOURCES.md gives for each fixture (lines "`mini-swe-agent/…`"; counted there with
# plain json when the fixtures were added). The test recounts each with plain json below
# (`plain_counts`) and checks both agree before it looks at the importer.
SOURCES = {
    "gruckion__mini-swe-agent__django__django-15104.traj.json": dict(
        roles={"system": 1, "user": 25, "assistant": 24}, calls=24, prompt=190_583, cached=112_050, completion=4_397,
        peak=12_448, bash_blocks=24, observations=23, format_errors=0, timeouts=0, exit="Submitted"),
    "gruckion__mini-swe-agent__matplotlib__matplotlib-25287.traj.json": dict(
        roles={"system": 1, "user": 33, "assistant": 32}, calls=32, prompt=244_244, cached=170_947, completion=4_995,
        peak=14_882, bash_blocks=33, observations=29, format_errors=1, timeouts=1, exit="Submitted"),
    "gruckion__mini-swe-agent__sympy__sympy-13031.traj.json": dict(
        roles={"system": 1, "user": 116, "assistant": 115}, calls=115, prompt=2_328_116, cached=2_000_733, completion=22_882,
        peak=38_195, bash_blocks=117, observations=112, format_errors=2, timeouts=0, exit="Submitted"),
}
BASH = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)


def plain_counts(path: Path) -> dict:
    """The fixture counted with plain json and the v1 rules of agents/default.py (the action regex,
    the observation/format-error/timeout templates), independently of the importer."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    messages = doc["messages"]
    usages = [m["extra"]["response"]["usage"] for m in messages
              if m["role"] == "assistant" and "usage" in m.get("extra", {}).get("response", {})]
    assistants = [m for m in messages if m["role"] == "assistant"]
    users = [m["content"] for m in messages if m["role"] == "user"]
    return dict(
        roles=dict(Counter(m["role"] for m in messages)),
        calls=len(usages),
        api_calls=doc["info"]["model_stats"]["api_calls"],
        prompt=sum(u["prompt_tokens"] for u in usages),
        cached=sum((u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0 for u in usages),
        completion=sum(u["completion_tokens"] for u in usages),
        peak=max(u["prompt_tokens"] for u in usages),
        bash_blocks=sum(len(BASH.findall(m["content"])) for m in assistants),
        actions=sum(1 for m in assistants if len(BASH.findall(m["content"])) == 1),
        observations=sum(1 for c in users if c.startswith("<returncode>")),
        format_errors=sum(1 for c in users if c.startswith("Please always provide EXACTLY ONE action")),
        timeouts=sum(1 for c in users if c.startswith("The last command <command>") and "timed out" in c),
        exit=doc["info"]["exit_status"],
    )


@pytest.mark.parametrize("path", fixture_files("mini-swe-agent", "*.traj.json"), ids=lambda p: getattr(p, "name", "absent"))
def test_real_trajectories_match_the_independent_counts(path):
    expected = plain_counts(path)
    stated = SOURCES[path.name]
    assert {k: expected[k] for k in stated} == stated  # SOURCES.md and the plain-json count agree
    assert expected["calls"] == expected["api_calls"]  # every model call of the run has its usage

    assert formats.claim(path).name == "mini-swe-agent"
    records = parse_path(mini_swe_agent.parse, path)
    assert not of(records, BadLine)
    messages = of(records, MessageRecord)
    roles = Counter(m.role for m in messages)
    assert roles["assistant"] == stated["roles"]["assistant"]
    assert roles["system"] == 1
    # Every user message but the task is the harness answering: an observation, a timeout and the
    # submission answer the call; a format error stays a user message and answers nothing.
    assert roles["tool"] == stated["observations"] + stated["timeouts"] + 1
    assert roles["user"] == 1 + stated["format_errors"]
    assert roles["other"] == 1  # the info message at the end
    assert sum(1 for m in messages if m.flags.get("format_error")) == stated["format_errors"]
    assert all(not any(b.kind == "tool_result" for b in m.blocks) for m in messages if m.flags.get("format_error"))
    timeouts = [m for m in messages if m.flags.get("timeout")]
    assert len(timeouts) == stated["timeouts"]
    assert all(m.blocks[0].extra.get("interrupted") for m in timeouts)

    calls = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    results = [b for m in messages for b in m.blocks if b.kind == "tool_result"]
    assert len(calls) == expected["actions"]
    assert all(b.tool_name == "bash" and b.tool_input["command"] for b in calls)
    assert sorted(b.tool_id for b in results) == sorted(b.tool_id for b in calls)  # each call answered once
    observed = [b for m in messages if m.record_type == "observation" for b in m.blocks]
    assert all(isinstance(b.extra.get("exit_code"), int) for b in observed)

    usage = of(records, UsageRecord)
    assert len(usage) == stated["calls"]
    assert sum(u.context_size for u in usage) == stated["prompt"]
    assert sum(u.cache_read for u in usage) == stated["cached"]
    assert sum(u.output for u in usage) == stated["completion"]
    assert max(u.context_size for u in usage) == stated["peak"]
    assistants = {m.uuid for m in messages if m.role == "assistant"}
    assert {u.message_uuid for u in usage} == assistants
    assert all(u.model == "google/gemini-3-pro-preview" for u in usage)

    info = messages[-1]
    assert info.record_type == "info" and info.flags["exit_status"] == stated["exit"]
    assert f"exit status: {stated['exit']}" in info.blocks[0].text
    assert messages[0].flags["model_stats"]["api_calls"] == stated["calls"]
    session = records[-1]
    assert isinstance(session, SessionInfo) and session.cli_version == "1.15.0"
    assert session.title == json.loads(path.read_text())["instance_id"]


# -- the 1.1 layout, from the source -----------------------------------------------------------


def _response(rid: str, prompt: int, cached: int, completion: int, tool_calls=None, content="") -> dict:
    message = {"role": "assistant", "content": content, "tool_calls": tool_calls}
    return {"id": rid, "model": "claude-sonnet-4-5-20250929", "object": "chat.completion", "created": 1_763_500_000,
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "prompt_tokens_details": {"cached_tokens": cached}, "cache_creation_input_tokens": 100}}


def _assistant(rid: str, command: str | None, prompt: int, cached: int, completion: int, call_id: str | None) -> dict:
    """A model message as LitellmToolcallModel.query saves it: the message's model_dump plus extra."""
    tool_calls = None if call_id is None else [
        {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]
    actions = [] if call_id is None else [{"command": command, "tool_call_id": call_id}]
    return {"role": "assistant", "content": "THOUGHT: next step", "tool_calls": tool_calls,
            "extra": {"actions": actions, "response": _response(rid, prompt, cached, completion, tool_calls),
                      "cost": 0.01, "timestamp": 1_763_500_010.5}}


def toolcall_trajectory() -> dict:
    """system, task, 2 calls (one answered by a timeout), a format error (the rejected model message
    is not saved), the submitting call ended by the ``exit`` message, as default.py,
    litellm_toolcall_model.py and environments/local.py write them."""
    messages = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": "Please solve this issue: add() subtracts."},
        _assistant("chatcmpl-1", "ls", 2_000, 0, 50, "toolu_1"),
        {"role": "tool", "tool_call_id": "toolu_1", "content": "<returncode>0</returncode>\n<output>\nsrc\n</output>",
         "extra": {"raw_output": "src\n", "returncode": 0, "timestamp": 1_763_500_011.0}},
        _assistant("chatcmpl-2", "sleep 100", 2_300, 1_900, 60, "toolu_2"),
        {"role": "tool", "tool_call_id": "toolu_2", "content": "<returncode>-1</returncode>\n<output>\n</output>",
         "extra": {"raw_output": "", "returncode": -1, "timestamp": 1_763_500_071.0,
                   "exception_info": "An error occurred while executing the command: Command 'sleep 100' timed out after 60 seconds",
                   "exception_type": "TimeoutExpired", "exception": "timed out"}},
        # A format error: the model's message is not saved (parse_actions raises before query() adds it),
        # only the harness's answer is.
        {"role": "user", "content": "Unknown tool 'python'. Valid tools: ['bash']",
         "extra": {"interrupt_type": "FormatError", "tool_name": "python", "valid_tools": ["bash"]}},
        _assistant("chatcmpl-4", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff", 2_800, 2_400, 80, "toolu_4"),
        {"role": "exit", "content": "diff --git a/src/a.py b/src/a.py\n", "extra": {"exit_status": "Submitted",
                                                                                   "submission": "diff --git a/src/a.py b/src/a.py\n"}},
    ]
    info = {"model_stats": {"instance_cost": 0.04, "api_calls": 4},
            "config": {"agent": {"system_template": "…", "step_limit": 250}, "agent_type": "minisweagent.agents.default.DefaultAgent",
                       "model": {"model_name": "anthropic/claude-sonnet-4-5-20250929"},
                       "model_type": "minisweagent.models.litellm_toolcall_model.LitellmToolcallModel",
                       "environment": {"cwd": "/repo", "timeout": 60}},
            "mini_version": "2.1.0", "exit_status": "Submitted", "submission": "diff --git a/src/a.py b/src/a.py\n"}
    return {"info": info, "messages": messages, "trajectory_format": "mini-swe-agent-1.1"}


def test_the_toolcall_layout_pairs_calls_and_shows_timeouts_format_errors_and_the_exit(tmp_path):
    path = tmp_path / "last_mini_run.traj.json"
    path.write_text(json.dumps(toolcall_trajectory(), indent=2))
    assert mini_swe_agent.sniff(path, head_of(path)) == 0.95
    assert formats.claim(path).name == "mini-swe-agent"
    records = parse_path(mini_swe_agent.parse, path)
    assert not of(records, BadLine)
    messages = of(records, MessageRecord)
    assert [(m.role, m.record_type) for m in messages] == [
        ("system", "system_prompt"), ("user", "task"), ("assistant", "assistant"), ("tool", "observation"),
        ("assistant", "assistant"), ("tool", "timeout"), ("user", "format_error"),
        ("assistant", "assistant"), ("tool", "exit"), ("other", "info"),
    ]
    calls = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    assert [(b.tool_id, b.tool_input["command"]) for b in calls] == [
        ("toolu_1", "ls"), ("toolu_2", "sleep 100"), ("toolu_4", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff")]
    results = [b for m in messages for b in m.blocks if b.kind == "tool_result"]
    assert [b.tool_id for b in results] == ["toolu_1", "toolu_2", "toolu_4"]
    assert results[0].extra == {"exit_code": 0}
    assert results[1].extra["interrupted"] is True and messages[5].flags["timeout"]
    assert messages[6].flags["format_error"] and messages[6].is_meta and not any(b.kind == "tool_result" for b in messages[6].blocks)
    assert messages[8].flags["exit_status"] == "Submitted" and results[2].text.startswith("diff --git")

    usage = of(records, UsageRecord)
    # The rejected call of the format error left no usage in the log (api_calls says 4).
    assert [u.api_message_id for u in usage] == ["chatcmpl-1", "chatcmpl-2", "chatcmpl-4"]
    # prompt = uncached + cache write (cache_creation_input_tokens) + cache read (cached_tokens)
    assert [(u.input_uncached, u.cache_write, u.cache_read, u.output) for u in usage] == [
        (1_900, 100, 0, 50), (300, 100, 1_900, 60), (300, 100, 2_400, 80)]
    assert [u.context_size for u in usage] == [2_000, 2_300, 2_800]
    assert usage[0].model == "claude-sonnet-4-5-20250929"
    session = records[-1]
    assert session.cli_version == "2.1.0" and session.cwd == "/repo"
    assert session.title == "last_mini_run"


def test_the_text_layout_reads_extra_actions_and_user_observations(tmp_path):
    """actions_text.py: the action is in ``extra.actions``, observations are user messages with
    ``extra.returncode``; a run stopped by its limits ends with an ``exit`` that answers nothing."""
    assistant = {"role": "assistant", "content": "THOUGHT: list\n\n```mswea_bash_command\nls -la\n```",
                 "extra": {"actions": [{"command": "ls -la"}], "cost": 0.002,
                           "response": {"id": "r1", "usage": {"prompt_tokens": 900, "completion_tokens": 30}}}}
    doc = {"trajectory_format": "mini-swe-agent-1.1", "info": {"exit_status": "LimitsExceeded", "model_stats": {"api_calls": 1}},
           "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}, assistant,
                        {"role": "user", "content": "<returncode>2</returncode>\n<output>\nls: no such file\n</output>",
                         "extra": {"raw_output": "ls: no such file\n", "returncode": 2}},
                        {"role": "exit", "content": "LimitsExceeded", "extra": {"exit_status": "LimitsExceeded", "submission": ""}}]}
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(doc))
    records = parse_path(mini_swe_agent.parse, path)
    messages = of(records, MessageRecord)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "other", "other"]
    call = messages[2].blocks[-1]
    assert (call.tool_name, call.tool_input, call.tool_id) == ("bash", {"command": "ls -la"}, "action-3")
    assert messages[3].blocks[0].tool_id == "action-3" and messages[3].blocks[0].extra == {"exit_code": 2}
    assert messages[4].record_type == "exit" and messages[4].flags["exit_status"] == "LimitsExceeded"
    assert len(of(records, UsageRecord)) == 1 and of(records, UsageRecord)[0].input_uncached == 900


def test_v1_format_error_with_two_bash_blocks_opens_no_call(tmp_path):
    two = "THOUGHT: both\n\n```bash\nls\n```\n\n```bash\npwd\n```"
    doc = {"info": {"mini_version": "1.15.0", "exit_status": None, "model_stats": {"api_calls": 1}},
           "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "task"},
                        {"role": "assistant", "content": two},
                        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."}],
           "trajectory_format": "mini-swe-agent-1"}
    path = tmp_path / "x.traj.json"
    path.write_text(json.dumps(doc))
    messages = of(parse_path(mini_swe_agent.parse, path), MessageRecord)
    assert not any(b.kind == "tool_call" for m in messages for b in m.blocks)
    assert messages[2].flags["bash_blocks"] == 2 and messages[3].flags["format_error"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"", "empty"), (b'{"messages": [', "not valid JSON"), (b"[1, 2]", "not a mini-swe-agent trajectory"),
     (b'{"info": {}, "messages": 3}', "no messages list"),
     (b'{"info": {}, "messages": [7, {"role": "user", "content": "x"}]}', "message 1 is a JSON number")],
)
def test_a_broken_trajectory_is_a_bad_line_never_an_exception(tmp_path, content, reason):
    path = tmp_path / "broken.traj.json"
    path.write_bytes(content)
    records = parse_path(mini_swe_agent.parse, path)
    assert any(isinstance(r, BadLine) and reason in r.reason for r in records)
    assert isinstance(records[-1], SessionInfo)


def test_a_long_submission_before_the_messages_does_not_hide_the_format(tmp_path):
    """v1 writes info (exit status, submission, mini_version, config) before messages: a patch
    longer than the sniff window pushes ``messages`` and ``trajectory_format`` out of it."""
    doc = {"info": {"exit_status": "Submitted", "submission": "+x\n" * 40_000, "model_stats": {"api_calls": 0},
                    "mini_version": "1.15.0", "config": {}},
           "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}],
           "trajectory_format": "mini-swe-agent-1"}
    path = tmp_path / "big.traj.json"
    path.write_text(json.dumps(doc, indent=2))
    assert b'"messages"' not in head_of(path)
    assert formats.claim(path).name == "mini-swe-agent"


def test_other_formats_keep_their_files(tmp_path):
    swe = tmp_path / "inst.traj"
    swe.write_text(json.dumps({"trajectory": [{"action": "ls", "observation": "a"}], "history": [],
                               "info": {"model_stats": {"api_calls": 1}}}))
    assert formats.claim(swe).name == "swe-agent"
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"},
                                                                {"role": "assistant", "content": "yo"}]}))
    assert mini_swe_agent.sniff(chat, head_of(chat)) == 0.0
    assert formats.claim(chat).name == "messages"


@pytest.fixture
def project(db):
    from contextviewer.accounts.services import get_or_create_project

    return get_or_create_project("mini-swe-agent project")


@pytest.mark.django_db
def test_an_import_stores_one_model_call_per_measured_response(project, tmp_path):
    from contextviewer.conversations.models import Conversation, ModelCall
    from contextviewer.ingest import files as ingest

    path = tmp_path / "run" / "inst-1.traj.json"
    path.parent.mkdir()
    path.write_text(json.dumps(toolcall_trajectory(), indent=2))
    report = ingest.import_path(project, tmp_path / "run")
    assert not report.refused and not report.errors and {f.agent for f in report.files} == {"mini-swe-agent"}
    conv = Conversation.objects.get(project=project, agent="mini-swe-agent")
    assert ModelCall.objects.filter(conversation=conv).count() == 3
    again = ingest.import_path(project, path)
    assert sum(f.added_messages for f in again.files) == 0
    assert ModelCall.objects.filter(conversation=conv).count() == 3


@pytest.mark.django_db
def test_a_run_read_mid_way_then_finished_stores_each_message_once(project, tmp_path):
    """save() rewrites the file after every step: a first read mid-run, a second at the end."""
    from contextviewer.conversations.models import Conversation, ModelCall
    from contextviewer.ingest import files as ingest

    full = toolcall_trajectory()
    partial = {**full, "messages": full["messages"][:4], "info": {**full["info"], "exit_status": "", "submission": ""}}
    path = tmp_path / "inst-2.traj.json"
    path.write_text(json.dumps(partial))
    ingest.import_path(project, path)
    conv = Conversation.objects.get(project=project, agent="mini-swe-agent")
    assert conv.messages.count() == 4 and ModelCall.objects.filter(conversation=conv).count() == 1
    path.write_text(json.dumps(full))
    ingest.import_path(project, path)
    assert Conversation.objects.filter(project=project, agent="mini-swe-agent").count() == 1
    roles = list(conv.messages.order_by("position").values_list("role", flat=True))
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "user", "assistant", "tool", "other"]
    assert ModelCall.objects.filter(conversation=conv).count() == 3
