"""Records are not lost without a word (issue 40, item 3): each record an import does not keep is
in the import's errors, with its place and its reason.

Message arrays (OpenAI chat, LangChain): 25 elements sharing one id once kept 2 of them and said
nothing; now the first is kept and each of the others is said ("element 7: its id 'same' is the id
of element 2, so it was not kept").

LangGraph: two stores whose threads share an id were merged into one conversation; each store's
thread is its own conversation now, and a store imported again (or grown) updates its own.

A message id another file's record has (the same session written in two places): the second
file's record was dropped silently; it is said now with both places, and a file read again (or
the same line in another file) says nothing.
"""

from __future__ import annotations

import json

import pytest

from contextviewer.conversations.models import Conversation, Message, Source
from contextviewer.ingest import files as ingest
from tests.sessions import SESSION, session_lines, write_lines

pytestmark = pytest.mark.django_db


def test_elements_sharing_one_id_are_each_kept_or_said_with_their_place(project, tmp_path):
    items = [{"type": "system", "data": {"content": "Be helpful.", "type": "system", "id": None}}]
    items += [{"type": "human" if n % 2 else "ai", "data": {"content": f"message {n}", "type": "human" if n % 2 else "ai",
                                                           "id": "same"}} for n in range(1, 25)]
    path = tmp_path / "lc.json"
    path.write_text(json.dumps(items))

    report = ingest.import_path(project, path)

    kept = Message.objects.filter(conversation__project=project).count()
    not_kept = [e for e in report.errors if "so it was not kept" in e["reason"]]
    assert kept + len(not_kept) == 25  # every element: stored, or said
    assert [e["line"] for e in not_kept] == list(range(3, 26))
    assert not_kept[0]["reason"] == "element 3: its id 'same' is the id of element 2, so it was not kept"
    # The file's page lists them too (Source.errors).
    source = Source.objects.get(project=project)
    assert any(e["reason"] == not_kept[-1]["reason"] for e in source.errors)


# -- LangGraph: a thread id names a thread of its store only


@pytest.fixture
def lg():
    return pytest.importorskip("tests.langgraph_db")


def _added(report) -> int:
    return sum(f.added_messages for f in report.files)


def _threads(project):
    return {c.external_id: c for c in Conversation.objects.filter(project=project, agent="langgraph", parent=None)}


def test_two_langgraph_stores_with_one_thread_id_are_two_conversations_and_each_is_updated_on_reimport(
        project, tmp_path, lg):
    first = lg.build(tmp_path / "app-one" / "checkpoints.sqlite", threads=("gamma",))
    second = lg.build(tmp_path / "app-two" / "checkpoints.sqlite", threads=("gamma",))
    lg.add_turn(second, "gamma", "And the other app?")  # a different history under the same thread id

    ingest.import_path(project, first)
    alone = Message.objects.filter(conversation__project=project).count()
    assert list(_threads(project)) == ["gamma"]  # one store: the thread id, as before
    ingest.import_path(project, second)

    threads = _threads(project)
    assert len(threads) == 2  # merged into one before
    other = threads[f"gamma@{second.resolve()}"]
    assert threads["gamma"].messages.count() == alone
    assert other.messages.count() == alone + 2
    assert other.messages.filter(blocks__icontains="And the other app?").exists()

    # Importing each store again updates its own conversation: nothing new, nothing duplicated...
    for store in (first, second):
        assert _added(ingest.import_path(project, store)) == 0
    # ...and a store that grew adds its new messages to its own conversation only.
    lg.add_turn(first, "gamma", "One more for the first app")
    assert _added(ingest.import_path(project, first)) == 2
    threads = _threads(project)
    assert len(threads) == 2
    assert threads["gamma"].messages.count() == alone + 2
    assert threads["gamma"].messages.filter(blocks__icontains="One more for the first app").exists()
    assert threads[f"gamma@{second.resolve()}"].messages.count() == alone + 2


def test_the_same_langgraph_store_imported_through_its_folder_and_as_a_file_is_one_conversation(project, tmp_path, lg):
    store = lg.build(tmp_path / "agent" / "checkpoints.sqlite", threads=("gamma",))
    ingest.import_path(project, store.parent)
    lg.add_turn(store, "gamma")
    ingest.import_path(project, store)
    assert list(_threads(project)) == ["gamma"]


# -- a message id that another file's record has


def _line(line: str, **changes) -> str:
    obj = json.loads(line)
    for key, value in changes.items():
        if key == "text":
            obj["message"]["content"] = value
        else:
            obj[key] = value
    return json.dumps(obj)


def test_a_record_whose_uuid_another_files_record_has_is_said_with_both_places(project, tmp_path):
    first = tmp_path / "laptop" / f"{SESSION}.jsonl"
    second = tmp_path / "backup" / f"{SESSION}.jsonl"  # the same session, partly written again elsewhere
    first.parent.mkdir()
    second.parent.mkdir()
    lines = session_lines(2)
    write_lines(first, lines)
    clash = json.loads(lines[5])["uuid"]
    write_lines(second, [
        lines[0], lines[1],  # the same lines again: not a loss, nothing said
        _line(lines[5], text="A different prompt under the uuid of the first file's line 6"),
        _line(lines[0], uuid="fresh-uuid-of-the-second-file", parentUuid=None, text="A prompt only here"),
    ])

    ingest.import_path(project, first)
    report = ingest.import_path(project, second)

    (said,) = report.errors  # the clashing record, once
    assert said["line"] == 3
    assert said["reason"] == f"its uuid {clash!r} is already the uuid of {first.resolve()}:6: not stored again"
    assert Message.objects.filter(conversation__project=project).count() == len(lines) + 1
    assert Message.objects.filter(blocks__icontains="A prompt only here").exists()
    second_source = Source.objects.get(project=project, path=str(second.resolve()))
    assert [e["reason"] for e in second_source.errors] == [said["reason"]]


def test_a_file_read_again_says_nothing_of_the_records_it_stored(project, tmp_path):
    path = tmp_path / f"{SESSION}.jsonl"
    lines = session_lines(3)
    write_lines(path, lines)
    ingest.import_path(project, path)
    # Rewritten (its first line changed): read again from its start, every uuid is stored already.
    write_lines(path, [_line(lines[0], text="The first prompt, edited"), *lines[1:]])
    report = ingest.import_path(project, path)
    assert report.errors == []
    assert Source.objects.get(project=project).errors == []
    assert Message.objects.filter(conversation__project=project).count() == len(lines)
