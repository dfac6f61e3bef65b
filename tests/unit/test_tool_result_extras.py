"""What a log records beside a tool result's text is read by the format's importer, once, into the
result block's `extra` (core/records.py Block.extra): a Claude Code Bash call's stdout and stderr
apart, interrupted, its notes; a result the harness cut, its marker and the original the line
keeps; an efferent clip, its marker and the tokens it says were omitted. The viewer and the policy
lab read only `extra`. Each format's `fill_extras` gives a message stored before this the same
`extra` from its stored raw record and blocks (the data migration conversations 0012)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from contextviewer.core.records import MessageRecord
from contextviewer.importers import formats
from contextviewer.importers.claude_code import parser as claude_code
from contextviewer.importers.efferent import parser as efferent
from contextviewer.importers.common import STREAM_CAP
from tests.conftest import claude_code_fixture_files
from tests.importers import of
from tests.unit.test_efferent_importer import CLIPPED, run as run_efferent, write_current_store

# A Bash result line as Claude Code 2.1 writes it: the content the model got (stdout and stderr
# together) and toolUseResult with the streams apart.
BASH_LINE = {
    "parentUuid": "a1", "isSidechain": False, "userType": "external", "cwd": "/home/dev/project",
    "sessionId": "s-1", "version": "2.1.39", "gitBranch": "main", "type": "user", "uuid": "u2",
    "timestamp": "2026-03-01T12:00:05.000Z",
    "message": {"role": "user", "content": [{
        "tool_use_id": "toolu_01", "type": "tool_result", "is_error": False,
        "content": "collected 3 items\n\ntests/test_parser.py ..F\nDeprecationWarning: ast.Str is deprecated",
    }]},
    "toolUseResult": {
        "stdout": "collected 3 items\n\ntests/test_parser.py ..F", "stderr": "DeprecationWarning: ast.Str is deprecated",
        "interrupted": False, "isImage": False, "returnCodeInterpretation": "Some tests failed",
        "backgroundTaskId": "bash_7",
    },
    "sourceToolAssistantUUID": "a1",
}


def _parse_lines(*objs: dict) -> list[MessageRecord]:
    data = b"".join(json.dumps(o).encode() + b"\n" for o in objs)
    return of(list(claude_code.parse(io.BytesIO(data))), MessageRecord)


def _without_extra(blocks: list[dict]) -> list[dict]:
    return [{k: v for k, v in b.items() if k != "extra"} for b in blocks]


def test_a_claude_code_bash_result_keeps_stdout_and_stderr_apart_on_its_extra():
    (r,) = _parse_lines(BASH_LINE)
    assert r.role == "tool" and r.flags == {"tool_use_result": True}
    (block,) = r.blocks
    assert block.kind == "tool_result" and block.tool_id == "toolu_01"
    assert block.text == BASH_LINE["message"]["content"][0]["content"]  # what the model got, unchanged
    assert block.extra == {
        "stdout": "collected 3 items\n\ntests/test_parser.py ..F",
        "stderr": "DeprecationWarning: ast.Str is deprecated",
        "note": "Some tests failed",
        "background_task": "bash_7",
    }
    assert block.as_dict()["extra"] == block.extra  # stored with the block


def test_an_interrupted_command_and_a_result_with_no_streams():
    interrupted = {**BASH_LINE, "uuid": "u3", "toolUseResult": {"stdout": "", "stderr": "", "interrupted": True, "isImage": False}}
    refused = {**BASH_LINE, "uuid": "u4", "toolUseResult": "Error: permission denied"}
    other = {**BASH_LINE, "uuid": "u5", "toolUseResult": {"filenames": ["a.py"], "numFiles": 1}}
    a, b, c = _parse_lines(interrupted, refused, other)
    assert a.blocks[0].extra == {"stdout": "", "stderr": "", "interrupted": True}
    assert b.blocks[0].extra is None and c.blocks[0].extra is None  # nothing the page reads


def test_a_long_stream_is_capped_on_the_extra_and_kept_whole_in_the_raw_line():
    big = "x" * (STREAM_CAP + 500)
    line = {**BASH_LINE, "toolUseResult": {"stdout": big, "stderr": "", "interrupted": False}}
    (r,) = _parse_lines(line)
    assert r.blocks[0].extra["stdout"] == big[:STREAM_CAP] + "\n[…]"
    assert big in r.raw


def test_a_truncated_result_records_its_marker_and_the_longer_original():
    original = "\n".join(f"line {i}" for i in range(500))
    given = original[:300] + "\n\n... [460 lines truncated] ..."
    content = [{"tool_use_id": "toolu_01", "type": "tool_result", "content": given}]
    line = {**BASH_LINE, "message": {"role": "user", "content": content},
            "toolUseResult": {"stdout": original, "stderr": "", "interrupted": False, "isImage": False}}
    (r,) = _parse_lines(line)
    clip = r.blocks[0].extra["clip"]
    assert clip == {"marker": "... [460 lines truncated] ...", "original": original}
    # A search result keeps its original as `content`; no longer than what the model got: no original.
    grep = {**line, "uuid": "u9", "toolUseResult": {"mode": "content", "content": given, "numLines": 40}}
    (g,) = _parse_lines(grep)
    assert g.blocks[0].extra == {"clip": {"marker": "... [460 lines truncated] ..."}}


def test_a_persisted_result_records_its_marker():
    given = "<persisted-output>\nOutput too large (81.2KB). Full output saved to: /tmp/x.txt\n\nPreview:\nabc\n</persisted-output>"
    content = [{"tool_use_id": "toolu_01", "type": "tool_result", "content": given}]
    (r,) = _parse_lines({**BASH_LINE, "message": {"role": "user", "content": content}, "toolUseResult": "a" * 90_000})
    assert r.blocks[0].extra == {"clip": {"marker": "Output too large (81.2KB). Full output saved to: /tmp/x.txt", "original": "a" * 90_000}}
    assert claude_code.clip_marker("plain output") is None


def test_an_efferent_clipped_result_records_its_marker_and_omitted_tokens(tmp_path: Path):
    records = run_efferent(write_current_store(tmp_path / "smith.db"))
    clipped = next(m for m in of(records, MessageRecord) if m.uuid == "c1:4")
    assert clipped.blocks[0].text == CLIPPED
    assert clipped.blocks[0].extra == {"clip": {
        "marker": "[…compaction: ~5200 tokens of this grep output omitted. 37 more matches in 9 files. "
                  "To retrieve it, re-run grep with a narrower pattern.]",
        "omitted_tokens": 5200,
    }}
    others = [m for m in of(records, MessageRecord) if m.uuid != "c1:4"]
    assert not any(b.extra for m in others for b in m.blocks)
    assert efferent.clip_extra("no marker here") is None


def _fills_back(fmt: formats.Format, records: list[MessageRecord]) -> int:
    """Each message's blocks stored without `extra` are given back, by the format's fill_extras,
    exactly the `extra` the importer gave them; a message without any is left alone."""
    filled = 0
    for r in records:
        blocks = [b.as_dict() for b in r.blocks]
        again = fmt.fill_extras(r.raw, _without_extra(blocks))
        if any("extra" in b for b in blocks):
            assert again == blocks
            assert fmt.fill_extras(r.raw, again) is None  # filled once: nothing changes after
            filled += 1
        else:
            assert again is None
    return filled


def test_fill_extras_gives_a_stored_message_what_the_importer_gives_it(tmp_path: Path):
    lines = [BASH_LINE, {**BASH_LINE, "uuid": "u3", "toolUseResult": {"stdout": "", "stderr": "", "interrupted": True}},
             {**BASH_LINE, "uuid": "u4", "toolUseResult": "Error: refused"}]
    assert _fills_back(formats.get("claude-code"), _parse_lines(*lines)) == 2
    records = of(run_efferent(write_current_store(tmp_path / "smith.db")), MessageRecord)
    assert _fills_back(formats.get("efferent"), records) == 1
    assert claude_code.fill_extras("not json", [{"kind": "text", "text": "hi"}]) is None


@pytest.mark.parametrize("path", claude_code_fixture_files(), ids=lambda p: p.name)
def test_fill_extras_agrees_with_the_importer_on_every_fixture(path: Path):
    with open(path, "rb") as fh:
        records = of(list(claude_code.parse(fh)), MessageRecord)
    _fills_back(formats.get("claude-code"), records)


def test_stdout_that_is_the_result_text_itself_is_stored_once_and_still_shown_apart():
    from contextviewer.viewer.tool_shell import bash_result

    out = "3 passed in 0.12s"
    line = {**BASH_LINE, "uuid": "u9", "message": {**BASH_LINE["message"], "content": [
        {**BASH_LINE["message"]["content"][0], "content": out, "is_error": False}]},
        "toolUseResult": {**BASH_LINE["toolUseResult"], "stdout": out, "stderr": ""}}
    (record,) = [r for r in _parse_lines(line) if r.blocks and r.blocks[0].kind == "tool_result"]
    assert record.blocks[0].extra == {"stderr": "", "note": "Some tests failed", "background_task": "bash_7"}  # no copy of the output
    shown = bash_result(record.blocks[0].text, False, record.blocks[0].extra)
    assert (shown.stdout, shown.stderr, shown.combined) == (out, "", False)
