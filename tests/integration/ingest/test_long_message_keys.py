"""Message uuids, parent uuids, response and request ids of any length (and with a NUL in them) are
stored the same on SQLite and PostgreSQL: PostgreSQL used to refuse a 300-character uuid ("value too
long for type character varying(255)"), failing the whole file, where SQLite stored it whole.

Run on both backends: as is (SQLite) and with DATABASE_URL=postgres://... (see README)."""

import json
import shutil

import pytest

from contextviewer.conversations.models import Message, ModelCall, external_key
from contextviewer.ingest import files as ingest
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db

TURNS = 3


def _long(prefix: str, n: int) -> str:
    # 300 characters, all the same up to the last ten: a key cut at 255 would make them one.
    return prefix + "x" * (290 - len(prefix)) + f"{n:010d}"


def _session(tmp_path):
    """A Claude Code session whose every uuid, message id and request id is 300 characters long
    (one uuid holds a NUL), and the lines as written."""
    lines = [json.loads(line) for line in session_lines(TURNS, SessionBuilder(session_id="cccccccc-0000-4000-8000-000000000300"))]
    renamed = {}
    for n, line in enumerate(lines):
        renamed[line["uuid"]] = _long("uuid-", n) if n != 2 else "with\x00nul-" + _long("uuid-", n)
    for line in lines:
        line["uuid"] = renamed[line["uuid"]]
        line["parentUuid"] = renamed.get(line["parentUuid"])
        if line["type"] == "assistant":
            calls = int(line["message"]["id"].removeprefix("msg_"))
            line["message"]["id"] = _long("msg_", calls)
            line["requestId"] = _long("req_", calls)
    path = tmp_path / "long-ids.jsonl"
    write_lines(path, [json.dumps(line) for line in lines])
    return path, lines


def test_ids_over_the_column_size_import_and_keep_their_links(project, tmp_path):
    path, lines = _session(tmp_path)
    report = ingest.import_file(project, path)
    assert report.status == "imported" and report.errors == []
    assert report.added_messages == len(lines) == TURNS * 5

    stored = list(Message.objects.order_by("position"))
    assert len(stored) == len(lines)
    assert len({m.uuid for m in stored}) == len(lines)  # 300-character ids alike up to the end: still apart
    for message, line in zip(stored, lines):
        assert len(message.uuid) <= 255 and "\x00" not in message.uuid
        assert message.uuid == external_key(line["uuid"])
        assert json.loads(message.raw)["uuid"] == line["uuid"]  # the whole id stays in the raw record
    # Each reply still points at the message it answers.
    by_original = {line["uuid"]: m for m, line in zip(stored, lines)}
    for message, line in zip(stored, lines):
        parent = by_original.get(line["parentUuid"])
        assert message.parent_uuid == (parent.uuid if parent else None)

    # One model call per response id (two per turn), each with its first message.
    response_ids = {line["message"]["id"] for line in lines if line["type"] == "assistant"}
    calls = list(ModelCall.objects.all())
    assert len(calls) == len(response_ids) == TURNS * 2
    assert {c.api_message_id for c in calls} == {external_key(i) for i in response_ids}
    assert all(c.message_id is not None and len(c.request_id) <= 255 for c in calls)
    assert all(m.api_message_id in {c.api_message_id for c in calls} for m in stored if m.role == "assistant")


def test_the_same_session_read_again_adds_nothing(project, tmp_path):
    path, lines = _session(tmp_path)
    ingest.import_file(project, path)
    copy = tmp_path / "copy.jsonl"
    shutil.copy(path, copy)
    again = ingest.import_file(project, copy)
    assert again.status == "imported" and again.errors == []
    assert again.added_messages == 0
    assert Message.objects.count() == len(lines) and ModelCall.objects.count() == TURNS * 2


def test_long_ids_sqlite_stored_whole_before_become_the_same_keys(project, tmp_path):
    import importlib
    import types

    from django.apps import apps
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("only SQLite could hold them whole")
    path, lines = _session(tmp_path)
    ingest.import_file(project, path)
    # As an earlier import left them on SQLite: the whole ids.
    for message, line in zip(Message.objects.order_by("position"), lines):
        Message.objects.filter(pk=message.pk).update(uuid=line["uuid"], parent_uuid=line["parentUuid"])
    migration = importlib.import_module("contextviewer.conversations.migrations.0013_long_message_keys")
    migration.forwards(apps, types.SimpleNamespace(connection=connection))
    assert [m.uuid for m in Message.objects.order_by("position")] == [external_key(line["uuid"]) for line in lines]
    copy = tmp_path / "copy.jsonl"
    shutil.copy(path, copy)
    assert ingest.import_file(project, copy).added_messages == 0  # found again by the same keys


