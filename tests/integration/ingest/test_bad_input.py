"""Bad input: a clear message in the CLI, the API and the page, and every valid line still imported."""

import gzip
import io
import json
import zlib
from pathlib import Path

import pytest
from django.core.management import call_command

from contextviewer.jobs.models import Job, JobStatus
from contextviewer.conversations.models import Message
from tests.module_worlds import alice
from tests.sessions import SessionBuilder, session_lines
from tests.worker import wait_for

BIG_LINE_BYTES = 50 * 1024 * 1024
LINE_CAP = 32 * 1024 * 1024
BOMB_CAP = 64 * 1024 * 1024
WORKER_ENV = {"CONTEXTVIEWER_MAX_LINE_BYTES": str(LINE_CAP), "CONTEXTVIEWER_MAX_DECOMPRESSED_BYTES": str(BOMB_CAP)}


def _valid(turns: int = 2) -> list[str]:
    return session_lines(turns, SessionBuilder())


def _write(path: Path, parts: list[bytes]) -> Path:
    with open(path, "wb") as fh:
        for part in parts:
            fh.write(part)
    return path


def _lines(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def make_case(name: str, folder: Path) -> tuple[Path, int, str]:
    """(file, valid messages it holds, words the message must contain)."""
    valid = _valid()
    head, tail = _lines(valid[:6]), _lines(valid[6:])
    n = len(valid)
    if name == "non_json":
        return _write(folder / "non_json.jsonl", [head, b"this is not json at all\n", tail]), n, "line 7 is not valid JSON"
    if name == "truncated_last_line":
        return _write(folder / "truncated.jsonl", [head + tail, b'{"type":"user","message":{"ro']), n, "incomplete"
    if name == "invalid_utf8":
        bad = valid[0].replace("Step 0", "Step \udcff").encode("utf-8", "surrogateescape")
        return _write(folder / "utf8.jsonl", [head, bad + b"\n", tail]), n, "line 7 is not valid UTF-8"
    if name == "huge_line":
        path = folder / "huge.jsonl"
        with open(path, "wb") as fh:
            fh.write(head)
            fh.write(b'{"type":"user","message":{"role":"user","content":"')
            block = b"a" * (1024 * 1024)
            for _ in range(BIG_LINE_BYTES // len(block)):
                fh.write(block)
            fh.write(b'"}}\n')
            fh.write(tail)
        # Over the cap, but JSON: imported reduced (its long string shortened), with a notice.
        return path, n + 1, "line 7 is 50.0 MiB, over the 32.0 MiB limit: imported reduced"
    if name == "empty":
        return _write(folder / "empty.jsonl", []), 0, "the file is empty"
    if name == "binary":
        return _write(folder / "binary.jsonl", [bytes(range(256)) * 64]), 0, "binary file"
    if name == "wal_only":
        # A store whose rows are all in its -wal (as Crush leaves one while it runs), given alone.
        import shutil
        import sqlite3

        live = folder / "live"
        shutil.rmtree(live, ignore_errors=True)
        live.mkdir()
        db = sqlite3.connect(live / "crush.db")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA wal_autocheckpoint=0")
        db.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY)")
        db.execute("INSERT INTO sessions VALUES ('s1')")
        db.commit()
        path = shutil.copy(live / "crush.db", folder / "crush.db")  # the main file only, while open
        db.close()
        return Path(path), 0, "its rows are likely in crush.db-wal, which was not given"
    if name == "json_array":
        objects = [json.loads(line) for line in valid]
        return _write(folder / "array.json", [json.dumps(objects, indent=2).encode()]), n, "JSON array, not JSONL"
    if name == "gzip":
        return _write(folder / "session.jsonl.gz", [gzip.compress(head + tail)]), n, ""
    if name == "gzip_bomb":
        path = folder / "bomb.jsonl.gz"
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        with open(path, "wb") as fh:
            fh.write(compressor.compress(head + tail))
            blank = b" " * (1024 * 1024) + b"\n"  # blank lines: only the cap can stop it
            for _ in range(BOMB_CAP * 4 // len(blank)):
                fh.write(compressor.compress(blank))
            fh.write(compressor.flush())
        return path, n, "possible gzip bomb"
    raise ValueError(name)


# No format reads these at all: the import is refused (the job fails, saying what the file was).
REFUSED = {"empty", "binary", "wal_only"}
CASES = [
    "non_json", "truncated_last_line", "invalid_utf8", "huge_line", "empty", "binary", "wal_only", "json_array", "gzip",
    "gzip_bomb",
]


@pytest.fixture(scope="module")
def case_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("bad-input")


@pytest.fixture(scope="module")
def cases(case_dir):
    """make_case(name, case_dir), written once for the module (the gzip bomb takes a second or
    more): the CLI's test and the API's read the same file, and neither changes it."""
    made: dict[str, tuple[Path, int, str]] = {}

    def case(name: str) -> tuple[Path, int, str]:
        if name not in made:
            made[name] = make_case(name, case_dir)
        return made[name]

    return case


@pytest.fixture
def user(project):
    """tests/integration/conftest.py's user, its password hashed once per process (the API's tests
    commit: the user is made again for each)."""
    return alice(project)


@pytest.fixture
def limits(settings):
    settings.MAX_LINE_BYTES = LINE_CAP
    settings.MAX_DECOMPRESSED_BYTES = BOMB_CAP
    return settings


def _assert_result(result: dict, valid_messages: int, words: str, name: str) -> None:
    messages = sum(c["messages"] for c in result["conversations"])
    assert messages == valid_messages, (name, result)
    reasons = " | ".join(e["reason"] for e in result["errors"])
    if words:
        assert words in reasons, (name, reasons)
    else:
        assert not result["errors"], (name, reasons)


@pytest.mark.django_db
@pytest.mark.parametrize("name", CASES)
def test_cli_reports_bad_input_and_imports_the_valid_lines(name, cases, limits, project):
    path, valid_messages, words = cases(name)
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("import", str(path), "--project", project.name, "--json", stdout=out, stderr=err)
    except SystemExit as exc:  # a file with nothing importable exits non-zero, after printing its JSON
        assert valid_messages == 0 and exc.code in (1, 2)
    result = json.loads(out.getvalue())
    _assert_result(result, valid_messages, words, name)
    assert Message.objects.count() == valid_messages
    # The same problems in the human form, with the file and line.
    human = io.StringIO()
    human_err = io.StringIO()
    try:
        call_command("import", str(path), "--project", "Another", stdout=human, stderr=human_err)
    except SystemExit:
        pass
    if words:
        assert words in human_err.getvalue()


def _wait_job(job_id: int) -> Job:
    return wait_for(
        lambda: Job.objects.filter(pk=job_id, status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).first(),
        timeout=180,
        message=f"job {job_id}",
    )


@pytest.mark.worker
@pytest.mark.parametrize("name", CASES)
def test_api_and_page_report_bad_input(name, cases, limits, project, user, worker, client):
    path, valid_messages, words = cases(name)
    client.force_login(user)

    with open(path, "rb") as fh:
        response = client.post("/api/imports", {"files": [fh]})
    assert response.status_code == 202, response.content
    job = _wait_job(response.json()["id"])
    polled = client.get(f"/api/jobs/{job.pk}").json()
    if name in REFUSED:
        assert polled["status"] == "failed", polled
        assert words in polled["error"], polled
    else:
        assert polled["status"] == "succeeded", polled
    _assert_result(polled["result"], valid_messages, words, name)

    # The upload page: the job page lists the problem, in words, with the file name.
    with open(path, "rb") as fh:
        response = client.post("/import/", {"files": [fh]}, follow=True)
    assert response.status_code == 200
    job = _wait_job(Job.objects.latest("pk").pk)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    if words:
        assert words in page.replace("&#x27;", "'").replace("&quot;", '"')
        assert path.name in page
        assert ("Nothing was imported." if name in REFUSED else "Everything not listed here was imported.") in page
    assert Message.objects.count() == valid_messages  # the second upload of the same bytes added nothing


@pytest.mark.django_db
def test_an_upload_to_a_project_the_user_may_not_import_into_is_refused(client, user, project, tmp_path):
    from contextviewer.accounts.models import Membership, Role
    from contextviewer.accounts.services import get_or_create_project

    other = get_or_create_project("Read only here")
    Membership.objects.create(project=other, user=user, role=Role.VIEWER)
    client.force_login(user)
    path, _, _ = make_case("non_json", tmp_path)
    with open(path, "rb") as fh:
        response = client.post("/import/", {"files": [fh], "project": other.slug})
    assert response.status_code == 403
    assert "You may not import into that project." in response.content.decode()
    assert not Job.objects.exists()


@pytest.mark.django_db
@pytest.mark.fixtures
def test_a_real_crush_store_given_without_its_wal_says_where_its_rows_are(project, fixtures_dir, tmp_path):
    """Checked by hand: crush/Exa-Networks__exabgp__crush.db is 4,096 bytes, its header says one
    page (no table) and WAL mode; its 34 messages are all in the -wal beside it (SOURCES.md)."""
    import shutil

    from contextviewer.ingest import files as ingest

    source = fixtures_dir / "crush" / "Exa-Networks__exabgp__crush.db"
    lone = Path(shutil.copy(source, tmp_path / "crush.db"))
    report = ingest.import_path(project, lone)
    assert report.refused and Message.objects.count() == 0
    reasons = " ".join(e["reason"] for e in report.errors)
    assert "its rows are likely in crush.db-wal, which was not given" in reasons and "not a format" not in reasons
    shutil.copy(source.with_name(source.name + "-wal"), tmp_path / "crush.db-wal")
    report = ingest.import_path(project, lone)
    assert not report.refused and Message.objects.count() == 34
