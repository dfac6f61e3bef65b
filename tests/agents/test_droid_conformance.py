"""Factory Droid (npm `@factory/cli`, pinned in ops/drivers/pins.py) checked by itself: the real CLI
runs the standard plan without a sub-agent (its `Task` needs Factory's daemon) against the scripted
Chat Completions server (ops/drivers/droid.py): one `droid exec --input-format stream-json` process
for the three prompts, a custom model with no Factory login; prompt 2's last answer reports an input
over its compaction limit, so it compacts before prompt 3. The sessions folder it wrote is imported
as a user would (`import FOLDER`) and compared with the requests it sent (ops/conformance.py): the
label, main calls (not the summarization call), tool calls, one fold, and the window at every main
call.

Two things Droid's files cannot hold, and only those, are set apart (UNRECORDED, AFTER_FOLD):
- its files keep no usage per call (only the last call's, in `<id>.settings.json`): a fold's tokens
  before and after;
- after a fold it re-renders its reminders (the `<system-reminder>` texts: tools, skills,
  sub-agents, connectors) into the next requests in an order and place its file does not record.
  The calls after the fold are compared on everything else, item by item, in order.
The CLI runs once per module (about 10 s)."""

from __future__ import annotations

from ops import conformance
from ops.drivers.droid import DRIVER

UNRECORDED = {"tokens_before", "tokens_after"}
REMINDER = "<system-reminder>"


def _after_fold(run) -> int:
    """The number of the first main call after the compaction request."""
    compaction = run.server.calls("compaction")[0]
    return next(i for i, e in enumerate(run.server.calls("main", agent="main"), 1) if e.n > compaction.n)


def test_droid_imports_exactly_what_it_sent(run, project):
    # The driver's Run names what the files cannot hold (unrecorded, after_fold_ignores), as
    # `agents check` reads it: the check sets apart those and nothing else.
    assert run.unrecorded == UNRECORDED and run.after_fold_ignores is not None
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_after_the_fold_every_message_but_the_reminders_is_where_it_was_sent(run, project):
    from contextviewer.conversations.windows import call_window  # noqa: PLC0415

    main = conformance.find_conversations(run, project)["main"]
    assert main.agent == DRIVER.label
    folds = list(main.folds.order_by("position"))
    assert len(folds) == len(run.server.calls("compaction")) == 1
    assert folds[0].trigger == ""  # Droid does not log what triggered it
    mains = run.server.calls("main", agent="main")
    first_after = _after_fold(run)
    assert first_after < len(mains)  # calls after the fold exist: the comparison below is not empty
    for i in range(first_after, len(mains) + 1):
        sent = [r for r in mains[i - 1].view.items if not (r.kind == "text" and (r.text or "").lstrip().startswith(REMINDER))
                or "User system info" in (r.text or "")]
        shown = [g for g in call_window(main, i).items
                 if not (g["kind"] == "text" and g["text"].lstrip().startswith(REMINDER)) or "User system info" in g["text"]]
        assert conformance.compare_window(sent, shown, []) == [], f"call {i}"
        assert shown[0]["kind"] == "summary" and "User system info" in shown[1]["text"]
    # The last call's usage is the settings file's: what the server reported for it.
    last = main.model_calls.order_by("position").last()
    assert (last.input_uncached, last.output) == (mains[-1].usage["input"], mains[-1].usage["output"])
