"""`contextviewer`: the command an installed copy puts on PATH (`pipx install .`, or pip with a wheel
built from the clone: docs/configuration.md#installed-with-pipx), and what a clone's manage.py runs.

Every subcommand is a manage.py command of the same name, run as manage.py runs it: `contextviewer
serve`, `worker`, `import`, `watch`, `push`, `usage`, `agents`, and any other (`migrate`,
`createsuperuser`, `changepassword` ...). `contextviewer` alone, or with --help, lists the main ones.

This module imports only the standard library before Django: `contextviewer import` forks its
parsing process first of all (contextviewer/ingest/early.py), as manage.py does.
"""

from __future__ import annotations

import os
import sys

# The commands a person runs most, with what each is for (the order they are listed in). Those this
# copy does not have yet are left out of the list, and Django says "Unknown command" when one is run.
MAIN_COMMANDS = {
    "serve": "the web server and one worker (migrates first; prints the admin password on first start)",
    "worker": "a worker alone, beside a web server started elsewhere",
    "import": "import session logs (files, folders, .zip, .gz) into a project",
    "watch": "import what the agents write in folders (or `auto`) as they write it",
    "push": "send this machine's sessions to a team's server",
    "usage": "tokens and spend across sessions, by day, agent, model and person",
    "agents": "run the agent CLIs offline and check every figure against what they sent",
}


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
    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _start_import(argv: list[str]) -> None:
    """`import PATH...` (run here, not --queue): fork the import's parsing process before Django
    loads, so it loads the tokenizer and the parsers on the other core meanwhile
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
    from contextviewer.ingest import early  # lazy: standard library only, and only for an import

    early.fork_parsing([a for a in argv[2:] if not a.startswith("-")], _serve_early)


def _serve_early(*args) -> None:
    """What the process forked early runs (in it, after the fork): child.py's parsing loop."""
    from contextviewer.ingest import child  # lazy: loads the tokenizer and the parsers, in the forked process only

    child.serve_early(*args)


def _main_help(prog: str) -> str:
    import django
    from django.core.management import get_commands

    django.setup()  # (once: the command below finds it done)
    have = get_commands()  # names only: no command module is imported
    width = max(map(len, MAIN_COMMANDS))
    lines = [f"usage: {prog} <command> [options]", "", "The main commands (`help <command>` for one's options):"]
    lines += [f"  {name:<{width}}  {what}" for name, what in MAIN_COMMANDS.items() if name in have]
    lines += ["", "Every other command below works too (migrate, createsuperuser, changepassword ...):"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
    _start_import(argv)
    from django.core.management import ManagementUtility

    utility = ManagementUtility(argv)
    if os.path.basename(argv[0]) == "__main__.py":  # Django would say `python -m django`
        utility.prog_name = f"{os.path.basename(sys.executable)} -m contextviewer"
    try:
        if len(argv) < 2 or argv[1:] in (["-h"], ["--help"], ["help"]):
            sys.stdout.write(_main_help(utility.prog_name))
        utility.execute()
    except SystemExit as stop:
        code = stop.code
        if code is not None and not isinstance(code, int):
            raise  # sys.exit("message"): printed by the interpreter as usual
        _exit(code or 0)
        raise
    _exit(0)
