"""`manage.py bench vs-agentsview folder|search|file`: contextviewer beside agentsview, measured in one run.

agentsview (a Go binary shipped as a wheel) is not a dependency: it lives in its own virtual
environment, var/peers/agentsview, which the first run makes (`python -m venv`, then `pip install
agentsview`), or CONTEXTVIEWER_AGENTSVIEW names its executable. It runs with a temporary HOME, its
data folder (AGENTSVIEW_DATA_DIR, where it keeps sessions.db) in the scratch folder, no daemon, no
update check, and CLAUDE_PROJECTS_DIR pointing at the generated folder only: never your own.

- folder: N small generated Claude Code sessions (the `bench import --small` layout: 30 message lines,
  a sub-agent in every fourth) under one project folder. Ours: `manage.py import FOLDER` from start
  to exit into an empty, migrated SQLite database. Theirs: `agentsview sync` from start to exit into
  an empty data folder. Interleaved, the fastest of --repeat each.
- search: the same folder, imported once by each; then the searches of `bench load` one after the
  other, each asked of both in turn: ours the results fragment the index page's search box fetches
  (`/?q=...`, HX-Target results) from the default web server, signed in; theirs `GET /api/v1/search?q=`
  of `agentsview serve --no-sync`. p50 and p95 of each (nearest rank), the first round not counted.
  `--database-url postgres://...`: ours imported into that scratch PostgreSQL database instead
  (created if missing, emptied first, VACUUM ANALYZE after the import as autovacuum would) and served
  from it.
- file: one synthetic session of --size MB; ours and theirs as in `folder`, and the floor of
  `bench import` (one thread: JSON-parse the lines and count every message string with o200k).

Every figure is wall time on this machine; the load average is printed before and after.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import TextIO

from django.conf import settings

from contextviewer.importers.claude_code import synthetic
from ops.bench import load as bench_load

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / "var" / "peers" / "agentsview"


# --- pure helpers -------------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    """Nearest rank: the smallest value with at least a fraction q of the values at or below it."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-int(round(q * 1000)) * len(ordered) // 1000))
    return ordered[min(rank, len(ordered)) - 1]


def ratio(ours: float, theirs: float) -> str:
    """ours / theirs as '2.31x', or 'n/a' when theirs is not a positive figure."""
    return f"{ours / theirs:.2f}x" if theirs and theirs > 0 else "n/a"


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table, its columns padded to their widest cell (readable as text too)."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def sync_counts(printed: str) -> tuple[int, int] | None:
    """(sessions, messages) from the 'Database: N sessions, M messages' line `agentsview sync` prints."""
    found = re.search(r"Database:\s*([\d,]+)\s+sessions?,\s*([\d,]+)\s+messages?", printed)
    if not found:
        return None
    return int(found.group(1).replace(",", "")), int(found.group(2).replace(",", ""))


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# --- agentsview, the peer -----------------------------------------------------------------------

def executable(out: TextIO | None = None) -> Path:
    """agentsview's Go binary: CONTEXTVIEWER_AGENTSVIEW, else the one in var/peers/agentsview,
    installed there from the package index on first use. The binary itself, not the wheel's Python
    launcher, so that no interpreter start-up is counted in its figures."""
    configured = os.environ.get("CONTEXTVIEWER_AGENTSVIEW")
    if configured:
        path = Path(configured)
        if not path.exists():
            raise RuntimeError(f"CONTEXTVIEWER_AGENTSVIEW={configured}: no such file")
        return path
    found = sorted(VENV.glob("lib/python*/site-packages/agentsview/bin/agentsview"))
    if not found:
        if out is not None:
            out.write(f"installing agentsview into {VENV} (python -m venv, pip install agentsview) ...\n")
        steps = ([sys.executable, "-m", "venv", str(VENV)],
                 [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "agentsview"])
        for argv in steps:
            done = subprocess.run(argv, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"could not install agentsview ({' '.join(argv)}):\n{done.stderr[-2000:]}\n"
                                   "install it yourself (python -m venv var/peers/agentsview && "
                                   "var/peers/agentsview/bin/pip install agentsview) or set CONTEXTVIEWER_AGENTSVIEW")
        found = sorted(VENV.glob("lib/python*/site-packages/agentsview/bin/agentsview"))
        if not found:
            raise RuntimeError(f"agentsview installed into {VENV} but its binary is not there")
    path = found[-1]
    if not os.access(path, os.X_OK):
        path.chmod(path.stat().st_mode | 0o111)
    return path


