"""Codex's limit per model (issue 34, item 3): the lab's Codex replay of a Codex rollout compacts at
90 % of the window Codex keeps for the model, read from the `model_context_window` the rollout logs
(95 % of that window), not from the model's API limit.

Truth: the real Codex 0.171.0 (`bin/setup --agents`), a real rollout prefix resumed with the model
set in its config and its turn_context (ops/agents.run_codex; measured on 2026-12-08, the table in
docs/policy-lab.md "Codex's limit per model"): gpt-6.2-sol (its bundled catalog: 500,000) compacted
before the new turn at a last total of 450,000 and not at 449,999; gpt-daybreak-red-latest
(372,000) at 334,800, not 334,799; gpt-5.5 (272,000 in Codex's catalog, though its API takes 1M) at
244,800, not 244,799; gpt-4.1, o3 and gpt-5.1-codex-max, which the catalog does not list (272,000 by
default), at 244,800. The rollouts log 475,000, 353,400 and 258,400 as `model_context_window`.
"""

from __future__ import annotations

import json

import pytest

from contextviewer.conversations.models import Conversation
from contextviewer.core.policylab import get as get_policy
from contextviewer.ingest import files as ingest
from contextviewer.lab import replays
from tests.factories import make_project

pytestmark = pytest.mark.django_db

SID = "019c0000-aaaa-7bbb-8ccc-0000000000{:02d}"


def _line(kind: str, payload: dict, minute: int) -> str:
    return json.dumps({"timestamp": f"2026-12-08T10:{minute:02d}:00.000Z", "type": kind, "payload": payload})


def _rollout(tmp_path, model: str, logged_window: int, totals: list[int], n: int):
    """A Codex 0.171.0 rollout on `model`: one turn per figure of `totals` (the turn's last response
    total), each logging `logged_window` as the model's context window."""
    sid = SID.format(n)
    lines = [_line("session_meta", {"id": sid, "timestamp": "2026-12-08T10:00:00.000Z", "cwd": "/work/app",
                                    "originator": "codex_cli_rs", "cli_version": "0.171.0", "source": "cli"}, 0)]
    for i, total in enumerate(totals):
        m = 1 + i * 3
        lines.append(_line("turn_context", {"cwd": "/work/app", "model": model, "approval_policy": "never"}, m))
        lines.append(_line("response_item", {"type": "message", "role": "user",
                                             "content": [{"type": "input_text", "text": f"step {i}: go on"}]}, m))
        lines.append(_line("response_item", {"type": "message", "role": "assistant",
                                             "content": [{"type": "output_text", "text": f"done {i}"}]}, m + 1))
        last = {"input_tokens": total - 100, "cached_input_tokens": 0, "output_tokens": 100, "reasoning_output_tokens": 0,
                "total_tokens": total}
        lines.append(_line("event_msg", {"type": "token_count", "info": {"total_token_usage": last, "last_token_usage": last,
                                                                         "model_context_window": logged_window},
                                         "rate_limits": None}, m + 1))
        lines.append(_line("event_msg", {"type": "task_complete", "last_agent_message": f"done {i}"}, m + 2))
    folder = tmp_path / f"r{n}"
    folder.mkdir()
    path = folder / f"rollout-2026-12-08T10-00-00-{sid}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _folds(tmp_path, model, logged_window, totals, n):
    project = make_project(f"codex-limit-{n}")
    ingest.import_path(project, _rollout(tmp_path, model, logged_window, totals, n))
    conv = Conversation.objects.get(project=project, parent__isnull=True)
    assert conv.cli_version == "0.171.0" and conv.window == logged_window
    lab = replays.load_session(conv)
    replay = get_policy("codex").replay(lab.session, **lab.own_params)
    return [e.call_index for e in replay.events if e.kind == "fold"], replay


@pytest.mark.parametrize(
    ("model", "logged", "totals", "fold_at"),
    [
        # 500,000 x 0.9 = 450,000: the turn after 450,500 compacts; 449,000 does not (the API's
        # limit of an unknown model would say 427,500 = 90 % of the 475,000 logged, firing a turn early).
        ("gpt-6.2-sol", 475_000, [300_000, 449_000, 450_500, 20_000], [3]),
        ("gpt-daybreak-red-latest", 353_400, [300_000, 334_000, 335_000, 20_000], [3]),
        # gpt-5.5's API window is 1M, but Codex keeps 272,000 for it: 244,800.
        ("gpt-5.5", 258_400, [200_000, 244_000, 245_000, 20_000], [3]),
        ("gpt-4.1", 258_400, [200_000, 244_000, 245_000, 20_000], [3]),
    ],
)
def test_the_codex_replay_compacts_at_90_percent_of_the_window_codex_logs_for_the_model(tmp_path, model, logged, totals, fold_at):
    n = ["gpt-6.2-sol", "gpt-daybreak-red-latest", "gpt-5.5", "gpt-4.1"].index(model)
    folds, replay = _folds(tmp_path, model, logged, totals, n)
    assert folds == fold_at, [e.detail for e in replay.events if e.kind == "fold"]
