"""Every tool call of a source, with its result, in every export (issue 10, item 6).

Each fixture folder is imported through the ingest service and every conversation (sub-agents
included) exported as Markdown, OpenAI messages and Anthropic messages. The calls that have a
result in the stored source are counted here from the stored blocks (a call is answered by the
first later result with its id); each export must carry exactly those calls, each with its
result, in an order the target API accepts. Calls with no result are said in the export's notes.

A synthetic Claude Code session with parallel calls whose results come between the calls' own
lines runs without the shared fixtures."""

import json
import re

import pytest

from contextviewer.builds import services as builds
from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation
from tests.fixture_folders import assert_known, folder_params
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db


def source_tool_pairs(conv: Conversation) -> tuple[list[str], int]:
    """(ids of the calls answered by a later result, calls left without one), from the stored
    messages the exports replay (user, assistant and tool messages)."""
    open_calls: dict[str, int] = {}
    answered: list[str] = []
    unanswered = 0
    for blocks in conv.messages.filter(role__in=("user", "assistant", "tool")).order_by("position").values_list("blocks", flat=True):
        for b in blocks or ():
            if b.get("kind") == "tool_call":
                tid = b.get("tool_id")
                if not tid or tid in open_calls:
                    unanswered += 1
                else:
                    open_calls[tid] = 1
            elif b.get("kind") == "tool_result" and b.get("tool_id") in open_calls:
                del open_calls[b["tool_id"]]
                answered.append(b["tool_id"])
    return answered, unanswered + len(open_calls)


def exported_tool_pairs(conv: Conversation) -> dict[str, dict]:
    """Per export format: the call ids and the result ids, checking the shape the API wants."""
    out = {}
    md = builds.export(conv, "markdown", view="full")
    out["markdown"] = {
        "calls": md.content.count("\nTool call `"),
        "results": len(re.findall(r"\nTool (?:result|error):\n", md.content)),
        "notes": md.notes,
    }

    oa = builds.export(conv, "openai", view="full")
    calls, results, pending = [], [], []
    for m in json.loads(oa.content)["messages"]:
        if m["role"] == "tool":
            # One tool message per call, right after the assistant message, in tool_calls order.
            assert pending and m["tool_call_id"] == pending.pop(0), (conv.pk, m["tool_call_id"])
            results.append(m["tool_call_id"])
        else:
            assert pending == [], (conv.pk, pending)
            pending = [c["id"] for c in m.get("tool_calls") or []]
            assert not pending or m["role"] == "assistant"
            calls += pending
    assert pending == []
    out["openai"] = {"calls": calls, "results": results, "notes": oa.notes}

    an = builds.export(conv, "anthropic", view="full")
    msgs = json.loads(an.content)["messages"]
    assert not msgs or msgs[0]["role"] == "user"
    assert all(a["role"] != b["role"] for a, b in zip(msgs, msgs[1:])), "roles alternate"
    calls, results = [], []
    for i, m in enumerate(msgs):
        uses = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
        answers = [b["tool_use_id"] for b in m["content"] if b["type"] == "tool_result"]
        before = [b["id"] for b in msgs[i - 1]["content"] if b["type"] == "tool_use"] if i else []
        assert answers == before, (conv.pk, i, "the user message right after answers every tool_use, in order")
        assert [b["type"] for b in m["content"][: len(answers)]] == ["tool_result"] * len(answers)
        calls += uses
        results += answers
    out["anthropic"] = {"calls": calls, "results": results, "notes": an.notes}
    return out


def check_every_answered_call_is_exported(conv: Conversation) -> int:
    answered, unanswered = source_tool_pairs(conv)
    exported = exported_tool_pairs(conv)
    assert exported["markdown"]["calls"] == exported["markdown"]["results"] == len(answered), (conv.pk, conv.agent)
    for fmt in ("openai", "anthropic"):
        assert sorted(exported[fmt]["calls"]) == sorted(answered), (fmt, conv.pk, conv.agent)
        assert sorted(exported[fmt]["results"]) == sorted(answered), (fmt, conv.pk, conv.agent)
    for fmt, got in exported.items():
        said = " ".join(got["notes"])
        if unanswered:
            assert f"{unanswered} tool call{'s' if unanswered != 1 else ''} without a result left out" in said, (fmt, said)
        assert "not in the next user message" not in said and "not answering the assistant message" not in said, (fmt, said)
    return len(answered)