def peer_env(work: Path, projects: Path) -> dict[str, str]:
    """agentsview's environment: a scratch HOME and data folder, only `projects` to read."""
    home, data = work / "home", work / "data"
    home.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": "/usr/bin:/bin", "HOME": str(home), "AGENTSVIEW_DATA_DIR": str(data),
        "CLAUDE_PROJECTS_DIR": str(projects), "AGENTSVIEW_NO_DAEMON": "1", "AGENTSVIEW_NO_BROWSER": "1",
        "AGENTSVIEW_DISABLE_UPDATE_CHECK": "1", "AGENTSVIEW_TELEMETRY_ENABLED": "0",
        "AGENTSVIEW_DISABLE_AUTO_SYNC": "1",
    }


def version(binary: Path) -> str:
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": tempfile.gettempdir()})
    return (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr).strip() else "agentsview"


# --- ours -----------------------------------------------------------------------------------------

def our_env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTVIEWER_", "DJANGO_", "PYTHONDONTWRITEBYTECODE"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "contextviewer.settings", "CONTEXTVIEWER_DATA_DIR": str(data),
        "DATABASE_URL": "", "REDIS_URL": "", "CELERY_BROKER_URL": "filesystem://",
        "TIKTOKEN_CACHE_DIR": str(settings.TIKTOKEN_CACHE_DIR),
        "PYTHONPYCACHEPREFIX": str(Path(settings.DATA_DIR) / "pycache"),
    })
    return env


def _timed(argv: list[str], env: dict, cwd: Path = ROOT) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed:\n{(done.stderr or done.stdout)[-3000:]}")
    return wall, done.stdout + done.stderr


def ours_import(path: Path, data: Path, database_url: str = "") -> dict:
    """`manage.py import PATH` from start to exit into a fresh, migrated SQLite database (or the
    scratch PostgreSQL database `database_url`, emptied first)."""
    env = {**our_env(data), "DATABASE_URL": database_url}
    if database_url:
        from ops.bench.scale import ensure_database  # lazy: only for PostgreSQL runs

        ensure_database(database_url)
    _timed([sys.executable, str(ROOT / "manage.py"), "migrate", "-v", "0"], env)  # not timed
    if database_url:
        _timed([sys.executable, "-c", _EMPTY], env)  # not timed
    wall, printed = _timed([sys.executable, str(ROOT / "manage.py"), "import", str(path), "--project", "Bench", "--json"], env)
    report = json.loads(printed[printed.index("{"):printed.rindex("}") + 1])
    if database_url:
        _timed([sys.executable, "-c", _ANALYZE], env)  # not timed: what autovacuum does after an import
    conversations = report.get("conversations", [])
    return {"seconds": wall, "conversations": len(conversations),
            "messages": sum(c.get("messages", 0) for c in conversations)}


def theirs_sync(binary: Path, work: Path, projects: Path) -> dict:
    """`agentsview sync` from start to exit into an empty data folder."""
    shutil.rmtree(work, ignore_errors=True)
    wall, printed = _timed([str(binary), "sync"], peer_env(work, projects), cwd=work.parent)
    counts = sync_counts(printed)
    return {"seconds": wall, "sessions": counts[0] if counts else None, "messages": counts[1] if counts else None}


# --- the measures ---------------------------------------------------------------------------------

