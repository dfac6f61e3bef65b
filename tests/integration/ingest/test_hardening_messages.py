"""Issue 21: an import that cannot read a file says what happened, in words a person can act on.

- A session log saved as UTF-16 or UTF-32 (a byte order mark, or every other byte NUL) is read as
  the text it is, not refused as "a binary file".
- A JSON document nested deeper than the JSON reader goes is refused as such (no RecursionError).
- A zip archive is refused with what to do instead, and no file record says "imported".
- A full disk says so, not the database's OperationalError.
- Sizes in binary units are named as such (MiB, not MB).
"""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import OperationalError

from contextviewer.conversations.models import Conversation, Fold, Message, Source
from contextviewer.importers.claude_code import synthetic
from contextviewer.importers.lines import GzipStream, StreamError, human_size
from contextviewer.ingest import imports as services
from contextviewer.ingest.row_maker import RowMaker as Writer
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import JobStatus
from tests.factories import make_project
from tests.sessions import session_lines, write_lines

pytestmark = pytest.mark.django_db

ENCODINGS = {
    "utf-16 LE with BOM": lambda text: b"\xff\xfe" + text.encode("utf-16-le"),
    "utf-16 BE with BOM": lambda text: b"\xfe\xff" + text.encode("utf-16-be"),
    "utf-16 LE without BOM": lambda text: text.encode("utf-16-le"),
    "utf-16 BE without BOM": lambda text: text.encode("utf-16-be"),
    "utf-32 LE with BOM": lambda text: b"\xff\xfe\x00\x00" + text.encode("utf-32-le"),
}


def _run_import(project, **kwargs):
    job, _ = services.start_import(project, enqueue=False, **kwargs)
    return jobs.run(job.pk)


def _figures(project):
    conv = Conversation.objects.get(project=project, parent__isnull=True)
    texts = list(Message.objects.filter(conversation=conv).order_by("position").values_list("blocks", flat=True))
    return {
        "messages": conv.message_count,
        "stored": len(texts),
        "model_calls": conv.model_call_count,
        "folds": Fold.objects.filter(conversation=conv).count(),
        "title": conv.title,
        "blocks": texts,
    }


@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_a_session_saved_as_utf16_or_utf32_imports_like_its_utf8_file(encoding, project, tmp_path):
    utf8 = synthetic.write_session(tmp_path / "utf8", messages=120, seed=5, subagent=False)
    text = utf8.read_text(encoding="utf-8")
    other = tmp_path / "other" / utf8.name
    other.parent.mkdir()
    other.write_bytes(ENCODINGS[encoding](text))

    done = _run_import(project, paths=[str(utf8)])
    assert done.status == JobStatus.SUCCEEDED, done.error
    second = make_project("second")
    done = _run_import(second, paths=[str(other)])
    assert done.status == JobStatus.SUCCEEDED, done.error
    assert done.result["errors"] == [], done.result["errors"]
    assert [f["status"] for f in done.result["files"]] == ["imported"]

    expected, got = _figures(project), _figures(second)
    assert expected["messages"] > 100
    assert got == expected

    # Read again, unchanged: nothing is added; the UTF-16 text is the source's to read again whole.
    done = _run_import(second, paths=[str(other)])
    assert [f["status"] for f in done.result["files"]] == ["unchanged"]
    assert _figures(second)["stored"] == expected["stored"]


def test_a_utf16_upload_imports(project, tmp_path):
    text = "\n".join(session_lines(3)) + "\n"
    upload = SimpleUploadedFile("windows.jsonl", b"\xff\xfe" + text.encode("utf-16-le"))
    done = _run_import(project, uploads=[services.store_upload(upload)])
    assert done.status == JobStatus.SUCCEEDED, done.error
    assert done.result["files"][0]["bad_lines"] == 0
    plain = make_project("plain")
    done = _run_import(plain, uploads=[services.store_upload(SimpleUploadedFile("plain.jsonl", text.encode()))])
    assert done.status == JobStatus.SUCCEEDED, done.error
    assert _figures(project) == _figures(plain)


