"""kill -9 of the worker in the middle of a build: after a restart and a retry, one conversation."""

import pytest

from contextviewer.builds import services as builds
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation, ConversationKind, Message
from contextviewer.jobs.models import Job, JobStatus
from tests.sessions import SessionBuilder, session_lines, write_lines
from tests.worker import Worker, purge_broker, wait_for

TURNS = 2500


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_killed_build_completes_on_retry_with_exactly_one_new_conversation(project, user, tmp_path):
    builder = SessionBuilder()
    padding = "x" * 3000  # large enough that copying takes long enough to be killed in the middle
    lines = [line.replace("Fixed it.", f"Fixed it. {padding}") for line in session_lines(TURNS, builder)]
    write_lines(tmp_path / "big.jsonl", lines)
    report = ingest.import_file(project, tmp_path / "big.jsonl")
    source = Conversation.objects.get(pk=report.conversation_ids[0])
    source_messages = Message.objects.filter(conversation=source).count()

    purge_broker()
    worker = Worker()
    try:
        job = builds.start_build(source, f"0-{TURNS - 1}", "", user=user)
        wait_for(lambda: jobs.current_progress(Job.objects.get(pk=job.pk))[0] > 0.2, timeout=180,
                 message="the build to be under way")
        worker.kill()
    finally:
        worker.stop()
    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING  # its worker died with it
    assert not Conversation.objects.filter(kind=ConversationKind.BUILD).exists()  # nothing half-built

    worker = Worker()
    try:
        # Nobody presses "Run again": the new worker takes over the job its dead predecessor held.
        done = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
                        timeout=300, message="the build to end")
    finally:
        worker.stop()
    assert done.status == JobStatus.SUCCEEDED, done.error
    assert done.attempts == 2
    built = Conversation.objects.get(kind=ConversationKind.BUILD)
    assert done.result["conversation_id"] == built.pk
    assert Message.objects.filter(conversation=built).count() == source_messages
    assert Message.objects.filter(conversation=source).count() == source_messages
