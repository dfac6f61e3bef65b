"""A real Celery worker process for tests, against the test database and the configured broker."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import socket

import psutil

from django.conf import settings
from django.db import connection

from ops import webserver

ROOT = Path(__file__).resolve().parent.parent


def worker_env() -> dict:
    env = dict(os.environ)
    db = connection.settings_dict
    if settings.IS_SQLITE:
        env["CONTEXTVIEWER_SQLITE_PATH"] = str(db["NAME"])
        env["DATABASE_URL"] = ""
    else:
        auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
        env["DATABASE_URL"] = f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env["CONTEXTVIEWER_DATA_DIR"] = str(settings.DATA_DIR)
    # Limits a test lowered with the settings fixture reach the worker too.
    env["CONTEXTVIEWER_MAX_LINE_BYTES"] = str(settings.MAX_LINE_BYTES)
    env["CONTEXTVIEWER_MAX_DECOMPRESSED_BYTES"] = str(settings.MAX_DECOMPRESSED_BYTES)
    env["CONTEXTVIEWER_MAX_UPLOAD_BYTES"] = str(settings.MAX_UPLOAD_BYTES)
    return env


def purge_broker() -> None:
    """Messages left by an earlier test run must not reach this run's worker."""
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        for sub in ("queue", "processed"):
            folder = Path(settings.BROKER_DIR) / sub
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True, exist_ok=True)
    else:
        from contextviewer.celery import app

        with app.connection_for_write() as conn:
            conn.default_channel.client.flushdb()


class Worker:
    def __init__(self, concurrency: int = 1, env: dict | None = None):
        self.log = Path(settings.DATA_DIR) / f"worker-{os.getpid()}-{time.time_ns()}.log"
        cmd = [sys.executable, "-m", "celery", "-A", "contextviewer", "worker", "--loglevel", "INFO",
               "--concurrency", str(concurrency), "--without-gossip", "--without-mingle", "--without-heartbeat"]
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env={**worker_env(), **(env or {})}, stdout=open(self.log, "wb"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited: {self.log.read_text()[-3000:]}")
            if b"ready." in self.log.read_bytes():
                return
            time.sleep(0.1)
        raise RuntimeError(f"worker not ready after {timeout}s: {self.log.read_text()[-3000:]}")

    def tail(self, lines: int = 60) -> str:
        """The end of the worker's log, and which of its processes still run: for a failure message."""
        try:
            procs = [self.proc.pid] + [c.pid for c in psutil.Process(self.proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            procs = []
        text = self.log.read_text(errors="replace").splitlines()[-lines:]
        return f"worker processes alive: {procs}\n--- worker log ---\n" + "\n".join(text)

    def kill(self) -> None:
        """kill -9 of the worker and its pool processes, as a crash would."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM to the worker alone, as `serve` stops it: it stops its pool itself, letting a
        running task end (a SIGTERM to its whole group killed the pool processes under it, and the
        worker then hung at times until the SIGKILL 30 s later); then SIGKILL to what is left."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.kill()


def job_state(jobs, worker: Worker) -> str:
    """For a failure message: the jobs' rows, the filesystem broker's queue folder and the worker's end."""
    rows = list(jobs.values("pk", "kind", "status", "worker_id", "attempts", "heartbeat_at", "error"))
    queued = sorted(p.name for p in (Path(settings.BROKER_DIR) / "queue").glob("*")) \
        if settings.CELERY_BROKER_URL.startswith("filesystem://") else "-"
    return f"jobs: {rows}\nbroker queue folder: {queued}\n{worker.tail()}"


def wait_for(predicate, timeout: float = 60, interval: float = 0.05, message: str = "condition", describe=None):
    """The predicate's first true value; on timeout an AssertionError that says what was waited
    for and, when ``describe`` is given, what it returns (the state that did not change)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    said = f"\n{describe()}" if describe else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {message}{said}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(port: int, log: Path) -> subprocess.Popen:
    """The default web server (one process, 4 threads) on the test database, up and answering."""
    env = {**worker_env(), "CONTEXTVIEWER_WEB_WORKERS": "1"}
    proc = subprocess.Popen(webserver.gunicorn_command("127.0.0.1", port, workers=1, threads=4), cwd=ROOT, env=env,
                            stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True)

    def up():
        if proc.poll() is not None:
            raise AssertionError(f"gunicorn exited: {log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    wait_for(up, timeout=90, interval=0.1, message="gunicorn")
    return proc
