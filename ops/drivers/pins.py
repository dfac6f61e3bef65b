"""The agent CLIs the conformance runs drive (ops/drivers/), each pinned to one version and installed
by `bin/setup --agents` into its own folder, var/agents/<key>/ (two versions of one package can sit
side by side). Two kinds of pin:

- npm: `npm install --prefix var/agents/<key>`; the CLI is node_modules/.bin/<bin>;
- PyPI: var/agents/<key>/ is a virtualenv made with the Python the agent needs (`python`, e.g. "3.12":
  `python3.12` on PATH, else pyenv's), the package installed with pip; the CLI is bin/<bin>.

`python -m ops.drivers.pins` prints one line per pin for bin/setup:
`key|spec [extra spec ...]|install flags|bin|kind|interpreter`, where a spec is `package@version`
(npm) or `package==version` (PyPI; an extra is any pip requirement), kind is `npm` or `pypi`, and
interpreter the PyPI pin's Python (empty when not found: `missing()` says how to get it). An empty
field stays a field: a tab, being whitespace to `read`, would fold two separators into one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

AGENTS_DIR = Path(__file__).resolve().parent.parent.parent / "var" / "agents"


NPM, PYPI = "npm", "pypi"


def find_python(version: str) -> Path | None:
    """An interpreter of Python `version` (e.g. "3.12"): `python3.12` on PATH, else one of pyenv's
    versions ($PYENV_ROOT or ~/.pyenv); None when there is none. The path is the interpreter's own
    (sys.executable), not a pyenv shim's."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [shutil.which(f"python{version}"), *sorted(map(str, root.glob(f"versions/{version}.*/bin/python{version}")), reverse=True)]
    for candidate in filter(None, candidates):
        found = _executable(candidate, version)
        if found:
            return found
    return None


def _executable(exe: str, version: str) -> Path | None:
    """The interpreter `exe` runs when it is Python `version` (a pyenv shim is on PATH even when its
    version is not installed: it must run)."""
    code = "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])"
    try:
        p = subprocess.run([exe, "-c", code], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = p.stdout.split()
    return Path(lines[0]) if p.returncode == 0 and len(lines) == 2 and lines[1] == version else None


@dataclass(frozen=True)
class Pin:
    key: str  # folder under var/agents, and the name `agents check` prints
    package: str  # npm or PyPI package
    version: str
    bin: str  # node_modules/.bin/<bin> (npm), bin/<bin> in the pin's virtualenv (PyPI)
    extra: tuple[str, ...] = ()  # more package@version (npm) or pip requirements (PyPI) installed beside it
    flags: tuple[str, ...] = ()  # npm install / pip install flags
    kind: str = NPM  # NPM or PYPI
    python: str = ""  # PyPI: the Python version its virtualenv is made with, e.g. "3.12"

    @property
    def folder(self) -> Path:
        return AGENTS_DIR / self.key

    @property
    def exe(self) -> Path:
        if self.kind == PYPI:
            return self.folder / "bin" / self.bin
        return self.folder / "node_modules" / ".bin" / self.bin

    @property
    def spec(self) -> str:
        return f"{self.package}=={self.version}" if self.kind == PYPI else f"{self.package}@{self.version}"

    def installed_version(self) -> str | None:
        if self.kind == PYPI:
            return self._dist_version()
        try:
            return json.loads((self.folder / "node_modules" / self.package / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            return None

    def _dist_version(self) -> str | None:
        """The version of the package's .dist-info in the virtualenv (read from disk: no interpreter run)."""
        name = re.sub(r"[-_.]+", "_", self.package).lower()
        for info in self.folder.glob("lib/python*/site-packages/*.dist-info"):
            dist, _, version = info.name.removesuffix(".dist-info").partition("-")
            if re.sub(r"[-_.]+", "_", dist).lower() == name:
                return version
        return None

    def interpreter(self) -> Path | None:
        """PyPI: the Python its virtualenv is made with (None when absent); npm: None."""
        return find_python(self.python) if self.kind == PYPI and self.python else None

    def missing(self) -> str | None:
        """None when this pin is installed, else what is missing and how to get it."""
        found = self.installed_version()
        if found == self.version and self.exe.exists():
            return None
        how = "run `bin/setup --agents`"
        if self.kind == PYPI and self.python and not (self.folder / "bin" / "python").exists() and self.interpreter() is None:
            how = (f"it needs Python {self.python}, and no python{self.python} is on PATH or under pyenv (install it, e.g. "
                   f"`pyenv install {self.python}` or `apt-get install python{self.python}-venv`), then {how}")
        return f"{self.spec} is not installed in {self.folder} (found: {found or 'nothing'}); {how}"


PINS: dict[str, Pin] = {
    p.key: p
    for p in (
        Pin("claude-code", "@anthropic-ai/claude-code", "2.1.332", "claude"),
        Pin("claude-code-2.1.197", "@anthropic-ai/claude-code", "2.1.197", "claude"),
        Pin("codex", "@openai/codex", "0.171.0", "codex"),
        # Its optional png-img does not build against Node 20's headers; the CLI runs without it.
        Pin("gemini", "@google/gemini-cli", "0.61.0", "gemini", flags=("--omit=optional",)),
        Pin("qwen", "@qwen-code/qwen-code", "0.24.4", "qwen"),
        Pin("opencode", "opencode-ai", "1.18.33", "opencode"),
        # 7.8.1 has no linux-x64 package; the platform binary is its own package (stack-notes.md).
        Pin("kilo", "@kilocode/cli", "7.7.7", "kilo", extra=("@kilocode/cli-linux-x64@7.7.7",),
            flags=("--ignore-scripts", "--omit=optional")),
        Pin("pi", "@mariozechner/pi-coding-agent", "0.73.1", "pi"),
        Pin("cline", "cline", "3.0.65", "cline"),
        Pin("copilot", "@github/copilot", "1.0.102", "copilot"),
        Pin("gptme", "gptme", "0.35.1", "gptme", kind=PYPI, python="3.12"),
        # 1.52.0 is a stub pointing to an installer that cannot be reached from here. Python 3.13: on
        # pyenv's 3.12.1 it stops at start (TypeError: super(type, obj) in its utils/slashcmd.py).
        Pin("kimi", "kimi-cli", "1.51.0", "kimi", kind=PYPI, python="3.13"),
        # It pins a certifi release no longer published: its own pins (vibe-requirements.txt, the .post1), without deps.
        Pin("vibe", "mistral-vibe", "3.0.3", "vibe", kind=PYPI, python="3.12", flags=("--no-deps",),
            extra=("-r", str(Path(__file__).with_name("vibe-requirements.txt")))),
        Pin("openhands", "openhands", "1.16.0", "openhands", kind=PYPI, python="3.12"),
        # The registry here has no linux-x64 binary of 0.225.1: its 0.225.2 (the shim finds it by name).
        Pin("droid", "@factory/cli", "0.225.1", "droid", extra=("@factory/cli-linux-x64@0.225.2",),
            flags=("--ignore-scripts", "--omit=optional")),
        Pin("hermes", "hermes-agent", "0.19.0", "hermes", kind=PYPI, python="3.12"),
    )
}


def main() -> None:
    for p in PINS.values():
        python = p.interpreter() if p.kind == PYPI else None
        print("|".join([p.key, " ".join([p.spec, *p.extra]), " ".join(p.flags), p.bin, p.kind, str(python or "")]))


if __name__ == "__main__":
    main()
    sys.exit(0)
