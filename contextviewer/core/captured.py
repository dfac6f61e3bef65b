"""Claude Code's system prompt and tool definitions, sized from a captured request.

Claude Code does not write its system prompt or its tool definitions to the session log, so the
gauge cannot count them from the messages. A captured request (`<schemas>/claude-code/captured/
system_<version>.json` and `tools_<version>.json`: the blocks and tool definitions one CLI version
sent to the API) gives their size. The files are read where they lie (settings.SCHEMAS_DIR), never
copied into the project; without them the categories are "not available", not 0.

Version: the capture of the session's own CLI version when there is one, else the nearest older
capture, else the nearest newer one. MCP tools (`mcp__*`) are the capturing user's own servers,
not Claude Code's, and are left out. Pure (no Django): reads the two files, counts with o200k.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from . import tokens

_FILE = re.compile(r"^(system|tools)_(\d+(?:\.\d+)*)\.json$")


@dataclass(frozen=True, slots=True)
class CapturedPrompt:
    version: str  # the CLI version of the capture
    exact: bool  # the session ran that very version
    system_prompt: int  # o200k tokens of the system prompt blocks
    tool_definitions: int  # o200k tokens of the tool definitions (name, description, input schema)
    tools: int  # how many tool definitions


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version or ""))


def _folder(schemas_dir: Path | str | None, harness: str) -> Path | None:
    return Path(schemas_dir) / harness / "captured" if schemas_dir else None


def captures_stamp(schemas_dir: Path | str | None, harness: str) -> tuple:
    """What the captures of `harness` are now: (name, size, modification time in ns) of each capture
    file of its captured folder, sorted; () without one. A kept page or fragment showing the gauge
    is kept per this stamp too, so a capture added, replaced or removed shows at the next request."""
    folder = _folder(schemas_dir, harness)
    if folder is None:
        return ()
    try:
        with os.scandir(folder) as found:
            return tuple(sorted((e.name, st.st_size, st.st_mtime_ns) for e in found if _FILE.match(e.name) for st in [e.stat()]))
    except OSError:
        return ()


def _versions(stamp: tuple) -> list[str]:
    """CLI versions with both a system and a tools capture in `stamp`, oldest first."""
    found: dict[str, set[str]] = {}
    for name, *_ in stamp:
        m = _FILE.match(name)
        found.setdefault(m.group(2), set()).add(m.group(1))
    return sorted((v for v, kinds in found.items() if kinds == {"system", "tools"}), key=_version_key)


def available_versions(schemas_dir: Path | str | None, harness: str) -> list[str]:
    """CLI versions with both a system and a tools capture, oldest first."""
    return _versions(captures_stamp(schemas_dir, harness))


def pick_version(versions: list[str], session_version: str | None) -> str | None:
    """The capture for `session_version`: the same version, else the newest older, else the oldest newer."""
    if not versions:
        return None
    if not session_version or not _version_key(session_version):
        return versions[-1]
    if session_version in versions:
        return session_version
    key = _version_key(session_version)
    older = [v for v in versions if _version_key(v) <= key]
    return older[-1] if older else versions[0]


def _text_of_system(blocks: object) -> str:
    if isinstance(blocks, str):
        return blocks
    if not isinstance(blocks, list):
        return ""
    parts = []
    for block in blocks:
        text = block.get("text") if isinstance(block, dict) else block if isinstance(block, str) else None
        # The billing header is a request attribute, not prompt text.
        if isinstance(text, str) and not text.startswith("x-anthropic-billing-header:"):
            parts.append(text)
    return "\n\n".join(parts)


@functools.lru_cache(maxsize=16)
def _count(folder: str, version: str, _mtimes: tuple[float, float]) -> tuple[int, int, int]:
    base = Path(folder)
    system = json.loads((base / f"system_{version}.json").read_text(encoding="utf-8"))
    tools = json.loads((base / f"tools_{version}.json").read_text(encoding="utf-8"))
    if not isinstance(tools, list):
        tools = []
    kept = [t for t in tools if isinstance(t, dict) and not str(t.get("name") or "").startswith("mcp__")]
    tools_text = json.dumps(kept, ensure_ascii=False)
    return tokens.count_text(_text_of_system(system)), tokens.count_text(tools_text), len(kept)


class CountStore(Protocol):
    """Where counts outlive the process (Django's cache fits): `get(key)` and `set(key, value, timeout)`."""

    def get(self, key: str) -> object: ...

    def set(self, key: str, value: object, timeout: None) -> object: ...


def captured_prompt(
    schemas_dir: Path | str | None, harness: str, session_version: str | None, store: CountStore | None = None
) -> CapturedPrompt | None:
    """The captured system prompt and tools of a session run by `harness` (its folder under the
    schemas: the harness rule's `captured_prompt`), or None when no capture is
    found (or one cannot be read). With a `store`, the counts are kept there under the capture's
    version, file times and encoding, so a process that has not loaded the tokenizer (a web worker's
    first page) reads them instead of loading it (0.3 s) for two counts."""
    stamp = captures_stamp(schemas_dir, harness)
    version = pick_version(_versions(stamp), session_version)
    if version is None:
        return None
    folder = _folder(schemas_dir, harness)
    times = {name: mtime for name, _size, mtime in stamp}
    mtimes = (times[f"system_{version}.json"], times[f"tools_{version}.json"])
    try:
        key = f"captured:{harness}:{version}:{mtimes[0]}:{mtimes[1]}:{tokens.DEFAULT_ENCODING}"
        found = store.get(key) if store is not None else None
        if isinstance(found, (list, tuple)) and len(found) == 3 and all(isinstance(n, int) for n in found):
            system, tools, count = found
        else:
            system, tools, count = _count(str(folder), version, mtimes)
            if store is not None:
                store.set(key, (system, tools, count), None)
    except (OSError, ValueError):
        return None
    return CapturedPrompt(version, version == session_version, system, tools, count)
