"""`manage.py usage` on the shared fixtures equals a count made here from the raw files, by a reader
written apart from the importers (plain json, its own dedupe rule), for Claude Code and Codex.

Claude Code: one model call is one `message.id` of an assistant line; streaming writes one line per
content block, each repeating the call's usage (a 3-block answer is 3 lines with the same id), so
the reader keeps one usage per id, across every file of the folder (a sub-agent's file and an
inline sidechain hold their own ids). Of repeated lines it keeps the one with the largest output
(a line written mid-stream may carry a partial output count).

Codex: the last `token_count` event of a rollout carries `total_token_usage`, Codex's own running sum
over the session's calls; it does not depend on how many times a call's event was re-emitted.
Its `input_tokens` counts the cached ones (`cached_input_tokens`), and its `output_tokens` counts the
reasoning ones (`reasoning_output_tokens`), as OpenAI bills them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from contextviewer.ingest import files as ingest

pytestmark = [pytest.mark.django_db, pytest.mark.fixtures]


def _run_usage(*args) -> dict:
    from io import StringIO

    out = StringIO()
    call_command("usage", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def _session_of(path: Path, folder: Path) -> str:
    """A session is a main file and the files of the folder named after it (<session>/subagents/...)."""
    return path.relative_to(folder).parts[0].removesuffix(".jsonl")


def _claude_code_count(folder: Path) -> dict:
    """Tokens by kind and calls over every .jsonl under `folder`, one usage per message.id in a session
    (two hand-made files of two sessions reuse msg_004). Claude Code writes model "<synthetic>" on
    messages it makes itself (no request); a usage of all zeros (a trimmed catalogue line) has nothing to count."""
    per_id: dict[tuple, dict] = {}
    for path in sorted(folder.rglob("*.jsonl")):
        session = _session_of(path, folder)
        for raw in path.read_bytes().splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(line, dict) or line.get("type") != "assistant":
                continue
            message = line.get("message")
            if not isinstance(message, dict) or not isinstance(message.get("usage"), dict) or not message.get("id"):
                continue
            u = message["usage"]
            kinds = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
            if message.get("model") == "<synthetic>" or not any(u.get(k) for k in kinds):
                continue
            key = (session, message["id"])
            kept = per_id.get(key)
            if kept is None or (u.get("output_tokens") or 0) > (kept.get("output_tokens") or 0):
                per_id[key] = u
    total = {"input": 0, "cache_write": 0, "cache_read": 0, "output": 0}
    for u in per_id.values():
        total["input"] += u.get("input_tokens") or 0
        total["cache_write"] += u.get("cache_creation_input_tokens") or 0
        total["cache_read"] += u.get("cache_read_input_tokens") or 0
        total["output"] += u.get("output_tokens") or 0
    return {"tokens": total, "calls": len(per_id)}


def _codex_total(path: Path) -> dict | None:
    """The session's total usage as Codex summed it (the last token_count's total_token_usage)."""
    last = None
    for raw in path.read_bytes().splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        payload = line.get("payload") if isinstance(line, dict) else None
        if isinstance(payload, dict) and payload.get("type") == "token_count" and isinstance(payload.get("info"), dict):
            total = payload["info"].get("total_token_usage")
            if isinstance(total, dict):
                last = total
    if last is None:
        return None
    cached = last.get("cached_input_tokens") or 0
    return {"input": (last.get("input_tokens") or 0) - cached, "cache_write": 0, "cache_read": cached,
            "output": last.get("output_tokens") or 0}


def test_claude_code_totals_equal_one_usage_per_message_id(project, fixtures_dir):
    folder = fixtures_dir / "claude-code"
    report = ingest.import_path(project, folder)
    assert not report.refused
    expected = _claude_code_count(folder)
    got = _run_usage("monthly", "--agent", "claude-code")["total"]
    assert got["tokens"] | {"reasoning": None} == expected["tokens"] | {"reasoning": None}
    assert got["model_calls"] == expected["calls"]
    # The streaming splits are real: the folder holds many more usage lines than calls.
    lines = sum(1 for p in folder.rglob("*.jsonl") for raw in p.read_bytes().splitlines() if b'"usage"' in raw)
    assert lines > 1.5 * expected["calls"]


def test_codex_totals_equal_codex_own_running_sum(project, fixtures_dir):
    rollouts = sorted((fixtures_dir / "codex").glob("madshn__localpush__rollout-*.jsonl"))
    assert len(rollouts) == 5
    expected = {"input": 0, "cache_write": 0, "cache_read": 0, "output": 0}
    for path in rollouts:
        ingest.import_path(project, path)
        total = _codex_total(path)
        for kind in expected:
            expected[kind] += total[kind]
    got = _run_usage("daily", "--agent", "codex")
    assert {k: v for k, v in got["total"]["tokens"].items() if k != "reasoning"} == expected
    assert got["total"]["sessions"] == 5
    # One session compacted once (its `compacted` record): a fold in the report.
    assert got["total"]["folds"] == 1
