"""`python manage.py bench vs-claude-code-log [--file SESSION.jsonl] [--repeat 3]`

Measures in one run, on the same session file, interleaved, the fastest of --repeat each:
- claude-code-log's `convert` of the file to one HTML page (its own process, its cache off);
- ours, the two steps a person waits for: `manage.py import FILE` (the command from start to exit,
  into an empty, migrated database: start-up, import job, title, exit), then the conversation's
  first page from a web process that has started as the server's do (contextviewer.wsgi: settings,
  apps, middleware, warm-up) and has served nothing yet. The sign-in is not timed.
claude-code-log's figure includes its interpreter's start-up; ours includes the import command's.

claude-code-log is not a dependency: it lives in its own virtual environment, var/ccl-venv, which
the first run makes (`python -m venv`, then `pip install claude-code-log` from the package index),
or CONTEXTVIEWER_CCL names its `claude-code-log` executable. Default file: the largest real
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


def ccl_executable(out: TextIO | None = None) -> Path:
    """claude-code-log's executable: CONTEXTVIEWER_CCL, else var/ccl-venv's, installed there from
    the package index on first use (its own environment: it is not a dependency of ours)."""
    configured = os.environ.get("CONTEXTVIEWER_CCL")
    if configured:
        path = Path(configured)
        if not path.exists():
            raise RuntimeError(f"CONTEXTVIEWER_CCL={configured}: no such file")
        return path
    venv = ROOT / "var" / "ccl-venv"
    path = venv / "bin" / "claude-code-log"
    if not path.exists():
        if out is not None:
            out.write(f"installing claude-code-log into {venv} (python -m venv, pip install claude-code-log) ...\n")
        steps = ([sys.executable, "-m", "venv", str(venv)],
                 [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                  "claude-code-log"])
        for argv in steps:
            done = subprocess.run(argv, capture_output=True, text=True)
            if done.returncode != 0 or (argv is steps[-1] and not path.exists()):
                raise RuntimeError(
                    f"could not install claude-code-log ({' '.join(argv)}):\n{done.stderr[-2000:]}\n"
                    "install it yourself (python -m venv var/ccl-venv && var/ccl-venv/bin/pip install "
                    "claude-code-log) or set CONTEXTVIEWER_CCL to its executable"
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
    ccl = ccl_executable(out)
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
            import_wall, import_cpu, printed = _timed(
                [sys.executable, str(ROOT / "manage.py"), "import", str(session), "--project", "Bench", "--json"],
                run_env, ROOT,
            )
            messages = sum(c.get("messages", 0) for c in json.loads(printed)["conversations"][:1])
            _, _, printed = _timed([sys.executable, "-c", _PAGE, str(work / f"ours-{n}.html")], run_env, ROOT)
            page = json.loads(printed.strip().splitlines()[-1])
            mine = {"wall_s": import_wall + page["page_s"], "import_s": import_wall, "import_cpu_s": import_cpu,
                    "messages": messages, **page}
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
        w(f"contextviewer import + first page: {ours['wall_s']:.2f} s (`manage.py import`, start to exit: "
          f"{ours['import_s']:.2f} s wall, {ours['import_cpu_s']:.2f} s CPU; first page on a started web process: "
          f"{ours['page_s']:.2f} s, {ours['page_bytes'] / 1024:.0f} KB)\n")
        w(f"runs: ours {', '.join('%.2f' % r['wall_s'] for r in ours_runs)} s; claude-code-log "
          f"{', '.join('%.2f' % r['wall_s'] for r in ccl_runs)} s (the fastest of each is used)\n")
        w(f"ratio: ours / claude-code-log = {ours['wall_s'] / theirs['wall_s']:.2f}x (target < 1)\n")
        return {"ours": ours, "claude_code_log": theirs, "ours_runs": ours_runs, "ccl_runs": ccl_runs}
    finally:
        if keep:
            out.write(f"kept: {work}\n")
        else:
            shutil.rmtree(work, ignore_errors=True)


# The page child: a web process as the server starts it (contextviewer.wsgi: middleware and warm-up
# at start), a signed-in owner, then the first request it serves, timed.
_PAGE = r"""
import json, sys, time
import django
django.setup()
import contextviewer.wsgi  # noqa: F401 - what a server's worker does as it starts
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
client.handler.load_middleware()  # a server's handler has its middleware from the start
url = reverse("conversation", args=[conv.id])
t0 = time.perf_counter()
response = client.get(url)
t1 = time.perf_counter()
assert response.status_code == 200, response.status_code
open(sys.argv[1], "wb").write(response.content)
print(json.dumps({"page_s": t1 - t0, "page_bytes": len(response.content)}))
"""
