"""Mistral Vibe (PyPI `mistral-vibe`, pinned in ops/drivers/pins.py) checked by itself: the real CLI
runs the standard plan's prompts (the sub-agent second, see ops/drivers/vibe.py) and a last read
against the scripted Chat Completions server: `vibe -p`, then `vibe -c -p` (the edit prompt's
answer reports an input over Vibe's compaction threshold, so it compacts at the start of the last
prompt). The session folder it wrote is imported as a user would (`import FOLDER`), and every
figure is compared with the requests it sent (ops/conformance.py): the label, main calls (not the
summarization call), tool calls, the sub-agent (a child session folder) under its parent with its
own calls, one fold with its trigger and figures, and the window at every main call: the
sub-agent's "Runtime notification", and after the fold what Vibe injected (its preamble, the user
messages it re-sends, the summary), the messages it kept, the last prompt's.

The CLI runs once per module (about 60 s: five processes, a 5 s wait for the sub-agent)."""

from __future__ import annotations

from ops import conformance
from ops.drivers.vibe import DRIVER


def test_vibe_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_the_fold_is_vibes_automatic_compaction_with_its_summary(run, project):
    from contextviewer.conversations.windows import call_window  # noqa: PLC0415

    main = conformance.find_conversations(run, project)["main"]
    assert main.agent == DRIVER.label
    folds = list(main.folds.order_by("position"))
    mains = run.server.calls("main", agent="main")
    compactions = run.server.calls("compaction")
    assert len(folds) == len(compactions) == 1
    fold = folds[0]
    assert fold.trigger == "auto"
    before = [e for e in mains if e.n < compactions[0].n][-1].usage
    assert fold.tokens_before == before["input"] + before["output"]  # Vibe's last reported context: input + output
    assert fold.tokens_after == next(e for e in mains if e.n > compactions[0].n).usage["input"]
    # The first call after the fold carried the summary Vibe asked for, and the last prompt after it.
    first_after = next(i for i, e in enumerate(mains, 1) if e.n > compactions[0].n)
    items = call_window(main, first_after).items
    summaries = [i for i in items if i["kind"] == "summary"]
    assert any("Primary Request and Intent" in i["text"] for i in summaries)
    assert "cv-prompt-5" in [i for i in items if i["kind"] == "text"][-1]["text"]
