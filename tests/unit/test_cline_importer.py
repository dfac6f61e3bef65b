"""Cline / Roo Code importer on task folders from tests/cline_folders.py (built from the
extensions' own types; no openly licensed real task folder exists). The expected figures are what
the generator wrote (each ``api_req_started``'s token figures, the history position of the
assistant message each request produced), not what the importer returns."""

import json
import shutil

import pytest

from contextviewer.core.records import BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.cline import parser as cline
from tests.cline_folders import make_task
from tests.importers import of, parse_path


def _parsed(folder):
    records = parse_path(cline.parse, folder)
    messages = of(records, MessageRecord)
    return records, messages, {m.uuid: m for m in messages}


@pytest.mark.parametrize("variant", ["cline", "roo"])
def test_one_call_per_api_request_on_the_message_it_wrote(tmp_path, variant):
    written = make_task(tmp_path, variant, steps=5)
    records, messages, by_uuid = _parsed(written.folder)
    assert not of(records, BadLine)
    assert len(messages) == len(written.history)
    usage = of(records, UsageRecord)
    assert len(usage) == len(written.requests) == 6
    for request, call in zip(written.requests, usage, strict=True):
        message = by_uuid[call.message_uuid]
        assert message.role == "assistant" and message.line_no - 1 == request["produced"]
        assert (call.input_uncached, call.output, call.cache_read, call.cache_write) == (
            request["tokensIn"], request["tokensOut"], request["cacheReads"], request["cacheWrites"])
        assert call.model == written.model
    sums = written.sums
    assert sum(u.context_size for u in usage) == sums["tokensIn"] + sums["cacheReads"] + sums["cacheWrites"]
    assert sum(u.output for u in usage) == sums["tokensOut"]
    assert abs(sum(m.flags.get("cost", 0) for m in messages) - sum(r["cost"] for r in written.requests)) < 1e-9
    # Tool uses paired with their results; the completion call is the one left open.
    calls = [b for m in messages for b in m.blocks if b.kind == "tool_call"]
    results = [b for m in messages for b in m.blocks if b.kind == "tool_result"]
    assert len(calls) == written.blocks("tool_use") and len(results) == written.blocks("tool_result")
    assert {b.tool_id for b in calls} - {b.tool_id for b in results} == {calls[-1].tool_id}
    assert calls[-1].tool_name == "attempt_completion"
    # A user message made only of tool results is a tool message; one with the environment beside stays a user's.
    assert [m.role for m in messages][:4] == ["user", "assistant", "tool", "assistant"]
    assert messages[4].role == "user" and messages[4].blocks[0].kind == "tool_result"
    session = records[-1]
    assert isinstance(session, SessionInfo)
    assert session.external_id == written.folder.name and session.title == "Fix the failing test in src/utils.py"
    assert session.models == [written.model]


def test_the_folder_and_each_of_its_files_are_claimed_as_the_task(tmp_path):
    written = make_task(tmp_path / "tasks", "cline")
    make_task(tmp_path / "tasks", "roo")
    for path in (written.folder, *(written.folder / n for n in cline.TASK_FILES)):
        assert formats.claim(path).name == "cline", path
    # Pointing at the history file imports the folder, not a plain message array.
    found = formats.discover(written.folder / "api_conversation_history.json")
    assert [(s.format, s.main) for s in found.sessions] == [("cline", written.folder)]
    found = formats.discover(tmp_path)
    assert sorted(s.main.name for s in found.sessions if s.format == "cline") == sorted(
        p.name for p in (tmp_path / "tasks").iterdir())
    # Without ui_messages.json beside it, the history is still Cline's (read alone, issue 36), not
    # an ordinary message array.
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(written.folder / "api_conversation_history.json", lone)
    assert formats.claim(lone / "api_conversation_history.json").name == "cline"


@pytest.mark.parametrize("mode", [True, "destructive"])
def test_roo_condense_is_a_fold_and_every_request_is_kept(tmp_path, mode):
    written = make_task(tmp_path, "roo", steps=5, condense=mode)
    records, messages, by_uuid = _parsed(written.folder)
    assert not of(records, BadLine)
    folds = of(records, FoldRecord)
    assert len(folds) == written.summaries == 1
    fold = folds[0]
    assert (fold.tokens_before, fold.tokens_after) == (written.condense["prevContextTokens"], written.condense["newContextTokens"])
    assert fold.summary_text == written.condense["summary"] and fold.metadata["cost"] == written.condense["cost"]
    summary = by_uuid[fold.summary_uuid]
    boundary = by_uuid[fold.boundary_uuid]
    assert summary.is_compact_summary and boundary.subtype == "compact_boundary"
    assert messages.index(boundary) + 1 == messages.index(summary)
    # Non-destructive: the condensed messages are still in the log, before the boundary, tagged.
    tagged = sum(1 for m in written.history if "condenseParent" in m)
    assert sum(1 for m in messages if "condenseParent" in m.flags) == tagged
    assert all(messages.index(m) < messages.index(boundary) for m in messages if "condenseParent" in m.flags)
    usage = of(records, UsageRecord)
    assert len(usage) == len(written.requests)  # every request counted, also those whose message went
    dropped = [r for r in written.requests if r["produced"] is None]
    assert len(dropped) == (2 if mode == "destructive" else 0)
    for request, call in zip(written.requests, usage, strict=True):
        message = by_uuid[call.message_uuid]
        if request["produced"] is not None:
            assert message.line_no - 1 == request["produced"]
        else:  # kept on the next message a request wrote
            assert message.role == "assistant" and message.flags["unmatched_requests"] == 2
    assert summary.uuid not in {u.message_uuid for u in usage}  # the condense is not an api request


