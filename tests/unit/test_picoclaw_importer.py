"""The picoclaw importer (formats.md §10.2): ``sessions/<key>.jsonl`` + ``<key>.meta.json``,
written here exactly as the spec (and picoclaw's JSONLStore) describes them.

Expected numbers come from the lines this module writes, counted with plain json, never from the
importer's own helpers.
"""

import io
import json
from pathlib import Path

import pytest

from contextviewer.core.records import BadLine, FoldRecord, MessageRecord, SessionInfo, UsageRecord
from contextviewer.importers import formats
from contextviewer.importers.picoclaw import parser as picoclaw
from contextviewer.importers.formats import ParseInput

KEY = "agent:main:telegram:direct:123"
FILE_KEY = "agent_main_telegram_direct_123"
SUMMARY = "The user asked for the weather in Paris and a daily reminder; search worked, reminders need cron."


def _call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# The session's lines as picoclaw appends them (json.Marshal of providers.Message); strings are
# written as they are (a corrupt line, a non-object line).
LINES = [
    {"role": "user", "content": "hello", "created_at": "2026-03-01T09:00:00Z"},  # skipped (meta.skip = 2)
    {"role": "assistant", "content": "Hi! How can I help?", "model_name": "gpt-4o-mini", "created_at": "2026-03-01T09:00:02Z"},  # skipped
    {"role": "user", "content": "What's the weather in Paris?", "created_at": "2026-03-01T10:00:00Z"},
    {"role": "assistant", "content": "", "reasoning_content": "I should search.", "model_name": "gpt-4o-mini",
     "tool_calls": [_call("call_1", "web_search", '{"query": "weather Paris"}')], "created_at": "2026-03-01T10:00:03Z"},
    {"role": "tool", "content": "Sunny, 21C", "tool_call_id": "call_1", "created_at": "2026-03-01T10:00:04Z"},
    {"role": "assistant", "content": "It is sunny and 21C in Paris.", "model_name": "gpt-4o-mini", "created_at": "2026-03-01T10:00:06Z"},
    {"role": "assistant", "content": "", "reasoning_content": "Nothing more to say.", "model_name": "gpt-4o-mini"},
    '{"role": "user", "content": "trunc',  # a partial write from a crash
    {"role": "user", "content": "[SubTurn Result] research done: 3 links found"},
    {"role": "user", "content": "[System: cron] daily reminder at 08:00"},
    {"role": "assistant", "content": "", "model_name": "gpt-4o-mini",
     "tool_calls": [_call("call_2", "exec", "{not json"), _call("call_3", "read_file", '{"path": "notes.md"}')]},
    {"role": "tool", "content": "error: bad arguments", "tool_call_id": "call_2"},
    {"role": "tool", "content": "# notes", "tool_call_id": "call_3"},
    "[1, 2]",
    {"role": "critic", "content": "a role picoclaw may add later"},
    {"role": "user", "content": "ok"},
    {"role": "user", "content": "ok"},  # the same bytes twice: still two messages
]
SKIP = 2
META = {"key": KEY, "summary": SUMMARY, "skip": SKIP, "count": len(LINES),
        "created_at": "2026-03-01T09:00:00Z", "updated_at": "2026-03-01T10:05:00Z"}


def _line(item) -> str:
    return item if isinstance(item, str) else json.dumps(item, separators=(",", ":"))