def generate_folder(projects: Path, sessions: int) -> tuple[int, int]:
    """`sessions` small sessions under projects/-bench-folder (Claude Code's layout: one folder per
    project); the `bench import --small` sessions. Returns (files, bytes)."""
    folder = projects / "-bench-folder"
    for n in range(sessions):
        synthetic.write_session(folder, messages=30, seed=n, subagent=n % 4 == 0, compaction=False)
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def _interleaved(out: TextIO, binary: Path, work: Path, projects: Path, target: Path, repeat: int) -> tuple[list, list]:
    ours_runs, their_runs = [], []
    for n in range(max(1, repeat)):
        mine = ours_import(target, work / f"ours-{n}")
        theirs = theirs_sync(binary, work / f"theirs-{n}", projects)
        out.write(f"run {n + 1}: contextviewer {mine['seconds']:.2f} s ({mine['conversations']} conversations, "
                  f"{mine['messages']} messages); agentsview {theirs['seconds']:.2f} s ({theirs['sessions']} sessions, "
                  f"{theirs['messages']} messages); load {load_average()}\n")
        ours_runs.append(mine)
        their_runs.append(theirs)
        if n < repeat - 1:
            shutil.rmtree(work / f"ours-{n}", ignore_errors=True)
            shutil.rmtree(work / f"theirs-{n}", ignore_errors=True)
    return ours_runs, their_runs


def run_folder(out: TextIO, binary: Path, work: Path, sessions: int, repeat: int) -> dict:
    projects = work / "projects"
    t0 = time.perf_counter()
    files, size = generate_folder(projects, sessions)
    out.write(f"folder: {sessions} generated sessions, {files} files, {size / 1e6:.1f} MB "
              f"(in {time.perf_counter() - t0:.1f} s)\n")
    ours_runs, their_runs = _interleaved(out, binary, work, projects, projects / "-bench-folder", repeat)
    ours, theirs = min(r["seconds"] for r in ours_runs), min(r["seconds"] for r in their_runs)
    out.write("\n" + table(["measure", "contextviewer", "agentsview", "ratio"], [
        [f"{sessions} small sessions ({size / 1e6:.0f} MB), folder import, fastest of {len(ours_runs)}",
         f"{ours:.2f} s", f"{theirs:.2f} s", ratio(ours, theirs)],
    ]) + "\n")
    return {"ours": ours, "theirs": theirs, "last": len(ours_runs) - 1, "projects": projects}


def run_file(out: TextIO, binary: Path, work: Path, size_mb: float, repeat: int) -> None:
    projects = work / "projects"
    t0 = time.perf_counter()
    path = synthetic.write_session(projects / "-bench-file", target_bytes=int(size_mb * 1e6), seed=1)
    size = sum(p.stat().st_size for p in (projects / "-bench-file").rglob("*.jsonl"))  # the session and its sub-agents
    out.write(f"file: {path.name}, {size / 1e6:.1f} MB with its sub-agent files (in {time.perf_counter() - t0:.1f} s)\n")
    floors = []
    env = our_env(work / "floor")
    for _ in range(max(1, repeat)):
        _, printed = _timed([sys.executable, "-c", _FLOOR, str(path), "floor"], env)
        floors.append(json.loads(printed.strip().splitlines()[-1]))
    ours_runs, their_runs = _interleaved(out, binary, work, projects, path, repeat)
    ours, theirs = min(r["seconds"] for r in ours_runs), min(r["seconds"] for r in their_runs)
    floor = min(f["seconds"] for f in floors)
    counting = min(f["count_seconds"] for f in floors)
    out.write("\n" + table(["measure", "contextviewer", "agentsview", "ratio", "parse-and-count floor",
                            "contextviewer / floor"], [
        [f"{size / 1e6:.0f} MB session, import, fastest of {len(ours_runs)}", f"{ours:.2f} s", f"{theirs:.2f} s",
         ratio(ours, theirs), f"{floor:.2f} s (counting alone {counting:.2f} s)", ratio(ours, floor)],
    ]) + "\n")
    out.write("contextviewer: `manage.py import FILE` start to exit (start-up included); agentsview: `agentsview sync` "
              "start to exit; floor: one thread JSON-parsing the lines and counting every message string with o200k\n")


