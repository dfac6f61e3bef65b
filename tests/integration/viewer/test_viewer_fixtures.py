"""Pages for every real Claude Code fixture render with no server error, and the segments, fold
headers and turn counts they show match the imported data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation, Message
from tests.conftest import shared_fixtures_dir
from tests.factories import make_project, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.fixtures]


def _files() -> list:
    root = shared_fixtures_dir()
    files = sorted((root / "claude-code").glob("*.jsonl")) if root else []
    return files or [pytest.param(None, marks=pytest.mark.skip(reason="../shared/fixtures is absent"))]


def _turns_in(conv: Conversation, start: int, end: int) -> list[int]:
    return sorted(
        set(Message.objects.filter(conversation=conv, position__gte=start, position__lte=end).values_list("turn", flat=True))
    )


def _all_window_turns(client, conv: Conversation, index: int) -> list[int]:
    """Every turn header of a segment, following the 'more turns' windows."""
    url = reverse("segment_turns", args=[conv.id, index])
    seen: list[int] = []
    params: dict = {}
    for _ in range(1000):
        response = client.get(url, params, HTTP_HX_REQUEST="true")
        assert response.status_code == 200
        html = response.content.decode()
        seen += [int(t) for t in re.findall(r'<details class="turn[^"]*" id="turn-(\d+)"', html)]
        more = re.search(r'class="more-turns later" hx-get="[^"?]*\?from=(\d+)', html)
        if not more:
            return seen
        params = {"from": more.group(1)}
    raise AssertionError("endless windows")


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name if isinstance(p, Path) else "absent")
def test_fixture_pages_render_and_match_the_imported_data(client, path):
    project = make_project()
    user = make_user(project=project)
    client.force_login(user)
    ingest.import_path(project, path)
    convs = list(Conversation.objects.filter(project=project))
    if not convs:
        pytest.skip(f"{path.name}: nothing to show (no conversational lines)")

    index = client.get(reverse("index"))
    assert index.status_code == 200
    for conv in convs:
        if conv.parent_id is None:
            assert reverse("conversation", args=[conv.id]) in index.content.decode()

    for conv in convs:
        response = client.get(reverse("conversation", args=[conv.id]))
        assert response.status_code == 200, (path.name, conv.external_id)
        html = response.content.decode()
        messages = Message.objects.filter(conversation=conv)
        if not messages.exists():
            continue
        lo = messages.order_by("position").first().position
        hi = messages.order_by("-position").first().position
        folds = list(conv.folds.exclude(kind="microcompact").filter(position__lte=hi).order_by("position"))

        # one archived segment per fold, headed by that fold; then the loaded segment
        archived = re.findall(r'<details class="segment archived" id="segment-(\d+)"', html)
        assert len(archived) == len(folds), (path.name, conv.external_id)
        assert 'class="segment loaded"' in html
        heads = re.findall(r'<summary class="fold-head">(.*?)</summary>', html, re.S)
        previous = lo - 1
        for i, fold in enumerate(folds):
            start, end = previous + 1, fold.position
            expected = _turns_in(conv, start, end)
            head = heads[i]
            assert f"positions {start}–{end}" in head
            if expected:
                assert f"turns {expected[0]}–{expected[-1]}" in head
            assert f"folded {fold.trigger or fold.kind}" in head
            if fold.tokens_before:
                assert "tokens" in head
            # unfolding shows exactly the turns the fold put away
            assert _all_window_turns(client, conv, i) == expected, (path.name, i)
            previous = max(previous, fold.position)

        # the loaded segment: its turns, window after window
        loaded_index = len(folds)
        expected_loaded = _turns_in(conv, previous + 1, hi)
        assert _all_window_turns(client, conv, loaded_index) == expected_loaded

        # every turn expands without error, and its messages are the turn's messages
        for turn in sorted(set(messages.values_list("turn", flat=True)))[:60]:
            body = client.get(reverse("turn", args=[conv.id, turn]), HTTP_HX_REQUEST="true")
            assert body.status_code == 200, (path.name, turn)
            shown = len(re.findall(r'<div class="message ', body.content.decode()))
            assert 0 < shown <= messages.filter(turn=turn).count()

        # every stored image is served (or refused) without a server error
        for m in messages.filter(raw__contains='"image"').only("id", "blocks")[:20]:
            count = sum(1 for b in m.blocks if b.get("kind") == "image") + sum(int(b.get("images") or 0) for b in m.blocks)
            for k in range(count):
                assert client.get(reverse("image", args=[conv.id, m.id, k])).status_code in (200, 404)
