#!/usr/bin/env python
import os
import sys


def _exit(code: int) -> None:
    """End the process without the interpreter's teardown, which frees every object one by one
    (after an import of a 3 MB session: the tokenizer's tables and the parsed records, 0.4-0.6 s)
    for memory the system takes back at once. Everything the teardown would do that matters is
    done first: the database connections are closed (SQLite checkpoints its WAL), the exit
    handlers run (logging flushes), the output is flushed. With other (not daemon) threads still running,
    the interpreter waits for them as usual; only the walk over the heap is skipped (gc.freeze)."""
    import atexit
    import gc
    import threading

    if "django.db" in sys.modules:
        from django.db import connections

        connections.close_all()
    gc.freeze()
    main = threading.main_thread()
    if any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _start_import(argv: list[str]) -> None:
    """`manage.py import PATH...` (run here, not --queue): fork the import's parsing process before
    Django loads, so it loads the tokenizer and the parsers on the other core meanwhile
    (contextviewer/ingest/early.py), and collect no garbage while the modules load (the command
    turns collection back on when it starts: 30 ms of Django's 0.2 s set-up are collections that
    find nothing)."""
    if len(argv) < 3 or argv[1] != "import" or {"-h", "--help", "--queue", "--version"} & set(argv[2:]):
        return
    import gc

    gc.disable()
    try:
        import importlib

        importlib.import_module(os.environ["DJANGO_SETTINGS_MODULE"])  # the tokenizer's cache folder, for both
    except Exception:  # Django says what is wrong with the settings, as for any command
        return
    from contextviewer.ingest import early

    early.fork_parsing([a for a in argv[2:] if not a.startswith("-")], _serve_early)


def _serve_early(*args) -> None:
    """What the process forked early runs (in it, after the fork): child.py's parsing loop."""
    from contextviewer.ingest import child

    child.serve_early(*args)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
    _start_import(sys.argv)
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except SystemExit as stop:
        code = stop.code
        if code is not None and not isinstance(code, int):
            raise  # sys.exit("message"): printed by the interpreter as usual
        _exit(code or 0)
        raise
    _exit(0)


if __name__ == "__main__":
    main()
