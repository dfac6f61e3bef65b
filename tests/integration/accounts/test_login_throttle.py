"""Login throttling (issue 10, item 9): after 10 wrong passwords for a user name, or 30 from one
client address, within 15 minutes, sign-in is refused with a clear message for the rest of the
window, even with the right password; API tokens and existing sessions are not affected.

Each test runs on a cache of its own, so the counts never leak into other tests."""

from __future__ import annotations

import pytest
from django.test import Client

from contextviewer.accounts import services as account_services

pytestmark = pytest.mark.django_db
RIGHT = "pw-alice-123"
REFUSAL = "Too many failed sign-ins"


@pytest.fixture(autouse=True)
def own_cache(settings, request):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": request.node.name}}
    settings.LOGIN_FAILURE_LIMIT = 10
    settings.LOGIN_IP_FAILURE_LIMIT = 30
    settings.LOGIN_LOCKOUT_SECONDS = 900
    # A fast hasher (set before the user is made): hundreds of sign-ins, not a password-hashing benchmark.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _login(client, username, password, ip="203.0.113.5", **extra):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=ip, **extra)


def _signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_thirty_wrong_passwords_then_the_right_one_is_refused(user):
    client = Client()
    for i in range(30):
        response = _login(client, "alice", f"wrong-{i}")
        assert response.status_code in (200, 429) and not _signed_in(client)
    response = _login(client, "alice", RIGHT)
    assert not _signed_in(client)
    assert response.status_code == 429
    page = response.content.decode()
    assert REFUSAL in page and "15 minutes" in page and "even with the right password" in page


def test_the_eleventh_attempt_is_refused_and_the_tenth_is_still_checked(user):
    client = Client()
    for i in range(9):
        assert REFUSAL not in _login(client, "alice", f"wrong-{i}").content.decode()
    # The tenth wrong password is still an ordinary failure, and it locks the account.
    tenth = _login(client, "alice", "wrong-9")
    assert tenth.status_code == 429 and REFUSAL in tenth.content.decode()
    assert _login(client, "alice", RIGHT).status_code == 429 and not _signed_in(client)


def test_fewer_failures_than_the_limit_do_not_lock_and_a_success_resets_the_count(user):
    client = Client()
    for i in range(9):
        _login(client, "alice", f"wrong-{i}")
    response = _login(client, "alice", RIGHT)
    assert response.status_code == 302 and _signed_in(client)
    client.logout()
    for i in range(9):  # the count started again after the success
        _login(client, "alice", f"again-{i}")
    assert _login(client, "alice", RIGHT).status_code == 302 and _signed_in(client)


def test_the_lock_is_per_user_name_whatever_the_address_and_the_case(user):
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("bob", password="pw-bob-12345")
    client = Client()
    for i in range(10):
        _login(client, "ALICE" if i % 2 else "alice", f"wrong-{i}", ip=f"198.51.100.{i + 1}")
    assert _login(client, "alice", RIGHT, ip="192.0.2.77").status_code == 429
    # Another user signs in from the same addresses.
    assert _login(client, "bob", "pw-bob-12345", ip="198.51.100.1").status_code == 302


def test_one_address_spraying_many_user_names_is_locked_out(user):
    client = Client()
    for i in range(30):
        _login(client, f"nobody{i}", "guess", ip="203.0.113.9")
    refused = _login(client, "alice", RIGHT, ip="203.0.113.9")
    assert refused.status_code == 429 and REFUSAL in refused.content.decode() and not _signed_in(client)
    # The same user from another address is fine.
    assert _login(Client(), "alice", RIGHT, ip="203.0.113.10").status_code == 302


def test_a_forged_forwarded_for_header_does_not_change_the_address_without_a_trusted_proxy(user, settings):
    settings.TRUSTED_PROXY = False
    client = Client()
    for i in range(30):
        _login(client, f"nobody{i}", "guess", ip="203.0.113.9", HTTP_X_FORWARDED_FOR=f"10.9.8.{i}")
    assert _login(client, "alice", RIGHT, ip="203.0.113.9", HTTP_X_FORWARDED_FOR="10.0.0.99").status_code == 429


def test_behind_a_trusted_proxy_the_forwarded_address_counts(user, settings):
    settings.TRUSTED_PROXY = True
    client = Client()
    for i in range(30):
        _login(client, f"nobody{i}", "guess", ip="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.50")
    # The proxy's own address is shared by every client: another client behind it is not locked out.
    assert _login(client, "alice", RIGHT, ip="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.51").status_code == 302
    assert _login(Client(), "alice", RIGHT, ip="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.50").status_code == 429


def test_the_admin_login_is_throttled_too(user):
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(pk=user.pk).update(is_staff=True, is_superuser=True)
    client = Client()
    for i in range(12):
        client.post("/admin/login/", {"username": "alice", "password": f"wrong-{i}"}, REMOTE_ADDR="203.0.113.5")
    response = client.post("/admin/login/?next=/admin/", {"username": "alice", "password": RIGHT}, REMOTE_ADDR="203.0.113.5")
    assert not _signed_in(client)
    assert REFUSAL in response.content.decode()


def test_api_tokens_and_open_sessions_are_not_affected(user, project):
    session = Client()
    assert _login(session, "alice", RIGHT).status_code == 302  # signed in before the attack
    _token, secret = account_services.create_token(user, project, "cli")
    attacker = Client()
    for i in range(30):
        _login(attacker, "alice", f"wrong-{i}", ip="198.51.100.66")
    assert _login(attacker, "alice", RIGHT, ip="198.51.100.66").status_code == 429
    api = Client()
    response = api.get(f"/api/projects/{project.slug}/providers", headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 200
    assert session.get("/").status_code == 200 and _signed_in(session)


def test_the_limits_can_be_turned_off(user, settings):
    settings.LOGIN_FAILURE_LIMIT = 0
    settings.LOGIN_IP_FAILURE_LIMIT = 0
    client = Client()
    for i in range(30):
        _login(client, "alice", f"wrong-{i}")
    assert _login(client, "alice", RIGHT).status_code == 302
