"""Qwen Code (npm `@qwen-code/qwen-code`, pinned in ops/drivers/pins.py) checked by itself: the real
CLI runs the standard plan, one `qwen --yolo [--continue] -p` process per prompt, against the
scripted Chat Completions server (ops/drivers/qwen.py); the project folder it wrote (chats/ and
subagents/) is imported as a user would (`import FOLDER`), and every figure is compared with the
requests it sent (ops/conformance.py): the label, main calls (not the compression calls), tool
calls, the foreground sub-agent under its parent, an auto compression before prompt 3 and a manual
`/compress` before prompt 4, and the window at every main call.

The CLI runs once per module (about 20 s)."""

from __future__ import annotations

from ops import conformance
from ops.drivers.qwen import DRIVER  # noqa: F401  the module's driver (tests/agents/conftest.py)


def test_qwen_code_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_it_is_qwen_code_not_claude_code(run, project):
    convs = conformance.find_conversations(run, project)
    assert {c.agent for c in convs.values()} == {"qwen-code"}
    assert convs["main"].model_calls.count() == len(run.server.calls("main", agent="main")) > 0


def test_the_call_after_each_fold_carried_the_summary_then_what_qwen_code_restored(run, project):
    from contextviewer.conversations.windows import call_window  # noqa: PLC0415

    main = conformance.find_conversations(run, project)["main"]
    folds = list(main.folds.order_by("position"))
    assert [f.trigger for f in folds] == ["auto", "manual"]
    # tokens_before: the input measured on the last call before each fold; tokens_after: the next call's.
    mains = run.server.calls("main", agent="main")
    compactions = run.server.calls("compaction")
    for fold, compaction in zip(folds, compactions):
        before = [e for e in mains if e.n < compaction.n][-1]
        after = next(e for e in mains if e.n > compaction.n)
        assert fold.tokens_before == before.usage["input"]
        assert fold.tokens_after == after.usage["input"]
    # Prompt 3 was written before the compression line, yet sent after the summary and the history
    # Qwen Code rebuilt ("Got it.", the restored file).
    third = next(i for i, e in enumerate(mains, 1) if e.prompt == 2)
    texts = [(i["kind"], i["text"]) for i in call_window(main, third).items]
    assert texts[0][0] == "summary" and "<state_snapshot>" in texts[0][1]
    assert [t for _k, t in texts[1:]][:1] == ["Got it. Thanks for the additional context!"]
    assert "cv-prompt-3" in texts[-1][1]
