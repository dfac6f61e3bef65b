"""`python manage.py bench load`: concurrent readers against the default web server.

What it does, all on this machine and nothing of your own data:
1. a scratch data folder (SQLite, cache, secret key) in a temporary directory;
2. in a child process on that folder: migrate, a reader account, a synthetic Claude Code session
   of --messages messages (contextviewer.importers.claude_code.synthetic) imported as usual;
3. the default web server (webserver.gunicorn_command, as `manage.py serve` starts it) on a free
   port of 127.0.0.1;
4. --clients threads, each a reader with its own keep-alive connection, asking one page after
   the other with no pause: the conversation page, a turn (the htmx fragment), a segment's turn
   headers, the index, a search. The run is bounded twice: it stops after --seconds, or after
   --requests requests in all, whichever comes first; each request gives up after 60 s.

It prints p50, p95 (milliseconds, every request of the run) and errors (a status other than 200,
a refused or broken connection, a timeout), then the same per page. The client threads share
the machine's cores with the server, as a browser on the same machine would.

With --during-import MB, a synthetic Claude Code session of that size is imported again and again
(`manage.py import`, each time into a new project, at the worker's CPU priority: nice
CONTEXTVIEWER_WORKER_NICE, 10 by default, as `manage.py serve` runs the worker) into the same
database for the whole of each run: readers while an import runs.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO
from urllib.parse import urlencode

from contextviewer.importers.claude_code import synthetic
from ops import webserver

PAGES = ("conversation", "turn", "segment", "index", "search")
# Words of the synthetic corpus (importers/claude_code/synthetic.py): a common one, rarer ones, a phrase.
SEARCHES = ("parser", "migration", "offset BOM", "réglages", "verbose flag")
REQUEST_TIMEOUT = 60.0
READY_TIMEOUT = 120.0


@dataclass
class Target:
    port: int
    conversation: int
    messages: int
    folds: int
    turns: list[int]
    segments: int
    cookie: str
    setup: dict = field(default_factory=dict)


@dataclass
class Result:
    clients: int
    seconds: float
    samples: list[tuple[str, float, bool]]  # (page, milliseconds, ok)
    failures: dict[str, int] = field(default_factory=dict)  # what went wrong -> how often
    server_cpu: float | None = None  # CPU seconds the server's processes used during the run
    client_cpu: float | None = None  # CPU seconds of this process (the readers) during the run

    @property
    def requests(self) -> int:
        return len(self.samples)

    @property
    def errors(self) -> int:
        return sum(1 for _, _, ok in self.samples if not ok)

    def quantile(self, q: float, page: str | None = None) -> float:
        values = sorted(ms for p, ms, _ in self.samples if page is None or p == page)
        if not values:
            return float("nan")
        # nearest rank: the smallest value with at least q of the samples at or below it
        rank = max(1, -(-int(q * 1000) * len(values) // 1000))
        return values[min(rank, len(values)) - 1]


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scratch_env(data_dir: Path) -> dict[str, str]:
    """The environment of the setup child and the server: the embedded default in `data_dir`."""
    from django.conf import settings

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTVIEWER_", "DJANGO_"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "contextviewer.settings",
            "CONTEXTVIEWER_DATA_DIR": str(data_dir),
            "DATABASE_URL": "",
            "REDIS_URL": "",
            "CELERY_BROKER_URL": "filesystem://",
            "TIKTOKEN_CACHE_DIR": str(settings.TIKTOKEN_CACHE_DIR),
        }
    )
    return env


def prepare(workdir: Path, messages: int, env: dict[str, str]) -> dict:
    """Migrate, an account and a synthetic conversation, in a child process on the scratch folder."""
    from django.conf import settings

    done = subprocess.run(
        [sys.executable, "-c", _SETUP, str(messages), str(workdir / "sessions")],
        env=env, cwd=str(settings.BASE_DIR), capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise RuntimeError("preparing the conversation failed:\n" + done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def start_server(port: int, env: dict[str, str], log: Path, workers: int | None, threads: int | None,
                 worker_class: str) -> subprocess.Popen:
    from django.conf import settings

    cmd = webserver.gunicorn_command("127.0.0.1", port, workers, threads, worker_class)
    with open(log, "ab") as fh:
        return subprocess.Popen(cmd, env=env, cwd=str(settings.BASE_DIR), stdout=fh, stderr=subprocess.STDOUT)


def wait_ready(proc: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server stopped (code {proc.returncode}):\n" + log.read_text(errors="replace")[-3000:])
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/login/")
            conn.getresponse().read()
            conn.close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the server did not answer within {READY_TIMEOUT:.0f} s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def server_cpu_seconds(proc: subprocess.Popen) -> float | None:
    """CPU time (user + system) of the server's master and its worker processes so far."""
    try:
        import psutil

        root = psutil.Process(proc.pid)
        total = 0.0
        for p in [root, *root.children(recursive=True)]:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
        return total
    except Exception:  # noqa: BLE001 - a figure to print, never a reason to fail the run
        return None


