"""A file's import talks to the database a fixed number of times, whatever its length: rows go in
as one bulk statement per batch (a COPY on PostgreSQL, one prepared INSERT run over every row on
SQLite), never a statement per message or per call. Both backends (the suite runs on each)."""

from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contextviewer.conversations.models import Conversation, Message, ModelCall
from contextviewer.ingest import files as ingest
from tests.sessions import SessionBuilder, session_lines, write_lines

SMALL, LARGE = 4, 400  # turns of 5 lines: 20 and 2,000 messages


def _statements(captured) -> Counter:
    """Statements sent, by their first word (a COPY or an executemany is one)."""
    kinds: Counter = Counter()
    for query in captured:
        sql = query["sql"].split(": ", 1)[-1] if " times: " in query["sql"] or " rows: " in query["sql"] else query["sql"]
        kinds[sql.split()[0].upper()] += 1
    return kinds


def _import(project, path) -> Counter:
    with CaptureQueriesContext(connection) as ctx:
        report = ingest.import_file(project, path)
    assert report.status == "imported", report.errors
    return _statements(ctx.captured_queries)


@pytest.mark.django_db
def test_a_file_of_2000_messages_costs_the_statements_of_a_file_of_20(project, tmp_path):
    small, large = tmp_path / "small", tmp_path / "large"
    small.mkdir()
    large.mkdir()
    write_lines(small / "a.jsonl", session_lines(SMALL, SessionBuilder(session_id="11111111-2222-4333-8444-00000000000a")))
    write_lines(large / "b.jsonl", session_lines(LARGE, SessionBuilder(session_id="11111111-2222-4333-8444-00000000000b")))

    few = _import(project, small / "a.jsonl")
    many = _import(project, large / "b.jsonl")

    conversations = {c.external_id: c for c in Conversation.objects.filter(project=project)}
    big = conversations["11111111-2222-4333-8444-00000000000b"]
    assert big.message_count == Message.objects.filter(conversation=big).count() == 5 * LARGE
    assert big.model_call_count == ModelCall.objects.filter(conversation=big).count() == 2 * LARGE
    # 100 times the messages and model calls, the same statements: the search index's rows go in
    # 500 to a statement (2,000 messages: three more), nothing else grows.
    assert sum(many.values()) - sum(few.values()) <= 3, (few, many)
    inserts = many["INSERT"] + many["COPY"]
    assert inserts <= few["INSERT"] + few["COPY"] + 3, (few, many)
    assert sum(many.values()) < 40, many


@pytest.mark.django_db
def test_appending_1980_messages_costs_the_statements_of_appending_20(project, tmp_path):
    builder = SessionBuilder()
    path = tmp_path / "s.jsonl"
    lines = session_lines(SMALL, builder)
    write_lines(path, lines)
    ingest.import_file(project, path)

    def append(turns: range) -> Counter:
        new = [line for i in turns for line in builder.turn(i)]
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("\n".join(new) + "\n")
        return _import(project, path)

    few = append(range(SMALL, 2 * SMALL))
    many = append(range(2 * SMALL, 2 * SMALL + LARGE - SMALL))

    conversation = Conversation.objects.get(project=project)
    total = 5 * (2 * SMALL + LARGE - SMALL)
    assert conversation.message_count == Message.objects.filter(conversation=conversation).count() == total
    positions = list(conversation.messages.order_by("position").values_list("position", flat=True))
    assert positions == list(range(total))
    assert sum(many.values()) - sum(few.values()) <= 3, (few, many)


@pytest.mark.django_db
def test_an_imports_result_costs_the_statements_of_a_few_sessions_for_many(project, tmp_path):
    # The job's result lists every conversation (a folder of 1,000 sessions: 1,250 with sub-agents):
    # a few statements for the whole list, not a few per conversation.
    from contextviewer.ingest.imports import import_result

    def result_statements(sessions: int) -> tuple[int, dict]:
        folder = tmp_path / f"f{sessions}"
        folder.mkdir()
        for n in range(sessions):
            builder = SessionBuilder(session_id=f"22222222-3333-4444-8555-{sessions:06d}{n:06d}")
            write_lines(folder / f"s{n}.jsonl", session_lines(1, builder))
        report = ingest.import_path(project, folder)
        with CaptureQueriesContext(connection) as ctx:
            result = import_result(report)
        return len(ctx.captured_queries), result

    few, few_result = result_statements(2)
    many, many_result = result_statements(12)
    assert len(few_result["conversations"]) == 2 and len(many_result["conversations"]) == 12
    assert many_result["conversations"][0]["messages"] == 5 and many_result["conversations"][0]["bad_lines"] == 0
    assert many == few <= 6, (few, many)
