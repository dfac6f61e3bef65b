"""A folder as a user uploads it (issue 20, item 6): a Claude Code session with its sub-agents and a
sub-agent's ``.meta.json``, and a picoclaw session that only its ``<key>.meta.json`` beside it makes
readable (it is not in a ``sessions`` folder and has none of picoclaw's own keys) and that holds its
fold. Read together only if the upload keeps the layout."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

from contextviewer.importers.claude_code import synthetic

PICOCLAW_SUMMARY = "The user asked for the release notes; the agent listed three fixes and one open question."
PICOCLAW_LINES = [
    {"role": "user", "content": "what changed since last week?"},
    {"role": "assistant", "content": "Three fixes went in."},
    {"role": "user", "content": "write the release notes"},
    {"role": "assistant", "content": "Release notes: fixed import, fixed export, faster search."},
]


@dataclass
class UploadFolder:
    root: Path  # the folder the user picks (its name is the top of every relative path)
    claude_main: Path
    claude_subagents: list[Path]  # agent-*.jsonl under <session>/subagents/
    claude_meta: list[Path]  # agent-*.meta.json beside them
    picoclaw_session: Path
    picoclaw_meta: Path

    def files(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*") if p.is_file())

    def relative(self) -> list[str]:
        """Each file's path as the browser's webkitRelativePath gives it: <folder>/<path>."""
        return [p.relative_to(self.root.parent).as_posix() for p in self.files()]


def write_upload_folder(parent: Path, name: str = "agent-logs") -> UploadFolder:
    root = parent / name
    main = synthetic.write_session(root / "claude" / "-home-dev-app", messages=60, seed=5)
    subagents = sorted((main.parent / main.stem / "subagents").glob("agent-*.jsonl"))
    metas = sorted((main.parent / main.stem / "subagents").glob("agent-*.meta.json"))
    folder = root / "picoclaw"
    folder.mkdir(parents=True)
    session = folder / "agent_main_cli_release.jsonl"
    session.write_text("".join(json.dumps(line) + "\n" for line in PICOCLAW_LINES), encoding="utf-8")
    meta = folder / "agent_main_cli_release.meta.json"
    meta.write_text(json.dumps({"key": "agent:main:cli:release", "summary": PICOCLAW_SUMMARY, "skip": 2,
                                "count": len(PICOCLAW_LINES), "created_at": "2026-03-01T09:00:00Z",
                                "updated_at": "2026-03-01T10:00:00Z"}, indent=2), encoding="utf-8")
    return UploadFolder(root, main, subagents, metas, session, meta)


def zip_of(folder: UploadFolder, extra: dict[str, bytes] | None = None) -> bytes:
    """The folder zipped as a file manager does (its name at the top of every member)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, rel in zip(folder.files(), folder.relative()):
            archive.write(path, rel)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buf.getvalue()
