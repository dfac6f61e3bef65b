"""Issue 23: pages, turn fragments and static files are gzipped for a browser that accepts it, and
read the same once decompressed; a client that does not ask gets them plain."""

from __future__ import annotations

import gzip

import pytest
from django.urls import reverse

from tests.factories import build_conversation

# Cannot differ between SQLite and PostgreSQL (gzip of pages and static files by the middleware: the bytes, not the rows behind them): bin/test runs it on SQLite only.
pytestmark = [pytest.mark.django_db, pytest.mark.backend_independent]


def _both(client, url, **headers):
    plain = client.get(url, **headers)
    zipped = client.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate, br", **headers)
    assert plain.status_code == zipped.status_code == 200
    return plain, zipped


def test_pages_and_fragments_are_gzipped_when_the_browser_accepts_it(client, user, project):
    conv = build_conversation(project, turns=12, fold_at=10**9).conversation
    client.force_login(user)
    for url, headers in (
        (reverse("conversation", args=[conv.id]), {}),
        (reverse("turn", args=[conv.id, 3]), {"HTTP_HX_REQUEST": "true"}),
    ):
        plain, zipped = _both(client, url, **headers)
        assert "Content-Encoding" not in plain
        assert zipped["Content-Encoding"] == "gzip"
        body = gzip.decompress(zipped.content)
        assert len(zipped.content) < len(body) / 2, (url, len(zipped.content), len(body))
        # the same page (the CSRF token is masked differently on each response)
        assert body.count(b'class="turn') == plain.content.count(b'class="turn')
        assert len(body) == pytest.approx(len(plain.content), abs=200)


def test_static_files_are_gzipped(client):
    from django.templatetags.static import static

    url = static("contextviewer/app.css")
    plain = client.get(url)
    if plain.status_code == 404:
        pytest.fail(f"{url} is not served: name the project's stylesheet here")
    zipped = client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert zipped["Content-Encoding"] == "gzip"
    body = gzip.decompress(b"".join(zipped.streaming_content) if zipped.streaming else zipped.content)
    assert body == (b"".join(plain.streaming_content) if plain.streaming else plain.content)
