"""Claude Code's layout on disk: session files and their sub-agent files.

Pure (no Django). Layouts (formats.md §1):

- ``<project>/<sessionId>.jsonl`` main session files;
- ``<project>/<sessionId>/subagents/agent-<agentId>.jsonl`` (2.1.x), with an optional
  ``agent-<agentId>.meta.json`` (``{"agentType": ...}``) and ``agent-acompact-*`` compaction runs;
- ``<project>/agent-<hex>.jsonl`` (2.0.x), linked to their session through the ``sessionId`` of
  their first line;
- 1.0.x wrote sub-agents inline in the main file (the parser handles those).

Any of these may also be gzip-compressed (``.jsonl.gz``).
"""

from __future__ import annotations

import json
from pathlib import Path

from contextviewer.importers.formats import SessionFiles, SubagentFile
from contextviewer.importers.lines import open_stream

FORMAT_NAME = "claude-code"

SUFFIXES = (".jsonl", ".jsonl.gz")
FIRST_LINE_LIMIT = 1 << 20  # bytes read to find an agent file's sessionId
IGNORED_NAMES = frozenset({"history.jsonl"})  # ~/.claude/history.jsonl is a prompt index, not a session


def stem(path: Path) -> str:
    """The name without ``.jsonl``/``.jsonl.gz`` (or without its last suffix for other files)."""
    name = path.name
    for suffix in SUFFIXES[::-1]:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def is_session_file(path: Path) -> bool:
    return path.name.endswith(SUFFIXES)


def is_agent_file(path: Path) -> bool:
    return is_session_file(path) and path.name.startswith("agent-")


def subagent_file(path: Path) -> SubagentFile:
    agent_id = stem(path).removeprefix("agent-")
    return SubagentFile(
        path=path,
        agent_id=agent_id,
        agent_type=_meta_agent_type(path.parent / f"agent-{agent_id}.meta.json"),
        is_compaction=path.name.startswith("agent-acompact-"),
    )


def companions(path: Path) -> list[Path]:
    """A 2.1 sub-agent file's ``agent-<id>.meta.json`` (its agent type): read with it, never alone."""
    if not is_agent_file(path):
        return []
    return [path.parent / f"agent-{stem(path).removeprefix('agent-')}.meta.json"]


def _meta_agent_type(meta: Path) -> str | None:
    try:
        if not meta.is_file() or meta.stat().st_size > FIRST_LINE_LIMIT:
            return None
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("agentType") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


def first_session_id(path: Path) -> str | None:
    """The ``sessionId`` of the first JSON line of a file (cheap: reads at most ~1 MB)."""
    try:
        stream, _ = open_stream(path, max_decompressed_bytes=FIRST_LINE_LIMIT * 4)
    except OSError:
        return None
    try:
        data = b""
        while len(data) < FIRST_LINE_LIMIT:
            chunk = stream.read(64 * 1024)
            if not chunk:
                break
            data += chunk
            while b"\n" in data:
                line, _, data = data.partition(b"\n")
                if line.strip():
                    return _session_id_of(line)
        return _session_id_of(data) if data.strip() else None
    except Exception:  # a broken file is the parser's business, not discovery's
        return None
    finally:
        stream.close()


def _session_id_of(line: bytes) -> str | None:
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    value = obj.get("sessionId") if isinstance(obj, dict) else None
    return value if isinstance(value, str) and value else None


def _main_beside(session_dir: Path) -> Path | None:
    """``<project>/<session>.jsonl(.gz)`` for ``<project>/<session>/``."""
    for suffix in SUFFIXES:
        candidate = session_dir.parent / f"{session_dir.name}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def _companion_subagents(main: Path) -> list[SubagentFile]:
    folder = main.parent / stem(main) / "subagents"
    if not folder.is_dir():
        return []
    return [subagent_file(p) for p in sorted(folder.iterdir()) if p.is_file() and is_agent_file(p)]


def discover(path: str | Path) -> list[SessionFiles]:
    """Sessions under ``path``: a file (any extension, returned as it is) or a folder (recursive)."""
    path = Path(path).expanduser()
    if path.is_file():
        return [_single(path)]
    if not path.is_dir():
        return []
    return group(sorted(p for p in path.rglob("*") if is_session_file(p) and p.is_file()))


def group(paths: list[Path]) -> list[SessionFiles]:
    """Claimed files as sessions: main files with their sub-agent files. One path named alone is
    taken as it is (whatever its name); several are paired by the layouts above."""
    if len(paths) == 1:
        return [_single(paths[0])]
    return _folder(sorted(p for p in paths if p.name not in IGNORED_NAMES))


def _single(path: Path) -> SessionFiles:
    if path.parent.name == "subagents" and is_agent_file(path):
        return SessionFiles(format=FORMAT_NAME, main=None, subagents=[subagent_file(path)], session_id=path.parent.parent.name)
    if is_agent_file(path):
        # 2.0.x sub-agent file given alone: a sub-agent of the session its first line names when
        # that session's file is beside it, else a session of its own.
        session_id = first_session_id(path)
        if session_id and any((path.parent / f"{session_id}{s}").is_file() for s in SUFFIXES):
            return SessionFiles(format=FORMAT_NAME, main=None, subagents=[subagent_file(path)], session_id=session_id)
        return SessionFiles(format=FORMAT_NAME, main=path, session_id=session_id or stem(path))
    subagents = _companion_subagents(path) if is_session_file(path) else []
    return SessionFiles(format=FORMAT_NAME, main=path, subagents=subagents, session_id=stem(path))


def _folder(files: list[Path]) -> list[SessionFiles]:
    sessions: dict[Path, SessionFiles] = {}  # key: main path (or the expected one)
    loose_agents: list[Path] = []
    for p in files:
        if p.parent.name == "subagents" and p.name.startswith("agent-"):
            session_dir = p.parent.parent
            main = _main_beside(session_dir)
            key = main or (session_dir.parent / f"{session_dir.name}.jsonl")
            entry = sessions.setdefault(key, SessionFiles(format=FORMAT_NAME, main=main, session_id=session_dir.name))
            entry.subagents.append(subagent_file(p))
        elif p.name.startswith("agent-"):
            loose_agents.append(p)
        elif p.name not in IGNORED_NAMES:
            entry = sessions.setdefault(p, SessionFiles(format=FORMAT_NAME, main=p, session_id=stem(p)))
            entry.main = p
    for p in loose_agents:
        session_id = first_session_id(p)
        main = None
        if session_id:
            for suffix in SUFFIXES:
                candidate = p.parent / f"{session_id}{suffix}"
                if candidate in sessions or candidate.is_file():
                    main = candidate
                    break
        if main is not None:
            entry = sessions.setdefault(main, SessionFiles(format=FORMAT_NAME, main=main, session_id=session_id))
            entry.subagents.append(subagent_file(p))
        else:
            # No session to attach it to: import it on its own.
            sessions[p] = SessionFiles(format=FORMAT_NAME, main=p, session_id=session_id or stem(p))
    result = [sessions[k] for k in sorted(sessions)]
    for entry in result:
        entry.subagents.sort(key=lambda s: str(s.path))
    return result
