"""Issue 40, item 4: the 500s under restart, load and a lost database. Each answers a clear page or
a clear API error, and the next request works."""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

ROOT = Path(__file__).resolve().parents[3]

# A fresh interpreter (a web process just restarted): the first thread to highlight code is held
# inside pygments' formatter package while it loads; a second thread renders meanwhile.
_FIRST_RENDERS = textwrap.dedent(
    """
    import importlib.abc, sys, threading, time
    entered = threading.Event()

    class SlowFormatters(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "pygments.formatters._mapping" and not entered.is_set():
                entered.set()
                time.sleep(0.5)
            return None

    sys.meta_path.insert(0, SlowFormatters())
    from contextviewer.display.rendering import highlight_lines

    errors = []

    def render(name):
        try:
            assert "<li>" in highlight_lines("def f():\\n    return 1\\n", name)
        except Exception as exc:
            errors.append(repr(exc))

    first = threading.Thread(target=render, args=("a.py",))
    first.start()
    entered.wait(10)
    second = threading.Thread(target=render, args=("b.py",))
    second.start()
    first.join()
    second.join()
    print(errors or "ok")
    """
)


@pytest.mark.backend_independent
def test_first_concurrent_renders_after_a_restart_all_highlight():
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_RENDERS], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok", done.stdout


# --- SQLite's write lock held by a long import -------------------------------------------------

sqlite_only = pytest.mark.skipif(
    "sqlite" not in __import__("django.conf").conf.settings.DATABASES["default"]["ENGINE"],
    reason="SQLite's one writer: PostgreSQL locks rows, an insert never waits for an import",
)


@contextlib.contextmanager
def _write_lock_held():
    """Another connection holds SQLite's write lock (as an import writing a large file does)."""
    from django.db import connection

    holder = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.fixture
def world(transactional_db):
    from tests.factories import build_conversation, make_project, make_user

    project = make_project("locked")
    user = make_user("ann", project=project)
    conv = build_conversation(project, turns=2, subagent_turn=None, image_turn=None).conversation
    client = Client()
    client.force_login(user)
    return project, user, conv, client


@sqlite_only
def test_an_export_during_a_long_import_is_served_and_its_audit_event_kept(world, monkeypatch):
    from contextviewer.accounts import audit
    from contextviewer.accounts.models import AuditEvent

    project, _user, conv, client = world
    monkeypatch.setattr(audit, "WAIT_MS", 200)
    with _write_lock_held():
        began = time.monotonic()
        api = client.get(f"/api/conversations/{conv.pk}/export", {"format": "anthropic"})
        page = client.get(f"/c/{conv.pk}/export/markdown/")
        assert api.status_code == 200 and page.status_code == 200, (api.content[:300], page.content[:300])
        assert time.monotonic() - began < 10
    # The import has committed: the spooled events are written (the audit log page does it too).
    audit.flush_spool()
    exports = AuditEvent.objects.filter(project=project, action="export.conversation")
    assert exports.count() == 2
    assert not (Path(settings.DATA_DIR) / audit.SPOOL_NAME).exists()


@sqlite_only
def test_a_write_that_cannot_wait_answers_503_with_retry_after_and_a_retry_works(world, monkeypatch):
    from django.db import connection

    project, _user, _conv, client = world
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "timeout", 0.3)
    connection.close()
    body = {"who": "bob@example.com", "role": "viewer"}
    with _write_lock_held():
        api = client.post(f"/api/projects/{project.slug}/invitations", body, content_type="application/json")
        page = client.post("/login/", {"username": "ann", "password": "pw-alice-123"})
    assert api.status_code == 503 and api["Retry-After"] == "30"
    assert "busy" in api.json()["detail"] and "try again" in api.json()["detail"]
    assert page.status_code == 503 and page["Retry-After"] == "30"
    assert b"The database is busy" in page.content and b"Server Error" not in page.content
    again = client.post(f"/api/projects/{project.slug}/invitations", body, content_type="application/json")
    assert again.status_code == 201, again.content


@sqlite_only
def test_a_title_jobs_spend_write_waits_for_the_import(world, monkeypatch):
    from django.db import connection

    from contextviewer.providers import services
    from contextviewer.providers.base import Completion
    from contextviewer.providers.models import SpendEntry

    project, _user, conv, _client = world
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "timeout", 0.2)
    connection.close()
    completion = Completion(text="A title", model="m", input_tokens=10, output_tokens=3, cost_usd=0.01)
    released = []

    def sleep(seconds):  # the import commits while the ledger waits
        if not released:
            released.append(seconds)
            holder.__exit__(None, None, None)

    holder = _write_lock_held()
    holder.__enter__()
    services._when_free(
        lambda: services.record_spend(project, completion, role="title", provider="openai", conversation=conv), sleep
    )
    assert released and SpendEntry.objects.filter(project=project, role="title").count() == 1


