"""`manage.py watch`: session files imported as an agent writes them, one job per burst of writes."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from contextviewer.ingest import watch
from contextviewer.conversations.models import Conversation, Source
from contextviewer.jobs.models import Job, JobStatus
from contextviewer.importers.claude_code import synthetic
from tests.sessions import SESSION, SessionBuilder
from tests.watcher import WatchProcess
from tests.worker import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "projects" / "-home-dev-project"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def watcher(folder, project):
    w = WatchProcess(folder.parent, project=project.name)
    yield w
    w.stop()


def append(path, lines: list[str], tail: str = "") -> None:
    """A burst of writes, one line per write (as an agent writes), then ``tail`` without newline."""
    with open(path, "a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")
            fh.flush()
        if tail:
            fh.write(tail)


def watch_jobs(project):
    return Job.objects.filter(project=project, kind="import", idempotency_key__startswith="watch:")


def settled(project, count: int) -> bool:
    jobs = watch_jobs(project)
    return jobs.count() >= count and not jobs.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).exists()


def messages_of(session: str) -> int:
    conv = Conversation.objects.filter(external_id=session).first()
    return conv.message_count if conv else -1


def test_a_new_session_file_and_its_appended_lines_are_imported_one_job_per_burst(watcher, folder, project):
    b = SessionBuilder()
    path = folder / f"{SESSION}.jsonl"
    first = b.turn(1)  # a user message, a model call of two lines (text, tool call), a tool result, a reply
    assert len(first) == 5
    append(path, first)
    wait_for(lambda: messages_of(SESSION) == 5, timeout=60, message="the new file to be imported")
    wait_for(lambda: settled(project, 1), timeout=60, message="the import job to finish")
    assert watch_jobs(project).count() == 1
    assert watch_jobs(project).get().status == JobStatus.SUCCEEDED

    second = b.turn(2)
    append(path, second)
    wait_for(lambda: messages_of(SESSION) == 10, timeout=60, message="the appended lines to be imported")
    wait_for(lambda: settled(project, 2), timeout=60, message="the second import job to finish")
    assert watch_jobs(project).count() == 2
    conv = Conversation.objects.get(external_id=SESSION)
    assert conv.model_call_count == 4  # two per turn
    assert conv.tool_call_count == 2
    assert conv.is_live  # its file just grew
    assert Source.objects.get(project=project).error_count == 0


def test_a_partial_last_line_waits_for_the_next_pass(watcher, folder, project):
    b = SessionBuilder()
    path = folder / f"{SESSION}.jsonl"
    lines = b.turn(1)
    half = len(lines[-1]) // 2
    append(path, lines[:-1], tail=lines[-1][:half])  # the agent is still writing the last line
    wait_for(lambda: messages_of(SESSION) == 4, timeout=60, message="the complete lines to be imported")
    wait_for(lambda: settled(project, 1), timeout=60, message="the import job to finish")
    source = Source.objects.get(project=project)
    assert source.bytes_consumed == path.stat().st_size - half  # the half line is left for the next pass
    assert [e["line"] for e in source.errors] == [5]  # said as it is now: line 5 ends mid-line
    assert "incomplete" in source.errors[0]["reason"]

    append(path, [lines[-1][half:]])
    wait_for(lambda: messages_of(SESSION) == 5, timeout=60, message="the completed line to be imported")
    wait_for(lambda: settled(project, 2), timeout=60, message="the second import job to finish")
    source.refresh_from_db()
    assert (source.error_count, source.errors) == (0, [])  # line 5 is whole now: nothing wrong with the file
    assert source.bytes_consumed == path.stat().st_size


def test_a_file_no_format_claims_is_ignored(watcher, folder, project):
    (folder / "notes.txt").write_text("remember to water the plants\n")
    (folder / "config.json").write_text(json.dumps({"theme": "dark"}))
    (folder / "unknown.jsonl").write_text(json.dumps({"event": "tick", "n": 1}) + "\n")
    # A session written after them: once it is in, the watcher has looked at the three others.
    append(folder / f"{SESSION}.jsonl", SessionBuilder().turn(1))
    wait_for(lambda: messages_of(SESSION) == 5, timeout=60, message="the session to be imported")
    wait_for(lambda: settled(project, 1), timeout=60, message="the import job to finish")
    assert watch_jobs(project).count() == 1
    assert list(Source.objects.filter(project=project).values_list("name", flat=True)) == [f"{SESSION}.jsonl"]
    assert not Job.objects.filter(status=JobStatus.FAILED).exists()


def test_a_subagent_file_written_later_joins_its_session(watcher, folder, project, tmp_path):
    scratch = tmp_path / "scratch"
    main = synthetic.write_session(scratch, messages=30, seed=7, subagent=True, compaction=False)
    agent_files = sorted((scratch / main.stem / "subagents").glob("agent-*.jsonl"))
    assert len(agent_files) == 1
    agent_lines = [json.loads(x) for x in agent_files[0].read_text().splitlines() if x.strip()]
    expected = sum(1 for x in agent_lines if x.get("type") in {"user", "assistant", "system"})

    shutil.copy(main, folder / main.name)
    wait_for(lambda: Conversation.objects.filter(external_id=main.stem, parent=None).exists(), timeout=60,
             message="the main file to be imported")
    wait_for(lambda: settled(project, 1), timeout=60, message="the first import job to finish")
    sub = folder / main.stem / "subagents"
    sub.mkdir(parents=True)
    shutil.copy(agent_files[0], sub / agent_files[0].name)
    parent = Conversation.objects.get(external_id=main.stem, parent=None)
    wait_for(lambda: parent.children.filter(message_count=expected).exists(), timeout=60,
             message="the sub-agent file to be imported under its session")
    child = parent.children.get()
    assert child.kind == "subagent"
    assert child.parent_tool_use_id  # linked to the Task call that started it


def test_a_chat_file_rewritten_in_place_updates_the_stored_message(watcher, folder, project):
    """Gemini CLI writes its chat file whole again as the session goes: the message that changed
    (its text grew, its tool call got a result) is updated where it is stored."""
    from tests.integration.ingest.test_import_rewrites import GEMINI_BEFORE, NEW_WORD, _gemini_after, _gemini_doc

    chats = folder / "chats"
    chats.mkdir()
    path = chats / "session-2026-05-01T10-00-gemwatch.json"
    path.write_text(json.dumps(_gemini_doc(GEMINI_BEFORE, "2026-05-01T10:00:05Z")))
    wait_for(lambda: messages_of("gem-rewrite") == 4, timeout=60, message="the chat to be imported")
    wait_for(lambda: settled(project, 1), timeout=60, message="the import job to finish")
    conv = Conversation.objects.get(external_id="gem-rewrite")
    reply = conv.messages.get(uuid="g2")

    path.write_text(json.dumps(_gemini_doc(_gemini_after(), "2026-05-01T10:00:09Z")))
    wait_for(lambda: messages_of("gem-rewrite") == 5, timeout=60, message="the rewritten chat to be imported")
    wait_for(lambda: settled(project, 2), timeout=60, message="the second import job to finish")
    updated = conv.messages.get(uuid="g2")
    assert updated.pk == reply.pk and updated.position == reply.position
    assert NEW_WORD in " ".join(b.get("text") or "" for b in updated.blocks)
    conv.refresh_from_db()
    assert (conv.message_count, conv.tool_call_count, conv.model_call_count) == (5, 2, 2)


def test_folders_come_from_the_command_line_or_the_environment(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert watch.folders_from(f"{a}{os.pathsep}{b}") == [a.resolve(), b.resolve()]
    assert watch.missing([str(a), str(tmp_path / "gone"), "auto"]) == [str(tmp_path / "gone")]
    # auto: every format's default locations that exist (here: Claude Code's under a fake home)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert watch.folders_from("auto") == []
    (tmp_path / ".claude" / "projects").mkdir(parents=True)
    assert (tmp_path / ".claude" / "projects").resolve() in watch.folders_from("auto")


def test_what_a_changed_file_stands_for(tmp_path, monkeypatch):
    """The file a format claims; a SQLite database for its -wal file; the nearest folder a format
    reads as a unit for a file inside it; nothing for what no format reads."""
    from contextviewer.importers import formats
    from contextviewer.importers.claude_code import parser as claude_code

    def folder_sniff(path, head):
        return 0.9 if path.is_dir() and (path / "base_state.json").is_file() else 0.0

    def db_sniff(path, head):
        return 0.9 if path.is_file() and path.suffix == ".db" else 0.0

    def sess_sniff(path, head):
        return 0.9 if path.is_file() and path.suffix == ".sess" else 0.0

    fakes = [
        formats.Format(name="folder-agent", label="Folder agent", storage=formats.FOLDER, sniff=folder_sniff, parse=iter),
        formats.Format(name="db-agent", label="DB agent", storage=formats.DATABASE, sniff=db_sniff, parse=iter),
        formats.Format(name="sess-agent", label="Sess agent", storage=formats.LINES, sniff=sess_sniff, parse=iter,
                       companions=lambda p: [p.with_suffix(".meta.json")]),
    ]
    monkeypatch.setattr(formats, "_REGISTRY", [claude_code.FORMAT, *fakes])
    root = tmp_path / "watched"
    session = root / "conversations" / "abc"
    (session / "events").mkdir(parents=True)
    (session / "base_state.json").write_text("{}")
    (session / "events" / "event-00001.json").write_text("{}")
    (root / "store.db").write_bytes(b"SQLite format 3\x00")
    (root / "store.db-wal").write_bytes(b"wal")
    (root / "notes.txt").write_text("hello\n")
    (root / "key-1.sess").write_text("{}\n")
    (root / "key-1.meta.json").write_text("{}")
    (root / "key-2.meta.json").write_text("{}")  # no session of its own
    cc = root / f"{SESSION}.jsonl"
    cc.write_text("\n".join(SessionBuilder().turn(1)) + "\n")

    w = watch.Watcher([root], project=None)
    assert w._target(cc) == cc
    assert w._target(root / "store.db-wal") == root / "store.db"
    assert w._target(session / "events" / "event-00001.json") == session
    assert w._target(root / "key-1.meta.json") == root / "key-1.sess"
    assert w._target(root / "key-2.meta.json") is None
    assert w._target(root / "notes.txt") is None
