"""The folders of ../shared/fixtures and the format that reads each: one map for every test that
enumerates them. A folder whose format is not registered yet is skipped with that format's name, so
a new fixture folder never breaks an unrelated submission; a folder missing from the map fails."""


import pytest

from contextviewer.importers import formats
from tests.conftest import shared_fixtures_dir

# fixtures/<folder> -> the format that must claim each of its files (None: no format reads it).
FOLDER_FORMATS: dict[str, str | None] = {
    "claude-code": "claude-code",
    "codex": "codex",
    "gemini-cli": "gemini",
    "langchain-messages": "messages",
    "openhands": "openhands",
    "swe-agent": "swe-agent",
    "aider": "aider",
    "opencode": "opencode",
    "claude-code-hooklog": None,
    # Formats of the formats issue, not read yet: skipped by name until they are registered.
    "crush": "crush",
    "mini-swe-agent": "mini-swe-agent",
    "opencode-go": "opencode-go",
}


def registered(name: str | None) -> bool:
    return name is None or formats.get(name) is not None


def unregistered_reason(folder: str) -> str | None:
    """Why `folder` is skipped (its format is not registered yet), or None if it is read."""
    name = FOLDER_FORMATS[folder]
    return None if registered(name) else f"fixtures/{folder}: format {name} is not registered yet"


def folder_params(exclude: set[str] = frozenset()) -> list:
    """The fixture folders for parametrize: unknown ones fail in the test (say which format reads
    them), unregistered ones are skipped with their format's name."""
    root = shared_fixtures_dir()
    if root is None:
        return [pytest.param("(no fixtures)", marks=pytest.mark.skip(reason="shared fixtures not found"))]
    out = []
    for path in sorted(p for p in root.iterdir() if p.is_dir()):
        if path.name in exclude:
            continue
        reason = unregistered_reason(path.name) if path.name in FOLDER_FORMATS else None
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        out.append(pytest.param(path.name, marks=marks, id=path.name))
    return out


def file_params() -> list:
    """(folder, file) of every fixture file, skipped by format name where the format is not registered."""
    root = shared_fixtures_dir()
    if root is None:
        return []
    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        reason = unregistered_reason(folder.name) if folder.name in FOLDER_FORMATS else None
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        for path in sorted(folder.iterdir()):
            if path.is_file() and not path.name.endswith(".meta.json"):
                out.append(pytest.param(folder.name, path, marks=marks, id=f"{folder.name}/{path.name}"))
    return out


def assert_known(folder: str) -> None:
    assert folder in FOLDER_FORMATS, f"a new fixture folder {folder}: say in tests/fixture_folders.py which format reads it"


