"""Every agent driver, in the order `agents check` runs them. A driver module exposes DRIVERS (or
one DRIVER): objects with `key` (a pin of ops/drivers/pins.py), `label` and `run(pin=None) -> Run`
(pin: another install of the same package, e.g. today's release; None: the pinned one)."""

from __future__ import annotations

import importlib

MODULES = ("claude_code", "codex", "gemini", "qwen", "opencode", "pi", "cline", "copilot", "vibe", "gptme", "kimi", "openhands_cli", "droid", "hermes")


def drivers() -> list:
    out = []
    for name in MODULES:
        try:
            module = importlib.import_module(f"ops.drivers.{name}")
        except ImportError:
            continue
        out += list(getattr(module, "DRIVERS", None) or [getattr(module, "DRIVER")])
    return out


def by_key() -> dict:
    return {d.key: d for d in drivers()}
