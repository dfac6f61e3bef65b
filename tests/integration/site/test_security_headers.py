"""Behind TLS (issue 10, item 9): secure cookies, HSTS and a trusted proxy come from the
environment, with defaults that keep the local HTTP embedded mode working; and every response to a
signed-in user or an API token says `Cache-Control: private, no-store` (static files and the login
page excepted)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from contextviewer.accounts import services as account_services
from tests.factories import PNG_1PX, build_conversation

# Cannot differ between SQLite and PostgreSQL (the headers every response carries: set by middleware and settings): bin/test runs it on SQLite only.
pytestmark = pytest.mark.backend_independent

ROOT = Path(__file__).resolve().parents[3]
NO_STORE = "private, no-store"
CHECKED = [
    "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD", "SECURE_PROXY_SSL_HEADER", "USE_X_FORWARDED_HOST", "CSRF_TRUSTED_ORIGINS",
    "SECURE_SSL_REDIRECT", "LOGIN_FAILURE_LIMIT", "LOGIN_IP_FAILURE_LIMIT", "LOGIN_LOCKOUT_SECONDS",
]


def _diffsettings(tmp_path, **env_vars) -> dict:
    """The settings `manage.py diffsettings --all` prints in a fresh process with this environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTVIEWER_")}
    env.update(CONTEXTVIEWER_DATA_DIR=str(tmp_path / "data"), CONTEXTVIEWER_SECRET_KEY="x" * 50, DATABASE_URL="")
    env.update(env_vars)
    out = subprocess.run(
        [sys.executable, "manage.py", "diffsettings", "--all"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120, check=True,
    ).stdout
    values = {}
    for line in out.splitlines():
        line = line.removeprefix("### ").removesuffix("  ###")
        name, sep, value = line.partition(" = ")
        if sep and name in CHECKED:
            values[name] = ast.literal_eval(value)
    assert set(values) == set(CHECKED), set(CHECKED) - set(values)
    return values


def test_the_defaults_keep_plain_http_working(tmp_path):
    s = _diffsettings(tmp_path)
    assert s["SESSION_COOKIE_SECURE"] is False and s["CSRF_COOKIE_SECURE"] is False
    assert s["SECURE_HSTS_SECONDS"] == 0 and s["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is False
    assert s["SECURE_PROXY_SSL_HEADER"] is None and s["USE_X_FORWARDED_HOST"] is False
    assert s["SECURE_SSL_REDIRECT"] is False and s["CSRF_TRUSTED_ORIGINS"] == []
    assert (s["LOGIN_FAILURE_LIMIT"], s["LOGIN_IP_FAILURE_LIMIT"], s["LOGIN_LOCKOUT_SECONDS"]) == (10, 30, 900)


def test_behind_tls_and_a_proxy_everything_comes_from_the_environment(tmp_path):
    s = _diffsettings(
        tmp_path,
        CONTEXTVIEWER_SECURE_COOKIES="1",
        CONTEXTVIEWER_HSTS_SECONDS="31536000",
        CONTEXTVIEWER_TRUSTED_PROXY="true",
        CONTEXTVIEWER_CSRF_TRUSTED_ORIGINS="https://cv.example.com,https://cv2.example.com",
        CONTEXTVIEWER_SSL_REDIRECT="yes",
        CONTEXTVIEWER_LOGIN_FAILURES="5",
        CONTEXTVIEWER_LOGIN_IP_FAILURES="100",
        CONTEXTVIEWER_LOGIN_LOCKOUT_SECONDS="3600",
    )
    assert s["SESSION_COOKIE_SECURE"] is True and s["CSRF_COOKIE_SECURE"] is True
    assert s["SECURE_HSTS_SECONDS"] == 31536000 and s["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True
    assert s["SECURE_HSTS_PRELOAD"] is False
    assert s["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https") and s["USE_X_FORWARDED_HOST"] is True
    assert s["CSRF_TRUSTED_ORIGINS"] == ["https://cv.example.com", "https://cv2.example.com"]
    assert s["SECURE_SSL_REDIRECT"] is True
    assert (s["LOGIN_FAILURE_LIMIT"], s["LOGIN_IP_FAILURE_LIMIT"], s["LOGIN_LOCKOUT_SECONDS"]) == (5, 100, 3600)


def test_subdomains_and_preload_can_be_chosen(tmp_path):
    s = _diffsettings(
        tmp_path, CONTEXTVIEWER_HSTS_SECONDS="600", CONTEXTVIEWER_HSTS_INCLUDE_SUBDOMAINS="0", CONTEXTVIEWER_HSTS_PRELOAD="1"
    )
    assert (s["SECURE_HSTS_SECONDS"], s["SECURE_HSTS_INCLUDE_SUBDOMAINS"], s["SECURE_HSTS_PRELOAD"]) == (600, False, True)


@pytest.mark.django_db
def test_behind_a_trusted_proxy_the_request_is_https_and_gets_hsts(settings, user):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SESSION_COOKIE_SECURE = True
    client = Client()
    response = client.post(
        "/login/", {"username": "alice", "password": "pw-alice-123"}, HTTP_X_FORWARDED_PROTO="https"
    )
    assert response.status_code == 302
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    assert response.cookies["sessionid"]["secure"] is True
    # Plain HTTP straight to the server (no proxy header): no HSTS, as the standard requires.
    assert "Strict-Transport-Security" not in Client().get("/login/")


@pytest.mark.django_db
def test_every_authenticated_page_and_api_answer_is_private_no_store(project, user):
    built = build_conversation(project, turns=3, image_turn=3)
    conv = built.conversation
    client = Client()
    client.force_login(user)
    urls = [
        "/",
        f"/c/{conv.pk}/",
        f"/projects/{project.slug}/providers/",
        f"/projects/{project.slug}/members/",
        f"/projects/{project.slug}/tokens/",
        f"/projects/{project.slug}/audit/",
        reverse("image", args=[conv.pk, built.image_message.pk, 0]),  # was "private, max-age=3600"
        f"/api/conversations/{conv.pk}/export?format=markdown",
        f"/api/projects/{project.slug}/providers",
        f"/api/conversations/{conv.pk}/spend",
        f"/api/projects/{project.slug}/spend",
        "/api/jobs/999999",  # a 404 to a signed-in user is private too
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code in (200, 404), (url, response.status_code)
        assert response["Cache-Control"] == NO_STORE, url
    assert client.get(urls[6]).content == PNG_1PX
    # A token, not a session.
    _token, secret = account_services.create_token(user, project, "cli")
    response = Client().get(f"/api/projects/{project.slug}/providers", headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 200 and response["Cache-Control"] == NO_STORE
    # A write through the API.
    response = client.put(
        f"/api/projects/{project.slug}/providers/openai", {"model": "gpt-4o-mini"}, content_type="application/json"
    )
    assert response.status_code == 200 and response["Cache-Control"] == NO_STORE


@pytest.mark.django_db
def test_the_login_page_static_files_and_anonymous_answers_are_left_alone(user):
    # The login page keeps Django's own never-cache header; static files stay cacheable.
    anonymous = Client()
    assert anonymous.get("/login/")["Cache-Control"] == "max-age=0, no-cache, no-store, must-revalidate, private"
    assert "Cache-Control" not in anonymous.get("/api/projects/x/providers")
    signed_in = Client()
    signed_in.force_login(user)
    assert signed_in.get("/login/")["Cache-Control"] != NO_STORE
    for client in (anonymous, signed_in):
        static = client.get("/static/contextviewer/accounts.css")
        assert static.status_code == 200
        assert "no-store" not in static.get("Cache-Control", "")
