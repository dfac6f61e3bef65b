"""An idempotency key longer than the limit is refused with a 400 that states the limit, before any
job (or stored upload) exists, on every endpoint and form that takes one (issue 10, item 7).

On PostgreSQL a key past the 255-character column used to end in a 500; SQLite does not enforce
the column length, so there the long key was silently accepted (or, for handoffs, cut short and
then confused with another key sharing its first 255 characters)."""

from __future__ import annotations

import io

import pytest

from contextviewer.jobs.idempotency import MAX_IDEMPOTENCY_KEY
from contextviewer.jobs.models import Job
from tests.factories import build_conversation
from tests.sessions import session_lines

pytestmark = pytest.mark.django_db
TOO_LONG = "k" * 256  # one past the column, and well past the limit
LIMIT_SAYS = f"{MAX_IDEMPOTENCY_KEY} characters"


def _session_file(name: str = "s.jsonl") -> io.BytesIO:
    import json

    fh = io.BytesIO("".join(json.dumps(line) + "\n" for line in session_lines(2)).encode())
    fh.name = name
    return fh


@pytest.fixture
def conv(project):
    return build_conversation(project, turns=2).conversation


def test_the_limit_leaves_room_for_the_prefixes_within_the_column():
    # Keys are stored as "<kind>:<ids>:<client key>" in a 255-character column.
    assert 64 <= MAX_IDEMPOTENCY_KEY <= 200


def test_api_import_refuses_a_long_key_and_stores_nothing(project, user, client, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    client.force_login(user)
    response = client.post("/api/imports", {"files": [_session_file()], "idempotency_key": TOO_LONG})
    assert response.status_code == 400
    assert LIMIT_SAYS in response.json()["detail"] and "256" in response.json()["detail"]
    assert Job.objects.count() == 0
    assert not any(p.is_file() for p in (tmp_path / "media").rglob("*"))  # the upload was not kept
    # At the limit it is accepted, and the same key finds the same job.
    key = "a" * MAX_IDEMPOTENCY_KEY
    first = client.post("/api/imports", {"files": [_session_file()], "idempotency_key": key})
    again = client.post("/api/imports", {"files": [_session_file()], "idempotency_key": key})
    assert first.status_code == again.status_code == 202
    assert first.json()["id"] == again.json()["id"] and Job.objects.count() == 1


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "form"])
def test_api_handoff_refuses_a_long_key(as_json, project, user, client, conv):
    client.force_login(user)
    url = f"/api/conversations/{conv.pk}/handoff"
    body = {"provider": "builtin", "idempotency_key": TOO_LONG}
    response = client.post(url, body, content_type="application/json") if as_json else client.post(url, body)
    assert response.status_code == 400
    assert LIMIT_SAYS in response.json()["detail"]
    assert Job.objects.count() == 0
    # Two keys sharing their first 255 characters are two requests, not one.
    key = "b" * MAX_IDEMPOTENCY_KEY
    ok = client.post(url, {"provider": "builtin", "idempotency_key": key}, content_type="application/json")
    assert ok.status_code == 202 and Job.objects.count() == 1


def test_api_build_refuses_a_long_key(project, user, client, conv):
    client.force_login(user)
    response = client.post(
        f"/api/conversations/{conv.pk}/builds", {"turns": [1], "idempotency_key": TOO_LONG}, content_type="application/json"
    )
    assert response.status_code == 400
    assert LIMIT_SAYS in response.json()["detail"]
    assert Job.objects.count() == 0
    ok = client.post(
        f"/api/conversations/{conv.pk}/builds", {"turns": [1], "idempotency_key": "c" * MAX_IDEMPOTENCY_KEY},
        content_type="application/json",
    )
    assert ok.status_code == 202 and Job.objects.count() == 1


def test_build_form_refuses_a_long_key(project, user, client, conv):
    client.force_login(user)
    response = client.post(f"/c/{conv.pk}/build/create/", {"turns": ["1"], "idempotency_key": TOO_LONG})
    assert response.status_code == 400
    assert LIMIT_SAYS in response.content.decode()
    assert Job.objects.count() == 0
    ok = client.post(f"/c/{conv.pk}/build/create/", {"turns": ["1"], "idempotency_key": "d" * MAX_IDEMPOTENCY_KEY})
    assert ok.status_code == 302 and Job.objects.count() == 1


def test_a_key_past_the_column_never_reaches_the_database(project):
    # Any other caller of create_job: a clear error, not a backend-dependent one.
    from contextviewer.jobs import queue as jobs
    from contextviewer.jobs.idempotency import IdempotencyKeyTooLong

    with pytest.raises(IdempotencyKeyTooLong, match="255"):
        jobs.create_job(project, "import", {}, idempotency_key="x" * 256, enqueue=False)
    assert Job.objects.count() == 0
