"""The own harness's replay against the folds the agent made (issue 34, item 3): on real sessions it
folds where the agent auto-compacted, no more and no fewer; it follows the rule of the session's
recorded version and says when that version has no measured rule; a fold that cannot bring the
window under the limit is said on the lab page and flagged in the project table.

Truth of the real sessions (../shared/fixtures, SOURCES.md; marot/spotter and oneryalcin/fasthooks,
MIT), checked by hand with a 20-line script that reads the raw JSONL with `json` only (no project
code): it counts the distinct `message.id` of the main-thread assistant lines before the
`compact_boundary` line and reads its `compactMetadata`:
- marot__spotter__8463c716 (CC 2.1.39): boundary at line 714, auto, preTokens 167,731, after 71
  calls (the last measured 167,094): the agent folded before call 71;
- marot__spotter__4d5611e5 (CC 2.1.39): line 754, auto, preTokens 170,251, after 61 calls (last
  164,831): before call 61;
- marot__spotter__ae4a77f8 (CC 2.1.39): line 1481, MANUAL /compact at preTokens 142,431 after 138
  calls (last 141,787): no auto-compaction anywhere, so the replay folds nowhere;
- oneryalcin__fasthooks sample (CC 2.0.76): one manual /compact at 21,558: no auto fold (the 2.0
  rule, 155,000, is far above it);
- madshn__localpush 12-54-34 (Codex 0.104.0-alpha.1): one compaction at 209,950 (its
  `token_count` before the `compacted` line); 0.104 has no measured rule, the page says so.
The corpus holds no Claude Code 2.0.x session that auto-compacted, no Windows session that starts
full and no readable Codex 0.58 session: the synthetic sessions below stand for those shapes.
"""

from __future__ import annotations

import json
import zlib
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from contextviewer.conversations import page_cache
from contextviewer.conversations.models import Conversation
from contextviewer.core import tokens as core_tokens
from contextviewer.core.policylab import get as get_policy
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.lab import replays as policylab, table as policy_table
from tests.conftest import shared_fixtures_dir
from tests.factories import make_project, make_user
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db

# file -> (recorded version, the calls before which the agent auto-compacted, those before which the
# user ran /compact: hand-checked above; the fasthooks /compact has no call after it)
REAL = {
    "claude-code/marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl": ("2.1.39", [71], []),
    "claude-code/marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl": ("2.1.39", [61], []),
    "claude-code/marot__spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": ("2.1.39", [], [138]),
    "claude-code/oneryalcin__fasthooks__sample_main_transcript.jsonl": ("2.0.76", [], []),
}
CODEX_0104 = "codex/madshn__localpush__rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"


@pytest.fixture(autouse=True)
def _fresh_cache():
    page_cache.clear()
    yield
    page_cache.clear()


def _real(rel: str) -> Path:
    root = shared_fixtures_dir()
    if root is None or not (root / rel).exists():
        pytest.skip("../shared/fixtures is absent")
    return root / rel


def _import(path: Path) -> Conversation:
    project = make_project(f"own-{path.stem[-30:]}-{Conversation.objects.count()}")
    ingest.import_path(project, path)
    return Conversation.objects.filter(project=project, parent__isnull=True, model_call_count__gt=0).order_by("-model_call_count").first()


@pytest.mark.fixtures
@pytest.mark.parametrize("rel", list(REAL), ids=lambda r: r.split("__")[-1][:16])
def test_the_own_replay_folds_exactly_where_the_agent_auto_compacted(rel):
    version, auto, manual = REAL[rel]
    conv = _import(_real(rel))
    assert conv.cli_version == version
    lab = policylab.load_session(conv)
    own = lab.session.own_policy
    replay = policylab.replay_one(lab, own)
    folds = [e for e in replay.events if e.kind == "fold"]
    by_hand = [e.call_index for e in folds if "manual /compact" in e.detail]
    assert [e.call_index for e in folds if e.call_index not in by_hand] == auto, f"own replay folds at {folds}, the agent at {auto}"
    # The user's /compact happens where the log says; after it the replay is back in step with the
    # recording (ae4a77f8 switches to claude-opus-4-6, run in 200k: it never reaches 167,000 again).
    assert by_hand == manual
    assert replay.overflow_calls == 0 and replay.unresolved == ()
    assert "no measured rule" not in lab.rule_note
    rule = "2.0.57" if version.startswith("2.0.") else "2.1.39 and 2.1.152"  # the rule of 2.1.0 to 2.1.152
    assert f"{version}: the rule measured on" in lab.rule_note and rule in lab.rule_note


@pytest.mark.fixtures
def test_a_codex_version_without_a_measured_rule_says_so_on_the_page(client):
    conv = _import(_real(CODEX_0104))
    client.force_login(make_user(f"reader-{conv.pk}", project=conv.project))
    html = client.get(reverse("policy_lab", args=[conv.pk])).content.decode()
    assert "no measured rule for Codex CLI 0.104.0-alpha.1" in html
    assert "measured on 0.171.0" in html


# --- synthetic sessions (always run) ------------------------------------------------------------


