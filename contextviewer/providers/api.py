"""API operations for provider settings and the spend ledger.

Reading settings and spend needs membership ("view"); changing settings needs "settings"
(owners and admins). Keys are never returned, only masked."""

from __future__ import annotations

from ninja import Router, Schema
from ninja.responses import Status

from contextviewer.accounts import audit
from contextviewer.accounts.permissions import get_conversation_for_user, get_project_for_user

from . import services
from .models import PROVIDER_NAMES, ProviderConfig

router = Router(tags=["providers"])


class ProviderOut(Schema):
    provider: str
    base_url: str
    model: str
    api_key: str  # masked
    is_default: bool
    allow_private_network: bool
    key_cleared: bool = False  # this change removed the stored key (the base URL changed)
    notice: str = ""


class ProviderIn(Schema):
    base_url: str = ""
    model: str = ""
    api_key: str | None = None  # None keeps the stored key (while the base URL stays the same), "" removes it
    default: bool = False
    allow_private_network: bool | None = None


class ErrorOut(Schema):
    detail: str


def _out(c: ProviderConfig) -> dict:
    return {
        "provider": c.provider,
        "base_url": c.base_url,
        "model": c.model,
        "api_key": c.api_key_masked,
        "is_default": c.is_default,
        "allow_private_network": c.allow_private_network,
    }


@router.get("/projects/{slug}/providers", response={200: list[ProviderOut], 404: ErrorOut})
def list_providers(request, slug: str):
    project = get_project_for_user(request, slug)
    return Status(200, [_out(c) for c in ProviderConfig.objects.filter(project=project)])


@router.put("/projects/{slug}/providers/{provider}", response={200: ProviderOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut})
def put_provider(request, slug: str, provider: str, data: ProviderIn):
    project = get_project_for_user(request, slug, "settings", doing="change provider settings: only owners and admins may")
    if provider not in PROVIDER_NAMES:
        return Status(400, {"detail": f"Unknown provider {provider!r}: choose one of {', '.join(PROVIDER_NAMES)}."})
    try:
        config = services.save_config(
            project,
            provider,
            base_url=data.base_url,
            model=data.model,
            api_key=data.api_key,
            make_default=data.default,
            allow_private_network=data.allow_private_network,
            may_allow_private=True,
        )
    except services.ConfigError as exc:
        return Status(400, {"detail": str(exc)})
    audit.record(request, project, "provider.settings_changed", provider, default=data.default, **services.audit_details(config))
    notice = services.key_cleared_notice(config)
    return Status(200, {**_out(config), "key_cleared": bool(notice), "notice": notice})


class SpendRow(Schema):
    role: str
    provider: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


class ConversationSpendRow(Schema):
    conversation_id: int
    title: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


class SpendOut(Schema):
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    by_role: list[SpendRow]
    conversations: list[ConversationSpendRow] = []


@router.get("/projects/{slug}/spend", response={200: SpendOut, 404: ErrorOut})
def project_spend(request, slug: str):
    project = get_project_for_user(request, slug)
    return Status(200, services.project_spend(project))


@router.get("/conversations/{conversation_id}/spend", response={200: SpendOut, 404: ErrorOut})
def conversation_spend(request, conversation_id: int):
    conv = get_conversation_for_user(request, conversation_id)
    return Status(200, services.conversation_spend(conv))
