"""Login throttling on Django's cache: too many wrong passwords for one user name, or from one
client address, and sign-in is refused for a while, even with the right password.

Why not django-axes: it needs its own tables (a database write per attempt, on SQLite the one
writer lock the importer also wants), a migration and a middleware; the counts here live in the
cache the project already has (a file cache in the embedded mode, Redis in the team setup), and
the whole rule is this module.

The rule (settings, from the environment; 0 turns a limit off):
- LOGIN_FAILURE_LIMIT (10) wrong passwords for a user name (any case), or
- LOGIN_IP_FAILURE_LIMIT (30) failed sign-ins from one client address (any user names),
within LOGIN_LOCKOUT_SECONDS (900): further sign-ins for that name, or from that address, are
refused until LOGIN_LOCKOUT_SECONDS after the failure that reached the limit. The password is not
even checked then. A successful sign-in starts the user name's count again.

Parallel guesses get no more checks than sequential ones: a check holds a place in the count before
the password is checked (``begin``), freed or counted as a failure after it (``end``), and the count
is read and written under a lock (a Redis lock where Redis is the cache, else a file lock in the
data folder): wrong passwords and checks in flight together never pass the limit.

Every password sign-in goes through ThrottledModelBackend (the login page, the admin's, and any
authenticate() call); the forms below say why a sign-in was refused. API tokens never call
authenticate() and open sessions are not touched, so neither is affected.

The client address is REMOTE_ADDR, or with a trusted proxy (CONTEXTVIEWER_TRUSTED_PROXY) the last
address of X-Forwarded-For, the one that proxy saw; without one, the header is ignored (anyone
can send it)."""

from __future__ import annotations

import fcntl
import hashlib
import math
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from django.core.exceptions import PermissionDenied
from redis.exceptions import LockError

PREFIX = "login-throttle:v1:"


def failure_limit() -> int:
    return int(getattr(settings, "LOGIN_FAILURE_LIMIT", 10) or 0)


def ip_failure_limit() -> int:
    return int(getattr(settings, "LOGIN_IP_FAILURE_LIMIT", 30) or 0)


def lockout_seconds() -> int:
    return max(int(getattr(settings, "LOGIN_LOCKOUT_SECONDS", 900) or 0), 1)


def client_ip(request) -> str:
    if request is None:
        return ""
    if getattr(settings, "TRUSTED_PROXY", False):
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
        if forwarded:
            return forwarded[-1][:64]
    return (request.META.get("REMOTE_ADDR") or "")[:64]


def _keys(username: str | None, ip: str) -> list[tuple[str, int]]:
    """The cache keys that count this attempt, with their limits (only those switched on)."""
    keys = []
    if username and failure_limit():
        digest = hashlib.sha256(username.strip().casefold().encode("utf-8", "surrogatepass")).hexdigest()[:32]
        keys.append((f"{PREFIX}user:{digest}", failure_limit()))
    if ip and ip_failure_limit():
        keys.append((f"{PREFIX}ip:{ip}", ip_failure_limit()))
    return keys


PENDING_SECONDS = 120  # a check in flight longer than this (its request died) no longer counts


@contextmanager
def _counting():
    """The counts are read and written by one request at a time, across threads, processes and (on
    Redis) servers: without it, parallel guesses all read the same count and all get checked. Redis
    (the team setup's cache): a Redis lock; any other cache (the embedded file cache): a file lock
    in the data folder."""
    backend = caches["default"]
    if isinstance(backend, RedisCache):
        client = backend._cache.get_client(write=True)
        lock = client.lock(backend.make_and_validate_key(PREFIX + "lock"), timeout=10, sleep=0.01, blocking_timeout=30)
        if not lock.acquire():
            raise PermissionDenied(refusal_message(1))
        try:
            yield
        finally:
            try:
                lock.release()
            except LockError:  # held past its timeout: already free
                pass
        return
    path = Path(settings.DATA_DIR) / "login-throttle.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _state(key: str, now: float) -> dict:
    """A key's count: ``failures`` (times of wrong passwords in the window), ``pending`` (checks in
    flight: token -> start) and ``locked_until``."""
    state = cache.get(key) or {}
    window = lockout_seconds()
    return {
        "failures": [t for t in state.get("failures", []) if t > now - window],
        "pending": {k: t for k, t in state.get("pending", {}).items() if t > now - PENDING_SECONDS},
        "locked_until": state.get("locked_until", 0) if state.get("locked_until", 0) > now else 0,
    }


def _save(key: str, state: dict) -> None:
    cache.set(key, state, timeout=lockout_seconds() + 60)


