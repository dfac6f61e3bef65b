"""GitHub Copilot CLI (npm `@github/copilot`, pinned in ops/drivers/pins.py) checked by itself: the
real CLI runs the standard plan offline in its bring-your-own-key mode against the scripted Chat
Completions server (ops/drivers/copilot.py): `copilot -p`, then `--continue`, for three prompts
(prompt 2's first response reports an input over Copilot's background-compaction threshold, so it
compacts while prompt 2 goes on; prompt 3 runs a `task` sub-agent), then `/compact` and prompt 4.
The session-state folder it wrote is imported as a user would (`import FOLDER`), and every figure
is compared with the requests it sent (ops/conformance.py): the label, main calls (not the
summarization calls), tool calls, the sub-agent under its parent, one fold per compaction (its
trigger, Copilot's recorded currentTokens) and the window at every main call.

The CLI runs once per module (about 15 s)."""

from __future__ import annotations

from ops import conformance
from ops.drivers.copilot import DRIVER


def test_copilot_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_the_call_after_a_background_compaction_carries_the_summary_then_what_was_written_meanwhile(run, project):
    """Copilot summarizes the history it had when the compaction started; the call made while the
    summary was made still carried everything, the next one the summary, then the tool call and
    result written meanwhile (what the request carried, read from the server's record)."""
    from contextviewer.conversations.windows import call_window  # noqa: PLC0415

    main = conformance.find_conversations(run, project)["main"]
    assert main.agent == DRIVER.label
    mains = run.server.calls("main", agent="main")
    auto = run.server.calls("compaction")[0]
    during = [e for e in mains if e.n < auto.n][-1]  # the last before the summary was asked for
    after = conformance.calls_after_fold(mains, "main", auto)[0]  # the first that carries the summary
    assert [i.kind for i in after.view.items][:3] == ["text", "tool_call", "tool_result"]
    n_after = mains.index(after) + 1
    items = call_window(main, n_after).items
    assert items[0]["kind"] == "summary"
    assert [i["tool_id"] for i in items[1:3]] == [after.view.items[1].tool_id, after.view.items[2].tool_id]
    first = call_window(main, mains.index(during) + 1).items
    assert first[0]["kind"] == "text" and "cv-prompt-1" in first[0]["text"]
    fold = main.folds.order_by("position").first()
    assert fold.trigger == "auto" and fold.tokens_after == after.usage["input"]
    assert fold.cost and fold.cost.get("output") == auto.usage["output"]


def test_the_sub_agent_is_under_its_task_call(run, project):
    convs = conformance.find_conversations(run, project)
    sub, main = convs["sub"], convs["main"]
    assert sub.parent_id == main.pk
    assert sub.model_calls.count() == len(run.server.calls("main", agent="sub")) == 2
