"""`python manage.py bench vs-claude-code-log [--file SESSION.jsonl] [--repeat 3]`

Measures in one run, on the same session file, interleaved, the fastest of --repeat each:
- claude-code-log's `convert` of the file to one HTML page (its own process, its cache off);
- ours: `manage.py import` of the file into an empty, migrated database, then the conversation's
  first page, both in one fresh process (start-up, import job, title, rendering: all of it).
Both processes start cold (no warm server), from a copy of the file alone in a folder.

claude-code-log is not a dependency: it lives in its own virtual environment, by default
var/ccl-venv (`python -m venv var/ccl-venv && var/ccl-venv/bin/pip install claude-code-log`), or
CONTEXTVIEWER_CCL (the path of its `claude-code-log` executable). Default file: the largest real
Claude Code session under the fixtures folder (settings.FIXTURES_DIR / "claude-code").
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[2]


def ccl_executable() -> Path:
    configured = os.environ.get("CONTEXTVIEWER_CCL")
    path = Path(configured) if configured else ROOT / "var" / "ccl-venv" / "bin" / "claude-code-log"
    if not path.exists():
        raise RuntimeError(
            f"claude-code-log not found at {path}: python -m venv var/ccl-venv && "
            "var/ccl-venv/bin/pip install claude-code-log (or set CONTEXTVIEWER_CCL)"
        )
    return path


def default_session() -> Path:
    from django.conf import settings

    folder = Path(settings.FIXTURES_DIR) / "claude-code"
    files = sorted(folder.rglob("*.jsonl"), key=lambda p: p.stat().st_size) if folder.is_dir() else []
    if not files:
        raise RuntimeError(f"no Claude Code session under {folder}: pass --file")
    return files[-1]


def _timed(argv: list[str], env: dict, cwd: Path) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed:\n{done.stderr[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def run(stdout: TextIO | None = None, path: str | None = None, repeat: int = 3, keep: bool = False) -> dict:
    from django.conf import settings

    out = stdout or sys.stdout
    ccl = ccl_executable()
    source = Path(path).expanduser().resolve() if path else default_session()
    if not source.is_file():
        raise RuntimeError(f"no such file: {source}")
    work = Path(tempfile.mkdtemp(prefix="contextviewer-vs-ccl-"))
    try:
        session_dir = work / "session"
        session_dir.mkdir()
        session = session_dir / source.name
        shutil.copyfile(source, session)
        # Bytecode caches as an installed package has them (claude-code-log's are written by pip):
        # PYTHONDONTWRITEBYTECODE would make every start compile the project's modules again.
        skip = ("CONTEXTVIEWER_SQLITE", "PYTHONDONTWRITEBYTECODE")
        env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
        env.update({
            "PYTHONPYCACHEPREFIX": str(Path(settings.DATA_DIR) / "pycache"),
            "DJANGO_SETTINGS_MODULE": "contextviewer.settings",
            "TIKTOKEN_CACHE_DIR": str(settings.TIKTOKEN_CACHE_DIR),  # the encoding is a download: shared
            "DATABASE_URL": "",
            "CELERY_BROKER_URL": "filesystem://",
            "REDIS_URL": "",
        })
        ccl_env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "CONTEXTVIEWER"))}
        ccl_env["HOME"] = str(work / "home")  # its cache and settings stay in the scratch folder
        (work / "home").mkdir()
        ours_runs, ccl_runs = [], []
        for n in range(-1, max(1, repeat)):  # run -1 warms the caches (bytecode, disk) and is not counted
            data = work / f"data-{n}"
            run_env = {**env, "CONTEXTVIEWER_DATA_DIR": str(data)}
            _timed([sys.executable, str(ROOT / "manage.py"), "migrate", "-v", "0"], run_env, ROOT)  # not timed
            wall, cpu, printed = _timed([sys.executable, "-c", _OURS, str(session), str(work / f"ours-{n}.html")],
                                        run_env, ROOT)
            mine = {"wall_s": wall, "cpu_s": cpu, **json.loads(printed.strip().splitlines()[-1])}
            html = work / f"ccl-{n}.html"
            wall, cpu, _ = _timed([str(ccl), "convert", str(session), "-o", str(html), "--no-cache"], ccl_env, work)
            if n >= 0:
                ours_runs.append(mine)
                ccl_runs.append({"wall_s": wall, "cpu_s": cpu, "html_bytes": html.stat().st_size if html.exists() else 0})
        ours = min(ours_runs, key=lambda r: r["wall_s"])
        theirs = min(ccl_runs, key=lambda r: r["wall_s"])
        version = subprocess.run([str(ccl), "--version"], capture_output=True, text=True, env=ccl_env).stdout.strip()
        w = out.write
        w(f"file: {source.name} ({session.stat().st_size / 1e6:.1f} MB), {ours['messages']} messages\n")
        w(f"claude-code-log convert ({version or 'claude-code-log'}): {theirs['wall_s']:.2f} s wall, "
          f"{theirs['cpu_s']:.2f} s CPU, one page of {theirs['html_bytes'] / 1e6:.1f} MB\n")
        w(f"contextviewer import + first page: {ours['wall_s']:.2f} s wall, {ours['cpu_s']:.2f} s CPU "
          f"(start-up {ours['startup_s']:.2f} s, import {ours['import_s']:.2f} s, first page {ours['page_s']:.2f} s, "
          f"{ours['page_bytes'] / 1024:.0f} KB; the rest: interpreter, sign-in, exit "
          f"{ours['wall_s'] - ours['startup_s'] - ours['import_s'] - ours['page_s']:.2f} s)\n")
        w(f"runs: ours {', '.join('%.2f' % r['wall_s'] for r in ours_runs)} s; claude-code-log "
          f"{', '.join('%.2f' % r['wall_s'] for r in ccl_runs)} s (the fastest of each is used)\n")
        w(f"ratio: ours / claude-code-log = {ours['wall_s'] / theirs['wall_s']:.2f}x (target < 1)\n")
        return {"ours": ours, "claude_code_log": theirs, "ours_runs": ours_runs, "ccl_runs": ccl_runs}
    finally:
        if keep:
            out.write(f"kept: {work}\n")
        else:
            shutil.rmtree(work, ignore_errors=True)


# The timed child: what a person does (import the file, open the conversation), in one process.
_OURS = r"""
import json, sys, time
t0 = time.perf_counter()
import django
django.setup()
from django.core.management import call_command
t1 = time.perf_counter()
path, html_out = sys.argv[1], sys.argv[2]
call_command("import", path, "--project", "Bench", "--json", stdout=open("/dev/null", "w"))
t2 = time.perf_counter()
from django.contrib.auth import get_user_model
from django.test import Client
from django.test.utils import setup_test_environment
from django.urls import reverse
from contextviewer.accounts.models import Membership, Project, Role
from contextviewer.conversations.models import Conversation
setup_test_environment()
project = Project.objects.get(name="Bench")
user = get_user_model().objects.create_user("bench")
Membership.objects.create(project=project, user=user, role=Role.OWNER)
conv = Conversation.objects.filter(project=project, parent__isnull=True).order_by("-message_count").first()
client = Client()
client.force_login(user)
t3 = time.perf_counter()
response = client.get(reverse("conversation", args=[conv.id]))
t4 = time.perf_counter()
assert response.status_code == 200, response.status_code
open(html_out, "wb").write(response.content)
print(json.dumps({"startup_s": t1 - t0, "import_s": t2 - t1, "page_s": t4 - t3, "page_bytes": len(response.content),
                  "messages": conv.message_count}))
"""
