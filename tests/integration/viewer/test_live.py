"""The live poll of a conversation page: what the open page does not have yet, same access as the page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation, Source
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(tmp_path, project):
    """A session file with two turns, imported, and its builder to write more."""
    b = SessionBuilder()
    path = tmp_path / "s.jsonl"
    write_lines(path, b.turn(1) + b.turn(2))  # 5 lines per turn
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    Conversation.objects.filter(pk=conv.pk).update(live_until=timezone.now() + timedelta(minutes=5))
    conv.refresh_from_db()
    return conv, path, b


def grow(path, lines, project):
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    ingest.import_file(project, path)


def last_turn(conv) -> int:
    return conv.messages.order_by("-position").values_list("turn", flat=True).first()


def test_the_page_of_a_live_conversation_polls_and_the_index_says_live(client, user, session):
    conv, _, _ = session
    client.force_login(user)
    page = client.get(f"/c/{conv.pk}/").content.decode()
    assert 'id="live-badge"' in page
    assert f'hx-get="/c/{conv.pk}/live/"' in page and "data-live-poll" in page
    assert ">live</span>" in client.get("/").content.decode()

    Conversation.objects.filter(pk=conv.pk).update(live_until=timezone.now() - timedelta(seconds=1))
    page = client.get(f"/c/{conv.pk}/").content.decode()
    assert 'id="live-badge"' not in page
    assert ">live</span>" not in client.get("/").content.decode()
    # Idle, its file may grow again: the page looks every 20 s (issue 36, item 1).
    assert "data-live-poll" in page and 'hx-trigger="every 20s"' in page and "looks every 20 s" in page

    # Never live, read from a file on disk (a watcher may be looking at it): the same slow poll.
    Conversation.objects.filter(pk=conv.pk).update(live_until=None)
    assert 'hx-trigger="every 20s"' in client.get(f"/c/{conv.pk}/").content.decode()
    # An upload never grows: no poll.
    Source.objects.filter(pk=conv.source_id).update(path="upload:" + "0" * 64 + "/s.jsonl")
    assert "data-live-poll" not in client.get(f"/c/{conv.pk}/").content.decode()


def test_nothing_new_is_204_and_a_conversation_no_longer_live_slows_the_poll_down(client, user, session, project):
    conv, path, b = session
    client.force_login(user)
    hi = conv.messages.order_by("-position").values_list("position", flat=True).first()
    r = client.get(f"/c/{conv.pk}/live/", {"pos": hi, "turn": last_turn(conv), "append": 1}, HTTP_HX_REQUEST="true")
    assert r.status_code == 204
    Conversation.objects.filter(pk=conv.pk).update(live_until=None)
    r = client.get(f"/c/{conv.pk}/live/", {"pos": hi, "turn": last_turn(conv), "append": 1}, HTTP_HX_REQUEST="true")
    html = r.content.decode()
    assert r.status_code == 200
    assert '<span id="live-state" hx-swap-oob="true"></span>' in html  # the badge goes
    assert 'hx-trigger="every 20s"' in html and "&quot;dormant&quot;: 1" in html  # a slow poll stays
    dormant = {"pos": hi, "turn": last_turn(conv), "append": 1, "dormant": 1}
    assert client.get(f"/c/{conv.pk}/live/", dormant, HTTP_HX_REQUEST="true").status_code == 204

    # The agent goes on with the session: the watcher marks it live again, the page follows it again.
    shown = last_turn(conv)
    grow(path, b.turn(3), project)
    Conversation.objects.filter(pk=conv.pk).update(live_until=timezone.now() + timedelta(minutes=5))
    html = client.get(f"/c/{conv.pk}/live/", dormant, HTTP_HX_REQUEST="true").content.decode()
    assert f'id="turn-{last_turn(conv)}"' in html and last_turn(conv) > shown
    assert 'id="live-badge"' in html and 'hx-trigger="every 250ms"' in html and "&quot;hold&quot;: 1" in html  # a held request again


def test_the_header_counts_follow_the_live_session(client, user, session, project):
    """Issue 22, item 7: "5 model calls" no longer stays while the curve shows 9."""
    conv, path, b = session
    client.force_login(user)
    hi = conv.messages.order_by("-position").values_list("position", flat=True).first()
    grow(path, b.turn(3), project)
    conv.refresh_from_db()
    html = client.get(f"/c/{conv.pk}/live/", {"pos": hi, "turn": 2, "append": 1}, HTTP_HX_REQUEST="true").content.decode()
    counts = html.split('id="header-counts" hx-swap-oob="true"', 1)[1].split("</span>\n    </span>", 1)[0]
    assert f"{conv.model_call_count} model calls" in counts and f"{conv.message_count} messages" in counts
    assert conv.model_call_count == 6


def test_new_turns_come_with_the_gauge_and_curve_and_the_next_poll(client, user, session, project):
    conv, path, b = session
    client.force_login(user)
    hi = conv.messages.order_by("-position").values_list("position", flat=True).first()
    shown = last_turn(conv)
    grow(path, b.turn(3), project)
    r = client.get(f"/c/{conv.pk}/live/", {"pos": hi, "turn": shown, "append": 1, "folds": 0}, HTTP_HX_REQUEST="true")
    assert r.status_code == 200
    html = r.content.decode()
    new_turn = last_turn(conv)
    assert new_turn > shown
    assert f'id="turn-{new_turn}"' in html and f'id="turn-{shown}"' not in html  # only what is new
    assert "Step 3: please fix the failing test in src/app_3.py" in html
    assert 'id="gauge-card" aria-labelledby="gauge-title" hx-swap-oob="true"' in html
    assert 'id="curve-card" aria-labelledby="curve-title" hx-swap-oob="true"' in html
    assert f'id="turn-stats-{shown}" hx-swap-oob="true"' in html
    bar = html.split('hx-swap-oob="innerHTML:#overview-bar"', 1)[1].split("</div>", 1)[0]  # the bar follows (issue 36)
    assert "6 calls" in bar
    assert 'id="live-poll"' in html  # the next poll, after the new turns
    assert html.index(f'id="turn-{new_turn}"') < html.index('id="live-poll"')
    # The gauge and curve count the model calls of the new turn: 2 more (6 in all).
    assert "6 calls" in html

    # A page that still has turns to load by scrolling gets no turns appended (they come that way).
    r = client.get(f"/c/{conv.pk}/live/", {"pos": hi, "turn": shown, "append": 0}, HTTP_HX_REQUEST="true")
    assert f'id="turn-{new_turn}"' not in r.content.decode()


def test_an_open_last_turn_gets_its_new_messages(client, user, session, project):
    conv, path, b = session
    client.force_login(user)
    shown = last_turn(conv)
    hi = conv.messages.order_by("-position").values_list("position", flat=True).first()
    grow(path, b.assistant("And one more thing about the failing test."), project)  # same turn, one message
    r = client.get(
        f"/c/{conv.pk}/live/", {"pos": hi, "turn": shown, "append": 1, "open_pos": hi}, HTTP_HX_REQUEST="true"
    )
    html = r.content.decode()
    assert f'hx-swap-oob="beforeend:#turn-{shown} .turn-body"' in html
    assert html.count('class="message role-') == 1
    assert "And one more thing about the failing test." in html


def test_the_live_poll_is_for_members_only(client, session, django_user_model):
    conv, _, _ = session
    outsider = django_user_model.objects.create_user("mallory", password="pw-mallory-123")
    client.force_login(outsider)
    assert client.get(f"/c/{conv.pk}/live/", {"pos": -1}).status_code == 404
    client.logout()
    assert client.get(f"/c/{conv.pk}/live/", {"pos": -1}).status_code == 302  # to the login page


def test_a_page_with_nothing_after_its_latest_fold_follows_the_first_turns_after_it(client, user, session, project):
    """Issue 36, item 1: right after a handoff made here (a fold at the last message) the loaded
    segment shows no turn ("Nothing after the latest fold yet"); the page polls all the same, and
    the first turns the agent writes after it come."""
    from contextviewer.conversations.models import Fold, FoldKind, FoldOrigin

    conv, path, b = session
    hi = conv.messages.order_by("-position").values_list("position", flat=True).first()
    Fold.objects.create(conversation=conv, key="handoff-test", position=hi, kind=FoldKind.HANDOFF,
                        origin=FoldOrigin.GENERATED, summary_text="Goal: fix the failing tests.")
    client.force_login(user)
    page = client.get(f"/c/{conv.pk}/").content.decode()
    poll = page.split('id="live-poll"', 1)[1].split("</div>", 1)[0]
    assert "Nothing after the latest fold yet." in poll and "every 250ms" in poll  # the note sits in the poll

    grow(path, b.turn(3), project)
    html = client.get(f"/c/{conv.pk}/live/", {"pos": hi, "folds": 1}, HTTP_HX_REQUEST="true").content.decode()
    new_turn = last_turn(conv)
    assert f'id="turn-{new_turn}"' in html and "Step 3: please fix the failing test in src/app_3.py" in html
    assert "Nothing after the latest fold yet." not in html and "reload" not in html
    assert html.index(f'id="turn-{new_turn}"') < html.index('id="live-poll"')
    assert "&quot;append&quot;: 1" in html.split('id="live-poll"', 1)[1]  # the next poll appends after it
