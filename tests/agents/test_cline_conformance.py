"""Cline CLI (npm `cline`, pinned in ops/drivers/pins.py) checked by itself: the real CLI runs the
standard plan against the scripted server (ops/drivers/cline.py), the session folders it wrote are
imported as a user would (`import FOLDER`), and every figure is compared with the requests it sent
(ops/conformance.py): the label, main calls per conversation, tool calls, the sub-agent under its
parent, no fold (Cline's compaction does not fire on reported usage), the window at every main call.

Each prompt is its own `cline` run, so its own session and main conversation ("main", "main-2",
"main-3"); the sub-agent ("sub") hangs under "main-3"."""

from __future__ import annotations

from ops import conformance
from ops.drivers.cline import DRIVER  # noqa: F401  the module's driver (tests/agents/conftest.py)


def test_cline_cli_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_each_prompt_is_a_conversation_and_the_sub_agent_hangs_under_the_third(run, project):
    convs = conformance.find_conversations(run, project)
    assert set(convs) == {"main", "main-2", "main-3", "sub"} and all(convs.values())
    mains = [convs[k] for k in ("main", "main-2", "main-3")]
    assert len({c.pk for c in mains}) == 3 and all(c.parent_id is None for c in mains)
    assert convs["sub"].parent_id == convs["main-3"].pk
    # what the user typed, as sent: the runtime's <user_input mode="act"> wrapper is not shown
    first = convs["main"].messages.filter(role="user").order_by("position").first()
    assert "<user_input" not in str(first.blocks) and "cv-prompt-1" in str(first.blocks)
    # the scripted server's calls are the main calls: 3 + 3 + 2 lead calls, 2 sub-agent calls
    assert [c.model_calls.count() for c in mains] == [3, 3, 2] and convs["sub"].model_calls.count() == 2