def request_for(target: Target, page: str, rng: random.Random) -> tuple[str, dict[str, str]]:
    """The path and headers of one page as a reader's browser asks for it."""
    c = target.conversation
    htmx = {"HX-Request": "true"}
    if page == "conversation":
        return f"/c/{c}/", {}
    if page == "turn":
        return f"/c/{c}/turns/{rng.choice(target.turns)}/", htmx
    if page == "segment":
        # unfolding an archived segment, or scrolling on in the loaded one
        index = rng.randrange(target.segments)
        path = f"/c/{c}/segments/{index}/"
        if index == target.segments - 1 and rng.random() < 0.5:
            path += f"?from={rng.choice(target.turns)}"
        return path, htmx
    if page == "index":
        return "/", {}
    return "/?" + urlencode({"q": rng.choice(SEARCHES)}), {}


def load(target: Target, clients: int, seconds: float, max_requests: int) -> Result:
    """`clients` readers for at most `seconds` and at most `max_requests` requests in all."""
    samples: list[tuple[str, float, bool]] = []
    failures: dict[str, int] = {}
    lock = threading.Lock()
    issued = 0
    start = time.monotonic()
    deadline = start + seconds

    def take() -> bool:
        nonlocal issued
        with lock:
            if issued >= max_requests or time.monotonic() >= deadline:
                return False
            issued += 1
            return True

    def reader(n: int) -> None:
        rng = random.Random(n)
        conn = http.client.HTTPConnection("127.0.0.1", target.port, timeout=REQUEST_TIMEOUT)
        i = n  # readers start at different pages
        mine = []
        why: list[str] = []
        while take():
            page = PAGES[i % len(PAGES)]
            i += 1
            path, headers = request_for(target, page, rng)
            t0 = time.perf_counter()
            ok = False
            try:
                conn.request("GET", path, headers={"Cookie": target.cookie, **headers})
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
                if not ok:
                    why.append(f"HTTP {response.status}")
                if response.will_close:
                    conn.close()
            except Exception as e:  # noqa: BLE001 - refused, reset, timed out, malformed: an error, and on
                why.append(type(e).__name__)
                conn.close()
            mine.append((page, (time.perf_counter() - t0) * 1000, ok))
        conn.close()
        with lock:
            samples.extend(mine)
            for w in why:
                failures[w] = failures.get(w, 0) + 1

    threads = [threading.Thread(target=reader, args=(n,), daemon=True) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + REQUEST_TIMEOUT + 5)
    return Result(clients, time.monotonic() - start, samples, failures)


class Importer:
    """Imports of one session, back to back, into the server's database until stopped."""

    def __init__(self, session: Path, env: dict[str, str], log: Path):
        self.session, self.env, self.log = session, env, log
        self.done: list[float] = []  # seconds each finished import took
        self.failed = 0
        self._stop = threading.Event()
        self._proc: subprocess.Popen | None = None
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        from django.conf import settings

        niceness = int(os.environ.get("CONTEXTVIEWER_WORKER_NICE", "10") or 0)
        nice = shutil.which("nice")
        prefix = [nice, "-n", str(niceness)] if niceness and nice else []
        while not self._stop.is_set():
            project = f"Import {time.time_ns()}"  # a new project: the same file is imported again
            cmd = [*prefix, sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "import", str(self.session), "--project", project]
            t0 = time.perf_counter()
            with open(self.log, "ab") as fh:
                self._proc = subprocess.Popen(cmd, env=self.env, cwd=str(settings.BASE_DIR), stdout=fh, stderr=subprocess.STDOUT)
                code = self._proc.wait()
            if self._stop.is_set():
                return
            if code == 0:
                self.done.append(time.perf_counter() - t0)
            else:
                self.failed += 1
                time.sleep(1)

    def stop(self) -> None:
        self._stop.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        self._thread.join(timeout=30)


