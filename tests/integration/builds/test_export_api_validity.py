"""OpenAI and Anthropic exports valid for their APIs (issue 19, item 3), checked with the official
SDKs' request types (`anthropic.types.MessageParam`, `openai.types.chat.ChatCompletionMessageParam`,
validated by pydantic) and the rules those types do not hold: no empty or whitespace-only text
block (the Messages API refuses them; Claude Code writes "\\n\\n" text blocks before tool calls),
roles alternating from a user message (Anthropic), every tool call answered right after it and
every answer after its call. Over the Claude Code and Codex fixture sessions, what the agent loads
(the default) and the whole record; a synthetic session without the shared fixtures."""

import json
from collections.abc import Iterable

import pytest
from pydantic import TypeAdapter

from contextviewer.builds import services as builds
from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from tests.conftest import shared_fixtures_dir
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db

anthropic_types = pytest.importorskip("anthropic.types")
openai_chat = pytest.importorskip("openai.types.chat")
ANTHROPIC = TypeAdapter(list[anthropic_types.MessageParam])
OPENAI = TypeAdapter(list[openai_chat.ChatCompletionMessageParam])


def _consume(value) -> None:
    """Iterate what pydantic validates lazily (the SDKs type content as Iterable[...])."""
    if isinstance(value, dict):
        for v in value.values():
            _consume(v)
    elif isinstance(value, Iterable) and not isinstance(value, str | bytes):
        for v in value:
            _consume(v)


def _blank_texts(node) -> int:
    if isinstance(node, dict):
        own = 1 if node.get("type") == "text" and not str(node.get("text") or "").strip() else 0
        return own + sum(_blank_texts(v) for v in node.values())
    if isinstance(node, list):
        return sum(_blank_texts(v) for v in node)
    return 0


def anthropic_problems(messages: list[dict]) -> list[str]:
    _consume(ANTHROPIC.validate_python(messages))
    problems = []
    if messages and messages[0]["role"] != "user":
        problems.append("the first message is not the user's")
    problems += [f"messages {i} and {i + 1} are both {a['role']}" for i, (a, b) in enumerate(zip(messages, messages[1:]))
                 if a["role"] == b["role"]]
    if _blank_texts(messages):
        problems.append(f"{_blank_texts(messages)} empty or whitespace-only text blocks")
    for i, m in enumerate(messages):
        blocks = m["content"] if isinstance(m["content"], list) else []
        if isinstance(m["content"], str) and not m["content"].strip():
            problems.append(f"message {i} is empty")
        if not blocks and not isinstance(m["content"], str):
            problems.append(f"message {i} has no content")
        calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
        nxt = messages[i + 1]["content"] if i + 1 < len(messages) and isinstance(messages[i + 1]["content"], list) else []
        answers = [b["tool_use_id"] for b in nxt if b["type"] == "tool_result"]
        if calls and answers != calls:
            problems.append(f"message {i}: calls {calls} answered by {answers}")
        prev = messages[i - 1]["content"] if i and isinstance(messages[i - 1]["content"], list) else []
        own = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        if own and own != [b["id"] for b in prev if b["type"] == "tool_use"]:
            problems.append(f"message {i}: results {own} do not answer the message before")
    return problems


def openai_problems(messages: list[dict]) -> list[str]:
    _consume(OPENAI.validate_python(messages))
    problems = []
    pending: list[str] = []
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            if not pending or m["tool_call_id"] != pending[0]:
                problems.append(f"message {i}: tool result {m['tool_call_id']} does not answer the next open call {pending[:1]}")
            else:
                pending.pop(0)
            continue
        if pending:
            problems.append(f"message {i}: calls {pending} left unanswered")
            pending = []
        content = m.get("content")
        if isinstance(content, str) and not content.strip():
            problems.append(f"message {i}: empty content")
        if isinstance(content, list) and _blank_texts(content):
            problems.append(f"message {i}: whitespace-only text part")
        if m["role"] == "assistant" and content is None and not m.get("tool_calls"):
            problems.append(f"message {i}: an assistant message with neither content nor calls")
        pending = [c["id"] for c in m.get("tool_calls") or []]
    if pending:
        problems.append(f"calls {pending} left unanswered at the end")
    return problems


def check(conv: Conversation) -> int:
    """Both exports of both views valid; the number of tool calls exported (Anthropic, whole record)."""
    calls = 0
    for view in ("loaded", "full"):
        an = json.loads(builds.export(conv, "anthropic", view=view).content)["messages"]
        assert anthropic_problems(an) == [], (conv.pk, conv.agent, view)
        oa = json.loads(builds.export(conv, "openai", view=view).content)["messages"]
        assert openai_problems(oa) == [], (conv.pk, conv.agent, view)
        if view == "full":
            calls = sum(1 for m in an if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use")
    return calls


def test_a_synthetic_session_with_blank_text_blocks_exports_valid_messages(project, tmp_path):
    b = SessionBuilder()
    lines = [b.user("Run the tests"), *b.assistant("\n\n", tool=("Bash", {"command": "pytest"})),
             b.tool_result("3 passed"), *b.assistant("All green."), b.user("  ")]
    write_lines(tmp_path / "s.jsonl", lines)
    conv = Conversation.objects.get(pk=ingest.import_path(project, tmp_path / "s.jsonl").conversation_ids[0])
    assert check(conv) == 1
    an = json.loads(builds.export(conv, "anthropic").content)["messages"]
    assert [m["role"] for m in an] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in an[1]["content"]] == ["tool_use"]  # the "\n\n" block before the call left out
    assert "whitespace-only text block left out" in " ".join(builds.export(conv, "anthropic").notes)


@pytest.mark.fixtures
@pytest.mark.parametrize("folder", ["claude-code", "codex"])
def test_every_fixture_session_exports_messages_the_apis_accept(project, folder):
    root = shared_fixtures_dir()
    if root is None:
        pytest.skip("shared fixtures not found (set CONTEXTVIEWER_FIXTURES)")
    ingest.import_path(project, root / folder)
    convs = list(Conversation.objects.filter(project=project, agent=folder))
    assert convs, f"nothing imported from fixtures/{folder}"
    assert sum(check(conv) for conv in convs) > 0, "the fixtures hold tool calls: the pairing is checked on some"
