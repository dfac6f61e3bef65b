"""The import's parsing process: a crash of a parser fails one file, never the import or the worker.

An importer is pure Python, but it runs C code (msgpack, sqlite3, json, zlib, tiktoken) on files
nobody checked. A segmentation fault, an abort or the out-of-memory killer in the worker would end
the whole job (and, through the retries, every run of it). So every file of an import is parsed in
a child process:

- ``parsing()`` opens the import's parsing process (``import_path`` and the import job hold one):
  forked once, at the first file, it parses the files in turn as the writer asks for them and
  sends their records back prepared (prepare.py's frames). After a crash the next file forks a
  new one. A writer that stops in the middle of a file (an error, a cancelled job) ends it.
- ``Tally`` counts the records a parse yielded, and the line of the last one, in memory the two
  processes share, so the writer can say where a parser died: ``ImporterCrashed``.
- `manage.py import` forks its parsing process first thing, before Django loads (early.py,
  ``serve_early``): it loads the tokenizer and the named files' parsers on the other core meanwhile,
  and ``ParsingProcess`` takes it over. It counts the tokens of every batch until the writer's
  process has the encoding too (a byte of the shared memory says so; the writer loads it only for
  a large file), then leaves a batch to the writer when the writer waits, as a process forked here.

A file whose parser crashed stores nothing (its transaction is rolled back whole, the records read
before the crash included) and is reported failed with the record and line; the import goes on
with the next file. Outside ``parsing()`` (``import_file`` called alone) a large file is parsed in
a process of its own (prepare.py), a small one on a thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import pickle
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from contextviewer.core import tokens as token_core
from contextviewer.importers import formats
from contextviewer.importers.formats import ParseInput
from contextviewer.importers.lines import open_stream
from contextviewer.ingest import early, prepare
from contextviewer.ingest.crash import ImporterCrashed, Tally, ending  # noqa: F401 - child.ImporterCrashed, child.Tally as before

# -- the import's parsing process -----------------------------------------------------------------

_local = threading.local()


@contextlib.contextmanager
def parsing() -> Iterator[ParsingProcess]:
    """The import's parsing process for the files imported inside (one is shared when nested)."""
    current = getattr(_local, "process", None)
    if current is not None:
        yield current
        return
    process = _local.process = ParsingProcess()
    try:
        yield process
    finally:
        _local.process = None
        process.stop()


def current() -> ParsingProcess | None:
    return getattr(_local, "process", None)


def parse_spec(source: ParseInput) -> dict:
    """What the parsing process needs to open and read a file itself (everything but the stream)."""
    return {f.name: getattr(source, f.name) for f in dataclasses.fields(source) if f.name != "stream"}


