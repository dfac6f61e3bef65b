"""A handoff can be made again after new messages, from the page and from the CLI, and stays within
its budget fold after fold (issue 34, item 4): three handoffs in a row on one conversation, new
messages imported between them, the page's on a real Celery worker and `manage.py handoff` in its
own process, each summary within CONTEXTVIEWER_HANDOFF_BUDGET, each naming what was new."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from contextviewer.conversations.models import Conversation, Fold
from contextviewer.core import handoff as core
from contextviewer.core.tokens import count_text
from contextviewer.ingest import files as ingest
from contextviewer.jobs.models import Job, JobStatus
from tests.sessions import SessionBuilder, write_lines
from tests.worker import Worker, job_state, purge_broker, wait_for

BUDGET = 700  # small enough that every segment alone is over it: the summary has to give way


def _segment(b: SessionBuilder, n: int) -> list[str]:
    """A request naming its module, then reads, edits and test runs over many files."""
    lines = [b.user(f"Now port batch {n} to the new parser, starting with src/batch{n}/entry.py.")]
    for m in range(25):
        name = f"src/batch{n}/module_{m}.py"
        lines += [*b.assistant(f"Reading {name}.", tool=("Read", {"file_path": name})), b.tool_result("import json")]
        lines += [*b.assistant("Porting it.", tool=("Edit", {"file_path": name, "old_string": "json", "new_string": "parser"})), b.tool_result("ok")]
        lines += [*b.assistant("Testing it.", tool=("Bash", {"command": f"pytest -q tests/batch{n}/test_module_{m}.py"})), b.tool_result("1 passed")]
    lines += b.assistant(f"Batch {n} is ported.")
    return lines


def _from_the_page(client, conv: Conversation, worker: Worker) -> Fold:
    before = set(Job.objects.filter(kind="handoff").values_list("pk", flat=True))
    response = client.post(f"/c/{conv.pk}/handoff/", {"provider": "builtin"})
    assert response.status_code == 302, response.content[:500]
    job = Job.objects.filter(kind="handoff").exclude(pk__in=before).get()
    done = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
                    timeout=120, message="the page's handoff job", describe=lambda: job_state(Job.objects.all(), worker))
    assert done.status == JobStatus.SUCCEEDED, done.error
    return Fold.objects.get(pk=done.result["fold_id"])


def _from_the_cli(conv: Conversation) -> Fold:
    out = io.StringIO()
    call_command("handoff", str(conv.pk), "--provider", "builtin", "--json", stdout=out)
    answer = json.loads(out.getvalue())
    assert answer["status"] == JobStatus.SUCCEEDED
    return Fold.objects.get(pk=answer["result"]["fold_id"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_three_handoffs_in_a_row_from_the_page_and_the_cli_stay_within_the_budget(client, user, project, tmp_path, settings):
    settings.HANDOFF_BUDGET = BUDGET  # the CLI's process; the worker gets it in its environment
    client.force_login(user)
    b = SessionBuilder()
    path = tmp_path / "s.jsonl"
    write_lines(path, [b.user("Build the JSON parser in src/parser.py. Never use regex for JSON."), *_segment(b, 1)])
    ingest.import_file(project, path)
    conv = Conversation.objects.get()

    purge_broker()
    worker = Worker(env={"CONTEXTVIEWER_HANDOFF_BUDGET": str(BUDGET)})
    try:
        folds = [_from_the_page(client, conv, worker)]
        for n, make in ((2, _from_the_cli), (3, lambda c: _from_the_page(client, c, worker))):
            # Nothing new: the page says so and makes no fold.
            response = client.post(f"/c/{conv.pk}/handoff/", {"provider": "builtin"})
            assert "no message after the latest fold" in client.get(response["Location"]).content.decode()
            with open(path, "a", encoding="utf-8") as fh:
                fh.write("\n".join(_segment(b, n)) + "\n")
            ingest.import_file(project, path)
            folds.append(make(conv))
    finally:
        worker.stop()

    last_positions = []
    for n, fold in enumerate(folds, start=1):
        assert fold.origin == "generated" and fold.kind == "handoff"
        assert count_text(fold.summary_text) <= BUDGET, (n, count_text(fold.summary_text))
        assert fold.tokens_after == count_text(fold.summary_text)
        sections = core.validate_sections(fold.summary_text)
        assert f"src/batch{n}/entry.py" in sections["Next steps"] or f"src/batch{n}/entry.py" in sections["Goal"], (n, fold.summary_text)
        # The first request stays the goal, fold after fold (the earlier summary is carried).
        assert sections["Goal"].startswith("Build the JSON parser in src/parser.py."), (n, sections["Goal"])
        assert "Never use regex for JSON." in sections["Constraints and preferences"]
        last_positions.append(fold.position)
    # Each fold sits at the end of the conversation as it was: after the messages imported since.
    assert last_positions == sorted(last_positions) and len(set(last_positions)) == 3
    assert Fold.objects.filter(conversation=conv, origin="generated").count() == 3
    page = client.get(f"/c/{conv.pk}/").content.decode()
    assert page.count("handoff (builtin)") >= 1 and "Latest summary" in page
