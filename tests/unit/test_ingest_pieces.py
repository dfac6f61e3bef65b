"""An import is three pieces (contextviewer/ingest): reading files (files.py, sources.py, reports.py),
turning records into rows (row_maker.py, positions.py, row_values.py) and writing the rows
(row_writer.py). The row maker's parts run without a database: where a message goes (position,
turn, dedupe) and the field values of its rows; and the flow goes one way (files -> row maker ->
row writer), never back."""

from __future__ import annotations

import ast
import json
from datetime import datetime, timezone
from pathlib import Path

from contextviewer.core.records import AgentLink, FoldRecord, UsageRecord
from contextviewer.conversations.models import Conversation, ModelCall
from contextviewer.ingest import row_values
from contextviewer.ingest.positions import ConversationState
from contextviewer.ingest.prepare import PreparedMessage

INGEST = Path(__file__).resolve().parents[2] / "contextviewer" / "ingest"


def _message(n: int, role: str = "assistant", *, uuid: str | None = None, starts_turn: bool = False, flags: dict | None = None,
             model: str | None = None, at: datetime | None = None, text: str = "") -> PreparedMessage:
    return PreparedMessage(
        line_no=n, uuid=uuid if uuid is not None else f"u{n}", parent_uuid=None, role=role, record_type=role, subtype=None,
        timestamp=at, session_id="s", is_sidechain=False, agent_id=None, is_meta=False, is_compact_summary=False,
        model=model, api_message_id=None, agent_kind=None, raw="{}", blocks="[]", flags=json.dumps(flags or {}), tokens="{}",
        token_total=3, starts_turn=starts_turn, first_text=text or None, tool_calls=0, search_text=text,
    )


def _fresh() -> ConversationState:
    return ConversationState(Conversation(model_names=[]), True, None, None, {})


def test_positions_and_turns_follow_the_user_messages_without_a_database():
    state = _fresh()
    at = datetime(2025, 1, 1, tzinfo=timezone.utc)
    placed = [
        (state.place(m), state.turn)
        for m in [
            _message(1, "user", starts_turn=True, text="fix the bug"),
            _message(2, model="m1", at=at),
            _message(3, "user", starts_turn=True, flags={"queued": True}),  # typed while the agent worked
            _message(4, "user", starts_turn=True, text="now the tests"),
        ]
    ]
    assert placed == [(0, 0), (1, 0), (2, 0), (3, 1)]
    assert state.first_prompt == "fix the bug"
    assert state.models == ["m1"] and state.min_ts == state.max_ts == at
    assert state.stored(_message(9, uuid="u2")) and not state.stored(_message(9, uuid="new"))


def test_a_conversation_stored_before_goes_on_after_its_last_message():
    state = ConversationState(Conversation(model_names=["m0"]), False, 41, 7, {"old": 3})
    assert state.token_totals is None  # its figures are read back, not computed from memory
    assert state.place(_message(1, "user", starts_turn=True)) == 42 and state.turn == 8
    # A stored message read again (a format that rewrites records) is kept once, to compare.
    again = _message(2, uuid="old")
    assert state.read_again_later(again) and not state.read_again_later(again)
    assert not state.read_again_later(_message(3, uuid="u1"))  # this import's own


def test_row_values_are_the_columns_as_stored():
    row = row_values.message_row(5, 0, 0, _message(1, text="hi")._replace(record_type="x" * 99), source_id=2)
    assert row["conversation_id"] == 5 and row["source_id"] == 2 and len(row["record_type"]) == 60
    assert set(row_values.message_content(_message(1), 2)) == set(row_values.UPDATED_MESSAGE_FIELDS)

    call = UsageRecord(line_no=1, api_message_id="msg", request_id=None, message_uuid="u1", model="m", input_uncached=10,
                       cache_write=0, cache_read=5, output=7)
    stored = ModelCall(position=3, **row_values.usage_values(call))
    assert row_values.set_usage(stored, call, 3) == (False, False)
    assert row_values.set_usage(stored, call, 4) == (True, True) and stored.position == 4

    fold = FoldRecord(line_no=9, boundary_uuid="b", kind="compact", trigger="auto" * 20, tokens_before=None, summary_text="summary")
    values = row_values.fold_values(fold, 10, None, {10: 100})
    assert values["boundary_id"] == 100 and values["summary_message_id"] is None and len(values["trigger"]) == 40

    links = row_values.merged_links({"a1": {"tool_use_id": "t0"}}, [AgentLink(agent_id="a1", tool_use_id="t1", line_no=1, agent_type="x")])
    assert links == {"a1": {"tool_use_id": "t0", "agent_type": "x"}}  # what an entry has stays


def _ingest_imports(module: str) -> set[str]:
    tree = ast.parse((INGEST / f"{module}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("contextviewer.ingest"):
            if node.module == "contextviewer.ingest":
                found |= {a.name for a in node.names}
            else:
                found.add(node.module.rsplit(".", 1)[-1])
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found |= {n.split(".")[0] for n in names if n.startswith("django")}
    return found


def test_the_flow_goes_one_way_and_the_row_makers_parts_import_no_django():
    readers, makers, writers = {"files", "sources", "reports"}, {"row_maker", "positions", "row_values"}, {"row_writer"}
    for module in makers | writers:
        assert not _ingest_imports(module) & readers, module
    for module in writers:
        assert not _ingest_imports(module) & makers, module
    for module in makers:
        assert "django" not in _ingest_imports(module), module
