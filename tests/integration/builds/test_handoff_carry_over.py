"""Two successive builtin handoffs of a real session keep what the continuation used (issue 17, item 5).

Measured with the fact probes (review/probes.py, core/facts.py, core/continuation.py) on real
Claude Code sessions of ../shared/fixtures, read in place (skipped when absent): the session's
lines are written to a tmp file in three parts, each import adding only the new lines, and a
builtin handoff is run through the real job path after the first part and after the second:

    part 1 -> import -> handoff 1 (fold 1: segment 1)
    part 2 -> import -> handoff 2 (fold 2: summary 1 + segment 2)
    part 3 -> import               (the recorded continuation after fold 2)

The facts checked: the tier-A facts of segment 1 (fold 1's probe) and of segment 2 (fold 2's
probe; the summary of fold 1 it also reads is the harness's text, whose paths are tier C) that the
continuation after the SECOND fold (probes.after_messages(fold 2): the messages of part 3) uses
again, as continuation.measure decides "used again" (a path, command, identifier or URL a later
tool call acts on or a user message names; requests and constraints are statements, not used).
Every fact the continuation looked for is offered to it as lost, so a kept fact counts as well.
Each of them must be kept by the second summary (facts.is_kept, basenames unique over the A and B
paths of both segments), and the second summary must be within settings.HANDOFF_BUDGET.

Each session is taken as recorded before its own compaction (the marot__spotter sessions compact
once, about halfway): the two handoffs made here are then its only folds, and the second reads the
first summary. Its lines are cut in thirds. Measured on 2026-11-26 (the facts checked: tier A of
segment 1 / of segment 2, used again after fold 2; each kept by summary 2, and summary 2 within
the default budget of 2500 tokens):

- 4d5611e5 (753 lines, folds at positions 58 and 115, 78 messages after): 5 facts, segment 1:
  lib/spotter_web/live/transcript_computers.ex, lib/spotter_web/components/transcript_components.ex;
  segment 2: `mix compile`, `mix test`, `mix credo --strict`. Summary 2: 829 tokens.
- 8463c716 (713 lines, folds at 87 and 152, 76 after): 6 facts, segment 1:
  lib/spotter/services/transcript_renderer.ex, its test file, `mix test <that test file>`;
  segment 2: lib/spotter_web/live/session_live.ex, .../layouts/root.html.heex,
  priv/static/assets/spotter.css. Summary 2: 1335 tokens.
- ae4a77f8 (1480 lines, folds at 116 and 256, 154 after): 4 facts, segment 1: `mix compile`,
  `mix test --seed 0`; segment 2: `mix credo --strict`, `git add -A && git commit -m`.
  Summary 2: 1669 tokens.

A fact of both segments is listed under segment 1. Three smaller fixtures were tried and left out
(d-kimuson fe5e1c67 and 5c0375b4, marot__spotter__subagent): their main sessions (fe5e1c67 does its
work in sub-agents) give no tier-A fact used after the second fold, so the check would be vacuous.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from django.conf import settings

from contextviewer.builds import handoffs as handoff
from contextviewer.conversations.models import Conversation, Fold
from contextviewer.core import continuation as core_continuation
from contextviewer.core import facts as core_facts
from contextviewer.core.tokens import count_text
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import JobStatus
from contextviewer.review import probes
from tests.conftest import shared_fixtures_dir

pytestmark = [pytest.mark.django_db, pytest.mark.fixtures]

FIXTURES = [
    "marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
    "marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
    "marot__spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
]


def _fixture(name: str) -> Path:
    root = shared_fixtures_dir()
    if root is None:
        pytest.skip(f"shared fixtures not found at {settings.FIXTURES_DIR} (set CONTEXTVIEWER_FIXTURES)")
    path = root / "claude-code" / name
    if not path.is_file():
        pytest.skip(f"fixture {name} not found under {root / 'claude-code'}")
    return path


def _append_and_import(project, path: Path, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.writelines(lines)
    ingest.import_path(project, path)


def _handoff(conv: Conversation) -> Fold:
    job, _ = handoff.start_handoff(conv, provider="builtin", enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    return Fold.objects.get(conversation=conv, key=job.idempotency_key)


def _report(probe) -> core_facts.FactReport:
    """The stored probe's tier A and B facts as a FactReport, each offered as lost (so the
    continuation is searched for every one, kept or not)."""
    fields = core_facts.Fact.__dataclass_fields__
    out = []
    for d in probe.facts:
        fact = core_facts.Fact(**{k: v for k, v in d.items() if k in fields})
        out.append(replace(fact, kept=False, how=""))
    return core_facts.FactReport(out)


@pytest.mark.parametrize("name", FIXTURES)
def test_the_second_handoff_keeps_the_tier_a_facts_of_both_segments_the_continuation_used(project, tmp_path, name):
    source = _fixture(name)
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    # The session as recorded before its own compaction (if any): the two handoffs made here are
    # then the only folds, and the second reads the first summary.
    lines = lines[: next((i for i, line in enumerate(lines) if "compact_boundary" in line), len(lines))]
    third = len(lines) // 3
    parts = [lines[:third], lines[third : 2 * third], lines[2 * third :]]
    path = tmp_path / source.name

    _append_and_import(project, path, parts[0])
    (conv,) = Conversation.objects.filter(project=project, parent__isnull=True)  # the main session, not its sub-agents
    fold1 = _handoff(conv)
    _append_and_import(project, path, parts[1])
    conv.refresh_from_db()
    fold2 = _handoff(conv)
    _append_and_import(project, path, parts[2])
    assert Conversation.objects.filter(project=project, parent__isnull=True).count() == 1
    assert fold2.position > fold1.position

    probe1, probe2 = probes.compute_probe(fold1), probes.compute_probe(fold2)
    # The second fold's probe read the first summary (carried over), then segment 2.
    assert probes.previous_summary(fold2) == fold1
    probed2, _ = probes.probed_messages(fold2)
    assert probed2[0]["blocks"][0]["text"] == fold1.summary_text

    # The recorded continuation after the second fold: the messages of part 3.
    after = probes.after_messages(fold2)
    assert after and all(m["position"] > fold2.position for m in after)
    assert probe2.continuation["after_messages"] == len(after)

    cwd = conv.cwd
    reports = [_report(probe1), _report(probe2)]
    checked = {}  # (kind, key) -> (segment, fact): tier A, used again after fold 2 (the first segment it is in)
    for segment, report in enumerate(reports, start=1):
        used = set(core_continuation.measure([], fold2.summary_text, after, report, cwd=cwd).used_after)
        for fact in report.facts:
            if fact.tier == "A" and fact.key in used:
                checked.setdefault((fact.kind, fact.key), (segment, fact))
    assert checked, f"{name}: no tier-A fact of either segment is used after the second fold (vacuous)"

    summary2 = core_facts.prepare(fold2.summary_text)
    tails = core_facts.suffix_counts(f.key for report in reports for f in report.facts if f.kind == "path")
    missing = [
        (segment, fact.kind, fact.text) for segment, fact in checked.values()
        if not core_facts.is_kept(fact, summary2, cwd, tails)
    ]
    per_segment = {s: sorted(key for (_, key), (seg, _) in checked.items() if seg == s) for s in (1, 2)}
    assert per_segment[1] and per_segment[2], f"{name}: the facts checked are not from both segments: {per_segment}"
    assert not missing, f"{name}: the second summary drops tier-A facts the continuation used: {missing}"
    # The stored probe of the second fold says the same of segment 2 and what summary 1 carried:
    # no tier-A fact it lost is used again after the fold.
    assert not [f["text"] for f in probe2.facts if f["tier"] == "A" and f.get("used_after")]
    assert count_text(fold2.summary_text) <= settings.HANDOFF_BUDGET
