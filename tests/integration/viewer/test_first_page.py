"""The first page of a conversation stays small however many folds or turns it has, and every
archived segment stays reachable: the latest one whole, older ones one line each that unfold
into their summary and turns, the oldest lines on request."""

import re

import pytest
from django.urls import reverse

from contextviewer.ingest import files as ingest
from contextviewer.viewer import conversation_page, curve_view
from contextviewer.conversations import page_cache, segments
from contextviewer.core import curve as core_curve
from contextviewer.conversations.models import Conversation, Message
from contextviewer.importers.claude_code import synthetic
from tests.factories import TextSource, build_conversation
from tests.module_worlds import project_and_user, rolled_back

pytestmark = pytest.mark.django_db

FIRST_PAGE_LIMIT = 100_000  # bytes, issue 11
FOLDS = 18


# tests/integration/conftest.py's project and user, made once for the module (tests/module_worlds.py).
_module_world, project, user = project_and_user()


@pytest.fixture
def logged_in(client, user):
    client.force_login(user)
    return client


@pytest.fixture(scope="module")
def _many_folds(_module_world, django_db_blocker, tmp_path_factory) -> int:
    """The session of many folds, imported once for the module (inside its world's transaction)."""
    with rolled_back(django_db_blocker):
        project = _module_world[0]
        path = synthetic.write_session(tmp_path_factory.mktemp("many-folds") / "s", messages=700, seed=4, folds=FOLDS, subagent=False)
        ingest.import_path(project, path)
        yield Conversation.objects.get(project=project, parent__isnull=True).pk


@pytest.fixture
def many_folds(_many_folds, db) -> Conversation:
    page_cache.clear()  # as for a conversation imported for this test alone: nothing of it rendered yet
    return Conversation.objects.get(pk=_many_folds)


def _turns_of(conv: Conversation, seg) -> list[int]:
    """The first window's turns of a segment, from the messages themselves."""
    turns = (
        Message.objects.filter(conversation=conv, position__gte=seg.start, position__lte=seg.end)
        .order_by("turn").values_list("turn", flat=True).distinct()
    )
    return list(turns[: conversation_page.TURN_PAGE])


def _rows(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'id="fold-row-(\d+)"', html)]


def test_a_conversation_of_many_folds_has_a_small_first_page(logged_in, many_folds):
    conv = many_folds
    assert conv.fold_count == FOLDS
    response = logged_in.get(reverse("conversation", args=[conv.id]))
    assert response.status_code == 200
    html = response.content.decode()
    assert len(response.content) < FIRST_PAGE_LIMIT

    segs = conversation_page.conversation_segments(conv, segments.load(conv))
    archived = [s for s in segs if s.kind == "archived"]
    assert len(archived) == FOLDS
    # The latest archived segment whole, every older one a line of its own, oldest first.
    assert f'id="{archived[-1].element_id}"' in html
    assert _rows(html) == [s.index for s in archived[:-1]]
    # Each line says which fold it is and starts with its summary's headline, escaped.
    for s in archived[:-1]:
        assert f"Fold {s.index + 1}</span>" in html
        # its summary can be picked for a build from the line itself
        assert re.search(rf'id="fold-row-{s.index}".*?name="folds" value="{s.index + 1}"', html, re.S)
        headline = s.headline
        assert headline and not headline.startswith("This session is being continued")


def test_every_archived_segment_unfolds_into_its_summary_and_turns(logged_in, many_folds):
    conv = many_folds
    archived = [s for s in conversation_page.conversation_segments(conv, segments.load(conv)) if s.kind == "archived"]
    for s in archived[:-1]:
        url = reverse("segment_body", args=[conv.id, s.index])
        fragment = logged_in.get(url, HTTP_HX_REQUEST="true").content.decode()
        shown = [int(t) for t in re.findall(r'id="turn-(\d+)"', fragment)]
        assert shown == _turns_of(conv, s) and shown
        assert "Summary that replaced these turns" in fragment
        # Without JavaScript the same link opens a page with the summary and the turns.
        page = logged_in.get(url).content.decode()
        assert [int(t) for t in re.findall(r'id="turn-(\d+)"', page)] == shown
        assert "Summary that replaced these turns" in page
    # The loaded segment has no line to unfold.
    loaded = len(archived)
    assert logged_in.get(reverse("segment_body", args=[conv.id, loaded]), HTTP_HX_REQUEST="true").status_code == 404


