"""A LangGraph store whose checkpoint nests msgpack extension types without end: the import ends
normally, the valid thread is imported and the bad checkpoint is reported by its row, naming the
nesting limit (issue 21). The parse runs first in a subprocess, so a crash fails the test instead
of ending pytest."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

from contextviewer.conversations.models import Conversation
from contextviewer.importers.langgraph.parser import MAX_EXT_DEPTH
from contextviewer.ingest import files as ingest

REPO = Path(__file__).resolve().parents[3]

PARSE = """
import json, sys
from contextviewer.core.records import BadLine, MessageRecord, SessionInfo
from contextviewer.importers.langgraph import parser as langgraph
from contextviewer.importers.formats import ParseInput
records = list(langgraph.parse(ParseInput(path=sys.argv[1])))
print(json.dumps({
    "sessions": [r.external_id for r in records if isinstance(r, SessionInfo)],
    "messages": sum(isinstance(r, MessageRecord) for r in records),
    "bad": [[r.line_no, r.reason] for r in records if isinstance(r, BadLine)],
}))
"""


def nested_ext(levels: int) -> bytes:
    blob = msgpack.packb(1)
    for _ in range(levels):
        blob = msgpack.packb(msgpack.ExtType(5, blob))
    return blob


def store_with_a_deep_checkpoint(lg, path: Path, levels: int) -> int:
    """One real thread (``alpha``) and a thread ``deep`` whose one checkpoint nests ``levels`` ext
    values; returns that checkpoint's row id."""
    lg.build(path, threads=("alpha",))
    conn = sqlite3.connect(path)
    try:
        cur = conn.execute(
            "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata) "
            "VALUES ('deep', '', 'ffff-deep-checkpoint', NULL, 'msgpack', ?, ?)",
            (nested_ext(levels), b"{}"),
        )
        conn.commit()
        return cur.lastrowid
    finally:
        conn.close()


@pytest.fixture
def lg():
    return pytest.importorskip("tests.langgraph_db")


@pytest.mark.parametrize("levels", [200, 10_000])
def test_a_checkpoint_of_nested_ext_types_is_a_bad_record_and_the_valid_thread_imports(project, lg, tmp_path, levels):
    path = tmp_path / "checkpoints.sqlite"
    rowid = store_with_a_deep_checkpoint(lg, path, levels)
    assert path.stat().st_size and len(nested_ext(levels)) < 50_000

    run = subprocess.run([sys.executable, "-c", PARSE, str(path)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"the parse ended with {run.returncode}: {run.stderr[-2000:]}"
    parsed = json.loads(run.stdout)
    assert sorted(parsed["sessions"]) == ["alpha", "deep"] and parsed["messages"] >= 5
    ((line_no, reason),) = parsed["bad"]
    assert line_no == rowid and "'deep'" in reason and f"nesting limit of {MAX_EXT_DEPTH} levels" in reason

    report = ingest.import_path(project, path)
    alpha = Conversation.objects.get(project=project, agent="langgraph", external_id="alpha")
    assert alpha.messages.count() == lg.MAIN_MESSAGES["alpha"]
    assert any("nesting limit" in e["reason"] and e["line"] == rowid for e in report.errors), report.errors