def run_search(out: TextIO, binary: Path, work: Path, sessions: int, rounds: int, database_url: str = "") -> None:
    projects = work / "projects"
    t0 = time.perf_counter()
    files, size = generate_folder(projects, sessions)
    mine = ours_import(projects / "-bench-folder", work / "ours", database_url)
    theirs = theirs_sync(binary, work / "theirs", projects)
    out.write(f"folder: {sessions} generated sessions, {files} files, {size / 1e6:.1f} MB; imported by contextviewer "
              f"({mine['messages']} messages) and agentsview ({theirs['messages']} messages) in "
              f"{time.perf_counter() - t0:.1f} s\n")
    env = {**bench_load.scratch_env(work / "ours"), "DATABASE_URL": database_url}
    out.write(f"contextviewer's database: {'PostgreSQL (' + database_url.rsplit('/', 1)[-1] + ')' if database_url else 'SQLite'}\n")
    _, printed = _timed([sys.executable, "-c", _READER], env)
    cookie = json.loads(printed.strip().splitlines()[-1])["cookie"]
    ours_port, their_port = bench_load.free_port(), bench_load.free_port()
    log = work / "server.log"
    server = bench_load.start_server(ours_port, env, log, None, None, "gthread")
    peer = None
    try:
        bench_load.wait_ready(server, ours_port, log)
        peer_log = open(work / "agentsview-serve.log", "ab")
        peer = subprocess.Popen([str(binary), "serve", "--no-sync", "--no-browser", "--no-update-check",
                                 "--port", str(their_port)], env=peer_env(work / "theirs", projects),
                                cwd=work, stdout=peer_log, stderr=subprocess.STDOUT)
        _wait_http(f"http://127.0.0.1:{their_port}/api/v1/search?q=parser", peer)
        ours_ms, their_ms, errors, shown = [], [], {"contextviewer": 0, "agentsview": 0}, {}
        for r in range(rounds + 1):  # round 0 warms both up and is not counted
            for q in bench_load.SEARCHES:
                query = urllib.parse.urlencode({"q": q})
                ms, ok, mine = _get(f"http://127.0.0.1:{ours_port}/?{query}",
                                    {"Cookie": cookie, "HX-Request": "true", "HX-Target": "results"})
                if r:
                    ours_ms.append(ms)
                    errors["contextviewer"] += not ok
                ms, ok, theirs = _get(f"http://127.0.0.1:{their_port}/api/v1/search?{query}", {})
                if r:
                    their_ms.append(ms)
                    errors["agentsview"] += not ok
                else:
                    shown[q] = hits_shown(mine, theirs)
    finally:
        bench_load.stop_server(server)
        if peer is not None:
            peer.terminate()
            try:
                peer.wait(timeout=10)
            except subprocess.TimeoutExpired:
                peer.kill()
    p = {k: (percentile(v, 0.5), percentile(v, 0.95)) for k, v in (("ours", ours_ms), ("theirs", their_ms))}
    out.write(f"searches: {', '.join(bench_load.SEARCHES)}; {rounds} rounds, one request at a time, "
              f"asked of each in turn; errors: {errors}\n")
    out.write("results on the first page (contextviewer, agentsview): "
              + "; ".join(f"{q!r} {a}, {b}" for q, (a, b) in shown.items()) + "\n\n")
    out.write(table(["measure", "contextviewer", "agentsview", "ratio"], [
        [f"search across {sessions} sessions, p50", f"{p['ours'][0]:.0f} ms", f"{p['theirs'][0]:.0f} ms",
         ratio(p["ours"][0], p["theirs"][0])],
        [f"search across {sessions} sessions, p95", f"{p['ours'][1]:.0f} ms", f"{p['theirs'][1]:.0f} ms",
         ratio(p["ours"][1], p["theirs"][1])],
    ]) + "\n")
    out.write("contextviewer: the index page's results fragment (`/?q=`, HX-Target results, signed in, gunicorn "
              "as `serve` starts it); agentsview: `GET /api/v1/search?q=` of `agentsview serve`\n")


