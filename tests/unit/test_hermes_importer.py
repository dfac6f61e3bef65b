"""The Hermes Agent importer (``~/.hermes/state.db``, issue 39). The store is written by
tests/hermes_store.py from the facts of Hermes Agent 0.19.0's source and of a store its CLI wrote
here (the CLI's own run is tests/agents/test_hermes_conformance.py, where it is installed).

Expected numbers are counted by hand from that module's rows (its docstring lists them), never taken
from the importer: an assistant row is one model call, unless it is a copy Hermes wrote again in a
compacted list; a tool call is one entry of a row's ``tool_calls``."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from pathlib import Path

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.formats import ParseInput
from tests.hermes_store import A, B, C, COMPRESSION, COMPRESSION_C, D, MODEL, SUMMARY_A, SUMMARY_C, write_store
from tests.importers import of


def read(path: Path) -> list:
    fmt = formats.claim(path)
    assert fmt is not None and fmt.name == "hermes", [(s, f.name) for s, f in formats.scores(path)]
    return list(fmt.parse(ParseInput(path=path)))


def by_session(records: list) -> dict[str, list]:
    out, current = {}, []
    for r in records:
        current.append(r)
        if isinstance(r, SessionInfo):
            out[r.external_id] = current
            current = []
    return out


def messages(records: list, agent: str | None = None) -> list[MessageRecord]:
    return [m for m in of(records, MessageRecord) if m.subtype != "compact_boundary" and m.agent_id == agent]


def tool_calls(msgs: list[MessageRecord]) -> int:
    return sum(1 for m in msgs for b in m.blocks if b.kind == "tool_call")


def test_a_store_is_claimed_by_hermes_alone_and_found_in_its_folder(tmp_path):
    path = write_store(tmp_path / ".hermes" / "state.db")
    assert [f.name for _, f in formats.scores(path)] == ["hermes"]
    found = formats.discover(tmp_path / ".hermes")
    assert [(s.format, s.main) for s in found.sessions] == [("hermes", path)]
    entry = formats.get("hermes")
    assert "~/.hermes" in entry.locations and entry.label == "Hermes Agent"


def test_messages_calls_tools_the_fold_and_the_sub_agent(tmp_path):
    sessions = by_session(read(write_store(tmp_path / "state.db")))
    assert set(sessions) == {A, C}  # the sub-agent and the continuation are no conversations of their own
    main = sessions[A]
    own = messages(main)
    # By hand: rows 1-7, 11 (the summary), 14, 19, 20; the copies 8, 9, 10, 12, 13 are not written twice.
    assert [m.uuid.split(":")[1] for m in own] == ["1", "2", "3", "4", "5", "6", "7", "11", "14", "19", "20"]
    assert Counter(m.role for m in own) == {"user": 2, "assistant": 5, "tool": 4}
    assert tool_calls(own) == 4  # c1, c2, c3, c4
    calls = [c for c in of(main, UsageRecord) if c.agent_id is None]
    assert [c.api_message_id.split(":")[1] for c in calls] == ["2", "4", "6", "14", "20"]
    # Hermes keeps no usage per call: every call is of zero usage, flagged, with the model of its session.
    assert all((c.input_uncached, c.cache_read, c.output, c.model) == (0, 0, 0, MODEL) for c in calls)
    assert all(m.flags.get("usage_unmeasured") for m in own if m.role == "assistant")
    assert own[0].flags["session_totals"]["input_tokens"] == 5200

    (fold,) = [f for f in of(main, FoldRecord) if f.agent_id is None]
    # What the call after it (row 14) carried, in order: the protected head (1, 2, 3), the summary, the tail (6, 7).
    assert fold.preserved_uuids == [f"{A}:{n}" for n in (1, 2, 3, 11, 6, 7)]
    assert (fold.summary_uuid, fold.summary_text) == (f"{A}:11", SUMMARY_A)
    assert (fold.trigger, fold.tokens_before, fold.tokens_after) == (None, None, None)  # Hermes logs none of them
    # The summarizer's totals (task 'compression'): its input counts the cache read inside.
    assert fold.cost == {"calls": 1, "input_uncached": COMPRESSION["input_tokens"] - COMPRESSION["cache_read_tokens"],
                         "cache_read": COMPRESSION["cache_read_tokens"], "cache_write": 0,
                         "output": COMPRESSION["output_tokens"], "model": MODEL}
    boundary = next(m for m in of(main, MessageRecord) if m.subtype == "compact_boundary")
    assert boundary.uuid == fold.boundary_uuid and own.index(next(m for m in own if m.uuid == f"{A}:11")) == 7

    sub = messages(main, B)
    assert (len(sub), tool_calls(sub)) == (4, 1)
    assert len([c for c in of(main, UsageRecord) if c.agent_id == B]) == 2
    (link,) = of(main, AgentLink)
    assert (link.agent_id, link.tool_use_id, link.agent_type) == (B, "c4", "subagent")
    info = main[-1]
    assert (info.title, info.cwd, info.models) == ("Fix the parser", "/home/dev/proj", [MODEL])
    assert info.started_at.isoformat() == "2026-03-01T10:00:00+00:00"


def test_a_rotated_compaction_continues_the_same_conversation(tmp_path):
    conv = by_session(read(write_store(tmp_path / "state.db")))[C]
    own = messages(conv)
    # By hand: C's rows 21-27, then D's summary (31) and its new row 34; D's copies 28-30, 32, 33 name C's rows.
    assert [m.uuid for m in own] == [f"{C}:{n}" for n in range(21, 28)] + [f"{D}:31", f"{D}:34"]
    assert (len(of(conv, UsageRecord)), tool_calls(own)) == (4, 2)
    (fold,) = of(conv, FoldRecord)
    assert fold.preserved_uuids == [f"{C}:21", f"{C}:22", f"{C}:23", f"{D}:31", f"{C}:26", f"{C}:27"]
    assert fold.summary_text == SUMMARY_C
    # The summarizer's totals are on the session it ended (C), not on the continuation that holds the fold.
    assert (fold.cost["calls"], fold.cost["input_uncached"], fold.cost["output"]) == (
        1, COMPRESSION_C["input_tokens"], COMPRESSION_C["output_tokens"])
    assert conv[-1].title == "Tidy"  # the lineage's first title, not Hermes's "Tidy #2"


def test_the_store_is_read_without_a_byte_written_beside_it(tmp_path):
    path = write_store(tmp_path / "state.db")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    read(path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.db"]


def test_bad_input_is_refused_by_name_and_nothing_else_is_lost(tmp_path):
    path = write_store(tmp_path / "state.db")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE messages SET tool_calls = '[{not json' WHERE id = 4")
    conn.commit()
    conn.close()
    records = read(path)
    (bad,) = of(records, BadLine)
    assert "Hermes Agent message 4" in bad.reason and "tool_calls is not a JSON list" in bad.reason
    main = by_session(records)[A]
    assert len(messages(main)) == 11 and tool_calls(messages(main)) == 3  # every row kept; c2 is what was lost

    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE sessions (id TEXT)")
    conn.commit()
    conn.close()
    assert formats.get("hermes").sniff(other, other.read_bytes()[:64]) == 0.0
    (refusal, _) = list(formats.get("hermes").parse(ParseInput(path=other)))
    assert isinstance(refusal, BadLine) and refusal.reason.startswith("not a Hermes Agent state.db")
