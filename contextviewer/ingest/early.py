"""The import's parsing process, forked first thing by `manage.py import` (before Django loads).

Setting Django up takes a command about 0.2 s of one core; loading the o200k tokenizer takes 0.15 s
and a file's parser module a few ms more, and a thread doing it beside Django's set-up only takes
turns with it (both hold the GIL). So `manage.py import FILE` forks its parsing process (child.py)
before anything else: that process loads the tokenizer and the parsers of the named files on the
other core while this one sets Django up and opens the job, and it counts the tokens of what it
parses (tokens.defer_preload: this process loads the encoding only if it counts itself).
``child.ParsingProcess`` takes the process over (``take``) when the import's first file is parsed;
one never taken (the import failed first, the file was unchanged) is killed at exit.

This module imports only the standard library: it runs before anything else is imported.
"""

from __future__ import annotations

import atexit
import contextlib
import mmap
import os
import signal
from collections.abc import Callable
from typing import NamedTuple

# The shared memory the parsing process writes its tally into (crash.Tally: 16 bytes), and one byte
# more: 1 once the writer's process has the encoding loaded, so the parsing process may leave a
# batch for it to count (child._answer); 0 meanwhile, and the parsing process counts everything.
TALLY_BYTES = 16
WRITER_COUNTS = TALLY_BYTES
SHARED_BYTES = TALLY_BYTES + 1


class Started(NamedTuple):
    pid: int
    asks: int  # the pipe's write end: what to parse
    answers: int  # the pipe's read end: the prepared records
    shared: mmap.mmap


_started: Started | None = None


def fork_parsing(paths: list[str], serve: Callable[[int, int, mmap.mmap, list[str]], None]) -> None:
    """Fork the parsing process now; it runs ``serve(asks, answers, shared, paths)`` (child.py's
    ``serve_early``, handed in by the command so this module stays below child.py): it loads the
    tokenizer and the parsers of ``paths`` (the files or folders named on the command line) while
    it waits for the first file to parse."""
    global _started
    if _started is not None or not hasattr(os, "fork"):
        return
    shared = mmap.mmap(-1, SHARED_BYTES)
    ask_read, ask_write = os.pipe()
    answer_read, answer_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP):
                if signal.getsignal(sig) is not signal.SIG_IGN:  # what the command ignores, it ignores too
                    signal.signal(sig, signal.SIG_DFL)  # Ctrl-C ends it quietly; the command says what happened
            os.close(ask_write)
            os.close(answer_read)
            devnull = os.open(os.devnull, os.O_RDWR)  # the caller's stdin and stdout are not held open
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            serve(ask_read, answer_write, shared, paths)
            code = 0
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(ask_read)
    os.close(answer_write)
    _started = Started(pid, ask_write, answer_read, shared)
    atexit.register(discard)
    from contextviewer.core import tokens  # lazy: after the fork; before it this module loads only the standard library

    tokens.defer_preload()  # the forked process counts: no thread here takes turns with Django's set-up


def take() -> Started | None:
    """The process forked at the start (once): the caller now owns it, its pipes and its end."""
    global _started
    started, _started = _started, None
    return started


def discard() -> None:
    """End the forked process if nothing took it (the import ended before its first file)."""
    started = take()
    if started is None:
        return
    with contextlib.suppress(OSError):
        os.close(started.asks)
    with contextlib.suppress(OSError):
        os.close(started.answers)
    with contextlib.suppress(ProcessLookupError):
        os.kill(started.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(started.pid, 0)