def test_cline_truncation_is_a_fold_that_keeps_the_messages_outside_the_deleted_range(tmp_path):
    written = make_task(tmp_path, "cline", steps=5, truncate_at=3)
    records, messages, by_uuid = _parsed(written.folder)
    assert not of(records, BadLine)
    (fold,) = of(records, FoldRecord)
    start, end = written.truncation["range"]
    request = written.requests[written.truncation["request"]]
    boundary = by_uuid[fold.boundary_uuid]
    assert boundary.role == "system" and boundary.subtype == "compact_boundary" and fold.summary_uuid is None
    after = messages[messages.index(boundary) + 1]
    assert after.line_no - 1 == request["produced"]  # right before the message the truncated request wrote
    kept = sorted(by_uuid[u].line_no - 1 for u in fold.preserved_uuids)
    assert kept == [i for i in range(request["produced"]) if not start <= i <= end]
    previous = written.requests[written.truncation["request"] - 1]
    assert fold.tokens_before == previous["tokensIn"] + previous["cacheReads"] + previous["cacheWrites"]
    assert fold.tokens_after == request["tokensIn"] + request["cacheReads"] + request["cacheWrites"]
    assert len(of(records, UsageRecord)) == len(written.requests)  # the marker takes no call


def test_roo_openai_protocol_counts_cached_tokens_inside_tokens_in(tmp_path):
    written = make_task(tmp_path, "roo", protocol="openai")
    usage = of(parse_path(cline.parse, written.folder), UsageRecord)
    assert [u.input_uncached for u in usage] == [r["uncached"] for r in written.requests]
    assert [u.context_size for u in usage] == [r["tokensIn"] for r in written.requests]


def test_broken_files_are_said_and_lose_nothing_else(tmp_path):
    written = make_task(tmp_path, "cline")
    (written.folder / "ui_messages.json").write_text("[{\"ts\": 1,")
    records, messages, _ = _parsed(written.folder)
    assert any(isinstance(r, BadLine) and "ui_messages.json" in r.reason for r in records)
    assert len(messages) == len(written.history) and not of(records, UsageRecord)
    # A request whose text is not JSON is said, the others are kept.
    written = make_task(tmp_path / "b", "cline")
    ui = json.loads((written.folder / "ui_messages.json").read_text())
    first = next(m for m in ui if m.get("say") == "api_req_started")
    first["text"] = "{not json"
    (written.folder / "ui_messages.json").write_text(json.dumps(ui))
    records = parse_path(cline.parse, written.folder)
    assert any(isinstance(r, BadLine) and "api_req_started" in r.reason for r in records)
    assert len(of(records, UsageRecord)) == len(written.requests) - 1
    # The history missing, or not an array.
    (written.folder / "api_conversation_history.json").write_text("{\"a\": 1}")
    records = parse_path(cline.parse, written.folder)
    assert any(isinstance(r, BadLine) and "not a message array" in r.reason for r in records)
    assert isinstance(records[-1], SessionInfo)
    (written.folder / "api_conversation_history.json").unlink()
    records = parse_path(cline.parse, written.folder)
    assert any(isinstance(r, BadLine) and "missing" in r.reason for r in records)
    assert isinstance(records[-1], SessionInfo)


@pytest.fixture
def project(db):
    from contextviewer.accounts.services import get_or_create_project

    return get_or_create_project("Cline project")


@pytest.mark.django_db
def test_an_import_of_the_history_file_stores_the_task_once(project, tmp_path):
    from contextviewer.conversations.models import Conversation, ModelCall
    from contextviewer.ingest import files as ingest

    written = make_task(tmp_path / "tasks", "roo", condense=True)
    report = ingest.import_path(project, written.folder / "api_conversation_history.json")
    assert not report.refused and not report.errors
    assert {f.agent for f in report.files} == {"cline"}
    conv = Conversation.objects.get(project=project, external_id=written.folder.name)
    assert conv.fold_count == 1
    assert ModelCall.objects.filter(conversation=conv).count() == len(written.requests)
    # The folder read again (here through the folder of tasks) stores nothing twice.
    again = ingest.import_path(project, tmp_path / "tasks")
    assert sum(f.added_messages for f in again.files) == 0
    assert ModelCall.objects.filter(conversation=conv).count() == len(written.requests)
    assert Conversation.objects.filter(project=project, agent="cline").count() == 1
