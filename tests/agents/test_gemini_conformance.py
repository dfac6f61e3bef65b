"""Gemini CLI (npm `@google/gemini-cli`, pin "gemini" in ops/drivers/pins.py) checked by itself: the
real CLI runs the standard plan, one `gemini -p` process per prompt (`--resume latest` after the
first), against the scripted server's Gemini adapter (ops/drivers/gemini.py); the folder it wrote is
imported as a user would (`import FOLDER`) and every figure is compared with the requests it sent
(ops/conformance.py): the label, main calls, tool calls, the `generalist` sub-agent under its parent,
one auto compression (two requests: the <state_snapshot> and its verification) inside prompt 2, and
the window at every main call.

Its JSONL log rewrites the history with `{"$set": {"messages": [...]}}` on the compression AND on
each resume: only the compression is a fold. The driver runs once per module (about 25 s)."""

from __future__ import annotations

from ops import conformance
from ops.drivers.gemini import DRIVER  # noqa: F401  the module's driver (tests/agents/conftest.py)


def test_gemini_cli_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_one_fold_for_one_compression_and_two_resumes(run, project):
    main = conformance.find_conversations(run, project)["main"]
    assert len(run.server.calls("compaction")) == 2  # the snapshot and its verification pass
    folds = list(main.folds.order_by("position"))
    assert [f.trigger for f in folds] == ["auto"]
    (fold,) = folds
    # The last call before the compression reported the big input; the next main call measured the rest.
    mains = run.server.calls("main", agent="main")
    compaction = run.server.calls("compaction")[0]
    last_before = [e for e in mains if e.n < compaction.n][-1]
    first_after = next(e for e in mains if e.n > compaction.n)
    assert fold.tokens_before == last_before.usage["input"]
    assert fold.tokens_after == first_after.usage["input"]
    assert "<state_snapshot>" in fold.summary_text


def test_each_tool_call_and_result_once(run, project):
    convs = conformance.find_conversations(run, project)
    main, sub = convs["main"], convs["sub"]
    main_tools = [e.reply.tool_id for e in run.server.calls("main", agent="main") if e.reply.tool is not None]
    sub_tools = [e.reply.tool_id for e in run.server.calls("main", agent="sub") if e.reply.tool is not None]
    assert main.tool_call_count == len(main_tools)
    assert sub.tool_call_count == len(sub_tools)
    # One result message per call: the log records each result twice (inside the call's record and
    # as the user turn that sent it) and a compression or a resume copies it again.
    results = [
        b.get("tool_id")
        for m in main.messages.filter(role="tool").order_by("position")
        for b in m.blocks or []
        if b.get("kind") == "tool_result"
    ]
    assert sorted(results) == sorted(main_tools)
    assert sub.parent_id == main.pk