def test_a_json_document_nested_too_deep_is_refused_saying_so(project, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    done = _run_import(project, paths=[str(path)])
    assert done.status == JobStatus.FAILED
    assert done.error.startswith("a JSON document nested deeper than 500 levels: not a format contextviewer reads (")
    assert "RecursionError" not in done.error and "recursion" not in json.dumps(done.result)
    assert not Source.objects.exists() and not Conversation.objects.exists()

    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("import", str(path), "--project", project.name, "--json", stdout=out, stderr=io.StringIO())
    reason = json.loads(out.getvalue())["errors"][0]["reason"]
    assert reason.startswith("a JSON document nested deeper than 500 levels: not a format contextviewer reads")


def test_a_message_array_nested_too_deep_says_so(project, tmp_path):
    path = tmp_path / "messages.json"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text('{"messages": [{"role": "user", "content": "hi"}, ' + deep + "]}")
    done = _run_import(project, paths=[str(path)])
    (error,) = done.result["errors"]
    assert error["reason"] == "a JSON document nested deeper than 500 levels: not imported"
    assert not Message.objects.exists()


def _zip(tmp_path):
    """A zip archive of one Claude Code session, stored (uncompressed): its JSON lines show through."""
    session = tmp_path / "session.jsonl"
    write_lines(session, session_lines(2))
    path = tmp_path / "sessions.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.write(session, "11111111-2222-4333-8444-555555555555.jsonl")
    return path


def test_a_zip_archive_is_refused_with_what_to_do(project, tmp_path):
    path = _zip(tmp_path)
    done = _run_import(project, paths=[str(path)])
    assert done.status == JobStatus.FAILED
    assert done.error == "a zip archive: unpack it or upload the folder"
    assert not Source.objects.exists() and not Conversation.objects.exists()

    upload = SimpleUploadedFile("sessions.zip", path.read_bytes())
    done = _run_import(project, uploads=[services.store_upload(upload)])
    assert done.status == JobStatus.FAILED
    assert done.error == "a zip archive: unpack it or upload the folder"
    assert [f["status"] for f in done.result["files"]] == ["refused"]
    assert not Source.objects.exists() and not Conversation.objects.exists()


@pytest.mark.parametrize(
    "message",
    [
        "database or disk is full",
        'could not extend file "base/16384/2619": No space left on device',
    ],
)
def test_a_full_disk_says_so_and_nothing_of_the_file_is_stored(message, project, tmp_path):
    # A real full disk cannot be made safely in a test: the writer raises what the database says.
    write_lines(tmp_path / "s.jsonl", session_lines(2))
    with mock.patch.object(Writer, "consume", side_effect=OperationalError(message)):
        done = _run_import(project, paths=[str(tmp_path / "s.jsonl")])
    assert done.status == JobStatus.FAILED
    assert done.error.startswith("the disk holding ") and done.error.endswith(" is full; nothing was changed")
    assert "OperationalError" not in done.error
    assert not Conversation.objects.exists() and not Message.objects.exists()
    assert not Source.objects.filter(status="imported").exists()


def test_a_full_disk_in_a_folder_says_what_was_imported_before_it(project, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    for n in range(3):
        synthetic.write_session(folder / f"s{n}", messages=20, seed=n, subagent=False)
    real = Writer.consume
    calls = []

    def consume(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OperationalError("database or disk is full")
        return real(self, *args, **kwargs)

    with mock.patch.object(Writer, "consume", consume):
        done = _run_import(project, paths=[str(folder)])
    assert done.status == JobStatus.FAILED
    assert " is full; " in done.error and "were not imported (nothing of them was stored)" in done.error
    assert done.error.endswith("the 1 file before it were")
    assert Conversation.objects.filter(parent__isnull=True).count() == 1


def test_an_other_operational_error_is_not_called_a_full_disk(project, tmp_path):
    write_lines(tmp_path / "s.jsonl", session_lines(2))
    with mock.patch.object(Writer, "consume", side_effect=OperationalError("database is locked")):
        done = _run_import(project, paths=[str(tmp_path / "s.jsonl")])
    assert done.status == JobStatus.FAILED
    assert done.error == "OperationalError: database is locked"


def test_binary_sizes_are_named_in_binary_units():
    assert human_size(4 * 1024**3) == "4.0 GiB"
    assert human_size(32 * 1024 * 1024) == "32.0 MiB"
    assert human_size(1536) == "1.5 KiB"
    assert human_size(1000) == "1000 bytes"
    stream = GzipStream(io.BytesIO(gzip.compress(b"\0" * (3 << 20))), max_decompressed_bytes=1 << 20)
    with pytest.raises(StreamError) as exc:
        while stream.read(1 << 16):
            pass
    assert str(exc.value) == "gzip data expands beyond the 1.0 MiB cap; import stopped (possible gzip bomb)"