def _starts_full(tmp_path, version: str = "2.1.39", start: int = 176_000, turns: int = 5) -> Path:
    """A Claude Code session that starts full: its first call already measures `start` tokens (what it
    carried from before lies outside the log), and it grows by what each turn logs, so the session
    calibrates with an overhead above the 167,000 threshold."""
    b = SessionBuilder(session_id=f"11111111-2222-4333-8444-{zlib.crc32(f'{version}:{start}'.encode()):012d}")
    lines, context = [], start
    for i in range(turns):
        lines.append(b.user(f"Step {i}: run the suite for module_{i}"))
        b.context = context
        lines += b.assistant(f"Running module_{i}", tool=("Bash", {"command": f"pytest tests/test_{i}.py"}))
        out = "\n".join(f"tests/test_{i}.py::case_{k} PASSED value={k * 7919 % 10007}" for k in range(100))
        lines.append(b.tool_result(out))
        context += core_tokens.count_text(out) + 60
    b.context = context
    lines += b.assistant("All done.")
    lines = [json.dumps({**json.loads(line), "version": version}) for line in lines]
    path = tmp_path / f"{b.session_id}.jsonl"
    write_lines(path, lines)
    return path


def test_a_session_that_starts_full_folds_once_and_the_page_and_table_say_it_cannot_get_under(client, tmp_path):
    conv = _import(_starts_full(tmp_path))
    lab = policylab.load_session(conv)
    assert lab.session.calibrated and lab.session.overhead_tokens > 167_000
    replay = policylab.replay_one(lab, "claude_code")
    # Not at call 0 (no usage yet: the client counts the messages only), once at call 1, and not
    # at every call after it although the window stays over the threshold.
    assert [e.call_index for e in replay.events if e.kind == "fold"] == [1]
    assert [c for c, _after, _limit in replay.unresolved] == [1]

    client.force_login(make_user("reader-full", project=conv.project))
    html = client.get(reverse("policy_lab", args=[conv.pk])).content.decode()
    assert 'id="limit-notes-claude_code"' in html
    assert "cannot bring the window under its limit: after its action at call 1" in html
    assert "of its 167,000 limit" in html
    assert "Claude Code 2.1.39: the rule measured on 2.1.39 and 2.1.152" in html

    job, _ = policy_table.start(conv.project)
    jobs.run(job.pk)
    page = client.get(reverse("policy_table"), {"project": conv.project.slug}).content.decode()
    row = page.split('id="policy-claude_code"')[1].split("</tr>")[0]
    assert "could not get under its limit in 1 conversation" in row


def test_the_2_0_rule_is_the_one_replayed_for_a_2_0_session_and_an_unknown_version_says_so(client, tmp_path):
    # 160k at its second call: over 2.0's 155,000, under 2.1's 167,000.
    old = _import(_starts_full(tmp_path, version="2.0.57", start=150_000, turns=3))
    new = _import(_starts_full(tmp_path, version="2.1.39", start=150_000, turns=3))
    unknown = _import(_starts_full(tmp_path, version="1.0.88", start=150_000, turns=3))
    fold_calls = {}
    for conv in (old, new, unknown):
        lab = policylab.load_session(conv)
        fold_calls[conv.cli_version] = [e.call_index for e in policylab.replay_one(lab, "claude_code").events if e.kind == "fold"]
    # The measured usage starts at 150,000 and grows by each turn's output (under 167,000 at the end):
    # the 2.0 rule (155,000) folds, the 2.1 rule (167,000) never.
    assert fold_calls["2.0.57"] and not fold_calls["2.1.39"]
    assert fold_calls["1.0.88"] == fold_calls["2.1.39"]  # replayed with the default (2.1) rule ...
    client.force_login(make_user("reader-rules", project=unknown.project))
    html = client.get(reverse("policy_lab", args=[unknown.pk])).content.decode()
    assert "no measured rule for Claude Code 1.0.88: replayed with the rule measured on 2.1.39 and 2.1.152" in html  # ... and says so
    client.force_login(make_user("reader-rules-2", project=old.project))
    html = client.get(reverse("policy_lab", args=[old.pk])).content.decode()
    assert "Claude Code 2.0.57: the rule measured on 2.0.57" in html
    assert get_policy("claude_code").label in html


def test_the_policies_command_says_the_rule_and_the_limit_it_could_not_get_under(tmp_path):
    conv = _import(_starts_full(tmp_path, version="1.0.88"))
    out = StringIO()
    call_command("policies", str(conv.pk), "--policy", "claude_code", stdout=out)
    text = out.getvalue()
    assert "rule: no measured rule for Claude Code 1.0.88" in text
    assert "WARNING: cannot bring the window under its limit: after its action at call 1" in text
    data = StringIO()
    call_command("policies", str(conv.pk), "--policy", "claude_code", "--json", stdout=data)
    (claude,) = json.loads(data.getvalue())["policies"]
    assert claude["unresolved"][0]["call_index"] == 1 and claude["limit_notes"] and "1.0.88" in claude["rule"]
