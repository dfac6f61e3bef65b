"""Formats that rewrite records in place (Gemini CLI's chat file, opencode's message and part files):
a message already stored whose content changed when its file is read again is updated where it
is (same row), with its search entry, tokens, model call and the conversation's figures; a message
that did not change is not touched. The result is what a first import of the final file stores.

Synthetic sessions (run without ../shared), on SQLite (FTS5) and PostgreSQL (tsvector) alike."""

import json
import re
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextviewer.accounts.services import get_or_create_project
from contextviewer.ingest import files as ingest
from contextviewer.conversations import search
from contextviewer.conversations.models import Conversation, Message, ModelCall

pytestmark = pytest.mark.django_db

NEW_WORD = "quetzalcoatl"  # only in the text written after the first import
SECRET = "sk-ant-api03-" + "Q9w8E7r6T5" * 8
MESSAGE_FIELDS = [
    "pk", "position", "turn", "uuid", "parent_uuid", "role", "record_type", "subtype", "blocks", "raw", "timestamp",
    "is_meta", "is_compact_summary", "flags", "api_message_id", "tokens", "token_total", "source_id", "line_no",
]
CONVERSATION_FIGURES = [
    "external_id", "title", "model_names", "started_at", "ended_at", "message_count", "model_call_count",
    "tool_call_count", "fold_count", "peak_context", "measured_calls", "spend_tokens", "window",
]
CALL_FIELDS = [
    "position", "api_message_id", "request_id", "model", "input_uncached", "cache_write", "cache_read", "output",
    "estimated_context", "timestamp",
]


def _rows(conv: Conversation) -> dict[str, dict]:
    return {m["uuid"]: m for m in conv.messages.order_by("position").values(*MESSAGE_FIELDS)}


def _text(row: dict) -> str:
    return "\n".join(b.get("text") or "" for b in row["blocks"])


def _same_as_a_first_import(conv: Conversation, path: Path) -> None:
    """What the re-imports stored is what one import of the file as it is now stores."""
    fresh_project = get_or_create_project("Fresh")
    report = ingest.import_path(fresh_project, path)
    assert not report.errors, report.errors
    fresh = Conversation.objects.get(project=fresh_project, agent=conv.agent, external_id=conv.external_id)
    conv.refresh_from_db()
    for name in CONVERSATION_FIGURES:
        assert getattr(conv, name) == getattr(fresh, name), name
    skip = {"pk", "source_id"}
    mine = [{k: v for k, v in row.items() if k not in skip} for row in _rows(conv).values()]
    theirs = [{k: v for k, v in row.items() if k not in skip} for row in _rows(fresh).values()]
    assert mine == theirs
    calls = list(conv.model_calls.order_by("position").values(*CALL_FIELDS))
    assert calls == list(fresh.model_calls.order_by("position").values(*CALL_FIELDS))
    # the calls point at the messages of their own conversation
    assert all(c.message_id and c.message.conversation_id == conv.pk for c in conv.model_calls.all())


def _page_and_turn_show(client, user, conv: Conversation, row: dict, word: str) -> None:
    client.force_login(user)
    page = client.get(reverse("conversation", args=[conv.pk]))
    assert page.status_code == 200
    turn = client.get(reverse("turn", args=[conv.pk, row["turn"]]))
    assert turn.status_code == 200
    assert word in turn.content.decode()
    hits = search.search(user, word)
    assert [h.message_id for h in hits] == [row["pk"]]
    in_conversation = search.in_conversation(user, conv.pk, word)
    assert in_conversation.count == 1


def _message_updates(queries, model=Message) -> int:
    """Rows the UPDATE statements on a model's table wrote (an executemany is logged "N times: ...")."""
    table = model._meta.db_table
    rows = 0
    for query in queries:
        times, sql = re.match(r"(?:(\d+) times: )?(.*)", query["sql"].lstrip(), re.S).groups()
        if sql.upper().startswith(("UPDATE", "DELETE")) and f'"{table}"' in sql:
            rows += int(times or 1)
    return rows


# -- Gemini CLI: the legacy chat document, rewritten whole as the session goes ------------------------


def _gemini_doc(messages: list[dict], updated: str) -> dict:
    return {"sessionId": "gem-rewrite", "projectHash": "h", "startTime": "2026-05-01T10:00:00Z",
            "lastUpdated": updated, "messages": messages}


