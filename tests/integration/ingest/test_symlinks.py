"""Links out of the chosen folder are not followed (issue 21): a folder import and the watcher's
catch-up read what the folder holds, never a file a link in it points to elsewhere (~/.ssh, /etc,
another user's logs); such links are listed as skipped, with the reason. A link that stays inside
the folder changes nothing: its target is read once, where it is."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from contextviewer.conversations.models import Conversation
from contextviewer.ingest import watch
from tests.sessions import SessionBuilder, session_lines, write_lines

INSIDE = "11111111-2222-4333-8444-000000000001"
OUTSIDE = "11111111-2222-4333-8444-000000000002"
HIDDEN = "11111111-2222-4333-8444-000000000003"
REASON_FILE = "a link to a file outside the chosen folder: not followed"
REASON_FOLDER = "a link to a folder outside the chosen folder: not followed"


@pytest.fixture
def layout(tmp_path):
    """chosen/ holds a real session, a link to a session outside it, a linked folder outside it
    (with a session in it) and a link to its own session (inside: read once)."""
    chosen = tmp_path / "chosen"
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "secret").mkdir(parents=True)
    chosen.mkdir()
    write_lines(chosen / f"{INSIDE}.jsonl", session_lines(1, SessionBuilder(INSIDE)))
    write_lines(elsewhere / f"{OUTSIDE}.jsonl", session_lines(1, SessionBuilder(OUTSIDE)))
    write_lines(elsewhere / "secret" / f"{HIDDEN}.jsonl", session_lines(1, SessionBuilder(HIDDEN)))
    (chosen / "linked.jsonl").symlink_to(elsewhere / f"{OUTSIDE}.jsonl")
    (chosen / "linked-folder").symlink_to(elsewhere / "secret", target_is_directory=True)
    (chosen / "again.jsonl").symlink_to(chosen / f"{INSIDE}.jsonl")
    return chosen


def _expected_skipped(chosen):
    return [
        {"path": str(chosen / "linked-folder"), "reason": REASON_FOLDER},
        {"path": str(chosen / "linked.jsonl"), "reason": REASON_FILE},
    ]


def _only_the_inside_session_stored():
    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == [INSIDE]


@pytest.mark.django_db
def test_a_folder_import_reads_only_what_is_inside_and_lists_the_links_out(layout, project):
    out = io.StringIO()
    call_command("import", str(layout), "--project", project.name, "--json", stdout=out, stderr=io.StringIO())
    result = json.loads(out.getvalue())
    assert [c["external_id"] for c in result["conversations"]] == [INSIDE]
    assert [f["path"] for f in result["files"]] == [str(layout / f"{INSIDE}.jsonl")]  # read once
    assert sorted(result["skipped"], key=lambda s: s["path"]) == _expected_skipped(layout)
    assert result["errors"] == []
    _only_the_inside_session_stored()


@pytest.mark.django_db(transaction=True)
def test_the_watchers_catch_up_reads_only_what_is_inside(layout, project):
    w = watch.Watcher([layout], project)
    [job] = w.catch_up()
    assert job.status == "succeeded", job.error
    assert [c["external_id"] for c in job.result["conversations"]] == [INSIDE]
    assert sorted(job.result["skipped"], key=lambda s: s["path"]) == _expected_skipped(layout)
    _only_the_inside_session_stored()


@pytest.mark.django_db(transaction=True)
def test_the_watcher_ignores_a_changed_link_out_of_its_folder(layout, project):
    w = watch.Watcher([layout], project)
    w._import(str(layout / "linked.jsonl"))
    w._import(str(layout / "linked-folder" / f"{HIDDEN}.jsonl"))
    assert w.jobs_started == 0 and w.ignored == 2
    assert not Conversation.objects.exists()
    w._import(str(layout / f"{INSIDE}.jsonl"))
    assert w.jobs_started == 1
    _only_the_inside_session_stored()
