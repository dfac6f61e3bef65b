"""Login throttling holds under parallel guesses (issue 40, item 7): 40 wrong passwords sent at once
to the running server get at most 10 of them checked (the limit per user name), and at most 30 for
one address (any user names); the rest are refused with the reason, and the right password after
them too. The count is taken atomically: the embedded setup's file cache under a file lock, Redis
(the team setup's cache, the PostgreSQL run of the suite) under a Redis lock.

Real HTTP requests from threads against live_server (a threaded server), on the cache the backend
is configured with (each test on keys of its own). The password check is made slow (0.2 s, as a real
hash is) and counted: a check is a guess let through."""

from __future__ import annotations

import re
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.contrib.auth.hashers import MD5PasswordHasher

pytestmark = pytest.mark.django_db(transaction=True)
PARALLEL = 40
RIGHT = "pw-alice-123"
REFUSAL = "Too many failed sign-ins"
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture(autouse=True)
def own_counts(settings, tmp_path):
    """The configured cache (a file cache, or Redis), on keys no other test counts with."""
    default = dict(settings.CACHES["default"])
    if default["BACKEND"].endswith("FileBasedCache"):
        default["LOCATION"] = str(tmp_path / "cache")
    default["KEY_PREFIX"] = f"parallel-{uuid.uuid4().hex}"
    settings.CACHES = {**settings.CACHES, "default": default}
    settings.LOGIN_FAILURE_LIMIT = 10
    settings.LOGIN_IP_FAILURE_LIMIT = 30
    settings.LOGIN_LOCKOUT_SECONDS = 900


@pytest.fixture
def checks(monkeypatch):
    """The password checks made (each one slow, as a real hash is)."""
    made = []
    lock = threading.Lock()
    verify = MD5PasswordHasher.verify

    def slow_verify(self, password, encoded):
        with lock:
            made.append(password)
        threading.Event().wait(0.2)
        return verify(self, password, encoded)

    monkeypatch.setattr(MD5PasswordHasher, "verify", slow_verify)
    return made


@pytest.fixture
def users(transactional_db):
    from django.contrib.auth import get_user_model

    model = get_user_model()
    model.objects.create_user("alice", password=RIGHT)
    for i in range(PARALLEL):
        model.objects.create_user(f"user{i}", password=f"pw-user{i}-123")


def guess_all(url: str, attempts: list[tuple[str, str]]) -> list[requests.Response]:
    """Each (user name, password) from its own client, the POSTs released together."""
    start = threading.Barrier(len(attempts))

    def one(attempt):
        session = requests.Session()
        page = session.get(f"{url}/login/", timeout=60)
        token = CSRF.search(page.text).group(1)
        start.wait(timeout=60)
        return session.post(
            f"{url}/login/", data={"username": attempt[0], "password": attempt[1], "csrfmiddlewaretoken": token},
            allow_redirects=False, timeout=120,
        )

    with ThreadPoolExecutor(len(attempts)) as pool:
        return list(pool.map(one, attempts))


def test_forty_parallel_guesses_for_one_user_get_ten_checked(live_server, users, checks):
    responses = guess_all(live_server.url, [("alice", f"wrong-{i}") for i in range(PARALLEL)])
    assert len(checks) <= 10, f"{len(checks)} of {PARALLEL} parallel guesses had their password checked"
    assert len(checks) == 10  # the limit, all of it: no guess refused for a count that never was
    assert all(r.status_code in (200, 429) for r in responses)
    refused = [r for r in responses if r.status_code == 429]
    assert len(refused) >= PARALLEL - 10 and all(REFUSAL in r.text for r in refused)
    # The right password after them: refused, not checked.
    after = guess_all(live_server.url, [("alice", RIGHT)])[0]
    assert after.status_code == 429 and REFUSAL in after.text and len(checks) == 10


def test_forty_parallel_guesses_from_one_address_get_thirty_checked(live_server, users, checks):
    responses = guess_all(live_server.url, [(f"user{i}", "wrong") for i in range(PARALLEL)])
    assert len(checks) == 30, f"{len(checks)} of {PARALLEL} parallel guesses from one address were checked (limit 30)"
    assert sum(r.status_code == 429 for r in responses) >= PARALLEL - 30
    # From that address, even a right password for a user not guessed at is refused now.
    after = guess_all(live_server.url, [("alice", RIGHT)])[0]
    assert after.status_code == 429 and REFUSAL in after.text


def test_a_right_password_among_parallel_guesses_signs_in_and_frees_its_place(live_server, users, checks):
    """Nine wrong guesses and the right password at once: all ten are checked, the right one signs
    in, and the count starts again (the nine wrong ones do not lock the account)."""
    attempts = [("alice", f"wrong-{i}") for i in range(9)] + [("alice", RIGHT)]
    responses = guess_all(live_server.url, attempts)
    assert len(checks) == 10
    assert responses[-1].status_code == 302
    assert all(r.status_code == 200 and REFUSAL not in r.text for r in responses[:-1])
    again = guess_all(live_server.url, [("alice", RIGHT)])[0]
    assert again.status_code == 302
