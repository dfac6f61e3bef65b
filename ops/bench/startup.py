"""`python manage.py bench startup`: how long a command takes before it does anything.

Runs, in fresh child processes, the interpreter alone, `django.setup()` and `manage.py import --help`
(settings, every app's models, the command's module: what every command pays), after a warm-up run,
with bytecode caches (as an installed package has them), --repeat times each,
and prints the fastest wall time and CPU time of each (a busy machine slows runs, never speeds
them). Then one `python -X importtime` run of `import --help`: the largest imports, and whether a
heavy module (provider SDKs, tokenizer, highlighter, Celery) was loaded at all. Target: under 0.3 s.

Then what every import pays: `manage.py import FILE` of a 10 KB session file (the fixtures' 10,943
byte sub-agent file) into an existing migrated SQLite database, start to exit, the fastest of
--repeat, each into a fresh copy of the database (the copy is not timed); "10 KB import: X s", its
CPU time (the command's process and its parsing process) and the target, under 0.25 s. The database
has imported that file once before, then forgotten it (what a second import of a new session of
the same agent version finds: the bytecode, the tokenizer's cache and the count of the agent's
captured prompt are there).
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

TARGET_S = 0.3
IMPORT_TARGET_S = 0.25
# The small file of the figure (under settings.FIXTURES_DIR): a 10,943-byte session file.
SMALL_SESSION = "claude-code/moredip__session-share__0ccf1a04-1b4c-43b6-8aa5-79e41db43a68/subagents/agent-a9cad17.jsonl"
# Loaded only when used: a command's start never pays for them.
HEAVY = ("openai", "anthropic", "tiktoken", "pygments", "celery", "kombu", "markdown_it", "nh3", "cryptography", "httpx")
MANAGE = Path(__file__).resolve().parents[2] / "manage.py"


def _commands() -> list[tuple[str, list[str]]]:
    py = sys.executable
    return [
        ("python -c pass", [py, "-c", "pass"]),
        ("django.setup()", [py, "-c", "import os, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
                            "'contextviewer.settings'); django.setup()"]),
        ("manage.py import --help", [py, str(MANAGE), "import", "--help"]),
    ]


def _time(argv: list[str], env: dict) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_times(stderr: str) -> dict[str, int]:
    """`-X importtime` output -> {top-level module: cumulative microseconds} (modules imported by
    nothing else measured here, i.e. at the outermost level)."""
    out: dict[str, int] = {}
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)", line)
        if m and not m.group(3):
            out[m.group(4)] = out.get(m.group(4), 0) + int(m.group(2))
    return out


def loaded_modules(stderr: str) -> set[str]:
    names = set()
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+\d+ \| \s*(\S+)", line)
        if m:
            names.add(m.group(1))
    return names


def run(stdout: TextIO | None = None, repeat: int = 5) -> dict:
    out = stdout or sys.stdout
    from django.conf import settings

    # Bytecode caches as an installed package has them (in a folder of their own, not beside the
    # sources): with PYTHONDONTWRITEBYTECODE every start compiles the project's modules again.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["DJANGO_SETTINGS_MODULE"] = os.environ.get("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
    env["PYTHONPYCACHEPREFIX"] = str(Path(settings.DATA_DIR) / "pycache")
    results = {}
    out.write(f"{'':26} {'wall s':>8} {'CPU s':>8}   (fastest of {repeat})\n")
    for label, argv in _commands():
        _time(argv, env)  # warms the bytecode and disk caches; not counted
        runs = [_time(argv, env) for _ in range(max(1, repeat))]
        wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
        results[label] = {"wall_s": wall, "cpu_s": cpu}
        out.write(f"{label:26} {wall:>8.3f} {cpu:>8.3f}\n")
        out.flush()
    help_s = results["manage.py import --help"]["wall_s"]
    out.write(f"target: import --help under {TARGET_S} s: {'met' if help_s < TARGET_S else 'NOT met'}\n")

    traced = subprocess.run([sys.executable, "-X", "importtime", str(MANAGE), "import", "--help"], env=env,
                            capture_output=True, text=True)
    top = sorted(import_times(traced.stderr).items(), key=lambda kv: -kv[1])[:8]
    out.write("largest imports of import --help (cumulative ms, one -X importtime run): "
              + ", ".join(f"{name} {us / 1000:.0f}" for name, us in top) + "\n")
    names = loaded_modules(traced.stderr)
    heavy = [h for h in HEAVY if h in names]
    out.write(f"heavy modules loaded by import --help: {', '.join(heavy) if heavy else 'none'}\n")
    results["heavy_loaded"] = heavy
    results["small_import"] = small_import(out, env, repeat)
    return results


# Forgets what the warm-up import stored (the database stays migrated, the caches warm).
_FORGET = (
    "import os, django\n"
    "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'contextviewer.settings')\n"
    "django.setup()\n"
    "from contextviewer.conversations.models import Conversation, Source\n"
    "from contextviewer.jobs.models import Job\n"
    "Conversation.objects.all().delete(); Source.objects.all().delete(); Job.objects.all().delete()\n"
)


def small_import(out: TextIO, env: dict, repeat: int = 5) -> dict | None:
    """`manage.py import` of the 10 KB file into a fresh copy of a migrated database, the fastest
    of ``repeat``: {"wall_s", "cpu_s", "bytes"}; None (said so) without the fixtures."""
    from django.conf import settings

    path = Path(settings.FIXTURES_DIR) / SMALL_SESSION
    if not path.is_file():
        out.write(f"10 KB import: not measured ({path} not found: set CONTEXTVIEWER_FIXTURES)\n")
        return None
    work = Path(tempfile.mkdtemp(prefix="bench-startup-", dir=settings.DATA_DIR))
    try:
        template = work / "template"
        # SQLite, a file cache and the filesystem broker in the scratch folder whatever this process
        # uses; the tokenizer's cache shared (made once).
        base = {k: v for k, v in env.items() if k not in ("CONTEXTVIEWER_SQLITE_PATH", "CONTEXTVIEWER_BROKER_DIR")}
        base.update({"DATABASE_URL": "", "REDIS_URL": "", "CELERY_BROKER_URL": "filesystem://",
                     "TIKTOKEN_CACHE_DIR": str(settings.TIKTOKEN_CACHE_DIR), "CONTEXTVIEWER_FIXTURES": str(settings.FIXTURES_DIR)})
        at = {**base, "CONTEXTVIEWER_DATA_DIR": str(template)}
        for argv in ([sys.executable, str(MANAGE), "migrate", "-v0"], [sys.executable, str(MANAGE), "import", str(path)],
                     [sys.executable, "-c", _FORGET]):
            _time(argv, at)
        runs = []
        for n in range(max(1, repeat)):
            run_dir = work / f"run-{n}"
            shutil.copytree(template, run_dir)
            os.sync()  # the copy on disk before the run: its first checkpoint does not write the whole database
            runs.append(_time([sys.executable, str(MANAGE), "import", str(path)], {**base, "CONTEXTVIEWER_DATA_DIR": str(run_dir)}))
            shutil.rmtree(run_dir, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
    size = path.stat().st_size
    out.write(f"10 KB import: {wall:.3f} s  (CPU {cpu:.3f} s, the command and its parsing process; fastest of {len(runs)}: "
              f"`manage.py import` of a {size:,}-byte session file into a migrated SQLite database, start to exit)\n")
    out.write(f"target: 10 KB import under {IMPORT_TARGET_S} s: {'met' if wall < IMPORT_TARGET_S else 'NOT met'}\n")
    return {"wall_s": wall, "cpu_s": cpu, "bytes": size}
