"""Claude Code (npm `@anthropic-ai/claude-code`, pinned twice in ops/drivers/pins.py: the current
release and 2.1.197) checked by itself: the real CLI runs the standard plan in one stream-json
process against the scripted server (ops/drivers/claude_code.py), the project folder it wrote is
imported as a user would (`import FOLDER`), and every figure is compared with the requests it sent
(ops/conformance.py): the label, main calls, tool calls, the sub-agent under its parent (2.1.332 runs
it in the background: a <task-notification> comes back later), an auto fold before prompt 3 and a
manual `/compact` after it (current: a prompt follows it; 2.1.197: nothing follows it, so its
tokens_after is empty), and the window at every main call.

Each version runs once per module (about 10 s each)."""

from __future__ import annotations

import json

from ops import conformance
from ops.drivers.claude_code import DRIVER, DRIVER_2_1_197


DRIVERS = [DRIVER, DRIVER_2_1_197]  # each test runs on both versions (tests/agents/conftest.py)


def _pre_tokens(conv) -> list[int]:
    """The agent's own tokens_before of each fold: its compact_boundary's compactMetadata.preTokens."""
    lines = conv.messages.filter(subtype="compact_boundary").order_by("position")
    return [json.loads(m.raw)["compactMetadata"]["preTokens"] for m in lines]


def test_claude_code_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))
    # tokens_before is the agent's recorded figure (preTokens: the last call's input and output plus
    # Claude Code's estimate of the prompt written before it compacted), read by the driver from the
    # raw file and here from the stored boundary lines.
    main = conformance.find_conversations(run, project)["main"]
    folds = list(main.folds.order_by("position"))
    assert [f.tokens_before for f in folds] == _pre_tokens(main) == run.recorded_before["main"]
    # 2.1.3xx records what each request carried: its window needs no allowance; 2.1.197 names two.
    assert [a.name for a in run.allowances] == ([] if run.key == DRIVER.key else ["system-reminder", "system messages"])


def test_folds_in_the_order_sent_and_the_manual_one_measured_only_when_a_call_follows(run, project):
    convs = conformance.find_conversations(run, project)
    main = convs["main"]
    folds = list(main.folds.order_by("position"))
    assert [f.trigger for f in folds] == ["auto", "manual"]
    auto, manual = folds
    # The agent's own figure, and the input the next main call measured (not the log's postTokens).
    assert auto.tokens_before >= 185_000
    post = [
        json.loads(m.raw)["compactMetadata"]["postTokens"]
        for m in main.messages.filter(subtype="compact_boundary").order_by("position")
    ]
    assert auto.tokens_after not in (None, post[0])
    if run.key == DRIVER.key:
        assert manual.tokens_after is not None
    else:
        assert manual.tokens_after is None  # a manual /compact with no call after it
    # Prompt 3 was written before the auto compact_boundary, yet the call after the fold carried
    # the summary first, then the preserved answer and prompt 3.
    from contextviewer.conversations.windows import call_window  # noqa: PLC0415

    third = next(i for i, e in enumerate(run.server.calls("main", agent="main"), 1) if e.prompt == 2)
    items = call_window(main, third).items
    kinds = [i["kind"] for i in items]
    assert kinds[0] == "summary"
    prompt3 = next(k for k, i in enumerate(items) if "cv-prompt-3" in i["text"])
    answer2 = next(k for k, i in enumerate(items) if "notes.txt now reads" in i["text"])
    assert 0 < answer2 < prompt3  # the preserved answer, then the new prompt, both after the summary


def test_request_records_are_no_conversation_text(run, project):
    """2.1.3xx writes api-request, api-request-blob (a message as sent), api-request-shape, atis-latch,
    tools-used and cost-state records: none is a message, none counts tokens; what a request carried
    is kept on the call's first message (flags.request: keep n entries of the previous request, then
    the tail, each a transcript message by its uuids or the rendered message as sent)."""
    convs = conformance.find_conversations(run, project)
    for conv in convs.values():
        assert not conv.messages.filter(role="other").exists()
    requests = [
        m.flags["request"]
        for m in convs["main"].messages.filter(role="assistant").order_by("position")
        if (m.flags or {}).get("request")
    ]
    if run.key != DRIVER.key:
        assert requests == []  # 2.1.197 wrote no request records
        return
    assert len(requests) == convs["main"].model_calls.count()
    for request in requests:
        assert all("uuids" in e or "content" in e for e in request["tail"]), request
    # The first request: the prompt as sent, with the reminders the transcript's line does not hold.
    first = requests[0]["tail"][0]
    assert (
        first["role"] == "user"
        and "<system-reminder>" in json.dumps(first["content"])
        and "cv-prompt-1" in json.dumps(first["content"])
    )
