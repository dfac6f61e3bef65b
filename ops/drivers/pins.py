"""The agent CLIs the conformance runs drive (ops/drivers/), each pinned to one version and installed
by `bin/setup --agents` into its own folder, var/agents/<key>/ (two versions of one package can sit
side by side). `python -m ops.drivers.pins` prints one line per pin for bin/setup:
`key|package@version [extra package@version ...]|npm flags|bin` (an empty field stays a field: a tab,
being whitespace to `read`, would fold two separators into one).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

AGENTS_DIR = Path(__file__).resolve().parent.parent.parent / "var" / "agents"


@dataclass(frozen=True)
class Pin:
    key: str  # folder under var/agents, and the name `agents check` prints
    package: str  # npm package
    version: str
    bin: str  # node_modules/.bin/<bin>
    extra: tuple[str, ...] = ()  # more package@version installed beside it
    flags: tuple[str, ...] = ()  # npm install flags

    @property
    def folder(self) -> Path:
        return AGENTS_DIR / self.key

    @property
    def exe(self) -> Path:
        return self.folder / "node_modules" / ".bin" / self.bin

    def installed_version(self) -> str | None:
        try:
            return json.loads((self.folder / "node_modules" / self.package / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            return None

    def missing(self) -> str | None:
        """None when this pin is installed, else what is missing and how to get it."""
        found = self.installed_version()
        if found == self.version and self.exe.exists():
            return None
        return f"{self.package}@{self.version} is not installed in {self.folder} (found: {found or 'nothing'}); run `bin/setup --agents`"


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
    )
}


def main() -> None:
    for p in PINS.values():
        print("|".join([p.key, " ".join([f"{p.package}@{p.version}", *p.extra]), " ".join(p.flags), p.bin]))


if __name__ == "__main__":
    main()
    sys.exit(0)
