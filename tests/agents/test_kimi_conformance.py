"""Kimi CLI (PyPI `kimi-cli`, pinned in ops/drivers/pins.py) checked by itself: the real CLI runs the
standard plan against the scripted Chat Completions server (ops/drivers/kimi.py): `kimi --print
--yolo -p`, then `-C -p` for the next prompts; prompt 2's answer reports an input that, with the
50,000 Kimi reserves for the answer, passes the window, so it compacts at the start of prompt 3
(context.jsonl moves aside to context_1.jsonl); prompt 3 runs a sub-agent through its `Agent`
tool; `/compact` folds by hand before prompt 4. The sessions folder it wrote is imported as a user would (`import FOLDER`), and every figure
is compared with the requests it sent (ops/conformance.py): the label, main calls (not the
compaction calls), tool calls, the sub-agent under its parent, two folds (auto, manual), and the window at every
main call: after the fold, the compaction output, then the two messages Kimi kept (the last answer
and the new prompt), then what follows.

The CLI runs once per module (about 35 s)."""

from __future__ import annotations

from ops import conformance
from ops.drivers.kimi import DRIVER  # noqa: F401 - the module's driver (tests/agents/conftest.py)


def test_kimi_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_the_fold_keeps_the_two_messages_kimi_kept(run, project):
    from contextviewer.conversations.windows import call_window  # noqa: PLC0415

    convs = conformance.find_conversations(run, project)
    main, sub = convs["main"], convs["sub"]
    assert sub.parent_id == main.pk and sub.agent_type == "coder"
    fold, manual = main.folds.order_by("position")
    compaction, _by_hand = run.server.calls("compaction")
    assert manual.trigger == "manual"
    mains = run.server.calls("main", agent="main")
    before = [e for e in mains if e.n < compaction.n][-1].usage
    after = next(e for e in mains if e.n > compaction.n).usage
    assert (fold.trigger, fold.tokens_before, fold.tokens_after) == ("auto", before["input"], after["input"])
    n = next(i for i, e in enumerate(mains, 1) if e.n > compaction.n)
    items = [i for i in call_window(main, n).items if i["kind"] != "thinking"]
    assert [i["kind"] for i in items[:2]] == ["summary", "summary"] and "Scripted summary" in items[1]["text"]
    assert "status: final" in items[2]["text"] and "cv-prompt-3" in items[3]["text"]
