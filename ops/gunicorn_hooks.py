"""gunicorn's server hooks for the web server (`-c python:ops.gunicorn_hooks`, ops/webserver.py).

A worker asked to stop (SIGTERM: `serve` stopping, a deploy) ends the held requests of live pages
at once (conversations/changes.STOPPING) instead of letting them wait out their 20 s, then stops
as gunicorn does: every other request gets the graceful timeout to end."""

from __future__ import annotations

import signal


def post_worker_init(worker) -> None:
    from contextviewer.conversations import changes  # lazy: Django is set up in the worker by now

    stop = worker.handle_exit

    def handle_exit(sig, frame):
        changes.STOPPING.set()
        stop(sig, frame)

    signal.signal(signal.SIGTERM, handle_exit)
