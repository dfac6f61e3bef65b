"""`manage.py watch` as a process, for tests, on the test database (like tests/worker.py's worker)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings

from tests.worker import ROOT, worker_env


class WatchProcess:
    def __init__(self, *folders: Path, project: str, env: dict | None = None):
        self.log = Path(settings.DATA_DIR) / f"watch-{os.getpid()}-{time.time_ns()}.log"
        cmd = [sys.executable, str(ROOT / "manage.py"), "watch", *map(str, folders), "--project", project]
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env={**worker_env(), **(env or {})}, stdout=open(self.log, "wb"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait_ready()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"watch exited: {self.output()[-3000:]}")
            if b"watching " in self.log.read_bytes():
                return
            time.sleep(0.05)
        raise RuntimeError(f"watch not ready after {timeout}s: {self.output()[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