GEMINI_BEFORE = [
    {"id": "u1", "timestamp": "2026-05-01T10:00:01Z", "type": "user", "content": [{"text": "find the flaky test"}]},
    {"id": "g1", "timestamp": "2026-05-01T10:00:02Z", "type": "gemini", "content": "I will grep for it.",
     "model": "gemini-3-flash", "tokens": {"input": 100, "output": 5, "cached": 40, "thoughts": 2, "total": 107},
     "toolCalls": [{"id": "t1", "name": "grep", "args": {"pattern": "flaky"}, "status": "success",
                    "result": [{"functionResponse": {"id": "t1", "name": "grep", "response": {"output": "tests/test_a.py"}}}]}]},
    {"id": "g2", "timestamp": "2026-05-01T10:00:05Z", "type": "gemini", "content": "Reading tests/test_a.py",
     "model": "gemini-3-flash",
     "toolCalls": [{"id": "t2", "name": "read_file", "args": {"path": "tests/test_a.py"}, "status": "executing"}]},
]


def _gemini_after() -> list[dict]:
    messages = json.loads(json.dumps(GEMINI_BEFORE))
    g2 = messages[2]
    g2["content"] = f"Reading tests/test_a.py: the {NEW_WORD} fixture leaks state (its key {SECRET})."
    g2["tokens"] = {"input": 400, "output": 60, "cached": 100, "thoughts": 10, "total": 470}
    g2["toolCalls"][0].update(
        status="success",
        result=[{"functionResponse": {"id": "t2", "name": "read_file", "response": {"output": "def test_a(): assert ok"}}}],
    )
    return messages


def test_a_rewritten_gemini_chat_updates_the_message_that_changed(project, user, client, tmp_path):
    chats = tmp_path / "chats"
    chats.mkdir()
    path = chats / "session-2026-05-01T10-00-gemrewr1.json"
    path.write_text(json.dumps(_gemini_doc(GEMINI_BEFORE, "2026-05-01T10:00:05Z"), indent=2))
    first = ingest.import_path(project, tmp_path)
    assert not first.errors, first.errors
    conv = Conversation.objects.get(project=project, agent="gemini")
    before = _rows(conv)
    assert list(before) == ["u1", "g1", "g1/tool/t1", "g2"]
    assert (conv.message_count, conv.tool_call_count, conv.model_call_count) == (4, 2, 1)
    assert search.search(user, NEW_WORD) == []

    # Gemini CLI writes the file again: g2's text grew, its tool call got its result, its tokens came.
    path.write_text(json.dumps(_gemini_doc(_gemini_after(), "2026-05-01T10:00:09Z"), indent=2))
    with CaptureQueriesContext(connection) as queries:
        again = ingest.import_path(project, tmp_path)
    assert not again.errors, again.errors

    after = _rows(conv)
    assert list(after) == ["u1", "g1", "g1/tool/t1", "g2", "g2/tool/t2"]
    for uuid in ("u1", "g1", "g1/tool/t1"):
        assert after[uuid] == before[uuid], uuid  # same row, untouched
    g2 = after["g2"]
    assert g2["pk"] == before["g2"]["pk"] and g2["position"] == before["g2"]["position"]
    assert NEW_WORD in _text(g2) and NEW_WORD in g2["raw"]
    # secrets stay masked in the updated copy, and out of the search index
    assert SECRET not in g2["raw"] and SECRET not in json.dumps(g2["blocks"])
    assert g2["flags"].get("secrets")
    assert search.search(user, SECRET[:20]) == []
    assert g2["token_total"] > before["g2"]["token_total"] and g2["api_message_id"] == "g2"
    assert "def test_a(): assert ok" in _text(after["g2/tool/t2"])
    assert [(f.status, f.added_messages, f.updated_messages) for f in again.files] == [("imported", 1, 1)]
    assert _message_updates(queries.captured_queries) == 1  # the one changed row, nothing else

    conv.refresh_from_db()
    assert (conv.message_count, conv.tool_call_count, conv.model_call_count) == (5, 2, 2)
    call = conv.model_calls.get(api_message_id="g2")
    assert (call.input_uncached, call.cache_read, call.output, call.message_id) == (300, 100, 70, g2["pk"])
    _page_and_turn_show(client, user, conv, g2, NEW_WORD)
    # the words the old text had are still found, once (the old entry was replaced, not added to)
    assert [h.message_id for h in search.search(user, "Reading")] == [g2["pk"]]
    _same_as_a_first_import(conv, tmp_path)


