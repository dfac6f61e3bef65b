"""The provider settings page of a project, with its spend ledger.

Any member may see which provider a project uses and what it spent (keys masked); owners and
admins (the "settings" permission) may change the settings and allow the private network."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from contextviewer.accounts import audit
from contextviewer.accounts.permissions import get_membership_for_user

from . import services
from .models import PROVIDER_NAMES, ProviderConfig, ProviderName


DOING = "change provider settings"


def _rows(project) -> list[dict]:
    configs = {c.provider: c for c in ProviderConfig.objects.filter(project=project)}
    default = next((c.provider for c in configs.values() if c.is_default), "builtin")
    rows = []
    for name in PROVIDER_NAMES:
        c = configs.get(name)
        rows.append(
            {
                "name": name,
                "label": ProviderName(name).label,
                "config": c,
                "is_default": name == default,
                "base_url": c.base_url if c else "",
                "model": c.model if c else "",
                "key_masked": c.api_key_masked if c else "",
                "allow_private_network": bool(c and c.allow_private_network),
                "default_model": services.DEFAULT_MODELS.get(name, ""),
            }
        )
    return rows


@login_required
@require_http_methods(["GET", "POST"])
def provider_settings(request: HttpRequest, project: str) -> HttpResponse:
    member = get_membership_for_user(request, project, "settings" if request.method == "POST" else "view", doing=DOING)
    proj, can_edit = member.project, member.can("settings")
    status = 200
    if request.method == "POST":
        name = request.POST.get("provider", "")
        key = request.POST.get("api_key", "")
        try:
            config = services.save_config(
                proj,
                name,
                base_url=request.POST.get("base_url", ""),
                model=request.POST.get("model", ""),
                api_key="" if request.POST.get("clear_key") else (key if key else None),
                make_default=bool(request.POST.get("make_default")),
                allow_private_network=bool(request.POST.get("allow_private_network")),
                may_allow_private=can_edit,
            )
        except services.ConfigError as exc:
            messages.error(request, str(exc))
            status = 400
        else:
            audit.record(
                request, proj, "provider.settings_changed", name, default=bool(request.POST.get("make_default")),
                **services.audit_details(config),
            )
            messages.success(request, f"Saved the {name} provider settings.")
            if notice := services.key_cleared_notice(config):
                messages.warning(request, notice)
            return redirect("provider_settings", project=proj.slug)
    context = {
        "project": proj,
        "me": member,
        "can_edit": can_edit,
        "rows": _rows(proj),
        "spend": services.project_spend(proj),
    }
    return render(request, "providers/settings.html", context, status=status)
