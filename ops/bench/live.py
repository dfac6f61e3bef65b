"""`python manage.py bench live [--pages 20] [--rounds 5]`: how soon what an agent writes is on the
open pages, with `manage.py serve` as a user runs it (web server, worker and the watcher of
CONTEXTVIEWER_WATCH) on a scratch embedded default.

1. A new session: a Claude Code session file written at once into the watched folder; the time until
   the read API (`/api/conversations`, signed in) lists it: what an index or a page would show.
2. An appended turn: `--pages` readers each hold the conversation's live request open, as its open
   page does (`/c/<id>/live/` with `hold=1`, answered when the import commits, viewer/live.py);
   a turn (a prompt and a reply) is appended to the file; the time from the append until each
   reader has the answer with the new turn. `--rounds` appends, one after the other.

It prints p50, p95 and the slowest of each, the errors, and the load average before and after.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import TextIO

from django.conf import settings

from ops.bench import load as bench_load

MODEL = "claude-opus-4-6"
PROJECT_FOLDER = "-home-dev-live"


def _lines(session_id: str, turn: int, parent: str | None) -> tuple[list[str], str]:
    """One turn of a Claude Code session: the user's prompt and the reply, with a usage."""
    ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    user_id, reply_id = str(uuid.uuid4()), str(uuid.uuid4())
    base = {"sessionId": session_id, "cwd": "/home/dev/live", "version": "2.1.332", "isSidechain": False, "userType": "external"}
    user = {**base, "type": "user", "uuid": user_id, "parentUuid": parent, "timestamp": ts,
            "message": {"role": "user", "content": f"Round {turn}: add the next test to tests/test_live_{turn}.py"}}
    reply = {**base, "type": "assistant", "uuid": reply_id, "parentUuid": user_id, "timestamp": ts,
             "message": {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": MODEL,
                         "content": [{"type": "text", "text": f"Added test_live_{turn} and it passes."}],
                         "stop_reason": "end_turn",
                         "usage": {"input_tokens": 12, "cache_creation_input_tokens": 0,
                                   "cache_read_input_tokens": 20_000 + 150 * turn, "output_tokens": 40}}}
    return [json.dumps(user), json.dumps(reply)], reply_id


def _get(port: int, path: str, cookie: str, timeout: float = 60.0) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Cookie": cookie, "HX-Request": "true"})
        r = conn.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


def _pos(html: str) -> int | None:
    found = re.search(r'hx-vals="\{&quot;pos&quot;: (-?\d+)', html)
    return int(found.group(1)) if found else None


class Reader(threading.Thread):
    """One open page: holds the live request, notes when each answer with something new came."""

    def __init__(self, port: int, conversation: int, cookie: str, pos: int):
        super().__init__(daemon=True)
        self.port, self.conversation, self.cookie, self.pos = port, conversation, cookie, pos
        self.arrivals: list[float] = []
        self.errors = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                status, html = _get(self.port, f"/c/{self.conversation}/live/?pos={self.pos}&append=1&hold=1", self.cookie)
            except OSError:
                self.errors += 1
                time.sleep(0.2)
                continue
            if status == 200 and (pos := _pos(html)) is not None and pos != self.pos:
                self.arrivals.append(time.monotonic())
                self.pos = pos
            elif status not in (200, 204):
                self.errors += 1
                time.sleep(0.2)


def _quantiles(values: list[float]) -> str:
    if not values:
        return "none"
    v = sorted(values)
    q = [v[min(len(v) - 1, max(0, round(p * len(v)) - 1))] for p in (0.5, 0.95)]
    return f"p50 {1000 * q[0]:.0f} ms, p95 {1000 * q[1]:.0f} ms, slowest {1000 * v[-1]:.0f} ms ({len(v)} answers)"


_READER = r"""
import json, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
import django
django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from contextviewer.accounts.models import Membership, Role
from contextviewer.accounts.services import default_project, ensure_admin
call_command("migrate", verbosity=0)
admin, _ = ensure_admin()
project = default_project(owner=admin)
user = get_user_model().objects.create_user("reader", password=None)
Membership.objects.create(project=project, user=user, role=Role.VIEWER)
client = Client()
client.force_login(user)
print(json.dumps({"cookie": "; ".join(f"{k}={m.value}" for k, m in client.cookies.items())}))
"""