def _get(url: str, headers: dict[str, str]) -> tuple[float, bool, bytes]:
    request = urllib.request.Request(url, headers=headers)
    t0 = time.perf_counter()
    body = b""
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            body = response.read()
            ok = response.status == 200
    except Exception:  # noqa: BLE001 - an error to count, never a reason to stop
        ok = False
    return (time.perf_counter() - t0) * 1000, ok, body


def hits_shown(ours: bytes, theirs: bytes) -> tuple[int, int]:
    """Results on the first page of each answer: our fragment's hits, agentsview's JSON results."""
    try:
        found = len(json.loads(theirs).get("results") or [])
    except ValueError:
        found = -1
    return ours.count(b'<li class="hit">'), found


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"agentsview serve exited ({proc.returncode})")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except Exception:  # noqa: BLE001 - not listening yet
            time.sleep(0.2)
    raise RuntimeError(f"agentsview serve did not answer {url} within {timeout:.0f} s")


def run(out: TextIO | None = None, *, what: str, sessions: int = 1000, repeat: int = 3, size_mb: float = 55.0,
        rounds: int = 20, keep: bool = False, database_url: str = "") -> None:
    out = out or sys.stdout
    binary = executable(out)
    work = Path(tempfile.mkdtemp(prefix="contextviewer-vs-agentsview-"))
    out.write(f"peer: {version(binary)} ({binary}); {os.cpu_count()} CPUs; load average before: {load_average()}\n")
    try:
        if what == "folder":
            run_folder(out, binary, work, sessions, repeat)
        elif what == "search":
            run_search(out, binary, work, sessions, rounds, database_url)
        elif what == "file":
            run_file(out, binary, work, size_mb, repeat)
        else:
            raise RuntimeError(f"{what!r}: choose folder, search or file")
        out.write(f"load average after: {load_average()}\n")
    finally:
        if keep:
            out.write(f"kept: {work}\n")
        else:
            shutil.rmtree(work, ignore_errors=True)


# A reader of the project "Bench" and its session cookie, in the scratch data folder.
_READER = r"""
import json, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
import django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
from contextviewer.accounts.models import Membership, Project, Role
user = get_user_model().objects.create_user("reader", password=None)
Membership.objects.create(project=Project.objects.get(name="Bench"), user=user, role=Role.VIEWER)
client = Client()
client.force_login(user)
print(json.dumps({"cookie": "; ".join(f"{k}={m.value}" for k, m in client.cookies.items())}))
"""


# A scratch PostgreSQL database emptied (Django's tables and the search index, which is no model's).
_EMPTY = r"""
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
import django
django.setup()
from django.core.management import call_command
from django.db import connection
call_command("flush", interactive=False, verbosity=0)
with connection.cursor() as cursor:
    cursor.execute("TRUNCATE conversations_message_search")
"""

# After an import into PostgreSQL: the statistics and visibility map autovacuum would make (a test
# server may run with autovacuum off); without them the planner guesses and index-only scans fetch rows.
_ANALYZE = r"""
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
import django
django.setup()
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("VACUUM ANALYZE")
"""


# The floor of `bench import`, its own child (ops/management/commands/bench.py), named in the child so
# that this module does not import the command that imports it.
_FLOOR = r"""
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
import django
django.setup()
from ops.management.commands.bench import _CHILD
exec(_CHILD)
"""
