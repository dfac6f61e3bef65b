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
    """ae4a77f8 never reaches Claude Code's threshold: calibrated, its replay saves nothing and
    follows the measured curve up to the session's own fold."""
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
    assert claude.fires == 0 and claude.saved_tokens == 0
    first_fold = min(m.seq for m in lab.session.messages if m.kind == "boundary")
    pairs = [(r, c) for call, r, c in zip(lab.session.calls, recorded.totals, claude.totals, strict=True) if call.seq < first_fold]
    deviation = sum(abs(c - r) / r for r, c in pairs) / len(pairs)
    assert deviation < 0.05
