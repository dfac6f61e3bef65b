"""Hermes Agent (PyPI `hermes-agent`, pinned in ops/drivers/pins.py) checked by itself: the real CLI
runs one prompt that lists, reads, edits, runs a command and starts a sub-agent, against the
scripted Chat Completions server (ops/drivers/hermes.py: `hermes -z`, one process); the command's
answer reports an input over its threshold, so it compacts before the next call; its
`delegate_task` runs a child session. Twice: compacting in place (its default: the rows put away
and the compacted list written again in the same session) and by rotation (`compression.in_place:
false`: a continuation session holds the compacted list). The state.db it wrote is imported as a user
would (`import FOLDER`) and compared with the requests it sent (ops/conformance.py): the label, main
calls (not the summarizer's), tool calls, the sub-agent under its parent, one fold, and the window at
every main call.

What Hermes's store cannot hold, and only that, is set apart (UNRECORDED): it keeps no usage per
call (only each session's totals), so a fold's tokens before and after are unknown.
The CLI runs once per driver (about 10 s each)."""

from __future__ import annotations

from ops import conformance
from ops.drivers.hermes import DRIVER, ROTATED, ROTATING

DRIVERS = [DRIVER, ROTATING]  # tests/agents/conftest.py runs each once

UNRECORDED = {"tokens_before", "tokens_after"}


def test_hermes_imports_exactly_what_it_sent(run, project):
    assert run.unrecorded == UNRECORDED  # the driver names it, as `agents check` reads it
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))


def test_the_fold_carries_what_hermes_sent_and_the_calls_are_unmeasured(run, project):
    from contextviewer.conversations.windows import call_window  # noqa: PLC0415

    convs = conformance.find_conversations(run, project)
    main, sub = convs["main"], convs["sub"]
    assert sub.parent_id == main.pk
    (fold,) = main.folds.all()
    (summarizer,) = run.server.calls("compaction")
    assert (fold.tokens_before, fold.tokens_after) == (None, None)  # no usage per call in its store
    # The summarizer's totals (session_model_usage, task 'compression') are the fold's cost.
    assert fold.cost["calls"] == 1 and fold.cost["input_uncached"] == summarizer.usage["input"]
    mains = run.server.calls("main", agent="main")
    n = next(i for i, e in enumerate(mains, 1) if e.n > summarizer.n)
    items = call_window(main, n).items
    # Hermes sends its protected head (the prompt, the first call and its result), then the summary.
    assert "cv-prompt-1" in items[0]["text"] and items[1]["kind"] == "tool_call"
    assert any("CONTEXT COMPACTION" in (i.get("text") or "") for i in items[3:5])
    assert all(c.input_uncached == 0 and c.output == 0 for c in main.model_calls.all())



def test_the_store_compacted_the_way_the_driver_asked(run, project):
    import sqlite3  # noqa: PLC0415

    from contextviewer.conversations.models import Conversation  # noqa: PLC0415

    conn = sqlite3.connect(f"{(run.folder / 'state.db').as_uri()}?mode=ro", uri=True)
    try:
        ended = [r[0] for r in conn.execute("SELECT end_reason FROM sessions WHERE source = 'cli' ORDER BY started_at")]
        put_away = conn.execute("SELECT count(*) FROM messages WHERE active = 0 AND compacted = 1").fetchone()[0]
    finally:
        conn.close()
    if ROTATED in run.notes:  # the session ended by the compaction, and its continuation
        assert ended[0] == "compression" and len(ended) == 2 and put_away == 0
    else:  # one session, the rows put away kept in it
        assert len(ended) == 1 and put_away > 0
    # Either way one conversation (the continuation is none of its own), and its sub-agent under it.
    convs = conformance.find_conversations(run, project)
    assert Conversation.objects.filter(project=project, parent__isnull=True).count() == 1
    assert convs["sub"].parent_id == convs["main"].pk
