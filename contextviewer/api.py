"""The JSON API (django-ninja): every operation authenticates and checks project membership.

Each app registers its operations in its own `api` module (imported below when it exists)."""

from importlib import import_module
from importlib.util import find_spec

import json

from django.shortcuts import render
from ninja import NinjaAPI
from ninja.openapi.docs import DocsBase, _csrf_needed
from ninja.security import django_auth

from contextviewer.accounts.auth import allowed_projects, token_auth  # noqa: F401

# A bearer token first: session auth answers 403 on a failed CSRF check without trying the next
# method, and a token client sends no CSRF cookie. A token sees only its own project: every
# operation picks its projects with allowed_projects(request, permission).


class VendoredSwagger(DocsBase):
    """/api/docs with the Swagger UI files vendored in static/vendor/swagger-ui (no CDN) and started
    by a static script (no inline one), so the page works under the app's strict CSP."""

    settings = {"layout": "BaseLayout", "deepLinking": True, "validatorUrl": None}

    def render_page(self, request, api, **kwargs):
        return render(request, "api/docs.html", {
            "api": api,
            "openapi_url": self.get_openapi_url(api, kwargs),
            "swagger_settings": json.dumps(self.settings),
            "add_csrf": _csrf_needed(api),
        })


api = NinjaAPI(title="contextviewer", version="1", auth=[token_auth, django_auth], docs=VendoredSwagger())

API_MODULES = (
    "contextviewer.conversations.api",
    "contextviewer.conversations.build_api",
    "contextviewer.conversations.handoff_api",
    "contextviewer.providers.api",
    "contextviewer.accounts.api",
    "contextviewer.review.api",
)
for _name in API_MODULES:
    if find_spec(_name) is not None:
        import_module(_name)
