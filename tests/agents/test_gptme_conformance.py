"""gptme (PyPI `gptme`, pinned in ops/drivers/pins.py) checked by itself: the real CLI runs the
standard plan against the scripted Chat Completions server (ops/drivers/gptme.py): one `gptme -n
--name cvrun` per prompt, each ending with its `complete` tool; prompt 2's last answer reports an
input over gptme's budget, so its autocompact hook asks for a checkpoint and switches to a compacted
view; prompt 3 starts a sub-agent through `subagent()` in its ipython tool; `/compact` folds by hand
before prompt 4 (it rewrites the view, so the automatic fold's kept lines are read from the head of
the new view's tail). The logs folder it wrote
is imported as a user would (`import FOLDER`), and every figure is compared with the requests it
sent (ops/conformance.py): the label, main calls (not the checkpoint call), tool calls, the
sub-agent under its parent, two folds with their triggers, and the window at every main call: after
a fold, the checkpoint (sent as an assistant message), then the lines gptme kept verbatim (written
BEFORE the checkpoint), then what follows.

The CLI runs once per module (about 45 s)."""

from __future__ import annotations

from ops import conformance
from ops.drivers.gptme import DRIVER  # noqa: F401 - the module's driver (tests/agents/conftest.py)


def test_gptme_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_the_fold_keeps_what_gptme_kept_and_costs_its_checkpoint_call(run, project):
    from contextviewer.conversations.windows import call_window  # noqa: PLC0415

    convs = conformance.find_conversations(run, project)
    main, sub = convs["main"], convs["sub"]
    assert sub.parent_id == main.pk and sub.agent_type == "reader"
    fold, manual = main.folds.order_by("position")
    checkpoint, by_hand = run.server.calls("compaction")
    assert manual.trigger == "manual" and not manual.cost  # its summarizer call is in no file
    mains = run.server.calls("main", agent="main")
    before = [e for e in mains if e.n < checkpoint.n][-1].usage
    after = next(e for e in mains if e.n > checkpoint.n).usage
    assert (fold.trigger, fold.tokens_before, fold.tokens_after) == ("auto", before["input"], after["input"])
    assert fold.cost["calls"] == 1 and fold.cost["input_uncached"] == checkpoint.usage["input"]
    # The first call after the fold carried the checkpoint, then prompt 1 on (kept verbatim).
    n = next(i for i, e in enumerate(mains, 1) if e.n > checkpoint.n)
    items = call_window(main, n).items
    assert items[0]["kind"] == "summary" and "Scripted summary" in items[0]["text"]
    assert "cv-prompt-1" in items[1]["text"]
