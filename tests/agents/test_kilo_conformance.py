"""Kilo (npm `@kilocode/cli` with its `@kilocode/cli-linux-x64` binary, pinned in ops/drivers/pins.py), an
opencode fork, checked by itself: the real CLI runs the standard plan against the scripted server
(ops/drivers/opencode.py's KILO_DRIVER: `kilo run`, then `kilo run --continue`), the data folder it
wrote (`kilo.db`) is imported as a user would (`import FOLDER`), and every figure is compared with the
requests it sent (ops/conformance.py): the label is Kilo's own (`kilo`, not opencode), main calls per
conversation (the compaction call is the fold's cost), tool calls, the `task` sub-agent under its
parent, one auto fold (Kilo folds before the prompt that overflows and replays that prompt after the
summary), and the window at every main call. Kilo adds an `<environment_details>` text to each user
message it sends and does not store it (the Run's allowance `environment-details`).

The run takes 30 to 60 s (a Kilo start is slow on a loaded machine: the driver pays it once, through
`kilo serve`); it runs once per module."""

from __future__ import annotations



from ops import conformance
from ops.drivers.opencode import KILO_DRIVER

DRIVER = KILO_DRIVER  # the module's driver (tests/agents/conftest.py)






def test_kilo_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_kilo_is_its_own_agent_and_its_compaction_call_is_the_folds_cost(run, project):
    convs = conformance.find_conversations(run, project)
    main, sub = convs["main"], convs["sub"]
    assert main.agent == sub.agent == "kilo"
    assert main.cli_version == KILO_DRIVER.pin.version
    (compaction,) = run.server.calls("compaction")
    (fold,) = main.folds.all()
    assert fold.cost["calls"] == 1 and fold.cost["input_uncached"] == compaction.usage["input"]
    mains = run.server.calls("main", agent="main")
    assert main.model_calls.count() == len(mains)
    assert fold.tokens_before == max(e.usage["input"] for e in mains if e.n < compaction.n)
    assert fold.tokens_after == next(e.usage["input"] for e in mains if e.n > compaction.n)
    assert sub.parent_id == main.pk and sub.model_calls.count() == len(run.server.calls("main", agent="sub"))