class ParsingProcess:
    """A forked process that parses the files it is sent, one at a time (see the module docstring)."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.tally = Tally()
        self.forks = 0
        # Files the writer will likely ask for next, in order (``expect``), and the one asked ahead:
        # the process parses it while the writer stores the file before (see ``_ask_ahead``).
        self.expected: dict[tuple, tuple] = {}
        self.asked_ahead: tuple | None = None
        started = early.take()  # `manage.py import`: the process forked at its start, loading meanwhile
        self.early = started is not None
        if started is not None:
            self.tally = _tally_on(started.shared)
            self.pid, self.forks = started.pid, 1
            self.asks = open(started.asks, "wb")  # noqa: SIM115 - closed in stop()
            self.answers = open(started.answers, "rb", buffering=1 << 20)  # noqa: SIM115 - closed in stop()

    def _writer_counts(self) -> None:
        """Tell a process forked early that this one has the encoding now (see the module docstring)."""
        if len(self.tally.map) > early.WRITER_COUNTS:
            self.tally.map[early.WRITER_COUNTS] = 1

    def _start(self) -> None:
        self.early = False
        token_core.get_encoding()  # loaded before the fork, so the child never loads it
        self._writer_counts()
        ask_read, ask_write = os.pipe()
        answer_read, answer_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(ask_write)
            os.close(answer_read)
            _serve(ask_read, answer_write, self.tally)
        os.close(ask_read)
        os.close(answer_write)
        self.pid, self.forks = pid, self.forks + 1
        self.asks = open(ask_write, "wb")  # noqa: SIM115 - closed in stop()
        self.answers = open(answer_read, "rb", buffering=1 << 20)  # noqa: SIM115 - closed in stop()

    def parse(self, fmt_name: str, source: ParseInput) -> Iterator:
        """The prepared records of one file (PreparedMessage for messages, other records as they
        are), parsed in the process. Raises ImporterCrashed when the process dies meanwhile."""
        key = _key(fmt_name, source)
        if self.asked_ahead is not None and self.asked_ahead != key:
            self._skip_ahead()
        if self.pid is None:
            self._start()
        elif token_core.loaded():
            self._writer_counts()
        elif _size(source.path) >= WRITER_PRELOADS_BYTES:  # a large file: the writer's help pays
            token_core.preload_encoding(force=True, then=self._writer_counts)
        if self.asked_ahead == key:  # asked while the file before was stored: its answers come first
            self.asked_ahead = None
        else:
            self.tally.reset()
            try:
                self._ask(fmt_name, source)
            except BrokenPipeError:  # it ended before it was asked anything (one forked early, signalled): a new one
                self._reap()
                self._start()
                self._ask(fmt_name, source)
        self._ask_ahead(key)
        frames = prepare._ahead(_answers(self.answers), depth=8)
        whole = False  # the process answered the whole file (its records, or the parser's error)
        try:
            for batch in frames:
                yield from batch
            whole = True
        except prepare.PrepareProcessError:
            status = self._reap()
            raise ImporterCrashed(status, *self.tally.read()) from None
        except _ParserRaised as said:  # the process said so, and waits for the next file
            whole = True
            raise said.error from None
        finally:
            if not whole and self.pid is not None:
                _kill(self.pid)  # the writer stopped in the middle of the file: the rest is not wanted
            frames.close()
            if not whole:
                self.stop()

    def _ask(self, fmt_name: str, source: ParseInput) -> None:
        _write_frame(self.asks, (fmt_name, parse_spec(source)))
        self.asks.flush()

    def expect(self, files: list[tuple[str, ParseInput]]) -> None:
        """The files (format name, what its parse is given) the writer will likely ask for, in this
        order: each is asked for as the one before it is (``_ask_ahead``). A file asked for otherwise
        (read from where the last import stopped, or not at all) costs only its parse, thrown away."""
        keys = [_key(fmt_name, source) for fmt_name, source in files]
        self.expected = {key: (next_key, files[n + 1]) for n, (key, next_key) in enumerate(zip(keys, keys[1:]))}

    def _ask_ahead(self, key: tuple) -> None:
        """Ask for the file expected after ``key`` now: a folder's small files are parsed on the
        other core while the writer stores the one before, not between them."""
        following = self.expected.pop(key, None)
        if following is None or self.pid is None:
            return
        next_key, (fmt_name, source) = following
        try:
            self._ask(fmt_name, source)
        except BrokenPipeError:  # it has ended: the next parse starts a new one
            return
        self.asked_ahead = next_key

    def _skip_ahead(self) -> None:
        """Read past the answers to a file asked ahead and not wanted now."""
        self.asked_ahead = None
        try:
            _skip(self.answers)
        except prepare.PrepareProcessError:  # it died on that file: the next one starts a new process
            self._reap()

    def _reap(self) -> int:
        self.asked_ahead = None
        pid, self.pid = self.pid, None
        _, status = os.waitpid(pid, 0)
        self._close_pipes()
        return status

    def _close_pipes(self) -> None:
        for pipe in (self.asks, self.answers):
            with contextlib.suppress(OSError):
                pipe.close()

    def stop(self) -> None:
        self.asked_ahead = None
        if self.pid is None:
            return
        _kill(self.pid)
        if self.early:
            # The command ends with its import: the process's end (the system freeing the
            # tokenizer's tables, 5-10 ms) is waited for on a thread, beside the job's last writes.
            pid, self.pid = self.pid, None
            self._close_pipes()
            threading.Thread(target=_wait, args=(pid,), name="reap-parsing", daemon=True).start()
            return
        self._reap()


def _wait(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


# A process forked early counts every batch of a smaller file itself; for a file this large, the
# writer's process loads the encoding too (0.15 s, on a thread) and counts a batch when it waits.
WRITER_PRELOADS_BYTES = 4 << 20


def _size(path) -> int:
    try:
        return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0


def _tally_on(shared) -> Tally:
    """A Tally over shared memory mapped before the fork (early.py)."""
    tally = Tally.__new__(Tally)
    tally.map = shared
    return tally


class _ParserRaised(Exception):
    def __init__(self, error: BaseException):
        self.error = error


def _file_frames(pipe) -> Iterator[tuple]:
    """One file's frames from the process, (kind, payload), to its last (done, or the parser's error)."""
    while True:
        header = pipe.read(prepare._FRAME.size)
        (size,) = prepare._FRAME.unpack(header) if len(header) == prepare._FRAME.size else (-1,)
        data = pipe.read(size) if size >= 0 else b""
        if size < 0 or len(data) < size:
            raise prepare.PrepareProcessError("the import's parsing process stopped unexpectedly")
        kind, payload = pickle.loads(data)
        yield kind, payload
        if kind in (prepare._DONE, prepare._ERROR):
            return


def _answers(pipe) -> Iterator[list]:
    """A file's batches from the process, finished here (prepare._frames, with the parser's own
    error told apart from a failure on this side, after which the process is not used again)."""
    for kind, payload in _file_frames(pipe):
        if kind == prepare._DONE:
            return
        if kind == prepare._ERROR:
            raise _ParserRaised(payload)
        yield prepare._finish(payload)


def _key(fmt_name: str, source: ParseInput) -> tuple:
    spec = parse_spec(source)
    return (fmt_name, *(spec[name] for name in sorted(spec)))


def _skip(pipe) -> None:
    """Read one file's answers to their end (its records, or the parser's error), unused."""
    for _frame in _file_frames(pipe):
        pass


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _write_frame(pipe, payload) -> None:
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(prepare._FRAME.pack(len(data)))
    pipe.write(data)


def serve_early(ask_fd: int, answer_fd: int, shared, paths: list[str]) -> None:
    """The process `manage.py import` forks first thing (early.py): load the encoding and the
    parsers of the named files (the formats that claim them) while the writer's process sets Django
    up, then parse the files it is sent (``_serve``). Never returns."""
    token_core.get_encoding()
    for path in paths:
        with contextlib.suppress(Exception):  # what cannot be read here fails, with its message, when parsed
            if os.path.isfile(path):
                formats.claim(Path(path))
    gc.freeze()  # what was loaded stays: no collection scans it again
    gc.enable()  # manage.py turns collection off while it starts
    _serve(ask_fd, answer_fd, _tally_on(shared))


def _serve(ask_fd: int, answer_fd: int, tally: Tally) -> None:
    """The child: parse each file asked for and answer with its frames, until the asks end."""
    code = 0
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1):
            signal.signal(sig, signal.SIG_DFL)
        asks = open(ask_fd, "rb")  # noqa: SIM115 - the process ends with os._exit
        answers = open(answer_fd, "wb", buffering=1 << 20)  # noqa: SIM115
        while True:
            header = asks.read(prepare._FRAME.size)
            if len(header) < prepare._FRAME.size:
                break  # the writer's process is done with it
            fmt_name, spec = pickle.loads(asks.read(prepare._FRAME.unpack(header)[0]))
            try:
                _answer(fmt_name, spec, tally, answers)
            except BrokenPipeError:
                raise
            except BaseException as exc:  # the writer raises it in its own process
                try:
                    _write_frame(answers, (prepare._ERROR, exc))
                except Exception:
                    _write_frame(answers, (prepare._ERROR, RuntimeError(f"{exc.__class__.__name__}: {exc}")))
            answers.flush()
    except BaseException:  # a broken pipe: the writer has gone
        code = 1
    finally:
        os._exit(code)


def _answer(fmt_name: str, spec: dict, tally: Tally, answers) -> None:
    fmt = formats.get(fmt_name)
    path = spec["path"]
    stream = None
    if fmt.storage in (formats.LINES, formats.DOCUMENT) and not path.is_dir():
        stream, _ = open_stream(path, max_decompressed_bytes=spec["max_decompressed_bytes"])
    try:
        if stream is not None and spec["start_offset"]:
            stream.seek(spec["start_offset"])
        records = tally.counting(fmt.parse(ParseInput(stream=stream, **spec)))
        # As prepare._child: when the writer's process took the last batch at once (it waits), it
        # counts the next one's tokens itself; when it was busy, this process counts them.
        # A process forked early (a Tally with one byte more) leaves nothing to a writer that has no
        # encoding loaded (early.py).
        writer_counts = len(tally.map) <= early.WRITER_COUNTS or tally.map[early.WRITER_COUNTS] == 1
        writer_waits = False
        for flat in prepare._batches(records, stage=lambda batch: prepare._count(batch, count=False)):
            started = time.monotonic()
            _write_frame(answers, (prepare._BATCH, flat if writer_waits else prepare._counted(flat)))
            answers.flush()
            if not writer_counts:
                writer_counts = tally.map[early.WRITER_COUNTS] == 1
            writer_waits = writer_counts and time.monotonic() - started < prepare.WRITER_WAITS_SECONDS
    finally:
        if stream is not None:
            stream.close()
    _write_frame(answers, (prepare._DONE, None))
