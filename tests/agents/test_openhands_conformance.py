"""OpenHands CLI (PyPI `openhands`, pinned in ops/drivers/pins.py) checked by itself: the real CLI
runs the standard plan against the scripted Chat Completions server (ops/drivers/openhands_cli.py):
one `openhands --headless` per prompt, then `--resume <id>`; its condenser (set to fold after 13
events in the user's agent_settings.json) folds at the start of prompt 3, which starts a sub-agent
through its `task` tool. The conversations folder it wrote is imported as a user would (`import
FOLDER`), and every figure is compared with the requests it sent (ops/conformance.py): the label,
main calls (not the condenser's), tool calls, the sub-agent under its parent, one fold with its
trigger, and the window at every main call.

The CLI runs once per module (about 100 s: each start waits on LiteLLM's price list and a skills
download that cannot reach the network)."""

from __future__ import annotations

from ops import conformance
from ops.drivers.openhands_cli import DRIVER  # noqa: F401 - the module's driver (tests/agents/conftest.py)


def test_openhands_cli_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_the_sub_agent_is_under_its_task_call_and_the_summary_follows_the_first_prompt(run, project):
    from contextviewer.conversations.windows import call_window  # noqa: PLC0415

    convs = conformance.find_conversations(run, project)
    main, sub = convs["main"], convs["sub"]
    assert sub.parent_id == main.pk and sub.agent_type == "default"
    (fold,) = main.folds.all()
    assert fold.trigger == "auto"
    (condense,) = run.server.calls("compaction")
    mains = run.server.calls("main", agent="main")
    # The first call after the fold carried the kept first prompt, then the summary (summary_offset
    # 2: after the system prompt and that prompt), then the answer it kept, then prompt 3.
    n = next(i for i, e in enumerate(mains, 1) if e.n > condense.n)
    items = [i for i in call_window(main, n).items if i["kind"] in ("text", "summary")]
    assert "cv-prompt-1" in items[0]["text"] and items[1]["kind"] == "summary" and "Scripted summary" in items[1]["text"]
    assert "cv-prompt-3" in items[-1]["text"]