def _serve(work: Path, env: dict, port: int) -> subprocess.Popen:
    log = open(work / "serve.log", "w")  # noqa: SIM115 - closed with the process
    manage = str(Path(settings.BASE_DIR) / "manage.py")
    return subprocess.Popen([sys.executable, manage, "serve", "--port", str(port)], env=env, cwd=str(settings.BASE_DIR),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _listed(port: int, cookie: str, session_id: str) -> int | None:
    status, body = _get(port, "/api/conversations?limit=5", cookie, timeout=10)
    if status != 200:
        return None
    for item in json.loads(body).get("items", []):
        if session_id in json.dumps(item):
            return int(item["id"])
    return None


def _new_sessions(out: TextIO, folder: Path, port: int, cookie: str, count: int = 3) -> tuple[int, str, str, Path]:
    """`count` new sessions, one after the other: the time until each is listed; the last one's ids."""
    waits, made = [], None
    for _ in range(count):
        made = _new_session(folder, port, cookie)
        waits.append(made[-1])
        time.sleep(0.5)
    out.write(f"a new session in the watched folder, listed by the API after: "
              f"{', '.join(f'{1000 * w:.0f}' for w in waits)} ms\n")
    return made[:4]


def _new_session(folder: Path, port: int, cookie: str) -> tuple[int, str, str, Path, float]:
    sid = str(uuid.uuid4())
    lines, parent = _lines(sid, 1, None)
    path = folder / f"{sid}.jsonl"
    tmp = folder.parent / f"{sid}.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    t0 = time.monotonic()
    os.replace(tmp, path)  # the file appears whole, as a session's first lines do
    conv = None
    while conv is None and time.monotonic() - t0 < 30:
        conv = _listed(port, cookie, sid)
        if conv is None:
            time.sleep(0.02)
    if conv is None:
        raise RuntimeError("the new session was not listed within 30 s (see serve.log)")
    return conv, sid, parent, path, time.monotonic() - t0


def run(out: TextIO | None = None, *, pages: int = 20, rounds: int = 5, keep: bool = False) -> dict:
    out = out or sys.stdout
    work = Path(tempfile.mkdtemp(prefix="cv-bench-live-"))
    folder = work / "projects" / PROJECT_FOLDER
    folder.mkdir(parents=True)
    env = bench_load.scratch_env(work / "data")
    port = bench_load.free_port()
    env.update({"CONTEXTVIEWER_WATCH": str(folder.parent), "CONTEXTVIEWER_PORT": str(port)})
    out.write(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    done = subprocess.run([sys.executable, "-c", _READER], env=env, cwd=str(settings.BASE_DIR), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("preparing the scratch database failed:\n" + done.stderr[-3000:])
    cookie = json.loads(done.stdout.strip().splitlines()[-1])["cookie"]
    proc = _serve(work, env, port)
    readers: list[Reader] = []
    try:
        bench_load.wait_ready(proc, port, work / "serve.log")
        time.sleep(3)  # the watcher and the worker start beside the web server
        conv, sid, parent, path = _new_sessions(out, folder, port, cookie)
        status, html = _get(port, f"/c/{conv}/live/?pos=-1&append=1", cookie)
        start = _pos(html)
        if status != 200 or start is None:
            raise RuntimeError(f"the conversation's live answer was {status}, not a live page's (is it live?)")
        readers = [Reader(port, conv, cookie, start) for _ in range(pages)]
        for r in readers:
            r.start()
        time.sleep(1.0)  # every reader's request is held
        waits: list[float] = []
        for turn in range(2, rounds + 2):
            lines, parent = _lines(sid, turn, parent)
            seen = [len(r.arrivals) for r in readers]
            t0 = time.monotonic()
            with open(path, "a", encoding="utf-8") as fh:
                fh.write("\n".join(lines) + "\n")
            deadline = t0 + 30
            while time.monotonic() < deadline and any(len(r.arrivals) == n for r, n in zip(readers, seen, strict=True)):
                time.sleep(0.01)
            waits += [r.arrivals[n] - t0 for r, n in zip(readers, seen, strict=True) if len(r.arrivals) > n]
            time.sleep(1.5)  # the import of a turn may come in two parts: let both land before the next
        errors = sum(r.errors for r in readers)
        out.write(f"a turn appended, on {pages} open pages (held requests): {_quantiles(waits)}, errors {errors}, "
                  f"{rounds * pages - len(waits)} answers missing after 30 s\n")
        return {"waits": waits, "errors": errors}
    finally:
        for r in readers:
            r.stop.set()
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
        out.write(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
        if keep:
            out.write(f"kept: {work}\n")
        else:
            shutil.rmtree(work, ignore_errors=True)