def test_a_gemini_chat_written_again_with_no_message_changed_touches_no_message(project, tmp_path):
    chats = tmp_path / "chats"
    chats.mkdir()
    path = chats / "session-2026-05-01T10-00-gemrewr2.json"
    path.write_text(json.dumps(_gemini_doc(GEMINI_BEFORE, "2026-05-01T10:00:05Z")))
    ingest.import_path(project, tmp_path)
    conv = Conversation.objects.get(project=project, agent="gemini")
    before = _rows(conv)
    path.write_text(json.dumps(_gemini_doc(GEMINI_BEFORE, "2026-05-01T10:01:00Z"), indent=1))  # only lastUpdated
    with CaptureQueriesContext(connection) as queries:
        again = ingest.import_path(project, tmp_path)
    assert [(f.status, f.added_messages, f.updated_messages) for f in again.files] == [("imported", 0, 0)]
    assert _message_updates(queries.captured_queries) == 0
    assert _message_updates(queries.captured_queries, ModelCall) == 0
    assert _rows(conv) == before


def test_a_gemini_jsonl_message_appended_again_updates_the_stored_one(project, user, client, tmp_path):
    """The JSONL chat re-appends a message with the same id when it changes: last write wins."""
    chats = tmp_path / "chats"
    chats.mkdir()
    path = chats / "session-2026-05-01T10-00-gemrewr3.jsonl"
    meta = {"sessionId": "gem-rewrite-lines", "projectHash": "h", "startTime": "2026-05-01T10:00:00Z"}
    path.write_text("".join(json.dumps(o) + "\n" for o in [meta, *GEMINI_BEFORE]))
    ingest.import_path(project, tmp_path)
    conv = Conversation.objects.get(project=project, agent="gemini")
    before = _rows(conv)
    with path.open("a") as fh:
        fh.write(json.dumps(_gemini_after()[2]) + "\n")
    again = ingest.import_path(project, tmp_path)
    after = _rows(conv)
    assert [after[u] for u in ("u1", "g1", "g1/tool/t1")] == [before[u] for u in ("u1", "g1", "g1/tool/t1")]
    assert after["g2"]["pk"] == before["g2"]["pk"] and NEW_WORD in _text(after["g2"])
    assert after["g2"]["line_no"] == 5  # the line it was read from now
    assert [(f.added_messages, f.updated_messages) for f in again.files] == [(1, 1)]
    _page_and_turn_show(client, user, conv, after["g2"], NEW_WORD)
    _same_as_a_first_import(conv, tmp_path)


# -- opencode: message and part files updated in place --------------------------------------------

T0 = 1_770_000_000_000
SESSION = {"id": "ses_rw1", "version": "1.1.0", "projectID": "prj", "directory": "/work/app", "title": "Flaky test",
           "time": {"created": T0, "updated": T0 + 5_000}}
