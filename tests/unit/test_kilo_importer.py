"""Kilo (an opencode fork) is its own format: its `kilo.db` has opencode's tables (and its own), so the
same reader maps it, but the conversations are Kilo's (`Conversation.agent == "kilo"`), never opencode's;
an opencode.db beside it stays opencode's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from contextviewer.importers import formats
from contextviewer.importers.kilo import parser as kilo
from contextviewer.importers.opencode import parser as opencode
from tests.unit.test_opencode_importer import write_database


def _with_board(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE kilo_board (id TEXT PRIMARY KEY, data TEXT)")  # Kilo 7.7's own table
    db.commit()
    db.close()
    return path


def test_kilo_and_opencode_databases_are_told_apart(tmp_path):
    (tmp_path / "oc").mkdir()
    oc = write_database(tmp_path / "oc" / "opencode.db")
    (tmp_path / "k").mkdir()
    k = _with_board(write_database(tmp_path / "k" / "kilo.db"))
    (tmp_path / "renamed").mkdir()
    renamed = _with_board(write_database(tmp_path / "renamed" / "store.db"))  # Kilo's tables, any name
    (tmp_path / "named").mkdir()
    named = write_database(tmp_path / "named" / "kilo.db")  # Kilo's name, without its tables (an older Kilo)
    assert formats.claim(oc).name == "opencode"
    for path in (k, renamed, named):
        assert formats.claim(path).name == "kilo", path
        assert opencode.sniff(path, formats.head_of(path)) == 0.0
    found = formats.discover(tmp_path)
    assert sorted((s.format, s.main.parent.name) for s in found.sessions) == [
        ("kilo", "k"), ("kilo", "named"), ("kilo", "renamed"), ("opencode", "oc"),
    ]


def test_a_kilo_database_reads_as_opencodes_does(tmp_path):
    k = _with_board(write_database(tmp_path / "kilo.db"))
    oc = write_database(tmp_path / "opencode.db")
    assert [type(r).__name__ for r in kilo.parse(k)] == [type(r).__name__ for r in opencode.parse(oc)]
    assert formats.get("kilo").label == "Kilo"
    assert formats.harness("kilo").fold_at_effective


def test_a_file_that_is_no_kilo_database_says_so(tmp_path):
    path = tmp_path / "kilo.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    (bad, *_rest) = [r for r in formats.get("kilo").parse(formats.ParseInput(path)) if type(r).__name__ == "BadLine"]
    assert "not a Kilo database" in bad.reason