def write_session(folder: Path, file_key: str, lines: list, meta: dict | None) -> Path:
    """``<folder>/<file_key>.jsonl`` (one line per item) and its meta file (MarshalIndent)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{file_key}.jsonl"
    path.write_text("".join(_line(item) + "\n" for item in lines), encoding="utf-8")
    if meta is not None:
        (folder / f"{file_key}.meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return path


def write_workspace(root: Path) -> Path:
    """A picoclaw workspace's sessions folder: the main session above, an emergency-compressed
    one, and one without a meta file."""
    sessions = root / "workspace" / "sessions"
    write_session(sessions, FILE_KEY, LINES, META)
    write_session(
        sessions,
        "agent_main_cli_default",
        [{"role": "user", "content": "summarize the logs"}, {"role": "assistant", "content": "Done: 2 errors."}],
        {"key": "agent:main:cli:default", "skip": 0, "count": 2,
         "summary": "[Emergency compression dropped 6 oldest messages due to context limit]",
         "created_at": "2026-03-02T08:00:00Z", "updated_at": "2026-03-02T08:30:00Z"},
    )
    write_session(sessions, "sk_v1_" + "ab" * 32, [{"role": "user", "content": "ping"}, {"role": "assistant", "content": "pong"}], None)
    return sessions


def run(path: Path) -> list:
    with open(path, "rb") as fh:
        return list(picoclaw.parse(ParseInput(path=path, stream=fh)))


def _objects() -> list[dict]:
    out = []
    for item in LINES:
        try:
            value = json.loads(_line(item))
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def test_a_session_with_its_meta_file(tmp_path):
    path = write_workspace(tmp_path) / f"{FILE_KEY}.jsonl"
    records = run(path)
    messages = [r for r in records if isinstance(r, MessageRecord)]
    objects = _objects()
    assert len(LINES) == 17 and len(objects) == 15

    # Every JSON object line is a message, plus the fold's marker; the rest are bad lines.
    lines = [m for m in messages if m.record_type != "meta_summary"]
    assert len(lines) == len(objects)
    bad = [r for r in records if isinstance(r, BadLine)]
    assert [b.line_no for b in bad] == [8, 14]
    assert "incomplete" in bad[0].reason or "not valid JSON" in bad[0].reason
    assert "not a JSON object" in bad[1].reason

    # The first `skip` lines are in the file but out of picoclaw's history: flagged, before the marker.
    marker_at = next(i for i, m in enumerate(messages) if m.subtype == "compact_boundary")
    assert marker_at == SKIP
    assert [m.flags.get("skipped", False) for m in messages[:SKIP]] == [True] * SKIP
    assert not any(m.flags.get("skipped") for m in messages[SKIP + 1 :])

    # The fold: the meta summary, the replaced messages said to be absent, the kept ones preserved.
    folds = [r for r in records if isinstance(r, FoldRecord)]
    assert len(folds) == 1
    fold = folds[0]
    assert fold.summary_text == SUMMARY and fold.boundary_uuid == messages[marker_at].uuid
    assert "not in the file" in fold.metadata["replaced_messages"]
    assert fold.metadata["skipped_lines_in_file"] == SKIP and fold.tokens_before is None
    assert fold.preserved_uuids == [m.uuid for m in messages[marker_at + 1 :]]
    assert len(fold.preserved_uuids) == len(objects) - SKIP

    # No measured usage, ever: a model call per assistant line, its usage not recorded (all zero,
    # shown as an estimate), and estimates said to be estimates.
    calls = [r for r in records if isinstance(r, UsageRecord)]
    assistants = [m for m in lines if m.role == "assistant"]
    assert [c.message_uuid for c in calls] == [m.uuid for m in assistants] and assistants
    assert all(c.context_size == 0 and c.output == 0 for c in calls)
    assert all(m.flags["estimated_tokens"] >= 0 and "estimate" in m.flags["estimate"] for m in lines)
    weather = next(m for m in lines if m.blocks and m.blocks[0].text == "It is sunny and 21C in Paris.")
    assert weather.flags["estimated_tokens"] == round(len("It is sunny and 21C in Paris.") / 2.5)
    assert fold.metadata["summary_estimated_tokens"] == round(len(SUMMARY) / 2.5)

    # Roles and blocks.
    roles = [m.role for m in lines]
    assert roles.count("tool") == sum(1 for o in objects if o["role"] == "tool") == 3
    assert roles.count("other") == 2  # the reasoning-only line and the unknown role
    calls = [b for m in lines for b in m.blocks if b.kind == "tool_call"]
    assert len(calls) == sum(len(o.get("tool_calls", [])) for o in objects) == 3
    assert calls[0].tool_input == {"query": "weather Paris"} and calls[0].tool_name == "web_search"
    assert calls[1].tool_input == "{not json"  # kept as written
    results = [b for m in lines for b in m.blocks if b.kind == "tool_result"]
    assert [b.tool_id for b in results] == ["call_1", "call_2", "call_3"]
    first_call = next(m for m in lines if any(b.kind == "tool_call" for b in m.blocks))
    assert [b.kind for b in first_call.blocks] == ["thinking", "tool_call"]
    assert first_call.api_message_id == first_call.uuid and first_call.model == "gpt-4o-mini"
    reasoning_only = next(m for m in lines if m.record_type == "reasoning_only")
    assert reasoning_only.role == "other" and reasoning_only.blocks[0].kind == "thinking"
    subturn = next(m for m in lines if m.flags.get("subturn_result"))
    sender = next(m for m in lines if m.flags.get("system_sender"))
    assert subturn.is_meta and sender.is_meta and sender.flags["system_sender"] == "cron"

    # Uuids: distinct, the repeated line included.
    assert len({m.uuid for m in messages}) == len(messages)
    assert all(m.session_id == KEY for m in messages)
    info = records[-1]
    assert isinstance(info, SessionInfo) and info.external_id == KEY and info.models == ["gpt-4o-mini"]


def test_emergency_compression_is_shown_as_such(tmp_path):
    path = write_workspace(tmp_path) / "agent_main_cli_default.jsonl"
    records = run(path)
    messages = [r for r in records if isinstance(r, MessageRecord)]
    assert [m.subtype for m in messages[:2]] == ["compact_boundary", "emergency_compression"]
    note = messages[1]
    assert note.role == "system" and note.flags["emergency_compression"] is True and note.flags["dropped_messages"] == 6
    assert "[Emergency compression dropped 6 oldest messages" in note.blocks[0].text
    fold = next(r for r in records if isinstance(r, FoldRecord))
    assert fold.trigger == "emergency" and fold.metadata["emergency_dropped"] == [6]
    assert len(messages) == 2 + 2


def test_a_session_without_meta_has_no_fold(tmp_path):
    path = write_workspace(tmp_path) / ("sk_v1_" + "ab" * 32 + ".jsonl")
    records = run(path)
    assert not any(isinstance(r, FoldRecord) for r in records)
    assert [m.role for m in records if isinstance(m, MessageRecord)] == ["user", "assistant"]
    assert records[-1].external_id == "sk_v1_" + "ab" * 32


def test_a_compacted_rewrite_keeps_the_uuids_of_the_kept_lines(tmp_path):
    sessions = write_workspace(tmp_path)
    path = sessions / f"{FILE_KEY}.jsonl"
    before = {m.uuid for m in run(path) if isinstance(m, MessageRecord)}
    # picoclaw's Compact: meta.skip -> 0, the skipped lines (and the corrupt ones) gone from the file.
    kept = [item for item in LINES[SKIP:] if not isinstance(item, str)]
    write_session(sessions, FILE_KEY, kept, {**META, "skip": 0, "count": len(kept)})
    after = [m for m in run(path) if isinstance(m, MessageRecord) and m.subtype is None]
    assert len(after) == len(kept)
    assert {m.uuid for m in after} <= before


def test_a_bad_meta_file_is_a_bad_line_and_the_session_still_imports(tmp_path):
    sessions = tmp_path / "sessions"
    path = write_session(sessions, "s", [{"role": "user", "content": "hi"}], None)
    (sessions / "s.meta.json").write_text("{not json")
    records = run(path)
    assert isinstance(records[0], BadLine) and "s.meta.json" in records[0].reason and records[0].line_no == 0
    assert [m.role for m in records if isinstance(m, MessageRecord)] == ["user"]


def test_an_empty_or_binary_file_never_raises(tmp_path):
    for name, data in [("empty.jsonl", b""), ("bin.jsonl", bytes(range(256)))]:
        path = tmp_path / "sessions" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        records = run(path)
        assert isinstance(records[0], BadLine) and isinstance(records[-1], SessionInfo)


# -- sniffing and grouping ----------------------------------------------------------------------


def test_sniff_claims_picoclaw_sessions_only(tmp_path):
    sessions = write_workspace(tmp_path)
    for path in sessions.glob("*.jsonl"):
        assert picoclaw.sniff(path, formats.head_of(path)) == 0.9, path.name
        fmt = formats.claim(path)
        assert fmt is not None and fmt.name == "picoclaw"
    for meta in sessions.glob("*.meta.json"):
        assert picoclaw.sniff(meta, formats.head_of(meta)) == 0
    # A plain chat JSONL outside a picoclaw layout is not clearly picoclaw's.
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "hello"}\n')
    assert picoclaw.sniff(chat, formats.head_of(chat)) == 0
    # Other agents' lines, even in a sessions folder.
    other = sessions / "other.jsonl"
    other.write_text('{"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "hi"}}\n')
    assert picoclaw.sniff(other, formats.head_of(other)) == 0


@pytest.mark.parametrize("folder", ["claude-code", "codex", "gemini-cli"])
def test_sniff_says_no_to_other_agents_fixtures(fixtures_dir, folder):
    files = [p for p in sorted((fixtures_dir / folder).rglob("*")) if p.is_file()]
    assert files
    claimed = [p.name for p in files if picoclaw.sniff(p, formats.head_of(p)) > 0]
    assert claimed == []


def test_discovery_pairs_each_session_with_its_meta_and_a_meta_alone_is_no_session(tmp_path):
    sessions = write_workspace(tmp_path)
    found = formats.discover(tmp_path)
    picked = sorted(s.main.name for s in found.sessions if s.format == "picoclaw")
    assert picked == sorted(p.name for p in sessions.glob("*.jsonl")) and len(picked) == 3
    assert all(not s.main.name.endswith(".meta.json") for s in found.sessions)
    meta = sessions / f"{FILE_KEY}.meta.json"
    assert formats.claim(meta) is None or formats.claim(meta).name != "picoclaw"
    assert picoclaw.group([meta]) == []
    records = list(picoclaw.parse(ParseInput(path=meta, stream=io.BytesIO(meta.read_bytes()))))
    assert isinstance(records[0], BadLine) and "not a session" in records[0].reason


# -- the legacy <key>.json document ---------------------------------------------------------------

LEGACY = {
    "key": "telegram:42",
    "messages": [
        {"role": "user", "content": "remind me at 9"},
        {"role": "assistant", "content": "", "tool_calls": [_call("call_9", "cron_add", '{"at": "09:00"}')]},
        {"role": "tool", "content": "scheduled", "tool_call_id": "call_9"},
        "not a message",
        {"role": "assistant", "content": "Done."},
    ],
    "summary": "Earlier: the user set up the bot.",
    "created": "2026-01-05T10:00:00Z",
    "updated": "2026-01-05T11:00:00Z",
}


def test_a_legacy_session_document(tmp_path):
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    path = sessions / "telegram_42.json"
    path.write_text(json.dumps(LEGACY, indent=2))
    assert picoclaw.sniff(path, formats.head_of(path)) == 0.9 and formats.claim(path).name == "picoclaw"
    records = run(path)
    messages = [r for r in records if isinstance(r, MessageRecord)]
    objects = [m for m in LEGACY["messages"] if isinstance(m, dict)]
    assert len(messages) == len(objects) + 1 and messages[0].subtype == "compact_boundary"
    assert [m.role for m in messages[1:]] == [m["role"] for m in objects]
    (bad,) = [r for r in records if isinstance(r, BadLine)]
    assert bad.line_no == 4 and "not a message object" in bad.reason
    (fold,) = [r for r in records if isinstance(r, FoldRecord)]
    assert fold.summary_text == LEGACY["summary"]
    assert records[-1].external_id == "telegram:42"
    assert all(r.context_size == 0 for r in records if isinstance(r, UsageRecord))
    # Once migrated (a <key>.jsonl beside it), the legacy file is not a second session.
    write_session(sessions, "telegram_42", LEGACY["messages"][:3], None)
    found = formats.discover(sessions)
    assert [s.main.name for s in found.sessions] == ["telegram_42.jsonl"]


def test_other_json_documents_are_not_legacy_sessions(tmp_path):
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for name, doc in [("a.json", {"messages": [{"role": "user", "content": "hi"}]}),
                      ("b.json", {"key": "x", "value": 1}),
                      ("c.json", [{"key": "x", "messages": []}])]:
        path = sessions / name
        path.write_text(json.dumps(doc))
        assert picoclaw.sniff(path, formats.head_of(path)) == 0, name
