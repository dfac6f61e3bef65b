"""A summary written again stands beside a fold, it is not one: after "summarize this fold again"
and a re-import of the grown file, the index, the conversation page and the review index show the
same number of folds as before."""

import re

import pytest
from django.test import Client

from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations import segments
from contextviewer.conversations.models import Conversation
from contextviewer.jobs.models import JobStatus
from contextviewer.review import alternatives
from tests.integration.builds.test_builds_after_fold import compaction
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db


def _shown(client: Client, conv: Conversation) -> tuple[str, str, str]:
    index = client.get("/").content.decode()
    row = next(r for r in index.split("<tr") if f"/c/{conv.pk}/" in r)
    badge = re.search(r'<span class="badge">(\d+)</span>', row)
    page = re.search(r"<span>(\d+) folds?</span>", client.get(f"/c/{conv.pk}/").content.decode())
    review = re.search(r"(\d+) folds in this project", client.get(f"/projects/{conv.project.slug}/review/").content.decode())
    return (badge and badge.group(1), page and page.group(1), review and review.group(1))


def test_a_summary_written_again_is_not_counted_as_a_fold_after_a_grown_file_is_imported(project, user, tmp_path):
    b = SessionBuilder()
    lines = session_lines(3, b) + compaction(b) + [*b.assistant("Continuing after the compaction.")]
    path = tmp_path / "s.jsonl"
    write_lines(path, lines)
    conv = Conversation.objects.get(pk=ingest.import_path(project, path).conversation_ids[0])
    client = Client()
    client.force_login(user)
    before = _shown(client, conv)
    conv.refresh_from_db()
    assert before == ("1", "1", "1")

    job = alternatives.start(segments.segment_folds(conv)[0], provider="builtin", enqueue=False)
    assert jobs.run(job.pk).status == JobStatus.SUCCEEDED
    assert conv.folds.filter(kind=segments.ALTERNATIVE).count() == 1

    lines += [b.user("one more thing: rerun the tests"), *b.assistant("Rerunning", tool=("Bash", {"command": "pytest -q"})),
              b.tool_result("12 passed")]
    write_lines(path, lines)  # the same session, grown
    again = ingest.import_path(project, path)
    assert again.conversation_ids == [conv.pk]
    grown = conv.message_count
    conv.refresh_from_db()
    assert conv.message_count > grown and conv.fold_count == 1
    assert _shown(client, conv) == before
