"""Re-import, growth, concurrent imports and a crash in the middle of an import."""

import json
import subprocess
import sys

import pytest

from contextviewer.ingest import files as ingest, imports as services
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation, Message, ModelCall, Source
from contextviewer.jobs.models import Job, JobStatus
from tests.sessions import SessionBuilder, session_lines, write_lines
from tests.worker import ROOT, Worker, purge_broker, wait_for, worker_env


def _message_count(project) -> int:
    return Message.objects.filter(conversation__project=project).count()


@pytest.mark.django_db
def test_reimport_of_the_same_file_adds_nothing(project, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(5))
    first = ingest.import_file(project, path)
    assert first.status == "imported" and first.added_messages == 5 * 5
    before = (_message_count(project), ModelCall.objects.count())
    second = ingest.import_file(project, path)
    assert second.status == "unchanged"
    assert (_message_count(project), ModelCall.objects.count()) == before


@pytest.mark.django_db
def test_a_grown_file_adds_exactly_what_the_new_lines_hold(project, tmp_path):
    builder = SessionBuilder()
    path = tmp_path / "s.jsonl"
    lines = session_lines(3, builder)
    write_lines(path, lines)
    ingest.import_file(project, path)
    conversation = Conversation.objects.get()
    assert conversation.message_count == 15 and conversation.model_call_count == 6

    new_lines = builder.turn(3) + builder.turn(4)  # 2 prompts, 4 model calls, 2 results: 10 lines
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(new_lines) + "\n")
    report = ingest.import_file(project, path)

    assert report.added_messages == len(new_lines)
    conversation.refresh_from_db()
    assert conversation.message_count == 15 + len(new_lines)
    assert conversation.model_call_count == 6 + 4
    assert conversation.tool_call_count == 3 + 2
    positions = list(conversation.messages.values_list("position", flat=True))
    assert positions == list(range(len(positions)))
    # Turns continue across the two imports: one turn per user prompt.
    assert conversation.messages.filter(role="user").values("turn").distinct().count() == 5
    assert set(conversation.messages.values_list("turn", flat=True)) == {0, 1, 2, 3, 4}
    source = Source.objects.get()
    assert source.bytes_consumed == path.stat().st_size


@pytest.mark.django_db
def test_a_truncated_last_line_is_read_again_when_the_file_grows(project, tmp_path):
    builder = SessionBuilder()
    path = tmp_path / "s.jsonl"
    lines = session_lines(2, builder)
    complete = builder.user("the next prompt")
    path.write_text("\n".join(lines) + "\n" + complete[:25], encoding="utf-8")
    report = ingest.import_file(project, path)
    assert report.added_messages == len(lines)
    assert [e["line"] for e in report.errors] == [len(lines) + 1]
    assert "incomplete" in report.errors[0]["reason"]

    path.write_text("\n".join(lines) + "\n" + complete + "\n", encoding="utf-8")
    report = ingest.import_file(project, path)
    assert report.added_messages == 1
    assert Message.objects.filter(raw=complete).exists()


@pytest.mark.django_db(transaction=True)
def test_importing_the_same_file_twice_at_once_creates_no_duplicates(project, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(150))
    env = worker_env()
    cmd = [sys.executable, "manage.py", "import", str(path), "--project", project.name, "--json"]
    procs = [subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err.decode()
        assert json.loads(out)["conversations"][0]["messages"] == 150 * 5
    assert Source.objects.count() == 1
    assert Conversation.objects.count() == 1
    assert _message_count(project) == 150 * 5
    assert ModelCall.objects.count() == 300


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_killed_worker_leaves_the_previous_state_and_the_job_completes_when_run_again(project, tmp_path):
    builder = SessionBuilder()
    path = tmp_path / "big.jsonl"
    small = session_lines(10, builder)
    write_lines(path, small)
    ingest.import_file(project, path)
    assert _message_count(project) == 50

    # Grow it a lot, so that the import takes long enough to be killed in the middle.
    padding = "x" * 4000
    with open(path, "a", encoding="utf-8") as fh:
        for i in range(10, 6010):
            for line in builder.turn(i):
                fh.write(line.replace("Fixed it.", f"Fixed it. {padding}") + "\n")
    purge_broker()
    worker = Worker()
    try:
        job, _ = services.start_import(project, paths=[str(path)])
        wait_for(lambda: jobs.current_progress(Job.objects.get(pk=job.pk))[0] > 0.2, timeout=120,
                 message="the import to be under way")
        worker.kill()
    finally:
        worker.stop()
    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING  # its worker died with it
    assert _message_count(project) == 50  # the previous complete state
    assert Source.objects.get().lines_consumed == 50

    worker = Worker()
    try:
        # Nobody presses "Run again": the new worker takes over the job its dead predecessor held.
        done = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
                        timeout=300, message="the job to end")
    finally:
        worker.stop()
    assert done.status == JobStatus.SUCCEEDED, done.error
    assert done.attempts == 2
    assert _message_count(project) == 6010 * 5
    assert Conversation.objects.get().model_call_count == 6010 * 2


@pytest.mark.django_db
def test_nul_and_lone_surrogates_are_stored_and_the_raw_line_is_kept(project, user, tmp_path):
    builder = SessionBuilder()
    hostile = builder.user("before\x00after \ud800 lone")  # JSON escapes \u0000 and \ud800
    assert "\\u0000" in hostile and "\\ud800" in hostile
    lines = [builder.user("hello searchable words"), hostile]
    path = tmp_path / "s.jsonl"
    write_lines(path, lines)
    report = ingest.import_file(project, path)
    assert report.added_messages == 2 and not report.errors
    stored = Message.objects.get(position=1)
    assert stored.raw == hostile
    assert stored.blocks[0]["text"] == "before\ufffdafter \ufffd lone"
    # Imported messages are found by full-text search.
    from contextviewer.conversations import search

    hits = search.search(user, "searchable")
    assert [h.conversation_id for h in hits] == [stored.conversation_id]


@pytest.mark.django_db
def test_secrets_are_masked_at_import_and_flagged(project, tmp_path):
    key = "sk-ant-api03-" + "Zx9Yw8Vu7T" * 8
    builder = SessionBuilder()
    lines = [builder.user(f"deploy with ANTHROPIC_API_KEY={key} please"), *builder.assistant("On it.")]
    path = tmp_path / "s.jsonl"
    write_lines(path, lines)
    ingest.import_file(project, path)
    stored = Message.objects.get(position=0)
    assert key not in stored.raw and key not in json.dumps(stored.blocks)
    assert "[masked anthropic_key]" in stored.blocks[0]["text"]
    assert stored.flags["secrets"] == ["anthropic_key"]
    assert json.loads(stored.raw)["message"]["content"].startswith("deploy with ANTHROPIC_API_KEY=[masked")
