"""The registry of formats: every fixture file is claimed by its own format only, and what no
format reads is described and refused."""

import gzip
import json
from pathlib import Path

import pytest

from contextviewer.importers import formats
from tests.conftest import shared_fixtures_dir

# fixtures/<folder> -> the format that must claim each of its files (None: no format reads it).
FOLDER_FORMATS = {
    "claude-code": "claude-code",
    "codex": "codex",
    "gemini-cli": "gemini",
    "langchain-messages": "messages",
    "openhands": "openhands",
    "swe-agent": "swe-agent",
    "aider": "aider",
    "opencode": "opencode",
    "claude-code-hooklog": None,
}


def _fixture_paths() -> list[tuple[str, Path]]:
    root = shared_fixtures_dir()
    if root is None:
        return []
    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(folder.iterdir()):
            if path.is_file() and not path.name.endswith(".meta.json"):
                out.append((folder.name, path))
    return out


def _registered(name: str | None) -> bool:
    return name is None or formats.get(name) is not None


@pytest.mark.parametrize(("folder", "path"), _fixture_paths(), ids=lambda v: v if isinstance(v, str) else v.name)
def test_every_fixture_file_is_claimed_by_its_own_format_only(folder, path):
    assert folder in FOLDER_FORMATS, f"a new fixture folder {folder}: say which format reads it"
    expected = FOLDER_FORMATS[folder]
    if not _registered(expected):
        pytest.skip(f"format {expected} is not registered yet")
    claims = formats.scores(path)
    if expected is None:
        assert claims == [], f"{path.name} is claimed by {[f.name for _, f in claims]}"
        return
    assert claims, f"{path.name} is claimed by no format"
    assert claims[0][1].name == expected, f"{path.name}: {[(s, f.name) for s, f in claims]}"
    others = [(s, f.name) for s, f in claims[1:] if s >= claims[0][0]]
    assert not others, f"{path.name} is claimed as strongly by {others}"


def test_fixture_folders_are_discovered_whole(fixtures_dir):
    for folder, expected in FOLDER_FORMATS.items():
        if not (fixtures_dir / folder).is_dir() or not _registered(expected):
            continue
        found = formats.discover(fixtures_dir / folder)
        names = {s.format for s in found.sessions}
        if expected is None:
            assert not found.sessions, folder
        else:
            assert names == {expected}, (folder, names)


def test_a_json_array_of_unknown_objects_is_described_and_refused(tmp_path):
    path = tmp_path / "events.json"
    path.write_text(json.dumps([{"action": "run", "source": "agent", "args": {}} for _ in range(18)]))
    assert formats.claim(path) is None
    reason = formats.refusal(path)
    assert reason.startswith("a JSON array of 18 objects with keys action, source, args: not a format contextviewer reads")
    assert "Claude Code" in reason


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("notes.txt", b"just some notes\n", "a text file starting 'just some notes'"),
        ("data.bin", bytes(range(256)) * 4, "a binary file"),
        ("empty.jsonl", b"", "the file is empty"),
        ("other.jsonl", b'{"ts": 1, "event": "Stop"}\n{"ts": 2, "event": "Start"}\n', "JSON lines whose first object has keys ts, event"),
        ("obj.json", b'{"hello": "world"}', "a JSON object with keys hello"),
        ("z.jsonl.gz", gzip.compress(b'{"ts": 1, "event": "Stop"}\n'), "JSON lines whose first object has keys ts, event"),
    ],
)
def test_unclaimed_files_are_described(tmp_path, name, content, words):
    path = tmp_path / name
    path.write_bytes(content)
    assert formats.claim(path) is None
    assert words in formats.refusal(path)


def test_a_folder_with_nothing_readable_discovers_nothing_and_lists_what_it_skipped(tmp_path):
    (tmp_path / "a.txt").write_text("hello")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.json").write_text("{}")
    found = formats.discover(tmp_path)
    assert found.sessions == []
    assert sorted(p.name for p, _ in found.skipped) == ["a.txt", "b.json"]


def test_every_format_declares_what_the_pages_and_readme_need():
    names = [f.name for f in formats.registry()]
    assert len(names) == len(set(names))
    for fmt in formats.registry():
        assert fmt.label and fmt.where, fmt.name
        assert fmt.storage in (formats.LINES, formats.DOCUMENT, formats.DATABASE, formats.FOLDER)
