"""A large file is parsed and tokenized in a forked process (conversations/prepare.py).

What that path stores is exactly what the in-thread path stores, for synthetic sessions with
hostile lines and for the real fixtures; a parsing process that dies or fails leaves nothing of
the file and the import runs again; a writer that stops early leaves no process behind.
"""

import dataclasses
import itertools
import os
import signal

import pytest

from contextviewer.ingest import files as ingest, prepare, rows as ingest_rows
from contextviewer.conversations import search
from contextviewer.conversations.models import Conversation, Message, Source
from contextviewer.importers.claude_code import parser as claude_code
from contextviewer.importers.claude_code import synthetic
from tests.conftest import shared_fixtures_dir
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db

MESSAGE_FIELDS = (
    "position", "turn", "uuid", "parent_uuid", "role", "record_type", "subtype", "blocks", "raw", "timestamp",
    "is_sidechain", "agent_id", "is_meta", "is_compact_summary", "flags", "tokens", "token_total", "line_no",
)
CALL_FIELDS = (
    "position", "api_message_id", "request_id", "model", "input_uncached", "cache_write", "cache_read", "output",
    "output_is_lower_bound", "estimated_context", "message__position",
)
FOLD_FIELDS = ("position", "key", "kind", "trigger", "tokens_before", "tokens_after", "summary_text",
               "summary_message__position", "boundary__position", "cost")


def _stored(project) -> dict:
    """Everything an import stored for a project, with no database ids in it."""
    stored = {}
    for conv in Conversation.objects.filter(project=project).order_by("external_id"):
        stored[conv.external_id] = {
            "messages": list(conv.messages.order_by("position").values_list(*MESSAGE_FIELDS)),
            "calls": list(conv.model_calls.order_by("position", "api_message_id").values_list(*CALL_FIELDS)),
            "folds": [
                (*fold[:-1], {k: v for k, v in (fold[-1] or {}).items() if k != "conversation_id"})
                for fold in conv.folds.order_by("position").values_list(*FOLD_FIELDS)
            ],
            "figures": (
                conv.kind, conv.title, conv.message_count, conv.model_call_count, conv.tool_call_count,
                conv.fold_count, conv.peak_context, conv.spend_tokens, conv.model_names, conv.window,
                conv.started_at, conv.ended_at, conv.agent_links, conv.parent_tool_use_id,
                conv.parent.external_id if conv.parent else None,
            ),
        }
    return stored


def _difference(got: dict, expected: dict) -> str:
    """The first place where two _stored() results differ, said plainly."""
    if got.keys() != expected.keys():
        return f"conversations differ: {sorted(got)} != {sorted(expected)}"
    for conv, parts in expected.items():
        for part, rows in parts.items():
            other = got[conv][part]
            if other == rows:
                continue
            if part == "figures":
                return f"{conv} figures: {other} != {rows}"
            if len(other) != len(rows):
                return f"{conv} {part}: {len(other)} rows != {len(rows)}"
            for a, b in zip(other, rows):
                if a != b:
                    return f"{conv} {part}: {a} != {b}"
    return ""


@pytest.fixture
def forks(monkeypatch):
    """The pids of the parsing processes started during the test."""
    started = []
    real_fork = os.fork

    def fork():
        pid = real_fork()
        if pid:
            started.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return started


def _other_project(name):
    from contextviewer.accounts.services import get_or_create_project

    return get_or_create_project(name)


def _import_both_ways(project, path, settings, forks):
    """Import `path` in `project` on a thread and in a second project in a forked process."""
    settings.IMPORT_PROCESS_MIN_BYTES = -1
    threaded = ingest.import_path(project, path)
    assert not forks
    settings.IMPORT_PROCESS_MIN_BYTES = 0
    forked_project = _other_project("Forked")
    forked = ingest.import_path(forked_project, path)
    assert forks, "the forked path was not taken"
    return forked_project, threaded, forked


def _hostile_lines(builder: SessionBuilder) -> list[str]:
    key = "sk-ant-api03-" + "Zx9Yw8Vu7T" * 8
    return [
        builder.user(f"deploy with ANTHROPIC_API_KEY={key} please"),
        builder.user("before\x00after \ud800 lone"),
        "{not json at all",
        builder.user("<script>alert(1)</script> \u202e right-to-left and emoji \U0001f600"),
        *builder.assistant("On it.", tool=("Bash", {"command": "ls -la"})),
        builder.tool_result("total 0"),
    ]


def test_the_forked_path_stores_exactly_what_the_threaded_path_stores(project, tmp_path, settings, forks):
    folder = tmp_path / "session"
    main = synthetic.write_session(folder, messages=400, seed=7)
    builder = SessionBuilder(session_id=main.stem)
    with open(main, "a", encoding="utf-8") as fh:
        fh.write("\n".join(_hostile_lines(builder)) + "\n")

    forked_project, threaded, forked = _import_both_ways(project, folder, settings, forks)

    expected = _stored(project)
    assert len(expected) >= 2  # the main conversation and its sub-agents
    assert sum(len(c["messages"]) for c in expected.values()) > 400
    assert any(c["folds"] for c in expected.values())
    assert not _difference(_stored(forked_project), expected), _difference(_stored(forked_project), expected)
    assert [(e["line"], e["reason"]) for e in forked.errors] == [(e["line"], e["reason"]) for e in threaded.errors]
    assert len(forked.errors) == 1
    secret = Message.objects.get(conversation__project=forked_project, flags__has_key="secrets")
    assert "[masked anthropic_key]" in secret.raw and "Zx9Yw8Vu7T" not in secret.raw


