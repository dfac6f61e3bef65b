"""A Codex export takes its times from the conversation: a conversation whose fold is its last
record is exported with the fold's time (its file name too), never a made-up date (issue 36)."""

from __future__ import annotations

import json
from datetime import UTC

import pytest

from contextviewer.builds import handoffs, services as builds
from contextviewer.conversations.models import Conversation, Fold, FoldOrigin
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import JobStatus

pytestmark = pytest.mark.django_db

SID = "0199aaaa-0000-7000-8000-0000000000c1"


def _codex_session(project, tmp_path) -> Conversation:
    """A short Codex rollout of 5 November 2025, without a compaction of its own."""
    rows = [
        {"timestamp": "2025-11-05T09:00:00.000Z", "type": "session_meta",
         "payload": {"id": SID, "timestamp": "2025-11-05T09:00:00.000Z", "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.50.0"}},
        {"timestamp": "2025-11-05T09:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the parser."}]}},
        {"timestamp": "2025-11-05T09:00:05.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed it."}]}},
    ]
    path = tmp_path / f"rollout-2025-11-05T09-00-00-{SID}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ingest.import_path(project, path)
    return Conversation.objects.get(project=project, agent="codex")


def _lines(exported) -> list[dict]:
    return [json.loads(line) for line in exported.content.splitlines()]


def test_a_handoff_as_the_last_record_exports_with_the_time_of_the_handoff(project, tmp_path):
    """A handoff made here is the conversation's last record: what Codex loads is its summary alone,
    which has no message of its own. The rollout takes the fold's time, not an invented date."""
    conv = _codex_session(project, tmp_path)
    job, _ = handoffs.start_handoff(conv, enqueue=False)
    assert jobs.run(job.pk).status == JobStatus.SUCCEEDED
    fold = Fold.objects.get(conversation=conv, key=job.idempotency_key)
    exported = builds.export(conv, "codex")
    lines = _lines(exported)
    assert [line["type"] for line in lines] == ["session_meta", "compacted"]
    stamp = fold.timestamp.astimezone(UTC).strftime("%Y-%m-%dT%H-%M-%S")
    assert exported.filename.startswith(f"rollout-{stamp}-"), exported.filename
    assert all(line["timestamp"][:10] == stamp[:10] for line in lines)
    assert "2026-01-01" not in exported.content + exported.filename


def test_a_fold_without_a_time_takes_the_last_message_it_put_away(project, tmp_path):
    conv = _codex_session(project, tmp_path)
    last = conv.messages.order_by("-position").first()
    Fold.objects.create(conversation=conv, key="old-handoff", position=last.position, summary_text="## Goal\nFix the parser.",
                        kind="handoff", origin=FoldOrigin.GENERATED, timestamp=None)
    conv.refresh_fold_count()
    exported = builds.export(conv, "codex")
    assert exported.filename.startswith("rollout-2025-11-05T09-00-05-"), exported.filename
    assert [line["timestamp"] for line in _lines(exported)] == ["2025-11-05T09:00:05.000Z"] * 2
    assert "~/.codex/sessions/2025/11/05/" in exported.resume_hint
