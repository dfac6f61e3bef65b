"""Claude Code `queue-operation` enqueue lines: what a person typed while the agent worked comes in
as a user message flagged queued, at its own position, and stays in the turn where it was typed."""

import io
import json
from pathlib import Path

import pytest

from contextviewer.core import export, facts
from contextviewer.core.records import MessageRecord
from contextviewer.core.turns import assign_turns, is_queued, starts_turn
from contextviewer.importers.claude_code.parser import parse
from tests.conftest import shared_fixtures_dir
from tests.importers import of
from tests.sessions import SessionBuilder

TYPED = "Also never touch src/legacy_io.py while you are at it"


def session(with_queue: bool) -> list[str]:
    """Three turns; in turn 1 the person types twice while the agent works (once mid-call, once
    after the result), then the harness delivers the first prompt as a plain user line."""
    b = SessionBuilder()
    lines = b.turn(0)
    lines += [b.user("Step 1: refactor src/app_1.py")]
    lines += b.assistant("Looking at src/app_1.py", tool=("Bash", {"command": "pytest tests/test_1.py"}))
    queued = [b.queue_operation("enqueue", TYPED)]
    lines += queued if with_queue else []
    lines += [b.tool_result("1 failed")]
    queued = [b.queue_operation("enqueue", "and keep the old name as an alias"), b.queue_operation("popAll", "x")]
    lines += queued if with_queue else []
    lines += b.assistant("Fixed it.")
    lines += [b.queue_operation("dequeue")] if with_queue else []
    lines += [b.user(TYPED), *b.assistant("I will leave src/legacy_io.py alone.")]
    lines += b.turn(3)
    return lines


def messages_of(lines: list[str]) -> list[MessageRecord]:
    data = ("\n".join(lines) + "\n").encode()
    return of(list(parse(io.BytesIO(data))), MessageRecord)


def turns_of(messages: list[MessageRecord]) -> list[int]:
    return list(
        assign_turns(
            (m.role, [b.as_dict() for b in m.blocks], m.is_meta, m.is_compact_summary, is_queued(m.flags))
            for m in messages
        )
    )


def test_enqueue_lines_are_queued_user_messages_in_the_turn_where_they_were_typed():
    plain = messages_of(session(with_queue=False))
    queued = messages_of(session(with_queue=True))
    assert len(queued) == len(plain) + 2  # the two enqueues; popAll and dequeue make no message

    marked = [m for m in queued if m.flags.get("queued")]
    assert [(m.role, m.record_type, [b.as_dict() for b in m.blocks]) for m in marked] == [
        ("user", "queue-operation", [{"kind": "text", "text": TYPED}]),
        ("user", "queue-operation", [{"kind": "text", "text": "and keep the old name as an alias"}]),
    ]
    assert all(m.uuid is None and m.timestamp is not None for m in marked)

    turns = turns_of(queued)
    by_uuid = {m.uuid: t for m, t in zip(queued, turns)}
    # Each queued message falls in the turn where it was typed: the turn of the line before it.
    for i, m in enumerate(queued):
        if m.flags.get("queued"):
            assert turns[i] == turns[i - 1] == 1
    # Every other message keeps the turn it has in the same session without the queue lines.
    assert {m.uuid: t for m, t in zip(plain, turns_of(plain))} == {u: t for u, t in by_uuid.items() if u}
    assert max(turns) == 3


def test_a_queued_message_opens_no_turn():
    text = [{"kind": "text", "text": "stop and run the linter"}]
    assert starts_turn("user", text)
    assert not starts_turn("user", text, queued=True)
    # before any typed prompt it joins the preamble; the first prompt still opens turn 0
    assert list(assign_turns([("user", text, False, False, True), ("user", text), ("assistant", text)])) == [0, 0, 0]
    assert is_queued({"queued": True}) and is_queued('{"queued": true}')
    assert not is_queued({}) and not is_queued("{}") and not is_queued('{"api_error": true}')


