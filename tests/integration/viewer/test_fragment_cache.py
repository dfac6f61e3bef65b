"""Rendered fragments are kept per version of what they show (conversations/page_cache.py, the
`fragments` cache): a second request of a turn reads none of its messages and answers the same
HTML; an appended import, a re-mask and a handoff's fold show at once (no stale text: a secret
planted, shown, then masked is gone from the kept fragment); the access check runs first; the
ETag gives a 304 while nothing changed; gzip still applies."""

from __future__ import annotations

import gzip
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contextviewer.accounts.models import Membership, Role
from contextviewer.conversations import page_cache
from contextviewer.conversations.models import Conversation, Fold, FoldKind, FoldOrigin, Message
from contextviewer.ingest import files as ingest
from tests.factories import build_conversation
from tests.integration.viewer.test_gauge import _gauge_text as gauge_text
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
# An AWS access key id (secrets.py finds it by its pattern), as a row stored before masking knew it.
SECRET = "AKIA" + "Q7XW2M4KZP9RT3VB"


def turn_url(conv, turn: int) -> str:
    return f"/c/{conv.pk}/turns/{turn}/"


def fresh(client, url: str) -> str:
    """The fragment as computed now, nothing kept."""
    page_cache.clear()
    return client.get(url, **HTMX).content.decode()


def test_a_kept_turn_reads_no_message_and_answers_the_same_html(client, user, project):
    page_cache.clear()
    conv = build_conversation(project, turns=6, fold_at=10**9).conversation
    client.force_login(user)
    url = turn_url(conv, 1)
    first = client.get(url, **HTMX)
    assert first.status_code == 200 and b'class="message' in first.content
    with CaptureQueriesContext(connection) as queries:
        second = client.get(url, **HTMX)
    assert second.status_code == 200
    assert second.content == first.content
    read = [q["sql"] for q in queries.captured_queries if "blocks" in q["sql"]]
    assert read == []  # no message's blocks were read: the kept HTML was answered
    with CaptureQueriesContext(connection) as cold:
        assert fresh(client, url) == first.content.decode()
    assert any("blocks" in q["sql"] for q in cold.captured_queries)  # the same HTML, computed again


def test_an_appended_import_shows_in_the_kept_turn_and_the_page(client, user, project, tmp_path):
    page_cache.clear()
    b = SessionBuilder()
    path = tmp_path / "session.jsonl"
    lines = b.turn(1) + b.turn(2)
    write_lines(path, lines)
    ingest.import_file(project, path)
    conv = Conversation.objects.get(project=project, parent__isnull=True)
    last = Message.objects.filter(conversation=conv).order_by("-position").first().turn
    client.force_login(user)
    before = client.get(turn_url(conv, last), **HTMX).content.decode()
    page_before = client.get(f"/c/{conv.pk}/").content.decode()
    # The agent goes on in the same turn: one more model call, appended to the file.
    lines += b.assistant("Appended after the first visit: the parser handles CRLF now.")
    write_lines(path, lines)
    ingest.import_file(project, path)
    after = client.get(turn_url(conv, last), **HTMX).content.decode()
    assert "Appended after the first visit" not in before
    assert "Appended after the first visit" in after
    assert after == fresh(client, turn_url(conv, last))
    page_after = client.get(f"/c/{conv.pk}/").content.decode()
    conv.refresh_from_db()
    assert f"{conv.message_count} messages" in page_after and page_after != page_before


@pytest.mark.django_db(transaction=True)  # `mask` checkpoints the SQLite log, outside a transaction
def test_a_remask_leaves_no_secret_in_a_kept_fragment_or_page(client, user, project):
    page_cache.clear()
    conv = build_conversation(project, turns=6, fold_at=10**9).conversation
    message = Message.objects.filter(conversation=conv, turn=1, role="user").order_by("position").first()
    blocks = list(message.blocks)
    blocks[0] = {**blocks[0], "text": f"deploy with {SECRET} please"}
    Message.objects.filter(pk=message.pk).update(blocks=blocks)  # stored before its kind was known
    client.force_login(user)
    shown = client.get(turn_url(conv, 1), **HTMX).content.decode()
    assert SECRET in shown  # kept now, with the secret
    assert client.get(turn_url(conv, 1), **HTMX).content.decode() == shown
    call_command("mask", "--quiet")
    masked = client.get(turn_url(conv, 1), **HTMX).content.decode()
    assert SECRET not in masked
    assert "deploy with" in masked
    assert SECRET not in client.get(f"/c/{conv.pk}/?turn=1").content.decode()


def test_a_handoff_fold_shows_in_the_kept_segment(client, user, project):
    page_cache.clear()
    conv = build_conversation(project, turns=8, fold_at=10**9).conversation
    client.force_login(user)
    url = f"/c/{conv.pk}/segments/0/"
    whole = client.get(url, **HTMX).content.decode()
    assert client.get(url, **HTMX).content.decode() == whole
    # A handoff made here: a fold at the end of turn 3 (builds/handoffs.py stores the same row).
    at = Message.objects.filter(conversation=conv, turn=3).order_by("-position").first().position
    Fold.objects.create(
        conversation=conv, key="handoff:test", position=at, kind=FoldKind.HANDOFF, origin=FoldOrigin.GENERATED,
        summary_text="Handoff summary of turns 0-3", trigger="handoff",
    )
    conv.refresh_fold_count()
    archived = client.get(url, **HTMX).content.decode()
    assert archived != whole
    assert 'id="turn-5"' in whole and 'id="turn-5"' not in archived  # segment 0 ends at the fold now
    assert archived == fresh(client, url)
    page = client.get(f"/c/{conv.pk}/").content.decode()
    assert "Handoff summary of turns 0-3" in page


