"""The JSON API (django-ninja): every operation authenticates and checks project membership."""

from ninja import NinjaAPI
from ninja.security import django_auth

api = NinjaAPI(title="contextviewer", version="1", auth=django_auth)

from contextviewer.conversations import api as conversations_api  # noqa: E402,F401  (registers routes)
