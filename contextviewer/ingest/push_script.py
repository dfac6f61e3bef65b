"""/push.py: the push client (push_client.py) as a developer downloads it, with this server's
registry of each agent's default folders (``auto``, as ``watch auto`` finds them) and its masking
rules (contextviewer/core/secrets.py, the module's own text: the same rules, never a copy by hand)
filled in. It holds no project data, so it is served to anyone (``curl -O https://.../push.py``)."""

from __future__ import annotations

import functools
import inspect

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from contextviewer.core import secrets
from contextviewer.ingest import push_client
from contextviewer.ingest.watch import auto_locations

LOCATIONS_LINE = "LOCATIONS = None"
SECRETS_LINE = "SECRETS_SOURCE = None"


@functools.cache
def render_script() -> str:
    """push_client.py's text with the locations and the masking rules filled in."""
    text = inspect.getsource(push_client)
    for line, value in ((LOCATIONS_LINE, auto_locations()), (SECRETS_LINE, inspect.getsource(secrets))):
        if text.count(line) != 1:
            raise RuntimeError(f"push_client.py must hold {line!r} once")
        text = text.replace(line, f"{line.split(' = ')[0]} = {value!r}", 1)
    return text


@require_GET
def push_script(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(render_script(), content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = 'inline; filename="push.py"'
    return response
