"""pi (npm `@mariozechner/pi-coding-agent`, pinned in ops/drivers/pins.py) checked by itself: the real
CLI runs the standard plan (pi has no sub-agent tool) against the scripted Chat Completions server
(ops/drivers/pi.py): `pi -p`, `pi -c -p` for the first three prompts (prompt 2's answer reports an
input over pi's threshold, so it compacts after it), then `pi --mode rpc -c` for a manual compaction
and prompt 4. The sessions folder it wrote is imported as a user would (`import FOLDER`), and every
figure is compared with the requests it sent (ops/conformance.py): the label, main calls (not the
summarization calls), tool calls, one fold per compaction (pi's recorded tokensBefore), and the
window at every main call: the summary first, then the entries pi kept (written BEFORE the
compaction line), then what follows.

The CLI runs once per module (about 20 s)."""

from __future__ import annotations



from ops import conformance
from ops.drivers.pi import DRIVER






def test_pi_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_each_fold_keeps_what_pi_kept_and_its_own_tokens_before(run, project):
    from contextviewer.conversations.windows import call_window  # noqa: PLC0415

    main = conformance.find_conversations(run, project)["main"]
    assert main.agent == DRIVER.label
    folds = list(main.folds.order_by("position"))
    mains = run.server.calls("main", agent="main")
    compactions = run.server.calls("compaction")
    assert len(folds) == len(compactions) == 2
    for fold, compaction in zip(folds, compactions):
        before = [e for e in mains if e.n < compaction.n][-1].usage
        after = next(e for e in mains if e.n > compaction.n).usage
        assert fold.tokens_before == before["input"] + before["output"]  # pi's tokensBefore: input + output
        assert fold.tokens_after == after["input"]
        assert fold.trigger == ""  # pi does not log what triggered a compaction
    # The last call carried the summary, then everything pi kept from the first prompt on, then prompt 4.
    items = call_window(main, len(mains)).items
    assert items[0]["kind"] == "summary"
    assert "cv-prompt-1" in items[1]["text"] and "cv-prompt-4" in items[-1]["text"]