# aider's chat history records no tool calls (its edits are text), and its fixture is a thousand
# sessions: other tests import it.
WITHOUT_TOOL_CALLS = {"aider"}
FOLDERS = folder_params(exclude=WITHOUT_TOOL_CALLS)


def _has_tool_blocks(conv: Conversation) -> bool:
    return any(
        b.get("kind") in ("tool_call", "tool_result")
        for blocks in conv.messages.values_list("blocks", flat=True) for b in blocks or ()
    )


@pytest.mark.fixtures
@pytest.mark.parametrize("folder", FOLDERS)
def test_every_tool_call_of_a_fixture_folder_is_exported_with_its_result(project, fixtures_dir, folder):
    assert_known(folder)
    report = ingest.import_path(project, fixtures_dir / folder)
    conversations = [c for c in Conversation.objects.filter(project=project).order_by("pk") if _has_tool_blocks(c)]
    if not conversations:
        pytest.skip(f"no format reads tool calls from {folder} (refused: {report.refused})")
    answered = sum(check_every_answered_call_is_exported(conv) for conv in conversations)
    assert answered > 0, folder


def interleaved_session(tmp_path):
    """A Claude Code session: one API message writing text and three tool_use lines, the first
    result between the second and third tool_use lines, then the other results, then the answer."""
    b = SessionBuilder()
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 900, "cache_read_input_tokens": 12_000, "output_tokens": 80}

    def assistant(block, msg_id="msg_01Parallel", req="req_01"):
        return json.dumps(b._envelope("assistant", requestId=req, message={
            "id": msg_id, "type": "message", "role": "assistant", "model": "claude-opus-4-6",
            "content": [block], "stop_reason": None, "usage": usage}))

    def result(tid, text):
        return json.dumps(b._envelope("user", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": text}]}))

    lines = [
        b.user("Read a.py and b.py, and grep for TODO"),
        assistant({"type": "text", "text": "Reading both."}),
        assistant({"type": "tool_use", "id": "toolu_01A", "name": "Read", "input": {"file_path": "a.py"}}),
        assistant({"type": "tool_use", "id": "toolu_01B", "name": "Read", "input": {"file_path": "b.py"}}),
        result("toolu_01A", "contents of a"),
        assistant({"type": "tool_use", "id": "toolu_01C", "name": "Grep", "input": {"pattern": "TODO"}}),
        result("toolu_01B", "contents of b"),
        result("toolu_01C", "a.py:3: TODO"),
        assistant({"type": "text", "text": "Both read; one TODO."}, msg_id="msg_02Answer", req="req_02"),
        assistant({"type": "tool_use", "id": "toolu_02D", "name": "Bash", "input": {"command": "make"}}, msg_id="msg_02Answer", req="req_02"),
    ]
    path = tmp_path / f"{b.session_id}.jsonl"
    write_lines(path, lines)
    return path


def test_parallel_calls_with_results_between_them_survive_import_and_every_export(project, tmp_path):
    ingest.import_path(project, interleaved_session(tmp_path))
    conv = Conversation.objects.get(project=project)
    # Counted from the lines written above: four tool_use lines, three of them with a result line.
    assert conv.tool_call_count == 4
    answered, unanswered = source_tool_pairs(conv)
    assert sorted(answered) == ["toolu_01A", "toolu_01B", "toolu_01C"] and unanswered == 1
    assert check_every_answered_call_is_exported(conv) == 3
    doc = json.loads(builds.export(conv, "openai", view="full").content)
    assistant = next(m for m in doc["messages"] if m.get("tool_calls"))
    assert assistant["content"] == "Reading both."
    assert [c["id"] for c in assistant["tool_calls"]] == ["toolu_01A", "toolu_01B", "toolu_01C"]
    tools = [m for m in doc["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tools] == ["contents of a", "contents of b", "a.py:3: TODO"]
