"""Synthetic sessions built straight through the ORM (bulk_create): fast enough for 50,000 messages.

Each turn: a user message, an assistant thinking line and a tool call (one model call), the tool
result, then the assistant's answer (a second model call). Context grows per turn; when it
passes `fold_at`, a fold (compact boundary + summary) moves the boundary, like Claude Code.
"""

from __future__ import annotations

import base64
import json
import uuid as uuidlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model

from contextviewer.accounts.models import Membership, Project, Role
from contextviewer.conversations import search
from contextviewer.conversations.models import Conversation, ConversationKind, Fold, Message, ModelCall

# A 1x1 transparent PNG.
PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
MODEL = "claude-sonnet-4-5-20250929"
MESSAGES_PER_TURN = 5


def make_user(username: str = "alice", password: str = "pw-alice-123", project: Project | None = None, role=Role.OWNER):
    user = get_user_model().objects.create_user(username=username, password=password)
    if project is not None:
        Membership.objects.create(user=user, project=project, role=role)
    return user


def make_project(slug: str = "demo", name: str | None = None) -> Project:
    return Project.objects.create(slug=slug, name=name or slug.title())


@dataclass
class TextSource:
    """Where the generated text comes from: override any piece to inject payloads."""

    user: Callable[[int], str] = lambda t: f"Turn {t}: please fix the failing test in module_{t}.py and keep the API stable."
    thinking: Callable[[int], str] = lambda t: f"The user wants module_{t} fixed. I should read the file first."
    tool_input: Callable[[int], Any] = lambda t: {"command": f"pytest tests/test_module_{t}.py -q", "description": "run"}
    tool_output: Callable[[int], str] = lambda t: f"\x1b[32m{t} passed\x1b[0m, \x1b[31m1 failed\x1b[0m in 0.{t % 10}s"
    answer: Callable[[int], str] = lambda t: f"Fixed **module_{t}.py**: the `parse()` call now handles empty input.\n\n- one\n- two"
    file_name: Callable[[int], str] = lambda t: f"src/module_{t}.py"
    summary: Callable[[int], str] = lambda k: f"## Summary {k}\nGoal: keep the tests green. Files: src/module_1.py. Next: run the suite."
    title: str = "Fix the failing tests"


@dataclass
class Built:
    conversation: Conversation
    turns: int
    folds: list[Fold] = field(default_factory=list)
    child: Conversation | None = None
    long_message: Message | None = None
    image_message: Message | None = None


