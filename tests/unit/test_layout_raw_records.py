"""The viewer and the policy lab never read a format's raw record (test_layout_format_names.py's
idea, for what a format writes rather than its name): what a log records beside a tool result's
text (Claude Code's toolUseResult: a command's stdout and stderr, the original of a clipped
output) and the harnesses' clip markers are read by the format's importer into the result block's
`extra` (core/records.py Block.extra), and conversations/ and lab/ read `extra` only."""

from __future__ import annotations

from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "contextviewer"
READERS = ("conversations", "lab")
# A raw record's field, and the clip markers of the harnesses (importers/claude_code/parser.py,
# importers/efferent/parser.py): format knowledge, never spelled above the importers.
FORMAT_STRINGS = ("toolUseResult", "lines truncated]", "<persisted-output>", "compaction: ~")


def _modules(app: str) -> list[Path]:
    return sorted(p for p in (PACKAGE / app).rglob("*.py") if "migrations" not in p.parts)


@pytest.mark.parametrize("app", READERS)
def test_no_reader_of_stored_messages_spells_a_raw_record_field_or_a_clip_marker(app):
    found = {
        f"{path.relative_to(PACKAGE)}: {s}"
        for path in _modules(app)
        for s in FORMAT_STRINGS
        if s in path.read_text()
    }
    assert found == set(), "read it in the format's importer into the tool result's extra (docs/adding-a-format.md)"


def test_the_scan_reads_the_readers():
    assert len(_modules("conversations")) > 10 and _modules("lab")
