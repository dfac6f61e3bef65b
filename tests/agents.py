"""The real Claude Code and Codex CLIs as test oracles of the policy lab's auto-compaction thresholds
(tests/agents/): the pytest side of ops/agents.py and ops/agent_servers.py, which hold the fake
provider servers (`AnthropicServer`, `OpenAIServer`: 127.0.0.1, a free port, a thread, every request
recorded), the session prefixes and the runners (`run_claude`, `run_codex`: a temp HOME each, never the real one).
The code lives in ops/ so that `manage.py agent_thresholds` shares it (product code never imports
the tests).

Here: what a test needs on top of it. The clients must be installed (`bin/setup --agents`, which
bin/test runs): a test fails, never skips, when they are not. The real fixture sessions are read in
place from ../shared/fixtures: absent, the tests skip with the usual message. Client runs are
cached for the session of pytest, so the rule test and the lab test of a prefix share them.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings

from ops.agent_servers import AnthropicServer, OpenAIServer  # noqa: F401 - re-exported for the tests
from ops.agents import (  # noqa: F401 - re-exported for the tests
    CLAUDE_PREFIXES,
    CODEX_PREFIXES,
    ClaudePrefix,
    CodexPrefix,
    Outcome,
    claude_lab_records,
    claude_prefix,
    claude_rule_tail,
    codex_lab_records,
    codex_prefix,
    codex_rule_tail,
    missing_clients,
    run_claude,
    run_codex,
    write_jsonl,
)
from tests.conftest import shared_fixtures_dir

MARGIN = 0.005  # the agreement asked of the lab: within 0.5 % of the real threshold


def require_clients() -> None:
    """Fail (not skip: the suite must run them) when the pinned clients are not installed."""
    problem = missing_clients()
    if problem:
        pytest.fail(problem, pytrace=False)


def fixture_file(folder: str, name: str) -> Path:
    root = shared_fixtures_dir()
    if root is None:
        pytest.skip(f"shared fixtures not found at {settings.FIXTURES_DIR} (set CONTEXTVIEWER_FIXTURES)")
    path = root / folder / name
    if not path.is_file():
        pytest.skip(f"fixture {folder}/{name} not found under {root}")
    return path


@dataclass
class Case:
    """One prefix, the rule's threshold and count after the last usage, and the client's runs."""

    client: str
    name: str
    prefix: ClaudePrefix | CodexPrefix
    threshold: int  # the lab's threshold function for this prefix's model
    tail: int  # the rule's estimate of what follows the last usage when the client decides
    probe: Outcome  # a run well below the threshold: what the client appends for the new prompt
    model: str = ""  # another model the prefix is resumed with (`claude --model`), else its own

    def usage_for(self, side: int) -> int:
        """The last usage that puts the rule's count 0.5 % below (side=-1) or above (+1) the threshold."""
        return round(self.threshold * (1 + side * MARGIN)) - self.tail

    def run(self, usage_total: int) -> Outcome:
        return _run(self.client, self.name, usage_total, self.model)


def _lab_threshold(client: str, prefix) -> int:
    from contextviewer.core.policylab import claude_code, codex

    if client == "claude-code":
        return claude_code.threshold(200_000)  # claude-opus-4-6: a 200k window; reserve min(max output, 20k)
    return codex.auto_compact_limit(272_000)  # gpt-5.x: a 272k window (rollouts log 95 % of it, 258,400)


@functools.cache
def _prefix(client: str, name: str):
    nth = dict(CLAUDE_PREFIXES if client == "claude-code" else CODEX_PREFIXES)[name]
    if client == "claude-code":
        return claude_prefix(fixture_file("claude-code", name), nth)
    return codex_prefix(fixture_file("codex", name), nth)


@functools.cache
def _run(client: str, name: str, usage_total: int, model: str = "") -> Outcome:
    prefix = _prefix(client, name)
    if model:
        prefix = prefix.with_model(model)
    outcome = run_claude(prefix, usage_total) if client == "claude-code" else run_codex(prefix, usage_total)
    return outcome.check()


def case(client: str, name: str, model: str = "") -> Case:
    _prefix(client, name)  # skips when the shared fixtures are absent
    require_clients()  # fails when the clients are not installed
    return _case(client, name, model)


@functools.cache
def _case(client: str, name: str, model: str = "") -> Case:
    prefix = _prefix(client, name)
    if model:
        prefix = prefix.with_model(model)
    threshold = _lab_threshold(client, prefix)
    probe = _run(client, name, threshold // 2, model)
    assert not probe.compacted, f"{client} compacted {name} at half the threshold: {probe.detail}"
    tail = claude_rule_tail(probe) if client == "claude-code" else codex_rule_tail(prefix)
    return Case(client, name, prefix, threshold, tail, probe, model)


def lab_fires_at_last_call(c: Case, usage_total: int, policy: str, params: dict | None = None) -> tuple[bool, str]:
    """Import the prefix + the would-be next exchange into contextviewer, replay `policy` (with
    `params`, e.g. a version's rule) over it and say whether it folds at the last recorded call (and
    what it did, for the failure message)."""
    from contextviewer.conversations.models import Conversation
    from contextviewer.core import policylab
    from contextviewer.ingest import files as ingest
    from contextviewer.lab import replays
    from tests.factories import make_project

    if c.client == "claude-code":
        records = claude_lab_records(c.prefix, usage_total, c.probe, c.tail)
        file_name = f"{c.prefix.session_id}.jsonl"
    else:
        records = codex_lab_records(c.prefix, usage_total, c.probe)
        file_name = c.prefix.source.name.split("__")[-1]
    with tempfile.TemporaryDirectory(prefix="cv-lab-") as tmp:
        path = write_jsonl(Path(tmp) / file_name, records)
        project = make_project(slug=f"agents-{abs(hash((c.name, usage_total))) % 10**8}")
        report = ingest.import_path(project, path)
    conv = Conversation.objects.filter(project=project, kind="main").order_by("-model_call_count").first()
    assert conv is not None, f"nothing imported from {file_name}: {report}"
    lab = replays.load_session(conv)
    replay = policylab.get(policy).replay(lab.session, **(params or {}))
    last = max(call.index for call in lab.session.calls)
    folds = [e for e in replay.events if e.kind == "fold"]
    fired = any(e.call_index == last for e in folds)
    calls = sorted(lab.session.calls, key=lambda k: k.index)
    prev = calls[-2] if len(calls) > 1 else None
    windows = {w.call_index: w.total_tokens for w in replay.windows}
    detail = (f"last call {last}, folds at {[(e.call_index, e.tokens_before) for e in folds]} "
              f"({[e.detail for e in folds][-2:]}); the previous call {prev.index if prev else None} measured "
              f"{(prev.usage_input + prev.output) if prev else 0:,} tokens, the lab's window there "
              f"{windows.get(prev.index, 0) if prev else 0:,}, at the last call {windows.get(last, 0):,}")
    return fired, detail