def test_the_access_check_comes_before_the_kept_fragment(client, user, project):
    page_cache.clear()
    conv = build_conversation(project, turns=4, fold_at=10**9).conversation
    client.force_login(user)
    assert client.get(turn_url(conv, 1), **HTMX).status_code == 200  # kept
    stranger = get_user_model().objects.create_user("mallory", password="pw-mallory-123")
    client.force_login(stranger)
    assert client.get(turn_url(conv, 1), **HTMX).status_code == 404
    assert client.get(f"/c/{conv.pk}/segments/0/", **HTMX).status_code == 404
    # A member who lost access: no 304 either, whatever ETag the browser kept.
    member = get_user_model().objects.create_user("bob", password="pw-bob-123")
    Membership.objects.create(project=project, user=member, role=Role.VIEWER)
    client.force_login(member)
    kept = client.get(turn_url(conv, 1), **HTMX)
    assert kept.status_code == 200
    Membership.objects.filter(user=member).delete()
    again = client.get(turn_url(conv, 1), HTTP_IF_NONE_MATCH=kept["ETag"], **HTMX)
    assert again.status_code == 404 and b"User" not in again.content


def test_etag_gives_304_until_the_conversation_changes_and_gzip_still_applies(client, user, project):
    page_cache.clear()
    conv = build_conversation(project, turns=4, fold_at=10**9).conversation
    client.force_login(user)
    url = turn_url(conv, 1)
    first = client.get(url, HTTP_ACCEPT_ENCODING="gzip", **HTMX)
    assert first.status_code == 200
    assert first["Content-Encoding"] == "gzip"
    assert b'class="message' in gzip.decompress(first.content)
    etag = first["ETag"]
    assert first["Cache-Control"] == "private, no-cache"  # the reader's browser only, asked again each time
    not_modified = client.get(url, HTTP_IF_NONE_MATCH=etag, **HTMX)
    assert not_modified.status_code == 304 and not_modified.content == b""
    assert not_modified["ETag"] == etag.removeprefix("W/")  # gzip made the first one weak
    # Another reader's ETag for the same fragment is another one.
    other = get_user_model().objects.create_user("carol", password="pw-carol-123")
    Membership.objects.create(project=project, user=other, role=Role.VIEWER)
    client.force_login(other)
    assert client.get(url, **HTMX)["ETag"] != etag
    client.force_login(user)
    Conversation.objects.filter(pk=conv.pk).update(revision=conv.revision + 1)  # a rewritten record
    changed = client.get(url, HTTP_IF_NONE_MATCH=etag, **HTMX)
    assert changed.status_code == 200 and changed["ETag"] != etag
    # Full pages keep no-store (the page holds the reader's forms and cards): no ETag there.
    page = client.get(f"/c/{conv.pk}/")
    assert page["Cache-Control"] == "private, no-store" and not page.has_header("ETag")


def test_signing_out_clears_the_browsers_cache(client, user):
    client.force_login(user)
    response = client.post("/logout/")
    assert response["Clear-Site-Data"] == '"cache"'


def test_a_capture_added_on_disk_shows_on_the_kept_page(client, user, project, tmp_path, settings):
    # Claude Code leaves its system prompt and tools out of the log; the gauge sizes them from a
    # captured request under SCHEMAS_DIR (core/captured.py). A capture dropped in while the server
    # runs, with nothing imported, changes the gauge on the next request, not at the next import.
    settings.SCHEMAS_DIR = tmp_path / "schemas"
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(3))  # written by CLI 2.1.39
    ingest.import_file(project, path)
    conv = Conversation.objects.get(project=project, parent__isnull=True)
    client.force_login(user)
    page_cache.clear()
    before = gauge_text(client.get(f"/c/{conv.pk}/").content.decode())
    assert "system prompt not available" in before
    captured = tmp_path / "schemas" / "claude-code" / "captured"
    captured.mkdir(parents=True)
    (captured / "system_2.1.39.json").write_text(json.dumps([{"type": "text", "text": "You are a careful agent. " * 400}]))
    (captured / "tools_2.1.39.json").write_text(json.dumps([{"name": "Bash", "description": "Runs a command. " * 50}]))
    after = gauge_text(client.get(f"/c/{conv.pk}/").content.decode())
    assert "system prompt not available" not in after
    assert re.search(r"system prompt [\d.,]+k", after) and "from Claude Code 2.1.39's captured request" in after
    # ... and one removed shows as gone again: the kept page is not read for the old stamp.
    for capture in captured.iterdir():
        capture.unlink()
    assert "system prompt not available" in gauge_text(client.get(f"/c/{conv.pk}/").content.decode())
