"""What no format reads is refused before anything is stored: the CLI exits non-zero, the API's
job and the upload page's job fail, each saying what the file looked like and which formats are
read. A folder imports what a format claims and lists what it skipped."""

import io
import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from contextviewer.conversations.models import Conversation, Message, Source
from contextviewer.jobs.models import Job, JobStatus
from contextviewer.importers import formats
from tests.sessions import session_lines, write_lines
from tests.worker import wait_for

LOOKS_LIKE = "a JSON array of 18 objects with keys kind, payload, at"


def _unknown_array(path):
    path.write_text(json.dumps([{"kind": "tick", "payload": {"n": i}, "at": i} for i in range(18)]))
    return path


def _nothing_stored():
    assert Source.objects.count() == 0
    assert Conversation.objects.count() == 0
    assert Message.objects.count() == 0


@pytest.mark.django_db
def test_the_cli_refuses_a_file_no_format_reads(tmp_path, project):
    path = _unknown_array(tmp_path / "events.json")
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("import", str(path), "--project", project.name, "--json", stdout=out, stderr=err)
    assert exit_info.value.code != 0
    reason = json.loads(out.getvalue())["errors"][0]["reason"]
    assert reason.startswith(f"{LOOKS_LIKE}: not a format contextviewer reads (")
    for fmt in formats.registry():
        assert fmt.label in reason
    _nothing_stored()

    human_err = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("import", str(path), "--project", project.name, stdout=io.StringIO(), stderr=human_err)
    assert LOOKS_LIKE in human_err.getvalue()
    _nothing_stored()


@pytest.mark.django_db
def test_a_folder_with_no_session_log_is_refused_with_what_it_holds(tmp_path, project):
    _unknown_array(tmp_path / "events.json")
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("import", str(tmp_path), "--project", project.name, "--json", stdout=out, stderr=io.StringIO())
    reason = json.loads(out.getvalue())["errors"][0]["reason"]
    assert reason.startswith("no session log in this folder")
    assert f"events.json ({LOOKS_LIKE})" in reason and "notes.txt (a text file starting 'remember the milk')" in reason
    _nothing_stored()


@pytest.mark.django_db
def test_a_folder_imports_what_a_format_claims_and_lists_what_it_skipped(tmp_path, project):
    write_lines(tmp_path / "session.jsonl", session_lines(2))
    _unknown_array(tmp_path / "events.json")
    out = io.StringIO()
    call_command("import", str(tmp_path), "--project", project.name, "--json", stdout=out, stderr=io.StringIO())
    result = json.loads(out.getvalue())
    assert [c["agent"] for c in result["conversations"]] == ["claude-code"]
    assert result["skipped"] == [{"path": str(tmp_path / "events.json"), "reason": f"{LOOKS_LIKE}: not a format contextviewer reads"}]
    assert result["errors"] == []
    assert [f["agent"] for f in result["files"]] == ["claude-code"]


def _wait_job(job_id: int) -> Job:
    return wait_for(
        lambda: Job.objects.filter(pk=job_id, status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
        timeout=120,
        message=f"job {job_id}",
    )


@pytest.mark.worker
def test_the_api_and_the_upload_page_refuse_it_and_store_nothing(tmp_path, project, user, worker, client):
    path = _unknown_array(tmp_path / "events.json")
    client.force_login(user)
    with open(path, "rb") as fh:
        response = client.post("/api/imports", {"files": [fh]})
    assert response.status_code == 202, response.content
    job = _wait_job(response.json()["id"])
    polled = client.get(f"/api/jobs/{job.pk}").json()
    assert polled["status"] == "failed"
    assert polled["error"].startswith(f"{LOOKS_LIKE}: not a format contextviewer reads (")
    assert polled["result"]["errors"][0]["reason"] == polled["error"]
    _nothing_stored()
    uploads = Path(settings.MEDIA_ROOT) / "uploads"
    assert not list(uploads.rglob("events.json"))  # the refused upload was not kept

    path2 = _unknown_array(tmp_path / "other.json")
    with open(path2, "rb") as fh:
        response = client.post("/import/", {"files": [fh]}, follow=True)
    assert response.status_code == 200
    job = _wait_job(Job.objects.latest("pk").pk)
    assert job.status == JobStatus.FAILED
    page = client.get(f"/jobs/{job.pk}/").content.decode().replace("&#x27;", "'")
    assert "not a format contextviewer reads" in page and LOOKS_LIKE in page
    _nothing_stored()
