"""Changing and resetting one's own password: Django's auth views, throttled like sign-in.

- Change (every signed-in user): the old password is checked through the sign-in throttle
  (throttle.py), so an open session cannot be used to guess it; a wrong one counts as a failed
  sign-in. Other sessions of the user end (Django's session hash), this one stays.
- Reset by email (anyone): the page says the same thing whether or not the address belongs to an
  account, and mails a one-time link only when it does (Django's PasswordResetForm). Requests are
  counted on the cache per client address and per address asked about (hashed):
  PASSWORD_RESET_LIMIT within PASSWORD_RESET_WINDOW_SECONDS, then the page answers 429 and sends
  nothing. Both counts grow for unknown addresses too, so the limit says nothing about who exists.
"""

from __future__ import annotations

import hashlib
import math
import time

from django import forms
from django.conf import settings
from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.views import PasswordChangeView, PasswordResetView
from django.core.cache import cache

from . import throttle

PREFIX = "password-reset:v1:"


def reset_limit() -> int:
    return int(getattr(settings, "PASSWORD_RESET_LIMIT", 5) or 0)


def reset_window() -> int:
    return max(int(getattr(settings, "PASSWORD_RESET_WINDOW_SECONDS", 3600) or 0), 1)


def _reset_keys(email: str, ip: str) -> list[str]:
    digest = hashlib.sha256(email.strip().casefold().encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return [f"{PREFIX}email:{digest}"] + ([f"{PREFIX}ip:{ip}"] if ip else [])


def reset_refused(email: str, ip: str, now: float | None = None) -> int:
    """Count one reset request; the seconds until another is allowed if this one is over the
    limit (0: go ahead). A refused request is not counted."""
    limit = reset_limit()
    if not limit:
        return 0
    now = time.time() if now is None else now
    window = reset_window()
    states = {key: [t for t in cache.get(key) or [] if t > now - window] for key in _reset_keys(email, ip)}
    full = [times for times in states.values() if len(times) >= limit]
    if full:
        return max(math.ceil(min(times) + window - now) for times in full) or 1
    for key, times in states.items():
        cache.set(key, (times + [now])[-limit:], timeout=window + 60)
    return 0


def reset_refusal_message(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return (
        f"Too many password reset requests for this address or from yours: try again in "
        f"{minutes} minute{'s' if minutes != 1 else ''}. No email was sent."
    )


class ThrottledPasswordResetView(PasswordResetView):
    """The reset request page: over the limit, answered 429 and nothing is sent."""

    def form_valid(self, form):
        wait = reset_refused(form.cleaned_data["email"], throttle.client_ip(self.request))
        if wait:
            response = self.render_to_response(self.get_context_data(form=form, throttled=reset_refusal_message(wait)))
            response.status_code = 429
            return response
        return super().form_valid(form)


class ThrottledPasswordChangeForm(PasswordChangeForm):
    """The old password goes through the sign-in throttle: refused while sign-in is paused for
    this user or address, and a wrong one counts as a failed sign-in."""

    def __init__(self, user, *args, request=None, **kwargs):
        self.request = request
        super().__init__(user, *args, **kwargs)

    def clean_old_password(self):
        name, ip = self.user.get_username(), throttle.client_ip(self.request)
        wait, token = throttle.begin(name, ip)  # holds a place in the count, as a sign-in does
        if wait:
            raise forms.ValidationError(throttle.refusal_message(wait), code="throttled")
        ok = False
        try:
            cleaned = super().clean_old_password()
            ok = True
            return cleaned
        finally:
            throttle.end(name, ip, token, ok=ok)


class ThrottledPasswordChangeView(PasswordChangeView):
    form_class = ThrottledPasswordChangeForm

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "request": self.request}

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.has_error("old_password", "throttled"):
            response.status_code = 429
        return response
