"""A parser that crashes (a SIGSEGV in C code, an abort, the out-of-memory killer) fails its own file
only: the import's parsing process (ingest/child.py) dies in its place, the file is reported failed
with the record and line after which it died, the other files are imported, and the process that
runs the import (the worker) lives on.

The crash is planted in the registered Claude Code format: a parse that kills its own process after
yielding a number of records of one file, and only when it runs in a process other than the test's
(so that a parse run in the test's own process fails the test instead of ending it).
"""

import os
import signal

import pytest

from contextviewer.conversations.models import Conversation, Message, Source
from contextviewer.importers import formats
from contextviewer.ingest import child, files as ingest
from contextviewer.ingest import imports as services
from contextviewer.jobs import queue as jobs
from tests.planted import registry_with_fault
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db

TURNS = 4  # 5 records a turn (user, assistant with a tool call, tool result, assistant, ...)


@pytest.fixture
def forks(monkeypatch):
    started = []
    real_fork = os.fork

    def fork():
        pid = real_fork()
        if pid:
            started.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return started


def _folder(tmp_path, names):
    folder = tmp_path / "sessions"
    folder.mkdir()
    for i, name in enumerate(names):
        sid = f"aaaaaaaa-0000-4000-8000-{i:012d}"
        write_lines(folder / f"{name}.jsonl", session_lines(TURNS, SessionBuilder(session_id=sid)))
    return folder


def _crash_in(monkeypatch, victim: str, after: int, sig=signal.SIGSEGV):
    """The registered Claude Code format, with a parse that kills its process after `after` records
    of the file named `victim` (never in the test's own process)."""
    test_pid = os.getpid()

    def crash(source, n):
        if n == after and source.path.name == victim and os.getpid() != test_pid:
            os.kill(os.getpid(), sig)

    monkeypatch.setattr(formats, "_REGISTRY", registry_with_fault(crash))


def test_a_parser_that_crashes_fails_its_file_only_and_the_import_goes_on(project, tmp_path, monkeypatch, forks):
    folder = _folder(tmp_path, ["a", "b", "c"])
    _crash_in(monkeypatch, "b.jsonl", after=7)
    report = ingest.import_path(project, folder)

    by_name = {os.path.basename(f.path): f for f in report.files}
    assert by_name["a.jsonl"].status == "imported" and by_name["a.jsonl"].added_messages == TURNS * 5
    assert by_name["c.jsonl"].status == "imported" and by_name["c.jsonl"].added_messages == TURNS * 5
    failed = by_name["b.jsonl"]
    assert failed.status == "failed" and failed.added_messages == 0
    [error] = failed.errors
    reason = error["reason"]
    assert reason.startswith(f"the importer crashed (signal SIGSEGV) after record 7 of {folder / 'b.jsonl'} (line 7)")
    assert "nothing of this file was stored" in reason and "were not kept" in reason
    assert "the import went on with its other files" in reason
    assert error["line"] == 7
    # The job's report lists it with the others' problems; the worker's process is this one, alive.
    assert [e["reason"] for e in report.errors] == [reason]

    # Nothing of the crashed file is stored; the two others are, whole.
    assert Conversation.objects.count() == 2
    assert Message.objects.count() == 2 * TURNS * 5
    source = Source.objects.get(path=str((folder / "b.jsonl").resolve()))
    assert source.status == "failed" and source.errors == [error]
    # One parsing process for the import, and one more after the crash (not one per file).
    assert len(forks) == 2
    for pid in forks:  # both ended and reaped: no zombie, no orphan
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_a_crash_before_the_first_record_and_an_out_of_memory_kill_are_said_as_such(project, tmp_path, monkeypatch):
    folder = _folder(tmp_path, ["a", "b"])
    _crash_in(monkeypatch, "a.jsonl", after=0, sig=signal.SIGKILL)
    report = ingest.import_path(project, folder)
    statuses = {os.path.basename(f.path): f.status for f in report.files}
    assert statuses == {"a.jsonl": "failed", "b.jsonl": "imported"}
    [error] = report.errors
    assert error["reason"].startswith("the importer crashed (signal SIGKILL: killed, or out of memory) before its first record")
    assert "no record was read" in error["reason"]


