"""The policy lab against what the real agents logged, on real fixture sessions.

Truth used here, each figure checked by hand in the fixture files:
- Claude Code 2.1.39 writes `compact_boundary` with `compactMetadata.trigger` and `preTokens`, the
  count its own auto-compact fired at. marot__spotter__8463c716: the last call before the boundary
  measured 167,094 input + 607 output, the one message after it is ~30 tokens: 167,731 = preTokens.
  marot__spotter__4d5611e5: 164,831 + 1 (the log's streaming placeholder output) + the split record
  of that response and its 10.8 KB tool result by chars/4 gives 169,065 against preTokens 170,251
  (0.7 %: Claude Code estimates the JSON of the blocks, the lab their text).
- The real summaries (the `isCompactSummary` line after each boundary), read by grep: 8463c716's
  names `transcript_renderer.ex` and not `PaneViewLive`; 4d5611e5's names
  `lib/spotter_web/live/transcript_computers.ex` and not `waiting_summary.ex`.
- madshn__localpush 12-54-34 is a Codex rollout whose texts are `[REDACTED_* len=N sha=...]`
  placeholders: the measured input grows about 7 tokens per token of logged text, no tokenizer's ratio.
"""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from contextviewer.conversations import page_cache
from contextviewer.conversations.models import Conversation
from contextviewer.core.policylab import get as get_policy
from contextviewer.ingest import files as ingest
from contextviewer.lab import replays as policylab
from tests.conftest import shared_fixtures_dir
from tests.factories import make_project, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.fixtures]

REDACTED_CODEX = "codex/madshn__localpush__rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
SPOTTER = {
    "8463c716": "claude-code/marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
    "4d5611e5": "claude-code/marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
}


def _fixture(rel: str) -> Path:
    root = shared_fixtures_dir()
    if root is None or not (root / rel).exists():
        pytest.skip("../shared/fixtures is absent")
    return root / rel


def _auto_compacted() -> list:
    """Claude Code fixture sessions with a recorded auto-compaction (the log's own trigger)."""
    root = shared_fixtures_dir()
    if root is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason="../shared/fixtures is absent"))]
    return [p for p in sorted((root / "claude-code").glob("*.jsonl")) if '"trigger":"auto"' in p.read_text(errors="replace")]


def _load(rel_or_path, prefix: str | None = None):
    path = rel_or_path if isinstance(rel_or_path, Path) else _fixture(rel_or_path)
    project = make_project(f"lab-{path.stem[-40:]}-{Conversation.objects.count()}")
    ingest.import_path(project, path)
    qs = Conversation.objects.filter(project=project, parent__isnull=True, model_call_count__gt=0)
    conv = qs.get(external_id__startswith=prefix) if prefix else qs.order_by("-model_call_count").first()
    return conv, policylab.load_session(conv)


def _pre_tokens(path: Path) -> list[int]:
    out = []
    for line in path.read_text().splitlines():
        if '"compact_boundary"' in line:
            meta = json.loads(line).get("compactMetadata") or {}
            if meta.get("trigger") == "auto":
                out.append(int(meta["preTokens"]))
    return out


@pytest.mark.parametrize("path", _auto_compacted(), ids=lambda p: p.name[:40] if isinstance(p, Path) else "absent")
def test_claude_code_policy_fires_at_every_recorded_auto_compaction(path):
    conv, lab = _load(path)
    session = lab.session
    autos = [f for f in session.recorded_folds if f.trigger == "auto"]
    assert autos, "the fixture records an auto-compaction"
    replay = get_policy("claude_code").replay(session)
    folds = [e for e in replay.events if e.kind == "fold"]
    checked = 0
    for f, pre in zip(autos, _pre_tokens(path), strict=True):
        after = [c.index for c in session.calls if c.seq > f.seq]
        if not after or not any(c.usage_input for c in session.calls if c.seq < f.seq):
            continue  # the log holds no measured call before the fold, or none after it
        checked += 1
        at = after[0]
        # It fires before the first call after the recorded compaction, and not earlier.
        assert [e.call_index for e in folds if e.call_index <= at][-1:] == [at], [e.call_index for e in folds]
        fired = next(e for e in folds if e.call_index == at)
        # Its count is the agent's rule (last measured usage + the estimate of what came after):
        # within 1 % of the preTokens the real client logged.
        assert abs(fired.tokens_before - pre) <= 0.01 * pre, (fired.tokens_before, pre)
        assert fired.tokens_before >= 167_000
    if not checked:
        pytest.skip(f"{path.name}: no measured call on both sides of its auto-compaction")


def test_before_anything_diverges_every_replay_is_the_measured_curve():
    """Up to a policy's first action and the session's own fold, each replayed window IS the
    recorded one: its figure is the call's measured input, for every policy."""
    for rel in SPOTTER.values():
        conv, lab = _load(rel)
        session = lab.session
        fold_seq = min(f.seq for f in session.recorded_folds)
        for name in ("claude_code", "deepagents", "cwm", "efferent", "codex"):
            replay = get_policy(name).replay(session)
            first = min([e.call_index for e in replay.events], default=len(session.calls))
            after_fold = next(c.index for c in session.calls if c.seq > fold_seq)
            assert replay.estimated_from == min(first, after_fold), name  # the page says "measured until"
            for call, w in zip(session.calls, replay.windows, strict=True):
                if call.index < first and call.seq < fold_seq and call.usage_input:
                    assert w.total_tokens == call.usage_input, (name, call.index)


