"""One window, one answer: the page's archived segments, handoff's input, a build's fold exclusion,
review's archived segment and the curve's call points name the same positions, on a synthetic
session (two compactions, one with preserved messages, and a microcompact) and on every real
Claude Code fixture with a fold. Each surface is asked through the function it uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from contextviewer.accounts.models import Membership, Role
from contextviewer.builds import services as builds, handoffs as handoff
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.viewer import conversation_page, curve_view
from contextviewer.conversations import segments as loader
from contextviewer.conversations.models import Conversation, Fold, Message, ModelCall
from contextviewer.core import build as core_build
from contextviewer.review import probes, queues
from tests.conftest import shared_fixtures_dir
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db

SUMMARY_1 = "This session is being continued from a previous conversation. Summary one: fixed src/app_0.py."
SUMMARY_2 = "This session is being continued from a previous conversation. Summary two: tests pass."


def _system(builder: SessionBuilder, subtype: str, **extra) -> str:
    return json.dumps(builder._envelope("system", subtype=subtype, content="compacted", isMeta=False, level="info", **extra))


def _summary(builder: SessionBuilder, text: str) -> str:
    return json.dumps(builder._envelope("user", isCompactSummary=True, isVisibleInTranscriptOnly=True,
                                        message={"role": "user", "content": text}))


def synthetic_lines() -> tuple[list[str], dict]:
    """Turns 0-2, a microcompact, turns 3-4, compaction 1 (no preserved messages), turns 5-7,
    compaction 2 preserving turn 7's messages, turns 8-9. Returns the lines and what they hold,
    counted from the lines themselves (line i is message position i)."""
    b = SessionBuilder()
    lines: list[str] = []
    for i in range(3):
        lines += b.turn(i)
    micro = len(lines)
    lines.append(_system(b, "microcompact_boundary", microcompactMetadata={
        "trigger": "auto", "preTokens": 14_000, "tokensSaved": 1_200, "compactedToolIds": ["toolu_000001"]}))
    for i in range(3, 5):
        lines += b.turn(i)
    boundary_1 = len(lines)
    lines.append(_system(b, "compact_boundary", compactMetadata={"trigger": "auto", "preTokens": 150_000},
                         logicalParentUuid=json.loads(lines[-1])["uuid"]))
    lines.append(_summary(b, SUMMARY_1))
    for i in range(5, 7):
        lines += b.turn(i)
    kept_from = len(lines)
    lines += b.turn(7)
    kept = [json.loads(line)["uuid"] for line in lines[kept_from:]]
    boundary_2 = len(lines)
    lines.append(_system(b, "compact_boundary", logicalParentUuid=kept[-1], compactMetadata={
        "trigger": "manual", "preTokens": 160_000,
        "preservedMessages": {"anchorUuid": kept[0], "uuids": kept}}))
    lines.append(_summary(b, SUMMARY_2))
    for i in range(8, 10):
        lines += b.turn(i)
    facts = {
        "micro": micro,
        "boundaries": [boundary_1, boundary_2],
        "summaries": [boundary_1 + 1, boundary_2 + 1],
        "preserved": list(range(kept_from, boundary_2)),
        "last": len(lines) - 1,
    }
    return lines, facts


# --- the agreement, through each surface's own functions ---------------------------------------


def assert_one_window(conv: Conversation) -> dict:
    """Every surface names the same positions for every fold of `conv`; returns what the page showed."""
    page = conversation_page.conversation_page(conv)
    # Every segment, also those the first page lists one line each (each opens into the same segment).
    segments = conversation_page.conversation_segments(conv, loader.load(conv))
    archived = [s for s in segments if s.kind == "archived"]
    loaded = next(s for s in segments if s.kind == "loaded")
    shown = [s for s in page.segments if s.kind == "archived"]
    assert [s.fold.pk for s in shown] == [s.fold.pk for s in archived[-len(shown):]] if shown else True
    assert len(shown) + len(page.listed) + page.hidden_archived == len(archived)
    folds = list(page.folds)
    assert [s.fold.pk for s in archived] == [f.pk for f in folds]
    tokens = dict(Message.objects.filter(conversation=conv).values_list("position", "token_total"))
    turn_of = dict(Message.objects.filter(conversation=conv).values_list("position", "turn"))

    # A build's fold exclusion: fold n stands for the page's archived segment n, less what it preserved.
    infos = builds.fold_infos(conv)
    spans = builds.turn_spans(conv)
    excluded = core_build.exclusions(spans, infos)
    assert len(infos) == len(archived)
    for n, (segment, info) in enumerate(zip(archived, infos, strict=True), start=1):
        assert (info.start, info.position) == (segment.start, segment.end), n
        assert info.summary_position == segment.summary_position
        assert sorted(info.preserved) == segment.preserved_positions
        put_away = {p for p in range(segment.start, segment.end + 1) if p in tokens} - set(segment.preserved_positions)
        expected_turns = {turn_of[p] for p in put_away}
        if segment.summary_position is not None:
            expected_turns.add(turn_of[segment.summary_position])
        if info.summary_text:
            assert set(excluded[n]) == expected_turns, n

    # Review's archived segment: the same positions, every message of them.
    for segment in archived:
        fold = Fold.objects.get(pk=segment.fold.pk)
        shown = [p for p in range(segment.start, segment.end + 1) if p in tokens]
        assert [m.position for m in probes.segment_messages(fold)] == shown
        assert probes.segment_start(fold) == segment.start
        assert probes.compute_probe(fold).segment_start == (shown[0] if shown else fold.position)

    # Handoff's input: the page's loaded segment (summary, preserved tail, everything after the fold).
    view = handoff.loaded_input(conv)
    expected_loaded = sorted(
        {p for p in range(loaded.start, loaded.end + 1) if p in tokens}
        | set(loaded.preserved_positions)
        | ({loaded.summary_position} if loaded.summary_position is not None else set())
    )
    assert view.positions == expected_loaded
    assert view.start == loaded.start and (view.latest_fold.pk if view.latest_fold else None) == (
        loaded.fold.pk if loaded.fold else None
    )

    # The curve's call points: each call's estimate is the loaded view at that call, read off the
    # page's segments (the latest fold before the call: its preserved messages, then what follows).
    curve = page.curve
    calls = list(ModelCall.objects.filter(conversation=conv).order_by("position", "id"))
    imported = [s for s in archived if s.fold.origin == "imported"]
    if calls:
        by_position: dict[int, ModelCall] = {}
        for call in calls:
            by_position.setdefault(call.position, call)
        assert curve is not None and curve.total_calls == len(calls)
        assert len(curve.points) == min(len(calls), curve_view.CURVE_POINTS) or len(calls) > curve_view.CURVE_POINTS
        for point in curve.points:  # every call when few; maxima, minima and folds when many
            call = by_position[point.position]
            before = [s for s in imported if s.end < call.position]
            if before:
                fold_segment = before[-1]
                visible = set(fold_segment.preserved_positions) | set(range(fold_segment.end + 1, call.position))
            else:
                visible = set(range(min(tokens), call.position))
            assert point.position == call.position
            assert point.estimated == sum(tokens.get(p, 0) for p in visible), call.position
            assert point.measured == call.context_size
        preview = handoff.fold_preview(conv, 50)
        assert preview.calls == len(calls) and preview.window == curve.window
        assert [p.estimated for p in loader.call_points(conv)] == [p.estimated for p in curve.points]
    return {"archived": archived, "loaded": loaded, "view": view}


def test_synthetic_session_one_answer_everywhere(project, tmp_path):
    lines, facts = synthetic_lines()
    path = tmp_path / "11111111-2222-4333-8444-555555555555.jsonl"
    write_lines(path, lines)
    ingest.import_path(project, path)
    conv = Conversation.objects.get(project=project)
    assert conv.messages.count() == len(lines)  # one message per line

    # Three folds stored; the microcompact makes no segment.
    assert sorted(conv.folds.values_list("kind", flat=True)) == ["compact", "compact", "microcompact"]
    seen = assert_one_window(conv)
    archived, loaded = seen["archived"], seen["loaded"]
    b1, b2 = facts["boundaries"]
    assert [(s.start, s.end) for s in archived] == [(0, b1), (b1 + 1, b2)]
    assert [s.summary_position for s in archived] == facts["summaries"]
    assert archived[0].preserved_positions == [] and archived[1].preserved_positions == facts["preserved"]
    assert (loaded.start, loaded.end) == (b2 + 1, facts["last"])
    assert loaded.preserved_positions == facts["preserved"] and len(facts["preserved"]) == 5  # turn 7's lines

    # The microcompact: a Fold row with no archived segment anywhere.
    micro = conv.folds.get(kind="microcompact")
    assert micro.position == facts["micro"]
    assert loader.archived_segment(micro) is None and probes.segment_messages(micro) == []
    assert all(s.fold.pk != micro.pk for s in archived)
    # ... and nothing for review to probe or queue: two compactions are reviewed, not three folds.
    assert [r["fold_id"] for r in probes.probe_report(conv)] == [s.fold.pk for s in archived]
    assert [f.pk for f in queues.folds_matching(project, {})] == [s.fold.pk for s in archived]

    # Handoff reads the second summary once, then turn 7 (preserved), then turns 8-9.
    view = seen["view"]
    assert view.positions[:5] == facts["preserved"] and view.positions[5] == facts["summaries"][1]
    assert [e.role for e in view.entries].count("summary") == 1
    assert "Summary two" in next(e.text for e in view.entries if e.role == "summary")

    # The page says the same: two archived heads with their positions, the preserved count.
    user = get_user_model().objects.create_user("wendy", password="pw-wendy-123")
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    client = Client()
    client.force_login(user)
    html = client.get(reverse("conversation", args=[conv.pk])).content.decode()
    assert html.count('class="segment archived') == 2  # the older one listed on one line
    assert f"positions {b1 + 1}–{b2}" in html
    older = client.get(reverse("segment_body", args=[conv.pk, 0])).content.decode()  # opened from its line
    assert "Summary one" in older and "Summary two" not in older
    assert "5 preserved messages" in html
    # The curve draws Claude Code's own auto-compact line (harness rules, by the agent).
    assert "Claude Code auto-compact at 167k" in html


def test_a_handoff_made_here_is_a_segment_but_not_a_fold_the_recorded_calls_saw(project, tmp_path):
    lines, facts = synthetic_lines()
    path = tmp_path / "11111111-2222-4333-8444-555555555555.jsonl"
    write_lines(path, lines)
    ingest.import_path(project, path)
    conv = Conversation.objects.get(project=project)
    before = [p.estimated for p in loader.call_points(conv)]
    job, _ = handoff.start_handoff(conv, enqueue=False)
    jobs.run(job.pk)
    seen = assert_one_window(conv)
    assert len(seen["archived"]) == 3 and seen["archived"][-1].fold.origin == "generated"
    assert seen["archived"][-1].end == facts["last"]
    assert [p.estimated for p in loader.call_points(conv)] == before


# --- every real Claude Code session with a fold -------------------------------------------------


def _folded_fixtures() -> list:
    root = shared_fixtures_dir()
    files = (
        [p for p in sorted((root / "claude-code").glob("*.jsonl")) if "compact_boundary" in p.read_text(errors="replace")]
        if root
        else []
    )
    return files or [pytest.param(None, marks=pytest.mark.skip(reason="../shared/fixtures is absent"))]


@pytest.mark.fixtures
@pytest.mark.parametrize("path", _folded_fixtures(), ids=lambda p: p.name if isinstance(p, Path) else "absent")
def test_every_folded_fixture_one_answer_everywhere(project, path):
    ingest.import_path(project, path)
    raw_folds = sum(
        1 for line in path.read_text(errors="replace").splitlines() if '"compact_boundary"' in line
    )
    convs = [c for c in Conversation.objects.filter(project=project) if loader.segment_folds(c)]
    assert convs and raw_folds >= 1, f"{path.name}: no fold imported"
    for conv in convs:
        seen = assert_one_window(conv)
        assert len(seen["archived"]) == len([f for f in loader.segment_folds(conv) if f.position <= seen["loaded"].end])
