"""The Handoff card and the "Fold at X %" preview on the conversation page."""

from __future__ import annotations

import re

import pytest

from contextviewer.accounts.models import Role
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation, ModelCall
from contextviewer.jobs.models import Job
from tests.factories import make_user
from tests.sessions import session_lines, write_lines

pytestmark = pytest.mark.django_db


@pytest.fixture
def conv(project, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(6))
    ingest.import_file(project, path)
    return Conversation.objects.get()


def test_handoff_from_the_page_with_htmx_then_the_fold_is_shown(client, user, conv):
    client.force_login(user)
    page = client.get(f"/c/{conv.pk}/").content.decode()
    assert 'id="handoff-button"' in page and 'data-key="h"' in page
    assert "Window at the latest model call" in page and "Window now" not in page
    response = client.post(f"/c/{conv.pk}/handoff/", {"provider": "builtin"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    job = Job.objects.get(kind="handoff")
    assert f'hx-get="/c/{conv.pk}/handoff/{job.pk}/"' in html and 'hx-trigger="every 1s"' in html  # polls itself
    assert "Queued" in html
    jobs.run(job.pk)
    done = client.get(f"/c/{conv.pk}/handoff/{job.pk}/", HTTP_HX_REQUEST="true")
    assert done.status_code == 204 and done["HX-Redirect"].startswith(f"/c/{conv.pk}/?folded=")
    page = client.get(done["HX-Redirect"]).content.decode()
    assert "Latest summary" in page and "handoff (builtin)" in page and "State and what is done" in page
    # The gauge is no longer what the latest call saw: that window was folded after it.
    assert "Window now" in page and "folded since the latest model call" in page
    assert "Window at the latest model call" not in page
    # Its before and after say where they come from: the summary's size is an o200k count.
    assert "after: the summary, counted with o200k (an estimate)" in page
    # Every turn is archived behind the new fold; its summary heads the loaded segment at the end.
    assert page.count('class="segment archived"') == 1
    assert page.index('class="segment loaded"') > page.index('class="segment archived"')
    assert page.index("handoff (builtin)", page.index('class="segment loaded"')) > 0
    # Without JavaScript: the status page refreshes itself and links to the new fold when done.
    status_page = client.get(f"/c/{conv.pk}/handoff/{job.pk}/").content.decode()
    fold_id = Job.objects.get(pk=job.pk).result["fold_id"]
    assert "Succeeded" in status_page and f"?folded={fold_id}" in status_page
    response = client.post(f"/c/{conv.pk}/handoff/", {"provider": "builtin"})
    assert response.status_code == 302  # nothing new to fold: back to the page with the reason
    page = client.get(response["Location"]).content.decode()
    assert "no message after the latest fold" in page


def test_viewers_see_no_handoff_button_and_may_not_post(client, project, conv):
    viewer = make_user("vic", project=project, role=Role.VIEWER)
    client.force_login(viewer)
    page = client.get(f"/c/{conv.pk}/").content.decode()
    assert 'id="handoff-button"' not in page and "may view this conversation but not fold it" in page
    assert client.post(f"/c/{conv.pk}/handoff/", {}).status_code == 403
    assert not Job.objects.filter(kind="handoff").exists()
    outsider = make_user("eve")
    client.force_login(outsider)
    assert client.post(f"/c/{conv.pk}/handoff/", {}).status_code == 404


def test_fold_preview_shows_where_a_fold_would_fire(client, user, conv):
    client.force_login(user)
    calls = list(ModelCall.objects.filter(conversation=conv).order_by("position"))
    peak = max(c.context_size for c in calls)
    window = 200_000
    at = int(100 * (peak - 100) / window)  # just below the peak: fires once, near the end
    html = client.get(f"/c/{conv.pk}/fold-preview/", {"at": at}, HTTP_HX_REQUEST="true").content.decode()
    fired = [c for c in calls if c.context_size >= at / 100 * window]
    rows = re.findall(r'<tr data-position="(\d+)">', html)
    assert rows == [str(fired[0].position)]
    assert "1</strong> fold at" in html and "turns 0–" in html
    html = client.get(f"/c/{conv.pk}/fold-preview/", {"at": "95"}, HTTP_HX_REQUEST="true").content.decode()
    assert "never reached 95 %" in html
    bad = client.get(f"/c/{conv.pk}/fold-preview/", {"at": "abc"})
    assert bad.status_code == 400 and "between 10 and 99" in bad.content.decode()
    page = client.get(f"/c/{conv.pk}/").content.decode()
    assert 'id="fold-preview"' in page


def test_the_api_starts_a_handoff_once_per_idempotency_key(client, user, conv):
    client.force_login(user)
    url = f"/api/conversations/{conv.pk}/handoff"
    first = client.post(url, {"idempotency_key": "abc"}, content_type="application/json")
    again = client.post(url, {"idempotency_key": "abc"}, content_type="application/json")
    assert first.status_code == again.status_code == 202
    assert first.json()["id"] == again.json()["id"] and first.json()["kind"] == "handoff"
    jobs.run(first.json()["id"])
    polled = client.get(first.json()["poll"]).json()
    assert polled["status"] == "succeeded"
    assert polled["result"]["conversation_id"] == conv.pk and "## Next steps" in polled["result"]["summary"]
    assert conv.folds.filter(origin="generated").count() == 1
    missing = client.post("/api/conversations/999999/handoff", {}, content_type="application/json")
    assert missing.status_code == 404


def test_the_api_body_is_optional_and_a_bad_one_is_explained(client, user, conv):
    client.force_login(user)
    url = f"/api/conversations/{conv.pk}/handoff"
    assert client.post(url).status_code == 202  # no body: the project's provider
    bad = client.post(url, "not json", content_type="application/json")
    assert bad.status_code == 400 and "JSON object" in bad.json()["detail"]
    wrong = client.post(url, {"provider": 7}, content_type="application/json")
    assert wrong.status_code == 400 and "JSON object" in wrong.json()["detail"]
