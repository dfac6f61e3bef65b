"""A live page's request is held until something is new (issue 35, item 4): the import's commit
wakes it (conversations/changes.py), so an appended line reaches an open page as soon as it is
imported, pushed by the server instead of found by a poll every 2 s; with nothing new the request
ends with 204 after the hold, and a page that is not live is not held."""

from __future__ import annotations

import http.client
import os
import signal
import threading
import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from contextviewer.conversations import changes
from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from contextviewer.viewer import live
from tests.sessions import SessionBuilder, write_lines
from tests.worker import free_port, start_gunicorn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def session(tmp_path, project):
    b = SessionBuilder()
    path = tmp_path / "s.jsonl"
    write_lines(path, b.turn(1) + b.turn(2))
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    Conversation.objects.filter(pk=conv.pk).update(live_until=timezone.now() + timedelta(minutes=5))
    return conv, path, b


def _held(user, conv, pos, out):
    c = Client()
    c.force_login(user)
    t0 = time.monotonic()
    shown = conv.messages.order_by("-position").values_list("turn", flat=True).first()
    out["response"] = c.get(f"/c/{conv.pk}/live/", {"pos": pos, "turn": shown, "append": 1, "hold": 1}, HTTP_HX_REQUEST="true")
    out["done"] = time.monotonic()
    out["took"] = out["done"] - t0


def test_a_held_request_answers_as_soon_as_the_import_of_an_appended_turn_commits(user, session, project, monkeypatch):
    conv, path, b = session
    monkeypatch.setattr(live, "HOLD_SECONDS", 15.0)
    monkeypatch.setattr(changes, "DB_EVERY", 8.0)  # only the signal can wake it in time
    pos = conv.messages.order_by("-position").values_list("position", flat=True).first()
    out: dict = {}
    thread = threading.Thread(target=_held, args=(user, conv, pos, out))
    thread.start()
    time.sleep(0.6)
    assert thread.is_alive(), "nothing was new, yet the request was answered at once"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(b.turn(3)) + "\n")
    ingest.import_file(project, path)
    imported = time.monotonic()
    thread.join(10)
    assert not thread.is_alive()
    html = out["response"].content.decode()
    assert out["response"].status_code == 200 and "Step 3" in html
    conv.refresh_from_db()
    counts = html.split('id="header-counts" hx-swap-oob="true"', 1)[1].split("</span>\n    </span>", 1)[0]
    assert f"{conv.model_call_count} model calls" in counts and conv.model_call_count == 6, (out["done"] - imported, out["took"])  # the figures after the import
    # Woken by the signal (a stat every 50 ms), not by the look at the database (8 s here); the
    # answer's rendering is the rest (under 0.3 s idle, more on a busy machine).
    assert out["done"] - imported < 4.0, f"answered {out['done'] - imported:.2f} s after the import"


def test_with_nothing_new_the_hold_ends_with_204_and_a_page_not_live_is_not_held(user, session, monkeypatch):
    conv, _, _ = session
    monkeypatch.setattr(live, "HOLD_SECONDS", 0.8)
    pos = conv.messages.order_by("-position").values_list("position", flat=True).first()
    out: dict = {}
    _held(user, conv, pos, out)
    assert out["response"].status_code == 204 and 0.8 <= out["took"] < 5
    Conversation.objects.filter(pk=conv.pk).update(live_until=timezone.now() - timedelta(seconds=1))
    _held(user, conv, pos, out)
    assert out["response"].status_code == 200 and out["took"] < 0.5  # "no longer live", at once


def test_a_signal_a_waiter_misses_is_caught_by_the_database_look(user, session, monkeypatch):
    # Another machine's worker (no shared data folder): no stamp moves, the look every second finds it.
    conv, _, _ = session
    calls = iter([False, True])
    t0 = time.monotonic()
    assert changes.wait(conv.pk, 5.0, lambda: next(calls))
    assert 1.5 < time.monotonic() - t0 < 3.5  # the second look, two seconds in


def test_stopping_the_web_server_ends_a_held_request_at_once(worker, project, user, tmp_path):
    """The default web server (ops/webserver.py, with ops/gunicorn_hooks.py): SIGTERM, as `serve`
    sends when it stops, answers a live page's held request with 204 at once, and the server is gone
    within seconds, not after the 20 s hold (nor killed after serve's 10 s grace)."""
    b = SessionBuilder()
    path = tmp_path / "s.jsonl"
    write_lines(path, b.turn(1))
    ingest.import_file(project, path)
    conv = Conversation.objects.get()
    Conversation.objects.filter(pk=conv.pk).update(live_until=timezone.now() + timedelta(minutes=5))
    pos = conv.messages.order_by("-position").values_list("position", flat=True).first()
    c = Client()
    c.force_login(user)
    cookie = "; ".join(f"{k}={m.value}" for k, m in c.cookies.items())
    port = free_port()
    server = start_gunicorn(port, tmp_path / "gunicorn.log")
    out: dict = {}

    def held():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            conn.request("GET", f"/c/{conv.pk}/live/?pos={pos}&append=1&hold=1", headers={"Cookie": cookie, "HX-Request": "true"})
            out["status"] = conn.getresponse().status
        except OSError as exc:
            out["error"] = repr(exc)
        out["at"] = time.monotonic()

    try:
        up = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        up.request("GET", "/login/")
        assert up.getresponse().status == 200  # the worker has booted: the next request is served, not queued
        up.close()
        thread = threading.Thread(target=held)
        thread.start()
        time.sleep(1.5)
        assert thread.is_alive(), f"the request was not held: {out}"
        stopped = time.monotonic()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=15)
        thread.join(5)
        assert out.get("status") == 204 and out["at"] - stopped < 5.0, (out, (tmp_path / "gunicorn.log").read_text()[-2000:])
        assert time.monotonic() - stopped < 9.0  # not the 20 s hold, nor serve's SIGKILL after 10 s
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
