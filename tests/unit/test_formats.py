"""The registry of formats: every fixture file is claimed by its own format only, and what no
format reads is described and refused."""

import gzip
import json

import pytest

from contextviewer.importers import formats
from tests.fixture_folders import FOLDER_FORMATS, assert_known, file_params, folder_params

@pytest.mark.parametrize(("folder", "path"), file_params())
def test_every_fixture_file_is_claimed_by_its_own_format_only(folder, path):
    assert_known(folder)
    expected = FOLDER_FORMATS[folder]
    claims = formats.scores(path)
    if expected is None:
        assert claims == [], f"{path.name} is claimed by {[f.name for _, f in claims]}"
        return
    assert claims, f"{path.name} is claimed by no format"
    assert claims[0][1].name == expected, f"{path.name}: {[(s, f.name) for s, f in claims]}"
    others = [(s, f.name) for s, f in claims[1:] if s >= claims[0][0]]
    assert not others, f"{path.name} is claimed as strongly by {others}"


@pytest.mark.parametrize("folder", folder_params())
def test_fixture_folders_are_discovered_whole(fixtures_dir, folder):
    assert_known(folder)
    expected = FOLDER_FORMATS[folder]
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


def test_a_fixture_folder_of_a_format_not_registered_yet_is_skipped_by_that_name(monkeypatch):
    from tests import fixture_folders

    monkeypatch.setitem(fixture_folders.FOLDER_FORMATS, "future-agent", "future-agent")
    assert fixture_folders.unregistered_reason("future-agent") == "fixtures/future-agent: format future-agent is not registered yet"
    assert fixture_folders.unregistered_reason("codex") is None
    assert fixture_folders.unregistered_reason("claude-code-hooklog") is None  # read by no format: tested as refused


def test_a_first_line_longer_than_the_sniff_window_is_claimed_by_its_format(tmp_path):
    # A Claude Code session whose first record is a 300 KB pasted prompt (or a 100,000-character id)
    # was refused as "not a format": the sniff saw only the line's first 64 KiB. Its first line is
    # read to its end with its long strings cut short, plain and gzipped.
    from tests.sessions import session_lines

    lines = session_lines(2)
    first = json.loads(lines[0])
    first["message"]["content"] = "pasted \\ \u00e9 \"log\" " + "x" * 300_000
    lines[0] = json.dumps(first, ensure_ascii=False)
    text = "\n".join(lines) + "\n"
    plain = tmp_path / "3f0c2b1e-0000-4000-8000-000000000001.jsonl"
    plain.write_text(text, encoding="utf-8")
    zipped = tmp_path / "3f0c2b1e-0000-4000-8000-000000000002.jsonl.gz"
    zipped.write_bytes(gzip.compress(text.encode()))
    for path in (plain, zipped):
        assert len(formats.head_of(path)) <= formats.SNIFF_BYTES
        claims = formats.scores(path)
        assert claims and claims[0][1].name == "claude-code", (path.name, claims)


@pytest.mark.parametrize("keep", [250, 251, 252, 253, 254, 255, 256, 257])
def test_shortened_strings_stay_json_with_their_keys(keep):
    from contextviewer.importers.common import shorten_strings

    value = {"type": "user", "id": "i" * 1000, "esc": "\\" * 301, "u": "\u1234" * 200, "q": '"' * 300,
             "emoji": "\U0001f600" * 100, "nested": {"k": "é" * 400}}
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
        short = shorten_strings(text.encode("utf-8"), keep)
        back = json.loads(short)
        assert len(short) < 3000 and back["type"] == "user" and set(back) == set(value)
        assert back["nested"].keys() == {"k"} and back["id"].startswith("iii")