class _Paid:
    """A provider at the network edge that answers (or fails) at once, so that only the database
    can make a title job wait."""

    name, model = "openai", "m"

    def __init__(self, error: Exception | None = None, meanwhile=None):
        self.error, self.meanwhile = error, meanwhile

    def complete(self, **_):
        from contextviewer.providers.base import Completion

        if self.meanwhile is not None:
            self.meanwhile()
        if self.error is not None:
            raise self.error
        return Completion(text="A title", model="m", input_tokens=10, output_tokens=3, cost_usd=0.01)


@sqlite_only
@pytest.mark.parametrize("fails", [False, True], ids=["answered", "refused"])
def test_a_title_jobs_provider_call_waits_for_the_import(world, monkeypatch, fails):
    """The attempt's row is written before the provider is asked, and its error after: each waits
    for an import's write lock as the spend does, and the completion goes on (issue 40, item 4)."""
    from django.db import connection

    from contextviewer.providers import services
    from contextviewer.providers.base import ProviderError
    from contextviewer.providers.models import ProviderCall, SpendEntry

    project, _user, conv, _client = world
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "timeout", 0.2)
    connection.close()
    waits, held = [], []

    def lock():  # an import begins
        held.append(_write_lock_held())
        held[-1].__enter__()

    def sleep(seconds):  # the import commits while the attempt's row waits
        waits.append(seconds)
        if held:
            held.pop().__exit__(None, None, None)

    lock()
    # Refused: another import has begun while the provider was asked, so the error waits too.
    provider = _Paid(ProviderError("the key was refused"), meanwhile=lock) if fails else _Paid()
    ask = functools.partial(services.complete, provider, project=project, role="title", system="s", prompt="p",
                            conversation=conv, sleep=sleep)
    try:
        if fails:
            with pytest.raises(ProviderError, match="refused"):
                ask()
        else:
            assert ask().text == "A title"
    finally:
        while held:  # a failed check leaves no lock behind for the next test
            held.pop().__exit__(None, None, None)
    assert len(waits) == (2 if fails else 1), "a row was written without waiting for the lock"
    call = ProviderCall.objects.get(project=project, role="title")
    assert (call.ok, call.error) == ((False, "the key was refused") if fails else (True, ""))
    assert SpendEntry.objects.filter(project=project, role="title").count() == (0 if fails else 1)


# --- PostgreSQL restarting: the connection lost mid-request ------------------------------------

postgresql_only = pytest.mark.skipif(
    "postgresql" not in __import__("django.conf").conf.settings.DATABASES["default"]["ENGINE"],
    reason="terminates the server's backends (pg_terminate_backend), as a restart does",
)


@contextlib.contextmanager
def _backend_terminated_at_query(n: int):
    """The server ends this connection's backend (as a restart does) before its n-th query."""
    from django.db import connection, connections

    seen = []

    def killer(execute, sql, params, many, context):
        seen.append(sql)
        if len(seen) == n:
            other = connections.create_connection("default")
            try:
                with other.cursor() as cursor:
                    cursor.execute("SELECT pg_terminate_backend(%s)", [connection.connection.info.backend_pid])
            finally:
                other.close()
        return execute(sql, params, many, context)

    with connection.execute_wrapper(killer):
        yield seen


@postgresql_only
@pytest.mark.parametrize("n", [1, 3])
def test_a_lost_database_answers_503_with_retry_after_and_the_next_request_works(world, n):
    _project, _user, conv, client = world
    for url, api in ((f"/c/{conv.pk}/", False), (f"/api/conversations/{conv.pk}", True)):
        with _backend_terminated_at_query(n) as seen:
            lost = client.get(url)
        assert len(seen) >= n
        assert lost.status_code == 503, lost.content[:500]
        assert lost["Retry-After"] == "5"
        if api:
            assert "connection to the database was lost" in lost.json()["detail"]
        else:
            assert b"The database is not reachable" in lost.content and b"Try again" in lost.content
        assert client.get(url).status_code == 200


@pytest.mark.backend_independent
def test_an_error_outside_a_view_is_a_503_page_when_the_database_is_lost(rf):
    """handler500 (an error in a middleware, e.g. loading the session): the same 503."""
    from django.db import OperationalError

    from contextviewer.middleware import server_error

    try:
        raise OperationalError("server closed the connection unexpectedly")
    except OperationalError:
        page = server_error(rf.get("/"))
        api = server_error(rf.get("/api/projects"))
    assert page.status_code == 503 and page["Retry-After"] == "5" and b"not reachable" in page.content
    assert api.status_code == 503 and "lost" in json.loads(api.content)["detail"]
    try:
        raise ValueError("a bug")
    except ValueError:
        assert server_error(rf.get("/")).status_code == 500