def test_a_prompt_queued_then_delivered_is_one_fact():
    """The harness delivers a queued prompt again as a plain user line: the fact probes key facts by
    their normalized text, so the path counts once, linked to where it was typed."""
    messages = messages_of(session(with_queue=True))
    dicts = [
        {"position": i, "turn": t, "role": m.role, "blocks": [b.as_dict() for b in m.blocks], "is_meta": m.is_meta}
        for i, (m, t) in enumerate(zip(messages, turns_of(messages)))
    ]
    found = [f for f in facts.extract(dicts) if f.kind == "path" and "legacy_io" in f.key]
    assert len(found) == 1
    typed_at = next(i for i, m in enumerate(messages) if m.flags.get("queued"))
    assert found[0].position == typed_at and found[0].turn == 1
    assert found[0].occurrences >= 2


def test_queue_lines_without_text_make_no_message():
    b = SessionBuilder()
    lines = [b.user("hi"), b.queue_operation("enqueue"), b.queue_operation("enqueue", "  "),
             b.queue_operation("remove"), b.queue_operation("dequeue"), *b.assistant("hello")]
    assert [m.role for m in messages_of(lines)] == ["user", "assistant"]


MOREDIP = "claude-code/moredip__session-share__0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"


@pytest.mark.fixtures
def test_the_real_queue_fixture():
    """Counted by hand: `grep -c '"operation":"enqueue"' <file>` gives 8 (lines 13-17, 34, 57, 62),
    all with text: 5 background-task notifications (`<task-notification>`) and 3 typed prompts.
    4 come again later as plain user lines (14 -> 22, 34 -> 82, 57 -> 60, 62 -> 66, read with
    `grep -n`); 2 prompts were taken back into the prompt box (popAll, lines 18-19); 2
    notifications never came (13, 15). Dequeue and popAll (6 lines) make no message."""
    root = shared_fixtures_dir()
    if root is None or not (root / MOREDIP).is_file():
        pytest.skip("shared fixture not found (set CONTEXTVIEWER_FIXTURES)")
    path: Path = root / MOREDIP
    messages = of(list(parse(io.BytesIO(path.read_bytes()))), MessageRecord)
    marked = [m for m in messages if m.flags.get("queued")]
    assert [m.line_no for m in marked] == [13, 14, 15, 16, 17, 34, 57, 62]
    raw = path.read_bytes().split(b"\n")
    for m in marked:
        assert m.raw == raw[m.line_no - 1].decode()
        assert m.blocks[0].text == json.loads(m.raw)["content"]
    assert sum(m.blocks[0].text.startswith("<task-notification>") for m in marked) == 5

    turns = turns_of(messages)
    by_line = {m.line_no: t for m, t in zip(messages, turns)}
    # typed during turn 0 (the first prompt, line 2); "are they still being written?" during the
    # turn of the delivered notification at line 22 (turn 1); delivered itself at line 82, where
    # it opens the turn the agent answers it in
    assert [by_line[n] for n in (13, 14, 15, 16, 17)] == [0] * 5
    assert by_line[34] == by_line[22] == 1
    assert by_line[82] == by_line[79] + 1
    assert by_line[57] == by_line[44] and by_line[62] == by_line[60]


def test_exports_replay_what_the_agent_read_not_the_queued_copy():
    """An export replays what the agent read: a queued copy is left out, with a note (the agent
    read the prompt where the harness delivered it, a user line of its own, or never)."""
    text = [{"kind": "text", "text": "stop"}]
    messages = [
        {"role": "user", "blocks": text},
        {"role": "user", "blocks": text, "flags": {"queued": True}},
        {"role": "assistant", "blocks": [{"kind": "text", "text": "ok"}], "flags": {}},
    ]
    notes = export._Notes()
    assert [m["role"] for m in export.conversational(messages, notes)] == ["user", "assistant"]
    assert any("queued line left out" in n for n in notes.render())


def test_a_build_keeps_a_queued_message_in_the_turn_where_it_was_typed():
    from contextviewer.core.build import renumber

    def msg(role, text, **flags):
        return {"role": role, "blocks": [{"kind": "text", "text": text}], "flags": flags}

    messages = [msg("user", "fix the test"), msg("assistant", "on it"), msg("user", "also the docs", queued=True),
                msg("assistant", "done"), msg("user", "thanks")]
    renumber(messages)
    assert [m["turn"] for m in messages] == [0, 0, 0, 0, 1]
