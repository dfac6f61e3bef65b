"""Providers for a project, the per-job attempt budget with backoff, and the spend ledger."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db.models import Count, Sum

from django.conf import settings

from contextviewer.accounts.models import Project

from . import ssrf
from .base import Completion, Provider, ProviderError, RetryableProviderError
from .builtin import BuiltinProvider
from .models import PROVIDER_NAMES, ProviderCall, ProviderConfig, SpendEntry

log = logging.getLogger(__name__)
T = TypeVar("T")

# At most this many HTTP attempts per job, whatever happens (SDK retries are off; job runs, retries
# and restarts after a crash all count, because the attempts are rows in the database).
MAX_ATTEMPTS_PER_JOB = 6


def _float_setting(name: str, default: float) -> float:
    import os

    try:
        return float(os.environ.get(name, "") or default)
    except ValueError:
        return default


def backoff_base() -> float:
    return _float_setting("CONTEXTVIEWER_PROVIDER_BACKOFF", 2.0)


def provider_timeout() -> float:
    return _float_setting("CONTEXTVIEWER_PROVIDER_TIMEOUT", 120.0)


DEFAULT_MODELS = {"openai": "gpt-4.1-mini", "anthropic": "claude-sonnet-4-5"}


class ConfigError(ValueError):
    """A provider setting a person entered is not usable (the message says why)."""


def default_config(project: Project) -> ProviderConfig | None:
    return ProviderConfig.objects.filter(project=project, is_default=True).first()


def build_provider(config: ProviderConfig | None) -> Provider:
    if config is None or config.provider == "builtin":
        return BuiltinProvider(budget=settings.HANDOFF_BUDGET)
    # Resolved once and checked; the client connects only to the checked addresses (no DNS rebinding).
    checked = ssrf.check(config.base_url, allow_private=config.allow_private_network) if config.base_url else None
    base_url = checked.url if checked else ""
    model = config.model or DEFAULT_MODELS.get(config.provider, "")
    if config.provider == "openai":
        from .openai_provider import OpenAIProvider  # lazy: the openai SDK loads only for a project that uses it

        if not base_url:
            base_url = "https://api.openai.com/v1"
        return OpenAIProvider(
            base_url=base_url, api_key=config.api_key, model=model, timeout=provider_timeout(), checked=checked
        )
    if config.provider == "anthropic":
        from .anthropic_provider import AnthropicProvider  # lazy: the anthropic SDK loads only for a project that uses it

        return AnthropicProvider(
            base_url=base_url, api_key=config.api_key, model=model, timeout=provider_timeout(), checked=checked
        )
    raise ProviderError(f"unknown provider {config.provider!r} (known: {', '.join(PROVIDER_NAMES)})")


def get_provider(project: Project, name: str | None = None) -> Provider:
    """The provider a job should use: the one named, else the project's default, else builtin."""
    if name:
        if name not in PROVIDER_NAMES:
            raise ProviderError(f"unknown provider {name!r} (known: {', '.join(PROVIDER_NAMES)})")
        if name == "builtin":
            return build_provider(None)
        config = ProviderConfig.objects.filter(project=project, provider=name).first()
        if config is None:
            raise ProviderError(f"the provider {name!r} is not configured for the project {project.name!r}")
        return build_provider(config)
    return build_provider(default_config(project))


