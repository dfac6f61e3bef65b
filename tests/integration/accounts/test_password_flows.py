"""One's own password (issue 21): every signed-in user can change it; anyone can ask for a reset
link by email, which works once and sets a new password. The reset page says the same thing for
an address no account has (and sends nothing), and requests are throttled like sign-in.

Each test runs on a cache of its own, so the counts never leak into other tests."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

pytestmark = pytest.mark.django_db
OLD = "pw-carol-old-123"
NEW = "pw-carol-new-456"
EMAIL = "carol@example.com"


@pytest.fixture(autouse=True)
def own_cache(settings, request):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": request.node.name}}
    settings.PASSWORD_RESET_LIMIT = 5
    settings.PASSWORD_RESET_WINDOW_SECONDS = 3600
    settings.LOGIN_FAILURE_LIMIT = 10
    settings.LOGIN_IP_FAILURE_LIMIT = 30
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def carol(db):
    # Not staff, member of no project: the pages are for every account.
    return get_user_model().objects.create_user("carol", email=EMAIL, password=OLD)


def _can_log_in(password: str) -> bool:
    client = Client()
    response = client.post("/login/", {"username": "carol", "password": password})
    return response.status_code == 302 and "_auth_user_id" in client.session


def _link(message) -> str:
    [url] = re.findall(r"https?://testserver(/password/reset/\S+/)", message.body)
    return url


def _without_csrf(response) -> str:
    return re.sub(r'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]*', r"\1", response.content.decode())


def test_the_login_page_links_to_the_reset_and_the_header_to_the_change(carol):
    assert 'href="/password/reset/"' in Client().get("/login/").content.decode()
    client = Client()
    client.force_login(carol)
    assert 'href="/password/change/"' in client.get("/projects/").content.decode()


def test_a_user_changes_their_password_and_logs_in_with_the_new_one_only(carol):
    client = Client()
    client.force_login(carol)
    page = client.get("/password/change/")
    assert page.status_code == 200 and "Change your password" in page.content.decode()
    wrong = client.post("/password/change/", {"old_password": "not-it", "new_password1": NEW, "new_password2": NEW})
    assert wrong.status_code == 200 and "incorrectly" in wrong.content.decode()
    response = client.post("/password/change/", {"old_password": OLD, "new_password1": NEW, "new_password2": NEW})
    assert response.status_code == 302 and response["Location"] == "/password/change/done/"
    assert client.get("/password/change/done/").status_code == 200
    assert client.get("/projects/").status_code == 200  # this session stays signed in
    assert _can_log_in(NEW)
    assert not _can_log_in(OLD)


def test_wrong_old_passwords_count_as_failed_sign_ins(carol, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    client = Client()
    client.force_login(carol)
    for i in range(3):
        client.post("/password/change/", {"old_password": f"guess-{i}", "new_password1": NEW, "new_password2": NEW})
    refused = client.post("/password/change/", {"old_password": OLD, "new_password1": NEW, "new_password2": NEW})
    assert refused.status_code == 429 and "Too many failed sign-ins" in refused.content.decode()
    carol.refresh_from_db()
    assert carol.check_password(OLD)


def test_changing_the_password_needs_a_signed_in_user():
    for url in ("/password/change/", "/password/change/done/"):
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url
    response = Client().post("/password/change/", {"old_password": OLD, "new_password1": NEW, "new_password2": NEW})
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_a_reset_request_sends_one_email_whose_link_sets_a_new_password(carol):
    client = Client()
    assert client.get("/password/reset/").status_code == 200
    response = client.post("/password/reset/", {"email": EMAIL})
    assert response.status_code == 302 and response["Location"] == "/password/reset/sent/"
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == [EMAIL] and "reset your password" in message.subject
    link = _link(message)

    page = client.get(link, follow=True)  # Django moves the token out of the address into the session
    assert page.status_code == 200 and "Set a new password" in page.content.decode()
    set_url = page.redirect_chain[-1][0]
    done = client.post(set_url, {"new_password1": NEW, "new_password2": NEW})
    assert done.status_code == 302 and done["Location"] == "/password/reset/done/"
    assert _can_log_in(NEW) and not _can_log_in(OLD)
    # The link works once.
    again = Client().get(link, follow=True)
    assert "This link does not work" in again.content.decode()


def test_an_unknown_address_gets_the_same_page_and_no_email(carol):
    known = Client().post("/password/reset/", {"email": EMAIL}, follow=True)
    mail.outbox.clear()
    unknown = Client().post("/password/reset/", {"email": "nobody@example.com"}, follow=True)
    assert unknown.status_code == known.status_code == 200
    assert unknown.redirect_chain == known.redirect_chain
    assert _without_csrf(unknown) == _without_csrf(known)
    assert mail.outbox == []


def test_reset_requests_are_throttled_per_address_and_per_client(carol):
    client = Client()
    for _ in range(5):
        assert client.post("/password/reset/", {"email": EMAIL}, REMOTE_ADDR="203.0.113.5").status_code == 302
    assert len(mail.outbox) == 5
    refused = client.post("/password/reset/", {"email": EMAIL}, REMOTE_ADDR="198.51.100.9")  # another address
    assert refused.status_code == 429 and "Too many password reset requests" in refused.content.decode()
    assert len(mail.outbox) == 5
    # One client asking about many addresses is stopped too, known or not.
    for i in range(5):
        assert client.post("/password/reset/", {"email": f"x{i}@example.com"}, REMOTE_ADDR="192.0.2.7").status_code == 302
    assert client.post("/password/reset/", {"email": "y@example.com"}, REMOTE_ADDR="192.0.2.7").status_code == 429
    # An unknown address is refused the same way as a known one (the limit reveals no account).
    for _ in range(5):
        client.post("/password/reset/", {"email": "ghost@example.com"}, REMOTE_ADDR=f"198.51.100.{_ + 20}")
    assert client.post("/password/reset/", {"email": "ghost@example.com"}, REMOTE_ADDR="198.51.100.99").status_code == 429