def test_search_finds_each_message_the_forked_path_indexed(project, user, tmp_path, settings, forks):
    builder = SessionBuilder()
    lines = []
    for i in range(2500):  # more than one insert batch
        lines.append(builder.user(f"prompt number {i} mentions zebra{i}word"))
    path = tmp_path / "s.jsonl"
    write_lines(path, lines)
    settings.IMPORT_PROCESS_MIN_BYTES = 0
    ingest.import_file(project, path)
    assert forks
    for i in (0, 1999, 2000, 2499):
        hits = search.search(user, f"zebra{i}word")
        assert len(hits) == 1
        assert Message.objects.get(pk=hits[0].message_id).position == i


@pytest.mark.fixtures
def test_the_real_fixtures_store_the_same_on_both_paths(project, settings, forks):
    root = shared_fixtures_dir()
    if root is None:
        pytest.skip("../shared/fixtures is absent")
    forked_project, threaded, forked = _import_both_ways(project, root / "claude-code", settings, forks)
    expected = _stored(project)
    assert len(expected) > 10
    assert not _difference(_stored(forked_project), expected), _difference(_stored(forked_project), expected)
    assert [(e["path"], e["line"]) for e in forked.errors] == [(e["path"], e["line"]) for e in threaded.errors]


def _session_file(tmp_path, turns=300):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(turns))
    return path


def test_a_parsing_process_that_dies_leaves_nothing_and_the_import_runs_again(project, tmp_path, settings,
                                                                              monkeypatch, forks):
    path = _session_file(tmp_path)
    settings.IMPORT_PROCESS_MIN_BYTES = 0
    writer_pid = os.getpid()
    real_parse = claude_code.FORMAT.parse

    def dying_parse(source):
        for n, record in enumerate(real_parse(source)):
            if n == 700 and os.getpid() != writer_pid:
                os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer would
            yield record

    dying = dataclasses.replace(claude_code.FORMAT, parse=dying_parse)
    with pytest.raises(prepare.PrepareProcessError, match="stopped unexpectedly.*nothing of this file"):
        ingest.import_file(project, path, fmt=dying)
    assert Message.objects.count() == 0
    assert Source.objects.get().status != "imported"

    report = ingest.import_file(project, path)
    assert report.status == "imported" and report.added_messages == 300 * 5
    assert Conversation.objects.get().message_count == 300 * 5


def test_an_error_in_the_parsing_process_is_raised_in_the_import(project, tmp_path, settings, monkeypatch, forks):
    path = _session_file(tmp_path)
    settings.IMPORT_PROCESS_MIN_BYTES = 0
    real_parse = claude_code.FORMAT.parse

    def failing_parse(source):
        yield from itertools.islice(real_parse(source), 50)
        raise ValueError("the parser met something new at line 51")

    failing = dataclasses.replace(claude_code.FORMAT, parse=failing_parse)
    with pytest.raises(ValueError, match="something new at line 51"):
        ingest.import_file(project, path, fmt=failing)
    assert Message.objects.count() == 0


class _Stop(Exception):
    pass


def test_a_writer_that_stops_early_leaves_no_parsing_process_behind(project, tmp_path, settings, forks):
    builder = SessionBuilder()
    padding = "y" * 3000
    path = tmp_path / "s.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(1500):  # about 30 MB: progress is reported along the way
            for line in builder.turn(i):
                fh.write(line.replace("Fixed it.", f"Fixed it. {padding}") + "\n")
    settings.IMPORT_PROCESS_MIN_BYTES = 0

    def stop(done, what):
        raise _Stop  # as a cancelled job does

    with pytest.raises(_Stop):
        ingest.import_file(project, path, progress=stop)
    assert len(forks) == 1
    with pytest.raises(ChildProcessError):  # killed and reaped: no zombie, no orphan
        os.waitpid(forks[0], os.WNOHANG)
    assert Message.objects.count() == 0


def test_tokens_counted_by_the_writers_process_equal_those_counted_by_the_parsing_process(tmp_path):
    # The parsing process hands some batches over uncounted when the writer's process waits.
    from contextviewer.importers.claude_code import parser as claude_code

    main = synthetic.write_session(tmp_path / "session", messages=300, seed=3)
    with open(main, "rb") as stream:
        batch = list(claude_code.parse(stream))
    counted_in_child = prepare._finish(prepare._count(batch))
    counted_in_writer = prepare._finish(prepare._count(batch, count=False))
    messages = [m for m in counted_in_child if isinstance(m, prepare.PreparedMessage)]
    assert len(messages) >= 300 and sum(m.token_total for m in messages) > 10_000
    assert counted_in_writer == counted_in_child


def test_timestamps_go_into_sqlite_as_the_backend_would_write_them():
    from datetime import UTC, datetime, timedelta, timezone

    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("the SQLite shortcut only")
    for value in (
        datetime(2026, 3, 1, 12, 0, 5, 123456, tzinfo=UTC),
        datetime(2026, 3, 1, 23, 30, tzinfo=timezone(timedelta(hours=-5))),
        datetime(2026, 3, 1, 12, 0),
    ):
        assert ingest_rows._sqlite_datetime(value) == connection.ops.adapt_datetimefield_value(value)
