"""The policy lab on every real fixture session with folds: the lab page renders, every policy
replays every recorded call, and Claude Code's own policy fires where the recorded session folded."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from contextviewer.ingest import files as ingest
from contextviewer.conversations import page_cache
from contextviewer.lab import replays as policylab
from contextviewer.conversations.models import Conversation, FoldOrigin
from contextviewer.importers import formats
from contextviewer.conversations.segments import call_spec
from tests.conftest import shared_fixtures_dir
from tests.factories import make_project, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.fixtures]


def _files_with_folds() -> list:
    root = shared_fixtures_dir()
    files = [p for p in sorted((root / "claude-code").glob("*.jsonl")) if '"compact_boundary"' in p.read_text(errors="replace")] if root else []
    return files or [pytest.param(None, marks=pytest.mark.skip(reason="../shared/fixtures is absent"))]


@pytest.mark.parametrize("path", _files_with_folds(), ids=lambda p: p.name[:40] if isinstance(p, Path) else "absent")
def test_lab_on_a_fixture_session_with_folds(client, path):
    page_cache.clear()
    project = make_project()
    client.force_login(make_user(project=project))
    ingest.import_path(project, path)
    conv = Conversation.objects.filter(project=project, kind="main", fold_count__gt=0).first()
    assert conv is not None, "the fixture has a fold"
    lab = policylab.load_session(conv)
    # The session's own summaries are measured from its folds.
    assert lab.summaries_measured == conv.folds.filter(origin=FoldOrigin.IMPORTED).exclude(kind="microcompact").exclude(summary_text="").count()
    assert all(size > 0 for size in lab.session.real_summary_tokens)

    results = policylab.replay_all(conv, ["claude_code", "codex"], lab)
    for r in results:
        assert r.calls == conv.model_call_count == len(r.totals)
        assert r.peak == max(r.totals) > 0
    claude = results[0]
    recorded_peak = max(c.usage_input for c in lab.session.calls)
    spec = call_spec(conv, None)
    threshold = formats.harness("claude-code", spec).auto_fold_at(spec)
    if recorded_peak >= threshold:
        # The recorded session folded on its own at the threshold: the replayed policy fires too.
        assert claude.fires >= 1

    r = client.get(reverse("policy_lab", args=[conv.pk]), {"policy": ["claude_code", "codex"]})
    assert r.status_code == 200
    html = r.content.decode()
    assert "replayed unchanged" in html
    assert html.count('class="line-policy') == 2


def test_a_policy_that_never_fires_draws_the_recorded_curve_on_a_fixture():
    """ae4a77f8 never reaches Claude Code's threshold: calibrated, its replay does not auto-compact
    (its one fold is the user's /compact, replayed where the log has it: before call 138, the raw
    JSONL's compact_boundary with trigger "manual" after 138 calls) and follows the measured curve
    up to the session's own fold."""
    root = shared_fixtures_dir()
    path = root / "claude-code" / "marot__spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl" if root else None
    if path is None or not path.exists():
        pytest.skip("../shared/fixtures is absent")
    project = make_project()
    ingest.import_path(project, path)
    conv = Conversation.objects.get(project=project, parent__isnull=True, external_id__startswith="ae4a77f8")
    lab = policylab.load_session(conv)
    assert lab.session.scale > 1.0  # the provider's tokens outnumber the lab tokenizer's
    claude, recorded = policylab.replay_all(conv, ["claude_code", "recorded"], lab)
    assert [(a.call_index, "manual /compact" in a.detail) for a in claude.actions] == [(138, True)]
    first_fold = min(m.seq for m in lab.session.messages if m.kind == "boundary")
    pairs = [(r, c) for call, r, c in zip(lab.session.calls, recorded.totals, claude.totals, strict=True) if call.seq < first_fold]
    deviation = sum(abs(c - r) / r for r, c in pairs) / len(pairs)
    assert deviation < 0.05


# Checked by hand (the files read line by line): in both, the first call that records usage comes
# after the session's own first fold, so no measured call saw the unmodified history.
# - codex/jazzyalex__agent-sessions__small.jsonl: `context_compacted` on line 19; the only
#   `token_count` (line 22) records input_tokens 16,341 (3,584 of them cached); what the log holds
#   between the two is one tool output, "a.txt\nb.txt\n" (line 21): a few tokens.
# - claude-code/jazzyalex__agent-sessions__small.jsonl: `compact_boundary` on line 21; the summary
#   "Summary of prior context." on line 22 is marked `"isSidechain": true`, so it is not in the
#   main thread's window, and lines 23 to 28 are no messages; the assistant line before the fold
#   (line 8) has no usage, the first with usage (line 29) records input_tokens 10 (no cache). The
#   window it was sent with holds nothing the log shows: all 10 tokens are overhead.
AFTER_THE_FOLD = [
    ("codex/jazzyalex__agent-sessions__small.jsonl", 16_341 - 20, 16_341),
    ("claude-code/jazzyalex__agent-sessions__small.jsonl", 10, 10),
]


@pytest.mark.parametrize("rel, least, most", AFTER_THE_FOLD, ids=lambda v: v.split("/")[0] if isinstance(v, str) else None)
def test_usage_only_after_the_sessions_own_fold_is_a_failed_calibration(client, fixtures_dir, rel, least, most):
    page_cache.clear()
    project = make_project()
    client.force_login(make_user(project=project))
    ingest.import_path(project, fixtures_dir / rel)
    conv = Conversation.objects.get(project=project, kind="main", fold_count__gt=0)
    session = policylab.load_session(conv).session
    assert not session.calibrated and session.scale == 1.0
    assert least <= session.overhead_tokens <= most
    html = client.get(reverse("policy_lab", args=[conv.pk]), {"policy": ["claude_code"]}).content.decode()
    assert "every measured call comes after the session&#x27;s own first fold" in html