def test_the_oldest_folds_load_on_request(logged_in, many_folds, monkeypatch):
    monkeypatch.setattr(conversation_page, "ARCHIVED_LISTED", 5)
    conv = many_folds
    html = logged_in.get(reverse("conversation", args=[conv.id])).content.decode()
    listed = _rows(html)
    assert listed == list(range(FOLDS - 1 - 5, FOLDS - 1))
    seen = list(listed)
    before = listed[0]
    while True:
        match = re.search(r'hx-get="([^"]*/folds/\?before=(\d+))"', html)
        assert ("Show %d older fold" % before) in html if match else True
        if not match:
            break
        assert int(match.group(2)) == before
        html = logged_in.get(match.group(1).replace("&amp;", "&"), HTTP_HX_REQUEST="true").content.decode()
        rows = _rows(html)
        assert rows and rows[-1] == before - 1
        seen = rows + seen
        before = rows[0]
    assert seen == list(range(FOLDS - 1))
    # Without JavaScript the link is a page of its own.
    page = logged_in.get(reverse("fold_list", args=[conv.id]), {"before": 6})
    assert page.status_code == 200 and _rows(page.content.decode()) == [1, 2, 3, 4, 5]


def test_a_hostile_summary_headline_is_escaped(logged_in, many_folds):
    conv = many_folds
    fold = conv.folds.order_by("position").first()
    fold.summary_text = "Analysis:\n<script>alert(1)</script><img src=x onerror=alert(2)> and more"
    fold.save(update_fields=["summary_text"])
    html = logged_in.get(reverse("conversation", args=[conv.id])).content.decode()
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(2)&gt; and more" in html


def test_the_page_of_a_focused_old_turn_opens_its_segment(logged_in, many_folds):
    conv = many_folds
    archived = [s for s in conversation_page.conversation_segments(conv, segments.load(conv)) if s.kind == "archived"]
    target = archived[2]
    html = logged_in.get(reverse("conversation", args=[conv.id]), {"turn": target.first_turn}).content.decode()
    assert f'id="{target.element_id}" open' in html
    assert f'id="turn-{target.first_turn}"' in html
    assert target.index not in _rows(html)
    assert len(html.encode()) < FIRST_PAGE_LIMIT


def test_a_conversation_of_many_long_turns_has_a_small_first_page(logged_in, project):
    long_line = "word " * 400
    texts = TextSource(user=lambda t: f"{t} {long_line}")
    conv = build_conversation(project, turns=800, fold_at=10**9, subagent_turn=None, texts=texts).conversation
    response = logged_in.get(reverse("conversation", args=[conv.id]))
    assert response.status_code == 200
    assert len(response.content) < FIRST_PAGE_LIMIT
    html = response.content.decode()
    assert html.count('<details class="turn') == conversation_page.TURN_PAGE
    assert 'hx-trigger="revealed"' in html


def test_fold_marks_on_the_curve_are_bounded():
    marks = [{"x": 1000 * i / 499, "trigger": "auto", "before": 1, "after": 2, "position": i} for i in range(500)]
    merged = core_curve.merge_marks(marks, 1000, curve_view.FOLD_MARKS)
    assert len(merged) <= curve_view.FOLD_MARKS
    assert sum(m.get("count", 1) for m in merged) == 500
    few = marks[::50]
    assert core_curve.merge_marks(few, 1000, curve_view.FOLD_MARKS) == few