USER = {"id": "msg_rw1", "role": "user", "time": {"created": T0 + 1_000}}
USER_PARTS = [{"id": "prt_rw1", "type": "text", "text": "find the flaky test"}]
ASSISTANT = {"id": "msg_rw2", "role": "assistant", "parentID": "msg_rw1", "time": {"created": T0 + 2_000},
             "modelID": "claude-sonnet-4", "providerID": "anthropic",
             "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}}
ASSISTANT_PARTS = [
    {"id": "prt_rw2", "type": "step-start"},
    {"id": "prt_rw3", "type": "text", "text": "Reading tests/test_a.py"},
    {"id": "prt_rw4", "type": "tool", "callID": "call_read", "tool": "read",
     "state": {"status": "running", "input": {"filePath": "tests/test_a.py"}, "time": {"start": T0 + 3_000}}},
]
TOKENS = {"input": 800, "output": 50, "reasoning": 10, "cache": {"read": 9_000, "write": 200}}


def _write(root: Path, kind: str, folder: str, obj: dict, **extra) -> None:
    path = root / kind / folder / f"{obj['id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**obj, **extra}))


def _opencode_store(root: Path) -> Path:
    _write(root, "session", "prj", SESSION)
    for info, parts in ((USER, USER_PARTS), (ASSISTANT, ASSISTANT_PARTS)):
        _write(root, "message", SESSION["id"], info, sessionID=SESSION["id"])
        for part in parts:
            _write(root, "part", info["id"], part, sessionID=SESSION["id"], messageID=info["id"])
    return root


def _opencode_step_finishes(root: Path) -> None:
    """What opencode writes when the step ends: the text part grown, the tool part completed, a
    step-finish part, the message's completion time and tokens, the session's update time."""
    ids = {"sessionID": SESSION["id"], "messageID": ASSISTANT["id"]}
    _write(root, "part", ASSISTANT["id"], {**ASSISTANT_PARTS[1], "text": f"Reading tests/test_a.py: the {NEW_WORD} fixture leaks state."}, **ids)
    state = {"status": "completed", "input": {"filePath": "tests/test_a.py"}, "output": "def test_a(): assert ok",
             "time": {"start": T0 + 3_000, "end": T0 + 4_000}}
    _write(root, "part", ASSISTANT["id"], {**ASSISTANT_PARTS[2], "state": state}, **ids)
    _write(root, "part", ASSISTANT["id"], {"id": "prt_rw5", "type": "step-finish", "reason": "stop", "tokens": TOKENS}, **ids)
    _write(root, "message", SESSION["id"],
           {**ASSISTANT, "time": {"created": T0 + 2_000, "completed": T0 + 4_500}, "tokens": TOKENS, "finish": "stop"},
           sessionID=SESSION["id"])
    _write(root, "session", "prj", {**SESSION, "time": {"created": T0, "updated": T0 + 9_000}})


def test_opencode_files_updated_in_place_update_the_stored_messages(project, user, client, tmp_path):
    store = _opencode_store(tmp_path / "storage")
    first = ingest.import_path(project, store)
    assert not first.errors, first.errors
    conv = Conversation.objects.get(project=project, agent="opencode", external_id=SESSION["id"])
    before = _rows(conv)
    assert list(before) == ["msg_rw1", "msg_rw2"]
    assert (conv.message_count, conv.tool_call_count, conv.model_call_count) == (2, 1, 0)

    _opencode_step_finishes(store)
    again = ingest.import_path(project, store)
    assert not again.errors, again.errors

    after = _rows(conv)
    assert list(after) == ["msg_rw1", "msg_rw2", "prt_rw4:result"]
    assert after["msg_rw1"] == before["msg_rw1"]  # same row, untouched
    reply = after["msg_rw2"]
    assert reply["pk"] == before["msg_rw2"]["pk"]
    assert NEW_WORD in _text(reply) and reply["api_message_id"] == "msg_rw2:step1"
    assert "def test_a(): assert ok" in _text(after["prt_rw4:result"])
    assert [(f.status, f.added_messages, f.updated_messages) for f in again.files] == [("imported", 1, 1)]

    conv.refresh_from_db()
    assert (conv.message_count, conv.tool_call_count, conv.model_call_count) == (3, 1, 1)
    assert conv.spend_tokens == 800 + 200 + 9_000 + 60
    assert conv.ended_at.timestamp() * 1000 == T0 + 4_000  # the tool result, the latest message
    _page_and_turn_show(client, user, conv, reply, NEW_WORD)
    _same_as_a_first_import(conv, store)


def test_an_opencode_store_changed_elsewhere_touches_no_message_nor_call(project, tmp_path):
    store = _opencode_store(tmp_path / "storage")
    _opencode_step_finishes(store)
    ingest.import_path(project, store)
    conv = Conversation.objects.get(project=project, agent="opencode", external_id=SESSION["id"])
    before = (_rows(conv), list(conv.model_calls.values()))
    _write(store, "session", "prj", {**SESSION, "time": {"created": T0, "updated": T0 + 99_000}})  # only the session
    with CaptureQueriesContext(connection) as queries:
        again = ingest.import_path(project, store)
    assert [(f.status, f.added_messages, f.updated_messages) for f in again.files] == [("imported", 0, 0)]
    assert _message_updates(queries.captured_queries) == 0
    assert _message_updates(queries.captured_queries, ModelCall) == 0
    assert (_rows(conv), list(conv.model_calls.values())) == before


def test_a_message_usage_that_moves_to_its_step_is_not_counted_twice(project, tmp_path):
    """opencode may write the message's tokens before its step-finish part: the call first read from
    the message is replaced by the step's, not added to."""
    store = _opencode_store(tmp_path / "storage")
    _write(store, "message", SESSION["id"], {**ASSISTANT, "tokens": TOKENS}, sessionID=SESSION["id"])
    ingest.import_path(project, store)
    conv = Conversation.objects.get(project=project, agent="opencode", external_id=SESSION["id"])
    assert list(conv.model_calls.values_list("api_message_id", flat=True)) == ["msg_rw2"]
    _opencode_step_finishes(store)
    ingest.import_path(project, store)
    conv.refresh_from_db()
    assert list(conv.model_calls.values_list("api_message_id", flat=True)) == ["msg_rw2:step1"]
    assert conv.model_call_count == 1 and conv.spend_tokens == 800 + 200 + 9_000 + 60
    _same_as_a_first_import(conv, store)


def test_an_append_only_format_keeps_the_first_stored_copy(project, tmp_path):
    """Only formats that rewrite records update in place: a Claude Code line whose uuid is already
    stored (a duplicated line) changes nothing."""
    from tests.sessions import session_lines, write_lines

    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(2))
    ingest.import_path(project, path)
    conv = Conversation.objects.get(project=project, agent="claude-code")
    before = _rows(conv)
    last = json.loads(path.read_text().splitlines()[-1])
    last["message"]["content"] = [{"type": "text", "text": NEW_WORD}]
    with path.open("a") as fh:
        fh.write(json.dumps(last) + "\n")
    report = ingest.import_path(project, path)
    assert [(f.added_messages, f.updated_messages) for f in report.files] == [(0, 0)]
    assert _rows(conv) == before