def import_session(workdir: Path, mb: float) -> Path:
    """The synthetic session the imports read (written once per size, kept with the folder)."""
    folder = workdir / f"import-{mb:g}mb"
    found = sorted(folder.glob("*.jsonl")) if folder.exists() else []
    if found:
        return found[0]
    return synthetic.write_session(folder, target_bytes=int(mb * 1024 * 1024), seed=7)


def warm_up(target: Target) -> None:
    """A few requests of every page (not counted): imports, templates and caches of each process."""
    load(target, clients=2, seconds=60, max_requests=4 * len(PAGES))


def report(out: TextIO, result: Result, label: str = "") -> None:
    w = out.write
    rate = result.requests / result.seconds if result.seconds else 0.0
    w(f"{label}{result.clients} clients, {result.seconds:.1f} s, {result.requests} requests ({rate:.1f}/s)\n")
    why = ", ".join(f"{k} x{v}" for k, v in sorted(result.failures.items(), key=lambda kv: -kv[1]))
    w(f"{label}p50 {result.quantile(0.5):.0f} ms  p95 {result.quantile(0.95):.0f} ms  errors {result.errors}"
      + (f" ({why})" if why else "") + "\n")
    parts = []
    for page in PAGES:
        n = sum(1 for p, _, _ in result.samples if p == page)
        if n:
            parts.append(f"{page} {result.quantile(0.5, page):.0f}/{result.quantile(0.95, page):.0f}")
    w(f"{label}per page (p50/p95 ms): " + ", ".join(parts) + "\n")
    if result.server_cpu is not None and result.requests:
        w(f"{label}server CPU {1000 * result.server_cpu / result.requests:.0f} ms per request "
          f"({result.server_cpu / result.seconds:.2f} cores busy); readers' CPU "
          f"{1000 * (result.client_cpu or 0) / result.requests:.1f} ms per request\n")
    out.flush()


def run(out: TextIO | None = None, *, clients: int = 20, seconds: float = 30.0, messages: int = 41_000,
        max_requests: int | None = None, repeat: int = 1, workers: int | None = None, threads: int | None = None,
        worker_class: str = "gthread", keep: bool = False, reuse: str | None = None, port: int | None = None,
        during_import_mb: float | None = None) -> list[Result]:
    """`reuse`: a folder an earlier run kept (--keep), its conversation served again as it is.
    `port`: where the server listens (a free one when not given); a port in use is refused.
    `during_import_mb`: a session of that size imported back to back during each run."""
    out = out or sys.stdout
    max_requests = max_requests or clients * 500
    workdir, keep = _workdir(reuse, keep)
    data_dir = workdir / "data"
    data_dir.mkdir(exist_ok=True)
    env = scratch_env(data_dir)
    proc = None
    results: list[Result] = []
    try:
        port = port or free_port()
        if not port_is_free(port):
            raise RuntimeError(f"port {port} is in use: choose another with --port, or leave it out for a free one")
        setup, how = _conversation(workdir, reuse, messages, env)
        out.write(f"conversation: {setup['messages']:,} messages, {len(setup['all_turns'])} turns, "
                  f"{setup['folds']} folds, {setup['segments']} segments ({how}, {data_dir})\n")
        log = workdir / "server.log"
        proc = start_server(port, env, log, workers, threads, worker_class)
        wait_ready(proc, port, log)
        cmd = webserver.gunicorn_args("127.0.0.1", port, workers, threads, worker_class)
        out.write(f"server: gunicorn {' '.join(cmd[1:-2])} on {os.cpu_count()} cores "
                  f"(load average before: {os.getloadavg()[0]:.2f})\n")
        target = Target(port, setup["conversation"], setup["messages"], setup["folds"], setup["turns"],
                        setup["segments"], setup["cookie"], setup)
        session = None
        if during_import_mb:
            session = import_session(workdir, during_import_mb)
            out.write(f"during each run: {session.name} ({session.stat().st_size / 1e6:.0f} MB) imported back to back "
                      f"at nice {os.environ.get('CONTEXTVIEWER_WORKER_NICE', '10') or 0}\n")
        warm_up(target)
        for n in range(max(1, repeat)):
            importer = Importer(session, env, workdir / "imports.log") if session is not None else None
            label = f"run {n + 1}: " if repeat > 1 else ""
            results.append(_measured_run(out, target, proc, importer, clients, seconds, max_requests, label, workdir))
        if len(results) > 1:
            _report_spread(out, results)
    finally:
        if proc is not None:
            stop_server(proc)
        if keep:
            out.write(f"kept: {workdir}\n")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return results


