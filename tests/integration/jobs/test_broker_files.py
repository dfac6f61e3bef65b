"""The embedded default's broker (filesystem://, jobs/broker_files.py): a message put while a
worker polls arrives, whole and once.

kombu's own filesystem transport lost 5 to 7 of 3,000 messages put by one process while another
consumed (it creates the file, then writes it; a poll in between takes the empty file), and with
two consumers the same; this test fails on it that way. Here, with the app's own broker settings:
one process puts 3,000 messages, two others consume as fast as they can, and every message is
received exactly once, none broken."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

from tests.worker import ROOT, worker_env

pytestmark = pytest.mark.skipif(not settings.CELERY_BROKER_URL.startswith("filesystem://"),
                                reason="the filesystem broker only (the embedded default)")

COUNT = 3000
QUEUE = "broker-race-test"

_SCRIPT = r"""
import json, os, sys, time
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
import django
django.setup()
from contextviewer.celery import app
role, queue, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with app.connection_for_write() as conn:
    q = conn.SimpleQueue(queue)
    if role == "put":
        for n in range(count):
            q.put({"n": n})
        print(json.dumps({"put": count}))
    else:
        got, errors, quiet_since = [], [], None
        while True:
            try:
                message = q.get(block=False)
            except q.Empty:
                if os.path.exists(sys.argv[4]) and quiet_since is None:
                    quiet_since = time.monotonic()  # the producer is done: drain what is left
                if quiet_since is not None and time.monotonic() - quiet_since > 1.0:
                    break
                time.sleep(0.001)
                continue
            except Exception as exc:  # a message kombu could not read
                errors.append(repr(exc)[:200])
                continue
            got.append(message.payload["n"])
            message.ack()
        print(json.dumps({"got": got, "errors": errors}))
"""


def test_messages_put_while_workers_poll_all_arrive_once(tmp_path):
    assert settings.CELERY_BROKER_TRANSPORT == "contextviewer.jobs.broker_files:Transport"
    done_flag = tmp_path / "producer-done"
    env = {**worker_env(), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", _SCRIPT]
    consumers = [subprocess.Popen([*argv, "get", QUEUE, str(COUNT), str(done_flag)], cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        put = subprocess.run([*argv, "put", QUEUE, str(COUNT)], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=120)
        assert put.returncode == 0, put.stderr[-2000:]
        done_flag.touch()
        results = []
        for proc in consumers:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err[-2000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in consumers:
            if proc.poll() is None:
                proc.kill()
    received = [n for r in results for n in r["got"]]
    errors = [e for r in results for e in r["errors"]]
    assert errors == []
    assert len(received) == COUNT, f"{COUNT - len(set(received))} messages lost, {len(received) - len(set(received))} twice"
    assert sorted(received) == list(range(COUNT))
    # Nothing left half-written in the queue folder.
    assert [n for n in os.listdir(settings.BROKER_DIR / "queue") if QUEUE in n] == []


def test_a_wait_for_a_message_ends_at_its_next_step_once_the_worker_is_asked_to_stop(monkeypatch):
    """Celery's blocking loop (this transport's) looks for a stop request only between two waits
    of 2 s; a worker told to stop took 5.3 s to go here, 2.2 s with this. Counted in polls of the
    empty queue, not seconds: a slower machine makes fewer of them, never more."""
    import socket

    from celery.worker import state
    from kombu.transport.virtual import base

    from contextviewer.celery import app
    from contextviewer.jobs import broker_files

    polls = []
    real_sleep = base.sleep
    monkeypatch.setattr(base, "sleep", lambda s: (polls.append(s), real_sleep(s)))
    with app.connection_for_write() as conn:
        assert isinstance(conn.transport, broker_files.Transport)
        conn.default_channel  # noqa: B018 (opens the channel the wait polls)

        # No stop asked: the wait lasts its whole timeout, polling.
        with pytest.raises(socket.timeout):
            conn.transport.drain_events(conn, timeout=0.5)
        assert len(polls) >= 5, polls
        # A warm stop asked (Celery sets the exit code, 0): a wait of 60 s ends at its first step.
        polls.clear()
        monkeypatch.setattr(state, "should_stop", 0)
        with pytest.raises(socket.timeout):
            conn.transport.drain_events(conn, timeout=60)
        assert len(polls) <= 4, polls