def _one_turn_with(tmp_path, *, input_tokens, tool_input):
    builder = SessionBuilder(session_id="eeeeeeee-0000-4000-8000-000000000001")
    lines = [json.loads(line) for line in session_lines(2, builder)]
    calls = [line for line in lines if line["type"] == "assistant" and line["message"]["content"][0]["type"] == "tool_use"]
    for line in lines:  # every line of the call carries its usage
        if line["type"] == "assistant" and line["message"]["id"] == calls[0]["message"]["id"]:
            line["message"]["usage"] = {**line["message"]["usage"], "input_tokens": input_tokens}
    calls[0]["message"]["content"][0]["input"] = tool_input
    path = tmp_path / "values.jsonl"
    write_lines(path, [json.dumps(line, allow_nan=True) for line in lines])
    return path, lines, calls[0]


def test_a_token_count_no_model_has_is_a_bad_record_and_the_rest_is_stored(project, tmp_path):
    # 10**12 input tokens: PostgreSQL's integer column refused it and the whole file failed.
    path, lines, call = _one_turn_with(tmp_path, input_tokens=10**12, tool_input={"command": "ls"})
    report = ingest.import_file(project, path)
    assert report.status == "imported"
    assert Message.objects.count() == len(lines)  # every message kept
    [error] = report.errors
    first_line = next(i for i, line in enumerate(lines) if line.get("message", {}).get("id") == call["message"]["id"])
    assert error["line"] == first_line + 1  # the call's first line, where its usage is read
    assert "token count no model has (input_uncached 1000000000000" in error["reason"]
    assert "that call's usage was not kept, its messages were" in error["reason"]
    # The other calls are stored; the one whose usage was out of range is not (its line keeps it).
    response_ids = {line["message"]["id"] for line in lines if line["type"] == "assistant"}
    assert ModelCall.objects.count() == len(response_ids) - 1
    assert not ModelCall.objects.filter(api_message_id=call["message"]["id"]).exists()


def test_nan_and_infinity_in_a_tool_input_are_stored_as_the_log_writes_them(project, tmp_path):
    # PostgreSQL's JSON column refuses NaN: the whole file failed there, SQLite stored it.
    path, lines, call = _one_turn_with(tmp_path, input_tokens=3, tool_input={"x": float("nan"), "y": [float("inf"), 1.5]})
    report = ingest.import_file(project, path)
    assert report.status == "imported" and report.errors == []
    stored = Message.objects.get(uuid=call["uuid"])
    [block] = [b for b in stored.blocks if b["kind"] == "tool_call"]
    assert block["tool_input"] == {"x": "NaN", "y": ["Infinity", 1.5]}
    assert '"x": NaN' in stored.raw  # the line as written


def test_a_record_type_holding_a_nul_is_stored_with_the_rest(project, tmp_path):
    # An unknown record type with a NUL in it: PostgreSQL's text column refused it, failing the file.
    lines = session_lines(2, SessionBuilder(session_id="ffffffff-0000-4000-8000-000000000001"))
    odd = json.loads(lines[0])
    odd.update(type="progress\x00odd", uuid="odd-record-1")
    path = tmp_path / "odd.jsonl"
    write_lines(path, [*lines, json.dumps(odd)])
    report = ingest.import_file(project, path)
    assert report.status == "imported"
    assert Message.objects.count() == len(lines) + 1
    stored = Message.objects.get(uuid="odd-record-1")
    assert stored.record_type == "progress\ufffdodd" and '"progress\\u0000odd"' in stored.raw


def test_a_nul_the_raw_line_did_not_show_is_not_stored_in_the_blocks(project, tmp_path):
    # A format that builds its record from a database row (opencode Go, found by the fuzzing): the
    # raw line holds no "\u0000", the blocks a NUL. PostgreSQL's JSON column refused the row.
    from contextviewer.core.records import Block, MessageRecord
    from contextviewer.ingest import prepare
    from contextviewer.ingest.keys import stored_keys

    record = MessageRecord(line_no=1, offset=0, role="user", record_type="user", raw='{"row": 1}',
                           blocks=[Block(kind="text", text="before\x00after")], model="model\x00x")
    [prepared] = prepare.prepare_batch([record])
    stored = stored_keys(prepared)
    assert json.loads(stored.blocks)[0]["text"] == "before\ufffdafter"
    assert stored.model == "model\ufffdx" and "\x00" not in stored.search_text
