"""Codex CLI (npm `@openai/codex`, pinned in ops/drivers/pins.py) checked by itself: the real CLI runs
the standard plan against the scripted server (ops/drivers/codex.py: `codex exec`, then `codex exec
resume --last` for each next prompt), the rollouts it wrote are imported as a user would (`import
FOLDER`), and every figure is compared with the requests it sent (ops/conformance.py): the label, main
calls per conversation, tool calls, the sub-agent (its own rollout, `session_meta.parent_thread_id`)
under its parent and linked to the spawn_agent call, one auto fold for its remote compaction (v2),
the window at every main call. The summary of a remote compaction is encrypted: the window says so
(the Run's allowance `encrypted-summary`)."""

from __future__ import annotations

import json


from ops import conformance
from ops.drivers.codex import DRIVER  # noqa: F401  the module's driver (tests/agents/conftest.py)


def test_codex_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_the_sub_agent_hangs_under_the_spawn_agent_call(run, project):
    convs = conformance.find_conversations(run, project)
    main, sub = convs["main"], convs["sub"]
    assert main is not None and sub is not None and main.parent_id is None
    assert sub.parent_id == main.pk and sub.kind == "subagent"
    spawn = next(e for e in run.server.calls("main", "main") if e.reply.tool and e.reply.tool.name == "spawn_agent")
    assert sub.parent_tool_use_id == spawn.reply.tool_id
    # its own calls and tools: read app.py, then the answer
    assert sub.model_calls.count() == len(run.server.calls("main", "sub")) == 2 and sub.tool_call_count == 1
    assert main.model_calls.count() == len(run.server.calls("main", "main"))


def test_the_remote_compaction_is_one_auto_fold_whose_summary_says_it_is_encrypted(run, project):
    from contextviewer.conversations import windows  # noqa: PLC0415
    from contextviewer.core.window import ENCRYPTED_NOTE  # noqa: PLC0415

    main = conformance.find_conversations(run, project)["main"]
    folds = list(main.folds.filter(origin="imported").order_by("position"))
    assert [f.trigger for f in folds] == ["auto"]
    compaction = run.server.calls("compaction")[0]
    before = [e for e in run.server.calls("main", "main") if e.n < compaction.n]
    after = [e for e in run.server.calls("main", "main") if e.n > compaction.n]
    assert folds[0].tokens_before == before[-1].usage["input"] == 150_000
    assert folds[0].tokens_after == after[0].usage["input"]
    # the first call after the fold carried the encrypted compaction item: the window says what it is
    number = len(before) + 1
    items = windows.call_window(main, number).items
    summaries = [i for i in items if i["kind"] == "summary"]
    assert len(summaries) == 1 and summaries[0]["text"] == "" and summaries[0].get("note") == ENCRYPTED_NOTE
    assert json.dumps(compaction.view.items[-1].as_dict())  # the trigger item is not a window item