def test_no_negative_figure_and_overflows_are_marked(client):
    page_cache.clear()
    for rel in (*SPOTTER.values(), REDACTED_CODEX):
        conv, lab = _load(rel)
        results = policylab.replay_all(conv, None, lab)
        for r in results:
            assert min(r.totals) >= 0, r.name
            for a in r.actions:
                assert a.tokens_before >= 0 and a.tokens_after >= 0, (r.name, a.kind, a.tokens_before, a.tokens_after)
                if a.group in ("clips", "offloads"):
                    assert a.saved >= 0, (r.name, a.kind, a.saved)  # a clip reports the tokens it removed
            window = lab.session.window
            assert r.overflow_calls == sum(1 for t in r.totals if t > window)
        client.force_login(make_user(f"reader-{conv.pk}", project=conv.project))
        html = client.get(reverse("policy_lab", args=[conv.pk]), {"policy": [r.name for r in results if r.name != "recorded"]}).content.decode()
        fire_cells = "".join(part.split("</td>")[0] for part in html.split('<td class="fire-points">')[1:])
        assert not re.search(r"-\d", fire_cells), fire_cells
        assert html.count('class="overflow ') == sum(r.overflow_calls for r in results)


def test_deepagents_summarizes_on_the_reported_usage_before_the_window():
    """deepagents' own approximation (chars/4) stays under its 170,000 trigger on these sessions,
    but the reported usage crosses it (the measured input passes 170,000 only through the last
    call's usage): §2.4's usage trigger fires, and no window passes 200,000."""
    for rel in SPOTTER.values():
        conv, lab = _load(rel)
        r = get_policy("deepagents").replay(lab.session)
        summaries = [e for e in r.events if e.kind == "summarize"]
        assert summaries, rel
        assert "reported usage" in summaries[0].detail
        assert r.peak <= lab.session.window
        assert r.overflow_calls == 0


def test_cwm_acts_at_75_percent_of_the_window_in_provider_tokens():
    for rel in SPOTTER.values():
        conv, lab = _load(rel)
        r = get_policy("cwm").replay(lab.session)
        first = r.events[0]
        fill = first.tokens_before / lab.session.window
        assert 0.75 <= fill < 0.80, (rel, first)


@pytest.mark.parametrize(
    ("key", "kept", "lost"),
    [
        ("8463c716", ("identifier", "TranscriptHighlighter"), ("identifier", "PaneViewLive")),
        ("4d5611e5", ("identifier", "TranscriptComputers"), ("identifier", "load_session_messages")),
    ],
)
def test_facts_at_risk_of_a_coinciding_fold_are_checked_against_the_real_summary(key, kept, lost):
    """`kept` is written in the session's real summary, `lost` is not (both read there by grep);
    both are facts of what the fold put away."""
    conv, lab = _load(SPOTTER[key])
    claude = policylab.summarize(lab, get_policy("claude_code").replay(lab.session))
    fold = next(a for a in claude.actions if a.kind == "fold")
    assert fold.call_index in lab.real_summaries  # it coincides with the session's own fold
    at_risk = {(f.kind, f.text) for f in fold.facts}
    assert lost in at_risk
    assert kept not in at_risk
    # The recorded fold puts the same facts at risk: both carry the same summary.
    recorded = policylab.summarize(lab, get_policy("recorded").replay(lab.session))
    assert {(f.kind, f.text) for a in recorded.actions if a.kind == "fold" for f in a.facts} == at_risk
    # Without the real summary (a modelled one has no text), the kept fact would be at risk.
    lab.real_summaries.clear()
    lab.fact_cache.clear()
    modelled = policylab.summarize(lab, get_policy("claude_code").replay(lab.session))
    fold = next(a for a in modelled.actions if a.kind == "fold")
    assert kept in {(f.kind, f.text) for f in fold.facts}


def test_a_failed_calibration_is_flagged_everywhere(client):
    conv, lab = _load(REDACTED_CODEX)
    session = lab.session
    assert not session.calibrated
    assert "redacted" in session.calibration_note
    fold_seq = min(f.seq for f in session.recorded_folds)
    codex = get_policy("codex").replay(session)
    # Until the session's own fold, the replay is the measured curve (not a 25k estimate) ...
    measured = [(c.usage_input, w.total_tokens) for c, w in zip(session.calls, codex.windows, strict=True) if c.seq < fold_seq]
    assert all(m == t for m, t in measured if m)
    # ... and after it, a replay that keeps the whole history goes on from the measured curve:
    # never below the recorded peak (the estimate carries the last measured call's gap).
    assert codex.peak >= max(c.usage_input for c in session.calls)

    out = StringIO()
    call_command("policies", str(conv.pk), "--policy", "codex", "--policy", "recorded", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["calibrated"] is False and "calibration failed" in data["calibration_note"]
    for p in data["policies"]:
        assert p["calibrated"] is False and p["tokens_saved"] is None
    assert next(p for p in data["policies"] if p["policy"] == "codex")["cost_usd"] is None

    page_cache.clear()
    client.force_login(make_user(f"reader-{conv.pk}", project=conv.project))
    html = client.get(reverse("policy_lab", args=[conv.pk])).content.decode()
    assert 'id="calibration-failed"' in html and "uncalibrated estimate" in html
    assert "not comparable" in html
    assert "draws the recorded curve" not in html
    assert "line-estimate" in html
    # The recorded row lists the session's own fold, drawn on the chart.
    assert 'class="fire line-recorded"' in html