def test_the_page_figures_follow_a_message_changed_in_place(project, user, client, tmp_path):
    """A rewrite that adds no message and no call (the text of a step grows) still changes the
    version of the figures the page keeps (page_cache): the page shows what one computed afresh does."""
    from contextviewer.conversations import page_cache, segments

    def page() -> str:
        text = client.get(reverse("conversation", args=[conv.pk])).content.decode()
        return re.sub(r'(csrfmiddlewaretoken" value="|X-CSRFToken": "|idempotency_key" value=")[^"]*', r"\1", text)

    page_cache.clear()
    store = _opencode_store(tmp_path / "storage")
    _opencode_step_finishes(store)
    ingest.import_path(project, store)
    conv = Conversation.objects.get(project=project, agent="opencode", external_id=SESSION["id"])
    client.force_login(user)
    first = page()
    version = page_cache.version(conv, segments.load(conv))

    ids = {"sessionID": SESSION["id"], "messageID": ASSISTANT["id"]}
    longer = "Reading tests/test_a.py: " + " ".join(f"{NEW_WORD}{i}" for i in range(3_000))
    _write(store, "part", ASSISTANT["id"], {**ASSISTANT_PARTS[1], "text": longer}, **ids)
    again = ingest.import_path(project, store)
    assert [(f.added_messages, f.updated_messages) for f in again.files] == [(0, 1)]
    conv.refresh_from_db()
    assert page_cache.version(conv, segments.load(conv)) != version
    kept = page()
    assert kept != first
    page_cache.clear()  # computed afresh: the same page
    assert page() == kept


def test_a_fold_whose_summary_was_still_being_written_gets_it(project, tmp_path):
    """opencode's compaction: the summary message is written after its compaction request; a fold
    read before the summary was complete takes it when the store is read again."""
    store = _opencode_store(tmp_path / "storage")
    _opencode_step_finishes(store)
    sid = SESSION["id"]
    request = {"id": "msg_rw3", "role": "user", "time": {"created": T0 + 6_000}}
    _write(store, "message", sid, request, sessionID=sid)
    _write(store, "part", "msg_rw3", {"id": "prt_rw6", "type": "compaction", "auto": True}, sessionID=sid, messageID="msg_rw3")
    summary = {"id": "msg_rw4", "role": "assistant", "summary": True, "time": {"created": T0 + 7_000},
               "modelID": "claude-sonnet-4", "parentID": "msg_rw3"}
    _write(store, "message", sid, summary, sessionID=sid)
    _write(store, "part", "msg_rw4", {"id": "prt_rw7", "type": "text", "text": "Summary: the"}, sessionID=sid, messageID="msg_rw4")
    ingest.import_path(project, store)
    conv = Conversation.objects.get(project=project, agent="opencode", external_id=sid)
    fold = conv.folds.get()
    assert fold.summary_text == "Summary: the"

    done = f"Summary: the {NEW_WORD} fixture leaked state; fixed."
    _write(store, "part", "msg_rw4", {"id": "prt_rw7", "type": "text", "text": done}, sessionID=sid, messageID="msg_rw4")
    ingest.import_path(project, store)
    fold.refresh_from_db()
    assert fold.summary_text == done and fold.summary_message.uuid == "msg_rw4"
    assert NEW_WORD in _text(_rows(conv)["msg_rw4"])
    _same_as_a_first_import(conv, store)
    fresh = Conversation.objects.get(project__name="Fresh", external_id=sid).folds.get()
    assert (fold.position, fold.summary_text, fold.preserved) == (fresh.position, fresh.summary_text, fresh.preserved)
