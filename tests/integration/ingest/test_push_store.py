"""push.py with the worker on "another machine": the web server keeps what a push client sends in
the shared upload store (CONTEXTVIEWER_UPLOAD_STORE=database here), and a worker with a data folder
of its own (an empty MEDIA_ROOT) fetches it before importing it. A file that grew is imported where
it stopped: one conversation, every line once, the worker's copy completed by the appended bytes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from contextviewer.accounts.models import PushClient
from contextviewer.conversations.models import Conversation, Source, StoredUpload
from tests.integration.ingest.test_push import _held, _push, _session, _token, _wait_imported
from tests.worker import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

# The worker's own data folder: it shares nothing with the web server but the database and the broker.
WORKER_DATA = Path(tempfile.mkdtemp(prefix="cv-push-worker-"))
WORKER_ENV = {"CONTEXTVIEWER_UPLOAD_STORE": "database", "CONTEXTVIEWER_DATA_DIR": str(WORKER_DATA),
              "CONTEXTVIEWER_BROKER_DIR": str(django_settings.BROKER_DIR)}


def test_a_pushed_file_is_read_by_a_worker_that_shares_no_disk_and_goes_on_where_it_stopped(
        live_server, worker, project, user, tmp_path, settings):
    settings.UPLOAD_STORE = "database"
    assert not Path(settings.MEDIA_ROOT).resolve().is_relative_to(WORKER_DATA.resolve())
    folder = tmp_path / "sessions"
    path, builder = _session(folder, "fafafafa-9999-4999-8999-000000000001", turns=3)
    token = _token(user, project)
    state = tmp_path / "state.json"
    assert _push(live_server.url, token, [folder], state) == 0
    _wait_imported(project, worker, count=1)
    [key] = StoredUpload.objects.values_list("key", flat=True)
    assert key.startswith(f"uploads/push/{project.pk}/") and key.endswith(path.name)
    fetched = WORKER_DATA / "media" / key
    assert fetched.read_bytes() == path.read_bytes()  # the worker's own copy, from the store
    conv = Conversation.objects.get(project=project)
    first = conv.message_count

    more = [line for i in range(3, 5) for line in builder.turn(i)]
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(more) + "\n")
    assert _push(live_server.url, token, [folder], state) == 0
    wait_for(lambda: Conversation.objects.get(pk=conv.pk).message_count == first + len(more), timeout=120,
             message="the appended lines imported by the worker")
    _wait_imported(project, worker)
    assert Conversation.objects.filter(project=project).count() == 1
    assert fetched.read_bytes() == path.read_bytes()
    assert list(_held(project).values()) == [path.read_bytes()]
    assert list(Source.objects.filter(project=project).values_list("path", flat=True)) == [f"stored:{key}"]
    wait_for(lambda: PushClient.objects.get(project=project).sessions_received == 1, timeout=30, message="the sessions counted")
    assert os.path.getsize(fetched) == path.stat().st_size
