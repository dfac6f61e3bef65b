#!/usr/bin/env python
import os
import sys


def _release() -> None:
    """Before the interpreter's own teardown: close this thread's database connections (SQLite
    checkpoints its WAL then), and freeze what is left so the teardown does not walk every object
    the command made (the tokenizer's tables, parsed records): measured 0.4-0.6 s after an import of
    a 3 MB session, for memory the system frees at exit anyway."""
    import gc

    if "django.db" in sys.modules:
        from django.db import connections

        connections.close_all()
    gc.freeze()


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    finally:
        _release()


if __name__ == "__main__":
    main()
