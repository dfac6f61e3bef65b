"""python manage.py agents check [--latest] [--agent KEY ...] [--keep] [--json]

Runs each agent CLI for real, offline, against the scripted model server (ops/scripted/): three
prompts with real tools, a sub-agent where the agent has one, its own auto-compaction (and a manual
one where the CLI takes it non-interactively); imports the folder it wrote as a user would, and
compares every figure with the requests it sent (ops/conformance.py): label, main calls, tool calls,
sub-agents, folds with their triggers and tokens, and the window at every main call. Prints, per
agent and version, what differs.

--latest installs the newest release of each agent from npm or PyPI (into var/agents/latest/) and checks it
instead of the pinned version (ops/drivers/pins.py), so a release is checked the day it ships.
The imports go into a throw-away project of the configured database, deleted afterwards (--keep
keeps it to look at the pages).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import replace

from django.core.management.base import BaseCommand, CommandError

from ops import conformance
from ops.drivers import registry
from ops.drivers.pins import AGENTS_DIR, PINS, PYPI, Pin


def latest_pin(pin: Pin) -> tuple[Pin | None, str]:
    """The newest release of `pin`'s package installed under var/agents/latest/<key>, with a note when a
    package installed beside it is at another version (latest_extras); or None and why not."""
    if pin.kind == PYPI:
        return latest_pypi_pin(pin)
    try:
        version = subprocess.run(["npm", "view", pin.package, "version"], capture_output=True, text=True, timeout=120).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"npm view failed: {e}"
    if not version:
        return None, f"npm does not know {pin.package}"
    extra, note = latest_extras(pin, version)
    latest = replace(pin, version=version, extra=extra, key=f"latest/{pin.key}")
    if latest.missing() is None:
        return latest, note
    cmd = ["npm", "install", "--prefix", str(latest.folder), "--no-save", "--no-package-lock", "--no-audit", "--no-fund",
           "--loglevel=error", *pin.flags, f"{pin.package}@{version}", *extra]
    latest.folder.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0 or latest.missing():
        said = [line.removeprefix("npm error ").strip() for line in (p.stderr or p.stdout).splitlines()]
        said = [line for line in said if line and "complete log" not in line]
        return None, f"npm install {pin.package}@{version} failed: {said[0] if said else f'exit {p.returncode}'}"
    return latest, note


def npm_version(spec: str) -> str:
    """The version `npm view SPEC version` names: SPEC's newest release, or SPEC's own when it names
    one; "" when npm knows none (or does not run)."""
    try:
        p = subprocess.run(["npm", "view", spec, "version"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return p.stdout.strip() if p.returncode == 0 else ""


def latest_extras(pin: Pin, version: str, view=npm_version) -> tuple[tuple[str, ...], str]:
    """The npm packages installed beside `pin`'s package at its newest `version`: each at the same
    version when that release exists, else at its own newest (a platform binary can run ahead of its
    shim or lag behind it: Droid's shim 0.225.1 goes with its linux-x64 binary 0.225.2; Kilo 7.8.1
    has no linux-x64 package), with a note naming each that differs (what runs is that binary)."""
    extra, notes = [], []
    for spec in pin.extra:
        name = spec.rsplit("@", 1)[0]
        if view(f"{name}@{version}"):
            extra.append(f"{name}@{version}")
            continue
        own = view(name)
        extra.append(f"{name}@{own or version}")  # none at all: npm install says why
        if own:
            notes.append(f"{name} has no {version}: its newest, {own}, installed beside it")
    return tuple(extra), "; ".join(notes)


def latest_pypi_pin(pin: Pin) -> tuple[Pin | None, str]:
    """The newest release of a PyPI pin's package, in its own virtualenv under var/agents/latest/<key>."""
    python = pin.interpreter()
    if python is None:
        return None, pin.missing() or f"no Python {pin.python}"
    try:
        said = subprocess.run([str(python), "-m", "pip", "index", "versions", "--disable-pip-version-check", pin.package],
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"pip index versions failed: {e}"
    first = said.stdout.strip().splitlines()[:1]  # "<package> (<newest>)"
    if said.returncode != 0 or not first or "(" not in first[0]:
        return None, f"PyPI does not know {pin.package}"
    latest = replace(pin, version=first[0].rsplit("(", 1)[1].rstrip(")"), key=f"latest/{pin.key}")
    if latest.missing() is None:
        return latest, ""
    steps = [[str(python), "-m", "venv", str(latest.folder)],
             [str(latest.folder / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", *pin.flags,
              latest.spec, *pin.extra]]
    for cmd in steps:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            said = [line.strip() for line in (p.stderr or p.stdout).splitlines() if line.strip().startswith("ERROR")]
            return None, f"installing {latest.spec} failed: {said[0] if said else f'exit {p.returncode}'}"
    if latest.missing():
        return None, latest.missing()
    return latest, ""


class Command(BaseCommand):
    help = "Run today's agent CLIs offline against the scripted model server and compare what contextviewer shows with what they sent."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["check"])
        parser.add_argument("--latest", action="store_true", help="check the newest release of each agent from npm or PyPI, not the pinned one")
        parser.add_argument("--agent", action="append", default=[], help="only this driver key (repeat for more)")
        parser.add_argument("--keep", action="store_true", help="keep the imported projects")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        drivers = registry.drivers()
        if opts["agent"]:
            unknown = sorted(set(opts["agent"]) - {d.key for d in drivers})
            if unknown:
                raise CommandError(f"no driver for {', '.join(unknown)}; known: {', '.join(d.key for d in drivers)}")
            drivers = [d for d in drivers if d.key in opts["agent"]]
        if opts["latest"]:  # one run per package: today's release of Claude Code is one, not two
            seen: set[str] = set()
            drivers = [d for d in drivers if not (PINS[d.key].package in seen or seen.add(PINS[d.key].package))]
        rows = [self.check_one(d, opts) for d in drivers]
        if opts["json"]:
            self.stdout.write(json.dumps(rows, indent=1))
        else:
            self.print_table(rows)
        if any(r["status"] != "pass" for r in rows):
            raise SystemExit(1)

    def check_one(self, driver, opts) -> dict:
        pin = PINS[driver.key]
        row = {"agent": driver.key, "label": driver.label, "version": pin.version, "status": "", "seconds": 0.0, "differences": []}
        if opts["latest"]:
            pin, why = latest_pin(pin)
            if pin is None:
                return {**row, "version": "latest", "status": "not installed", "differences": [why]}
            row["version"] = pin.version
            if why:
                row["notes"] = [why]
        elif pin.missing():
            return {**row, "status": "not installed", "differences": [pin.missing()]}
        t0 = time.monotonic()
        run = driver.run(pin)
        try:
            if not run.ok:
                return {**row, "status": "did not run", "differences": [run.failure()], "seconds": round(time.monotonic() - t0, 1)}
            project = conformance.import_run(run)
            diffs = conformance.check(run, project)
            if not opts["keep"]:
                project.delete()
            row["differences"] = [str(d) for d in diffs]
            row["status"] = "pass" if not diffs else f"{len(diffs)} differences"
            if note := set_apart(run):
                row["notes"] = [*row.get("notes", []), note]
            row["calls"] = len(run.server.calls("main"))
            # the folds the run made: as the driver counts them (one Gemini compression is two requests)
            row["compactions"] = sum(map(len, run.triggers.values())) if run.triggers else len(run.server.calls("compaction"))
        except Exception as e:  # one agent's failure is its row, not the end of the check
            row["status"], row["differences"] = "error", [f"{type(e).__name__}: {e}"]
        finally:
            shutil.rmtree(run.folder, ignore_errors=True)
        row["seconds"] = round(time.monotonic() - t0, 1)
        return row

    def print_table(self, rows: list[dict]) -> None:
        self.stdout.write(f"{'agent':<22} {'version':<10} {'main calls':>10} {'folds':>6} {'seconds':>8}  result")
        for r in rows:
            self.stdout.write(f"{r['agent']:<22} {r['version']:<10} {r.get('calls', '-'):>10} {r.get('compactions', '-'):>6} "
                              f"{r['seconds']:>8}  {r['status']}")
            for note in r.get("notes", []):
                self.stdout.write(f"    note: {note}")
            for d in r["differences"]:
                self.stdout.write(f"    {d}")
        self.stdout.write(f"agents in {AGENTS_DIR}; {sum(r['status'] == 'pass' for r in rows)} of {len(rows)} pass")


def set_apart(run) -> str:
    """What the agent's files cannot hold, set apart by the check (the driver's Run names it;
    docs/agents.md), as a row's note; "" when nothing is."""
    what = sorted(run.unrecorded) + (["re-rendered texts after a fold"] if run.after_fold_ignores else [])
    return "set apart (not in its files): " + ", ".join(what) if what else ""
