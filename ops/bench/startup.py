"""`python manage.py bench startup`: how long a command takes before it does anything.

Runs, in fresh child processes, the interpreter alone, `django.setup()` and `manage.py import --help`
(settings, every app's models, the command's module: what every command pays), after a warm-up run,
with bytecode caches (as an installed package has them), --repeat times each,
and prints the fastest wall time and CPU time of each (a busy machine slows runs, never speeds
them). Then one `python -X importtime` run of `import --help`: the largest imports, and whether a
heavy module (provider SDKs, tokenizer, highlighter, Celery) was loaded at all. Target: under 0.3 s.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

TARGET_S = 0.3
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
    return results