def build_conversation(
    project: Project,
    *,
    messages: int | None = None,
    turns: int = 6,
    fold_at: int = 120_000,
    per_turn_tokens: int = 9_000,
    long_block_turn: int | None = 2,
    image_turn: int | None = 3,
    subagent_turn: int | None = 2,
    texts: TextSource | None = None,
    title: str | None = None,
    external_id: str | None = None,
    model: str = MODEL,
    index_search: bool = True,
) -> Built:
    """Build one conversation. `messages` (approximate) wins over `turns`."""
    texts = texts or TextSource()
    if messages is not None:
        turns = max(1, messages // MESSAGES_PER_TURN)
    conv = Conversation.objects.create(
        project=project,
        agent="claude-code",
        external_id=external_id or str(uuidlib.uuid4()),
        title=title if title is not None else texts.title,
        cwd="/home/dev/project",
        git_branch="main",
        model_names=[model],
        started_at=START,
    )
    msgs: list[Message] = []
    calls: list[dict] = []
    fold_specs: list[dict] = []
    pos = 0
    context = 18_000  # harness overhead + first messages
    now = START
    tool_calls = 0
    long_pos = image_pos = None

    def add(role: str, record_type: str, blocks: list[dict], turn: int, raw: dict | None = None, **kw) -> Message:
        nonlocal pos, now
        now = now + timedelta(seconds=7)
        line = raw or {"type": record_type, "message": {"role": role, "content": blocks}}
        tokens = kw.pop("tokens", None) or _tokens(blocks, role)
        m = Message(
            conversation=conv,
            position=pos,
            turn=turn,
            uuid=str(uuidlib.uuid4()),
            role=role,
            record_type=record_type,
            blocks=blocks,
            raw=json.dumps(line, ensure_ascii=False),
            timestamp=now,
            tokens=tokens,
            token_total=sum(tokens.values()),
            **kw,
        )
        pos += 1
        msgs.append(m)
        return m

    turn = 0
    for t in range(1, turns + 1):
        turn += 1
        if context >= fold_at:
            k = len(fold_specs) + 1
            boundary = add("system", "system", [{"kind": "other", "text": "Conversation compacted", "raw_type": "compact_boundary"}], turn - 1, subtype="compact_boundary")
            summary_text = texts.summary(k)
            summary = add("user", "user", [{"kind": "text", "text": summary_text}], turn, is_compact_summary=True, tokens={"summary": 2_000})
            fold_specs.append({"boundary": boundary, "summary": summary, "before": context, "text": summary_text})
            context = 22_000
            turn += 1
        user_blocks = [{"kind": "text", "text": texts.user(t)}]
        add("user", "user", user_blocks, turn)
        tool_id = f"toolu_{t:06d}"
        tool_input = texts.tool_input(t)
        think = add(
            "assistant",
            "assistant",
            [{"kind": "thinking", "text": texts.thinking(t)}],
            turn,
        )
        add(
            "assistant",
            "assistant",
            [{"kind": "tool_call", "tool_id": tool_id, "tool_name": "Bash" if t % 3 else "Task" if t == subagent_turn else "Read",
              "tool_input": tool_input, "text": json.dumps(tool_input, ensure_ascii=False)}],
            turn,
        )  # fmt: skip
        tool_calls += 1
        calls.append(_call(think, context, per_turn_tokens, model))
        output = texts.tool_output(t)
        raw = None
        blocks: list[dict] = [{"kind": "tool_result", "tool_id": tool_id, "text": output}]
        if t == long_block_turn:
            output = "\n".join(f"line {i}: " + "x" * 60 for i in range(400)) + "\nEND-OF-LONG-OUTPUT"
            blocks = [{"kind": "tool_result", "tool_id": tool_id, "text": output}]
        if t == image_turn:
            data = base64.b64encode(PNG_1PX).decode()
            blocks = [
                {"kind": "text", "text": f"Screenshot of {texts.file_name(t)}"},
                {"kind": "image", "media_type": "image/png", "data_size": len(data)},
            ]
            raw = {"type": "user", "message": {"role": "user", "content": [
                {"type": "text", "text": f"Screenshot of {texts.file_name(t)}"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
            ]}}  # fmt: skip
        result = add("user", "user", blocks, turn, raw=raw)
        if t == long_block_turn:
            long_pos = result.position
        if t == image_turn:
            image_pos = result.position
        answer = add("assistant", "assistant", [{"kind": "text", "text": texts.answer(t) + f"\n\nEdited `{texts.file_name(t)}`."}], turn)
        context += per_turn_tokens
        calls.append(_call(answer, context, per_turn_tokens, model))
    Message.objects.bulk_create(msgs, batch_size=2000)
    by_pos = {m.position: m for m in msgs}
    ModelCall.objects.bulk_create(
        [ModelCall(conversation=conv, message=msg, position=msg.position, **fields) for msg, fields in calls],
        batch_size=2000,
    )
    folds = Fold.objects.bulk_create(
        [
            Fold(
                conversation=conv,
                key=f"boundary-{i}",
                position=spec["boundary"].position,  # as the ingest service: the boundary closes the archived segment
                boundary=spec["boundary"],
                summary_message=spec["summary"],
                summary_text=spec["text"],
                trigger="auto",
                tokens_before=spec["before"],
                tokens_after=22_000,
                cost={"calls": 1, "input_uncached": 10, "cache_write": 0, "cache_read": spec["before"], "output": 1_800, "model": model},
                timestamp=spec["summary"].timestamp,
            )
            for i, spec in enumerate(fold_specs)
        ]
    )
    conv.message_count = len(msgs)
    conv.model_call_count = len(calls)
    conv.tool_call_count = tool_calls
    conv.fold_count = len(folds)
    conv.peak_context = max((c["input_uncached"] + c["cache_write"] + c["cache_read"] for _, c in calls), default=0)
    conv.measured_calls = sum(1 for _, c in calls if c["input_uncached"] + c["cache_write"] + c["cache_read"] > 0)
    conv.spend_tokens = sum(c["input_uncached"] + c["cache_write"] + c["cache_read"] + c["output"] for _, c in calls)
    conv.ended_at = now
    conv.save()
    if index_search:
        search.index_messages(conv.id, ((m.id, search.text_of_blocks(m.blocks)) for m in msgs))
    built = Built(conversation=conv, turns=turn, folds=list(folds))
    if long_pos is not None:
        built.long_message = by_pos[long_pos]
    if image_pos is not None:
        built.image_message = by_pos[image_pos]
    if subagent_turn is not None and subagent_turn <= turns:
        child = build_conversation(
            project,
            turns=2,
            long_block_turn=None,
            image_turn=None,
            subagent_turn=None,
            title="Explore the test suite",
            external_id=f"{conv.external_id}/agent-1",
            index_search=index_search,
        ).conversation
        child.parent = conv
        child.kind = ConversationKind.SUBAGENT
        child.parent_tool_use_id = f"toolu_{subagent_turn:06d}"
        child.agent_id = "agent-1"
        child.agent_type = "Explore"
        child.save()
        built.child = child
    return built


def _call(message: Message, context: int, per_turn: int, model: str) -> tuple[Message, dict]:
    cache_read = max(0, context - per_turn)
    return message, {
        "api_message_id": f"msg_{message.uuid}",
        "request_id": f"req_{message.uuid}",
        "model": model,
        "input_uncached": 12,
        "cache_write": context - cache_read - 12,
        "cache_read": cache_read,
        "output": 400,
        "estimated_context": int(context * 0.8),
        "timestamp": message.timestamp,
    }


def _tokens(blocks: Iterable[dict], role: str) -> dict[str, int]:
    out: dict[str, int] = {}
    names = {"text": "assistant" if role == "assistant" else "user", "thinking": "thinking", "tool_call": "tool_calls", "tool_result": "tool_results", "image": "media"}
    for b in blocks:
        key = names.get(b.get("kind"), "other")
        out[key] = out.get(key, 0) + max(1, len(b.get("text", "")) // 4) + (1500 if b.get("kind") == "image" else 0)
    return out