def _workdir(reuse: str | None, keep: bool) -> tuple[Path, bool]:
    """The scratch folder and whether to keep it: a folder an earlier run kept (kept again), else a
    new temporary one."""
    if reuse:
        workdir = Path(reuse).resolve()
        if not (workdir / "setup.json").exists():
            raise RuntimeError(f"{workdir} is not a folder kept by `bench load --keep`")
        return workdir, True
    return Path(tempfile.mkdtemp(prefix="contextviewer-bench-load-")), keep


def _conversation(workdir: Path, reuse: str | None, messages: int, env: dict[str, str]) -> tuple[dict, str]:
    """The setup of the conversation served (setup.json) and how it came to be: kept from an earlier
    run (its database migrated to this code), else generated and imported now."""
    t0 = time.perf_counter()
    if reuse:
        setup = json.loads((workdir / "setup.json").read_text())
        from django.conf import settings

        subprocess.run([sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "migrate", "-v0"],
                       env=env, check=True)
        return setup, "kept from an earlier run"
    setup = prepare(workdir, messages, env)
    (workdir / "setup.json").write_text(json.dumps(setup))
    return setup, f"generated and imported in {time.perf_counter() - t0:.0f} s"


def _measured_run(out: TextIO, target: Target, proc: subprocess.Popen, importer: Importer | None, clients: int,
                  seconds: float, max_requests: int, label: str, workdir: Path) -> Result:
    """One run of the readers (with `importer`'s imports going on during it, if any), with the CPU
    the server and the readers spent, reported."""
    if importer is not None:
        importer.start()
        time.sleep(1.0)  # the import under way (its process started, the file being read)
    cpu0, own0 = server_cpu_seconds(proc), time.process_time()
    try:
        result = load(target, clients, seconds, max_requests)
    finally:
        if importer is not None:
            importer.stop()
    cpu1 = server_cpu_seconds(proc)
    result.client_cpu = time.process_time() - own0
    result.server_cpu = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
    report(out, result, label=label)
    if importer is not None:
        took = ", ".join(f"{t:.1f}" for t in importer.done) or "none finished"
        out.write(f"{label}imports finished during the run: {len(importer.done)} (s each: {took})"
                  + (f", {importer.failed} failed (see {workdir / 'imports.log'})" if importer.failed else "") + "\n")
    return result


def _report_spread(out: TextIO, results: list[Result]) -> None:
    """Over several runs: the best p50, p95 and errors, and the spread of p50 and p95."""
    p50s = sorted(r.quantile(0.5) for r in results)
    p95s = sorted(r.quantile(0.95) for r in results)
    out.write(f"best: p50 {p50s[0]:.0f} ms  p95 {p95s[0]:.0f} ms  errors {min(r.errors for r in results)}; "
              f"spread: p50 {p50s[0]:.0f} to {p50s[-1]:.0f} ms, p95 {p95s[0]:.0f} to {p95s[-1]:.0f} ms\n")


# Runs in a child process on the scratch data folder.
_SETUP = r"""
import json, os, sys, time
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
import django
django.setup()
from pathlib import Path
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from contextviewer.accounts.models import Membership, Role
from contextviewer.accounts.services import get_or_create_project
from contextviewer.ingest import files as ingest
from contextviewer.conversations import segments
from contextviewer.conversations.models import Conversation, Message
from contextviewer.importers.claude_code import synthetic

messages, sessions = int(sys.argv[1]), Path(sys.argv[2])
call_command("migrate", verbosity=0)
path = synthetic.write_session(sessions, messages=messages, seed=1)
project = get_or_create_project("Bench")
user = get_user_model().objects.create_user("reader", password=None)
Membership.objects.create(project=project, user=user, role=Role.VIEWER)
report = ingest.import_path(project, path)
conv = Conversation.objects.filter(project=project, parent__isnull=True).order_by("-message_count").first()
if conv is None:
    sys.exit(f"nothing imported: {report!r}")
turns = sorted(set(Message.objects.filter(conversation=conv).values_list("turn", flat=True)))
step = max(1, len(turns) // 200)
client = Client()
client.force_login(user)
cookie = "; ".join(f"{k}={m.value}" for k, m in client.cookies.items())
print(json.dumps({
    "conversation": conv.pk, "messages": conv.message_count, "folds": conv.fold_count,
    "segments": len(segments.load(conv).segments), "turns": turns[::step], "all_turns": turns, "cookie": cookie,
}))
"""