def complete(
    provider: Provider,
    *,
    project: Project,
    role: str,
    system: str,
    prompt: str,
    max_tokens: int = 4096,
    job=None,
    conversation=None,
    progress: Callable[[float, str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_attempts: int = MAX_ATTEMPTS_PER_JOB,
) -> Completion:
    """One completion with bounded retries: every HTTP attempt is a ProviderCall row, at most
    ``max_attempts`` (MAX_ATTEMPTS_PER_JOB) per job in total (a title job, which asks once per
    conversation, passes its own); retryable errors wait 1, 2, 4 ... x the backoff base.
    The spend of the successful call goes to the ledger."""
    is_local = provider.name == "builtin"
    last_error: Exception | None = None
    tries = 0
    while True:
        if not is_local and job is not None:
            used = ProviderCall.objects.filter(job=job).count()
            if used >= max_attempts:
                raise ProviderError(
                    f"gave up after {used} attempts to reach {provider.name} (the limit is {max_attempts} per job)"
                    + (f"; the last error: {last_error}" if last_error else "")
                )
        if not is_local and tries >= MAX_ATTEMPTS_PER_JOB:  # one completion: never more than this
            raise ProviderError(f"gave up after {tries} attempts to reach {provider.name}; the last error: {last_error}")
        tries += 1
        model = getattr(provider, "model", "")
        call = None
        if not is_local:
            call = _when_free(lambda: ProviderCall.objects.create(
                project=project, job=job, provider=provider.name, model=model, role=role), sleep)
        try:
            completion = provider.complete(system=system, prompt=prompt, role=role, max_tokens=max_tokens)
        except RetryableProviderError as exc:
            last_error = exc
            _failed(call, exc, sleep)
            delay = backoff_base() * (2 ** (tries - 1))
            log.warning("%s attempt %s failed (%s); retrying in %.1fs", provider.name, tries, exc, delay)
            if progress:
                progress(0.3, f"{provider.name}: {str(exc)[:200]}; retrying in {delay:.0f}s")
            sleep(min(delay, 60.0))
            continue
        except ProviderError as exc:
            _failed(call, exc, sleep)
            raise
        _when_free(lambda: _paid(call, completion, project, role, provider.name, job, conversation), sleep)
        return completion


# A provider call's rows (its ProviderCall, its error, the paid completion's ledger rows) wait for
# SQLite's write lock this many times (30 s each, the connection's timeout): an import holds it for
# the whole of a large file (issue 40: a title job failed with "database is locked").
SPEND_WRITE_ATTEMPTS = 20


def _when_free(write: Callable[[], T], sleep: Callable[[float], None] = time.sleep) -> T:
    """Run ``write`` (one short write outside any transaction), again while SQLite says the
    database is locked, at most SPEND_WRITE_ATTEMPTS times; return what it returned."""
    from django.db import OperationalError, connection, transaction

    for attempt in range(1, SPEND_WRITE_ATTEMPTS + 1):
        try:
            with transaction.atomic():
                return write()
        except OperationalError as exc:
            if "locked" not in str(exc) or connection.in_atomic_block or attempt == SPEND_WRITE_ATTEMPTS:
                raise
            log.warning("a provider call's rows wait for the database (attempt %s): %s", attempt, exc)
            sleep(min(2.0 * attempt, 10.0))
    raise AssertionError("unreachable")  # pragma: no cover - the last attempt returns or raises


def _failed(call, exc: Exception, sleep: Callable[[float], None]) -> None:
    if call is not None:
        _when_free(lambda: ProviderCall.objects.filter(pk=call.pk).update(error=str(exc)[:2000]), sleep)


def _paid(call, completion: Completion, project, role: str, provider: str, job, conversation) -> None:
    if call is not None:
        ProviderCall.objects.filter(pk=call.pk).update(ok=True, model=completion.model[:200])
    record_spend(project, completion, role=role, provider=provider, job=job, conversation=conversation)


def record_spend(project, completion: Completion, *, role: str, provider: str, job=None, conversation=None) -> SpendEntry:
    return SpendEntry.objects.create(
        project=project,
        conversation=conversation,
        job=job,
        role=role,
        provider=provider,
        model=(completion.model or "")[:200],
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        cache_read_tokens=completion.cache_read_tokens,
        cache_write_tokens=completion.cache_write_tokens,
        cost_usd=completion.cost_usd,
    )


def save_config(
    project: Project,
    provider: str,
    *,
    base_url: str = "",
    model: str = "",
    api_key: str | None = None,
    make_default: bool = False,
    allow_private_network: bool | None = None,
    may_allow_private: bool = False,
) -> ProviderConfig:
    """Validate and store one provider's settings. api_key None keeps the stored key, "" clears it.

    A stored key is kept only while the base URL stays the same: a new base URL with no key
    entered again drops it (ProviderConfig.save), and the returned config says so in
    `key_cleared` (why, or "") beside `base_url_old` (the URL before this change).

    allow_private_network may only be changed by an owner or admin (may_allow_private)."""
    if provider not in PROVIDER_NAMES:
        raise ConfigError(f"unknown provider {provider!r}: choose one of {', '.join(PROVIDER_NAMES)}")
    config = ProviderConfig.objects.filter(project=project, provider=provider).first() or ProviderConfig(
        project=project, provider=provider
    )
    base_url_old = config.base_url
    if allow_private_network is not None and allow_private_network != config.allow_private_network:
        if not may_allow_private:
            raise ConfigError("only a project owner or admin may allow the private network for a provider")
        config.allow_private_network = allow_private_network
    base_url = (base_url or "").strip()
    if len(base_url) > 500:
        raise ConfigError("the base URL is longer than 500 characters")
    if provider != "builtin" and base_url:
        try:
            base_url = ssrf.check_base_url(base_url, allow_private=config.allow_private_network)
        except ssrf.UnsafeBaseURL as exc:
            raise ConfigError(str(exc)) from exc
    model = (model or "").strip()
    if len(model) > 200:
        raise ConfigError("the model name is longer than 200 characters")
    config.base_url = base_url if provider != "builtin" else ""
    config.model = model if provider != "builtin" else ""
    if api_key is not None:
        config.set_api_key(api_key.strip())
    config.save()
    config.base_url_old = base_url_old
    if make_default:
        ProviderConfig.objects.filter(project=project).exclude(pk=config.pk).update(is_default=False)
        ProviderConfig.objects.filter(pk=config.pk).update(is_default=True)
        config.is_default = True
    return config


def key_cleared_notice(config: ProviderConfig) -> str:
    """What to tell the person who saved `config` when the stored key was dropped ("" if not)."""
    if not getattr(config, "key_cleared", ""):
        return ""
    return (
        f"The stored API key was removed because {config.key_cleared}: a key is only ever sent to the "
        f"server it was entered for. To use {config.get_provider_display()} at "
        f"{config.base_url or 'its official endpoint'}, enter the key again."
    )


def audit_details(config: ProviderConfig) -> dict:
    """The audit event's details for a saved config: old and new base URL, whether the key went.
    Never the key; a URL's query string (it may carry a token) is left out."""
    return {
        "base_url_old": _url_without_query(getattr(config, "base_url_old", config.base_url)),
        "base_url_new": _url_without_query(config.base_url),
        "key_cleared": bool(getattr(config, "key_cleared", "")),
    }


def _url_without_query(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url or "")
    if not (parts.query or parts.fragment):
        return url or ""
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")) + "?…"


def spend_summary(qs) -> dict:
    """Totals and per-role/model rows of a SpendEntry queryset."""
    rows = list(
        qs.values("role", "provider", "model")
        .annotate(calls=Count("id"), input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"), cost_usd=Sum("cost_usd"))
        .order_by("role", "provider", "model")
    )
    totals = qs.aggregate(calls=Count("id"), input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"), cost_usd=Sum("cost_usd"))
    return {
        "calls": totals["calls"] or 0,
        "input_tokens": totals["input_tokens"] or 0,
        "output_tokens": totals["output_tokens"] or 0,
        "cost_usd": totals["cost_usd"] or 0.0,
        "by_role": [
            {**r, "input_tokens": r["input_tokens"] or 0, "output_tokens": r["output_tokens"] or 0, "cost_usd": r["cost_usd"] or 0.0}
            for r in rows
        ],
    }


def project_spend(project: Project) -> dict:
    summary = spend_summary(SpendEntry.objects.filter(project=project))
    per_conversation = list(
        SpendEntry.objects.filter(project=project, conversation__isnull=False)
        .values("conversation_id", "conversation__title", "conversation__external_id")
        .annotate(calls=Count("id"), input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"), cost_usd=Sum("cost_usd"))
        .order_by("-input_tokens")[:200]
    )
    summary["conversations"] = [
        {
            "conversation_id": r["conversation_id"],
            "title": r["conversation__title"] or r["conversation__external_id"],
            "calls": r["calls"],
            "input_tokens": r["input_tokens"] or 0,
            "output_tokens": r["output_tokens"] or 0,
            "cost_usd": r["cost_usd"] or 0.0,
        }
        for r in per_conversation
    ]
    return summary


def conversation_spend(conversation) -> dict:
    return spend_summary(SpendEntry.objects.filter(conversation=conversation))
