"""The JSON API (django-ninja): every operation authenticates and checks project membership.

Each app declares its operations on one ninja Router in its own `api` module; they are mounted here."""

import json

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import render
from ninja import NinjaAPI
from ninja.openapi.docs import DocsBase, _csrf_needed
from ninja.security import django_auth

from contextviewer.accounts import api as accounts_api
from contextviewer.accounts.auth import token_auth
from contextviewer.builds import api as builds_api
from contextviewer.viewer import api as conversations_api
from contextviewer.viewer import read_api  # noqa: F401  (its GETs join conversations_api.router)
from contextviewer.ingest import api as ingest_api
from contextviewer.ingest import push_api
from contextviewer.jobs import api as jobs_api
from contextviewer.lab import api as lab_api
from contextviewer.providers import api as providers_api
from contextviewer.review import api as review_api
from contextviewer.review import read_api as review_read_api
from contextviewer.usage import api as usage_api

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


# The permission helpers (accounts/permissions.py) raise these; the API answers with their reason.
@api.exception_handler(Http404)
def _not_found(request, exc):
    return api.create_response(request, {"detail": str(exc) or "Not found."}, status=404)


@api.exception_handler(PermissionDenied)
def _refused(request, exc):
    return api.create_response(request, {"detail": str(exc) or "Your role in this project does not allow this."}, status=403)


# Each app's operations are one Router in its api module, mounted here (no app imports this module).
for _router in (ingest_api.router, jobs_api.router, conversations_api.router, builds_api.router,
                providers_api.router, accounts_api.router, review_api.router, review_read_api.router, lab_api.router,
                usage_api.router, push_api.router):
    api.add_router("/", _router)
