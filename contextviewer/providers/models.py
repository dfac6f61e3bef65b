"""Provider settings per project (keys encrypted at rest), every provider call, and the spend ledger."""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import urlsplit, urlunsplit

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

from contextviewer.accounts.models import Project

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

PROVIDER_NAMES = ("builtin", "openai", "anthropic")


class ProviderName(models.TextChoices):
    BUILTIN = "builtin"
    OPENAI = "openai", "OpenAI-compatible"
    ANTHROPIC = "anthropic"


class SpendRole(models.TextChoices):
    HANDOFF = "handoff"
    TITLE = "title"
    JUDGE = "judge"


def _fernet() -> Fernet:
    from cryptography.fernet import Fernet  # loaded on first use, not at every start (bench startup)

    # A key derived from SECRET_KEY: rotating SECRET_KEY means entering the provider keys again.
    digest = hashlib.sha256(b"contextviewer/provider-api-keys:" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def encrypt(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode() if plain else ""


def decrypt(token: str) -> str:
    if not token:
        return ""
    from cryptography.fernet import InvalidToken

    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        return ""


def mask(plain: str) -> str:
    if not plain:
        return ""
    tail = plain[-4:] if len(plain) >= 12 else ""
    return f"{plain[:3]}…{tail}" if len(plain) >= 12 else "•" * 8


# Where a provider's calls go when its base URL is left empty (what the SDKs use).
OFFICIAL_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}


def endpoint(provider: str, base_url: str) -> str:
    """The server a key would be sent to, comparable: the base URL (or the official one when
    empty) with scheme and host lower-cased and no trailing slash."""
    url = (base_url or "").strip() or OFFICIAL_BASE_URLS.get(provider, "")
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, ""))


class ProviderConfig(models.Model):
    """One provider's settings in a project; the project's default is used unless a job names one."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="provider_configs")
    provider = models.CharField(max_length=20, choices=ProviderName.choices)
    base_url = models.CharField(max_length=500, blank=True)
    model = models.CharField(max_length=200, blank=True)
    api_key_encrypted = models.TextField(blank=True)
    is_default = models.BooleanField(default=False)
    allow_private_network = models.BooleanField(
        default=False, help_text="let the base URL reach private, loopback or link-local addresses (owners and admins only)"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["provider"]
        constraints = [models.UniqueConstraint(fields=["project", "provider"], name="unique_provider_per_project")]

    def __str__(self) -> str:
        return f"{self.provider} ({self.project})"

    # A stored key belongs to the endpoint it was entered for. Whatever path changes the base URL
    # or the provider kind (page, API, shell, admin), save() drops a key that was not entered again
    # in the same change, so it can never be sent to a server someone else chose. `key_cleared`
    # says why it was dropped ("" when it was not), for the page, the API and the audit log.
    _TRACKED = ("provider", "base_url", "api_key_encrypted")

    @classmethod
    def from_db(cls, db, field_names, values):
        instance = super().from_db(db, field_names, values)
        instance._remember_stored()
        return instance

    def _remember_stored(self) -> None:
        loaded = self.get_deferred_fields()
        self._stored = None if loaded & set(self._TRACKED) else {f: getattr(self, f) for f in self._TRACKED}

    def key_moved_reason(self) -> str:
        """Why the stored key may not stay with the settings about to be saved ("" if it may)."""
        stored = getattr(self, "_stored", None)
        if not stored or not self.api_key_encrypted or self.api_key_encrypted != stored["api_key_encrypted"]:
            return ""  # new, no key, or a key entered in this very change
        if self.provider != stored["provider"]:
            return "the provider kind changed"
        if endpoint(self.provider, self.base_url) != endpoint(stored["provider"], stored["base_url"]):
            return "the base URL changed"
        return ""

    def save(self, *args, **kwargs):
        self.key_cleared = self.key_moved_reason()
        if self.key_cleared:
            self.api_key_encrypted = ""
            update_fields = kwargs.get("update_fields")
            if update_fields is not None:
                kwargs["update_fields"] = {*update_fields, "api_key_encrypted"}
        super().save(*args, **kwargs)
        self._remember_stored()

    @property
    def api_key(self) -> str:
        return decrypt(self.api_key_encrypted)

    def set_api_key(self, plain: str) -> None:
        self.api_key_encrypted = encrypt(plain)

    @property
    def api_key_masked(self) -> str:
        return mask(self.api_key)


class ProviderCall(models.Model):
    """One HTTP attempt to a provider (successful or not): the per-job attempt budget counts these."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="provider_calls")
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=200, blank=True)
    role = models.CharField(max_length=20)
    ok = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]


class SpendEntry(models.Model):
    """Tokens and cost of one successful provider call, by role."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="spend_entries")
    conversation = models.ForeignKey(
        "conversations.Conversation", null=True, blank=True, on_delete=models.SET_NULL, related_name="spend_entries"
    )
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="spend_entries")
    role = models.CharField(max_length=20, choices=SpendRole.choices)
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=200, blank=True)
    input_tokens = models.IntegerField(default=0)
    output_tokens = models.IntegerField(default=0)
    cache_read_tokens = models.IntegerField(default=0)
    cache_write_tokens = models.IntegerField(default=0)
    cost_usd = models.FloatField(null=True, blank=True, help_text="None: the model's price is unknown")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "created_at"]), models.Index(fields=["conversation", "created_at"])]
