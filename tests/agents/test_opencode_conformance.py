"""opencode (npm `opencode-ai`, pinned in ops/drivers/pins.py) checked by itself: the real CLI runs the
standard plan against the scripted server (ops/drivers/opencode.py: `opencode run`, then `opencode run
--continue` for each next prompt), the data folder it wrote (`opencode.db` and its -wal) is imported as a
user would (`import FOLDER`), and every figure is compared with the requests it sent
(ops/conformance.py): the label, main calls per conversation (the title call is a side call, the
compaction call the fold's cost), tool calls, the `task` sub-agent (a child session) under its parent,
one auto fold (opencode records no figure: tokens_before is the last call's input; tokens_after the
first call after it, its automatic "Continue" call), and the window at every main call.

The run takes 15 to 30 s; it runs once per module."""

from __future__ import annotations

from ops import conformance
from ops.drivers.opencode import DRIVER  # noqa: F401  the module's driver (tests/agents/conftest.py)


def test_opencode_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_the_compaction_call_is_the_folds_cost_not_a_call(run, project):
    convs = conformance.find_conversations(run, project)
    main = convs["main"]
    (compaction,) = run.server.calls("compaction")
    (fold,) = main.folds.all()
    assert fold.trigger == "auto"
    # Not a call of the conversation: its usage is the fold's cost.
    assert main.model_calls.count() == len(run.server.calls("main", agent="main"))
    assert fold.cost["calls"] == 1
    assert fold.cost["input_uncached"] == compaction.usage["input"]
    assert fold.cost["output"] == compaction.usage["output"]
    # tokens_before: the big input reported on prompt 2's answer; tokens_after: the next main call's.
    mains = run.server.calls("main", agent="main")
    assert fold.tokens_before == max(e.usage["input"] for e in mains if e.n < compaction.n)
    assert fold.tokens_after == next(e.usage["input"] for e in mains if e.n > compaction.n)
    assert fold.tokens_after != compaction.usage["input"]


def test_the_sub_agent_hangs_under_its_task_call_with_its_own_calls(run, project):
    convs = conformance.find_conversations(run, project)
    main, sub = convs["main"], convs["sub"]
    assert sub.parent_id == main.pk and sub.kind == "subagent"
    task = next(e for e in run.server.calls("main", "main") if e.reply.tool and e.reply.tool.name == "task")
    assert sub.parent_tool_use_id == task.reply.tool_id
    assert sub.model_calls.count() == len(run.server.calls("main", agent="sub"))
    assert sub.tool_call_count == 1