def test_the_import_job_goes_on_and_succeeds_with_the_crashed_file_listed(project, tmp_path, monkeypatch, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    folder = _folder(tmp_path, ["a", "b"])
    _crash_in(monkeypatch, "a.jsonl", after=3, sig=signal.SIGABRT)
    job, _ = services.start_import(project, paths=[str(folder)], enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == "succeeded", done.error
    assert [(os.path.basename(f["path"]), f["status"]) for f in done.result["files"]] == [("a.jsonl", "failed"),
                                                                                         ("b.jsonl", "imported")]
    [error] = done.result["errors"]
    assert "the importer crashed (signal SIGABRT) after record 3 of" in error["reason"]
    assert len(done.result["conversations"]) == 1

    # Run again (the parser still crashes on that file): the same message, nothing doubled.
    job2, _ = services.start_import(project, paths=[str(folder)], enqueue=False)
    again = jobs.run(job2.pk)
    assert again.status == "succeeded" and [e["reason"] for e in again.result["errors"]] == [error["reason"]]
    assert Message.objects.count() == TURNS * 5


def test_an_uploaded_file_whose_parser_crashes_fails_alone(project, tmp_path, monkeypatch, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.MEDIA_ROOT = str(tmp_path / "media")
    data = ("\n".join(session_lines(TURNS, SessionBuilder(session_id="bbbbbbbb-0000-4000-8000-000000000001"))) + "\n").encode()
    bad = services.store_upload(SimpleUploadedFile("bad.jsonl", data))
    good = services.store_upload(SimpleUploadedFile("good.jsonl", data.replace(b"bbbbbbbb", b"cccccccc")))
    _crash_in(monkeypatch, "bad.jsonl", after=11)
    job, _ = services.start_import(project, uploads=[bad, good], enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == "succeeded", done.error
    assert [f["status"] for f in done.result["files"]] == ["failed", "imported"]
    assert done.result["errors"][0]["reason"].startswith(
        "the importer crashed (signal SIGSEGV) after record 11 of bad.jsonl (line 11)"
    )
    assert Message.objects.count() == TURNS * 5


def test_outside_an_import_a_crash_in_a_forked_parse_names_the_record(project, tmp_path, monkeypatch, settings):
    # import_file alone, a file large enough for its own parsing process (prepare.py): the same words.
    settings.IMPORT_PROCESS_MIN_BYTES = 0
    folder = _folder(tmp_path, ["a"])
    _crash_in(monkeypatch, "a.jsonl", after=5)
    with pytest.raises(child.ImporterCrashed, match=r"^the importer crashed \(signal SIGSEGV\) after record 5 \(line 5\)"):
        ingest.import_file(project, folder / "a.jsonl", fmt=formats.get("claude-code"))
    assert Message.objects.count() == 0


def _raise_in(monkeypatch, victim: str, after: int):
    def raise_(source, n):
        if n == after and source.path.name == victim:
            raise ValueError(f"the parser met something new in {victim}")

    monkeypatch.setattr(formats, "_REGISTRY", registry_with_fault(raise_))


def test_a_parser_that_raises_is_said_and_the_same_process_reads_the_next_file_whole(project, tmp_path, monkeypatch, forks):
    folder = _folder(tmp_path, ["a", "b"])
    _raise_in(monkeypatch, "a.jsonl", after=6)
    with child.parsing():
        with pytest.raises(ValueError, match="something new in a.jsonl"):
            ingest.import_file(project, folder / "a.jsonl", fmt=formats.get("claude-code"))
        report = ingest.import_file(project, folder / "b.jsonl", fmt=formats.get("claude-code"))
    assert report.status == "imported" and report.added_messages == TURNS * 5
    assert Message.objects.count() == TURNS * 5  # b's own, nothing of a's stream mixed in
    assert len(forks) == 1


class _Stop(Exception):
    pass


def test_a_writer_that_stops_in_the_middle_of_a_file_ends_the_process_and_the_next_file_gets_a_new_one(
    project, tmp_path, forks
):
    folder = tmp_path / "s"
    folder.mkdir()
    padding = "y" * 30_000  # 400 turns: 12 MB, past the first progress record (every 8 MiB)
    for name, sid in (("big", "dddddddd-0000-4000-8000-000000000001"), ("small", "dddddddd-0000-4000-8000-000000000002")):
        builder = SessionBuilder(session_id=sid)
        with open(folder / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            for i in range(400 if name == "big" else TURNS):
                for line in builder.turn(i):
                    fh.write(line.replace("Fixed it.", f"Fixed it. {padding}") + "\n")

    def stop(done, what):
        raise _Stop  # as a cancelled job does

    with child.parsing():
        with pytest.raises(_Stop):
            ingest.import_file(project, folder / "big.jsonl", fmt=formats.get("claude-code"), progress=stop)
        report = ingest.import_file(project, folder / "small.jsonl", fmt=formats.get("claude-code"))
    assert report.status == "imported" and report.added_messages == TURNS * 5
    assert len(forks) == 2
    for pid in forks:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_a_file_asked_for_ahead_and_then_not_read_from_its_start_is_passed_over(project, tmp_path, forks):
    # A folder's next file is parsed while the one before is stored (child.expect); when the writer
    # asks for another file instead, the answers for the one asked ahead are read past, unused.
    from contextviewer.ingest.sources import parse_of

    folder = _folder(tmp_path, ["a", "b", "c"])
    fmt = formats.get("claude-code")
    with child.parsing() as process:
        process.expect([(fmt.name, parse_of(folder / name, None, None)) for name in ("a.jsonl", "b.jsonl")])
        first = ingest.import_file(project, folder / "a.jsonl", fmt=fmt)
        assert process.asked_ahead is not None
        other = ingest.import_file(project, folder / "c.jsonl", fmt=fmt)
        last = ingest.import_file(project, folder / "b.jsonl", fmt=fmt)
    assert [r.added_messages for r in (first, other, last)] == [TURNS * 5] * 3
    assert {c.external_id for c in Conversation.objects.all()} == {f"aaaaaaaa-0000-4000-8000-{i:012d}" for i in range(3)}
    assert len(forks) == 1