def _wait(states: list[dict], now: float) -> int:
    until = max((state["locked_until"] for state in states), default=0)
    return math.ceil(until - now) if until > now else 0


def refused(username: str | None, ip: str, now: float | None = None) -> int:
    """Seconds until sign-in is allowed again for this user name and address (0: allowed now)."""
    now = time.time() if now is None else now
    return _wait([_state(key, now) for key, _ in _keys(username, ip)], now)


def begin(username: str | None, ip: str, now: float | None = None) -> tuple[int, str]:
    """Before a password is checked: (seconds refused, 0 when allowed; the check's token). Taken
    atomically with the count, the check holds a place: wrong passwords counted and checks in
    flight together reach the limit, so parallel guesses get no more checks than sequential ones."""
    now = time.time() if now is None else now
    token = uuid.uuid4().hex
    with _counting():
        keys = _keys(username, ip)
        states = [_state(key, now) for key, _ in keys]
        wait = _wait(states, now)
        if not wait and any(len(s["failures"]) + len(s["pending"]) >= limit for s, (_, limit) in zip(states, keys)):
            wait = lockout_seconds()  # the last places are taken by checks in flight
        if wait:
            return wait, ""
        for state, (key, _) in zip(states, keys):
            state["pending"][token] = now
            _save(key, state)
    return 0, token


def end(username: str | None, ip: str, token: str, ok: bool, now: float | None = None) -> int:
    """After the check ``begin`` allowed: a right password frees its place and starts the user
    name's count again; a wrong one is counted (refusing sign-in from the limit on). The seconds
    of refusal it led to (0: none)."""
    now = time.time() if now is None else now
    with _counting():
        for key, limit in _keys(username, ip):
            state = _state(key, now)
            state["pending"].pop(token, None)
            if ok and key.startswith(f"{PREFIX}user:"):
                state["failures"] = []
            elif not ok:
                state["failures"] = (state["failures"] + [now])[-limit:]
                if len(state["failures"]) >= limit and not state["locked_until"]:
                    state["locked_until"] = now + lockout_seconds()
            _save(key, state)
    return 0 if ok else refused(username, ip, now)


def failed(username: str | None, ip: str, now: float | None = None) -> int:
    """Count one failed sign-in; the seconds of refusal it led to (0: none)."""
    return end(username, ip, "", ok=False, now=now)


def succeeded(username: str | None) -> None:
    """A right password (while not refused): the user name's count starts again."""
    end(username, "", "", ok=True)


def refusal_message(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return (
        f"Too many failed sign-ins for this account or from your address: sign-in is paused for "
        f"{minutes} minute{'s' if minutes != 1 else ''}, even with the right password. "
        "Try again later, or ask an administrator."
    )


class ThrottledModelBackend(ModelBackend):
    """ModelBackend that refuses a throttled user name or address before checking the password,
    and counts every wrong one."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        from django.contrib.auth import get_user_model

        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if username is None or password is None:
            return None
        ip = client_ip(request)
        wait, token = begin(username, ip)
        if wait:
            if request is not None:
                request.login_refused_for = wait
            raise PermissionDenied(refusal_message(wait))  # stops authenticate() here: no other backend
        user = None
        try:
            user = super().authenticate(request, username=username, password=password, **kwargs)
        finally:
            wait = end(username, ip, token, ok=user is not None)
        if wait and request is not None:
            request.login_refused_for = wait
        return user


class _ThrottleMessage:
    """Say why a sign-in was refused, instead of "wrong user name or password"."""

    def clean(self):
        try:
            return super().clean()
        except forms.ValidationError:
            wait = getattr(self.request, "login_refused_for", 0) if self.request is not None else 0
            if wait:
                raise forms.ValidationError(refusal_message(wait), code="throttled") from None
            raise


class ThrottledAuthenticationForm(_ThrottleMessage, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(_ThrottleMessage, AdminAuthenticationForm):
    pass


class ThrottledLoginView(LoginView):
    """The login page: a refused sign-in is answered 429 with the reason."""

    authentication_form = ThrottledAuthenticationForm

    def get_context_data(self, **kwargs):
        from django.contrib.auth import get_user_model

        context = super().get_context_data(**kwargs)
        # Until someone has logged in, say where the first password is (serve printed it once).
        context["first_start"] = not get_user_model().objects.filter(last_login__isnull=False).exists()
        return context

    def form_invalid(self, form):
        refusals = [e for e in form.errors.as_data().get("__all__", []) if e.code == "throttled"]
        response = self.render_to_response(
            self.get_context_data(form=form, throttled=" ".join(m for e in refusals for m in e.messages))
        )
        if refusals:
            response.status_code = 429
        return response
