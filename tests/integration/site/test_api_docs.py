"""/api/docs: Swagger UI from the app's own static files (no CDN, no inline script) under the CSP."""

import re
from pathlib import Path

import pytest
from django.conf import settings

# Cannot differ between SQLite and PostgreSQL (the API's docs page and its vendored assets: files and a rendered page): bin/test runs it on SQLite only.
pytestmark = [pytest.mark.django_db, pytest.mark.backend_independent]


def test_api_docs_references_only_same_origin_assets_and_no_inline_script(client):
    response = client.get("/api/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "script-src 'self'" in response["Content-Security-Policy"]
    urls = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert any(u.endswith("vendor/swagger-ui/swagger-ui-bundle.js") for u in urls)
    assert any(u.endswith("vendor/swagger-ui/swagger-ui.css") for u in urls)
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), url
    # every <script> has a src: nothing inline for the CSP to block
    for tag in re.findall(r"<script\b[^>]*>(.*?)</script>", html, flags=re.S):
        assert tag.strip() == ""
    assert "<style" not in html and " style=" not in html
    assert "cdn" not in html.lower()
    assert 'data-openapi-url="/api/openapi.json"' in html


def test_vendored_swagger_files_are_present_with_version_and_license():
    folder = Path(settings.BASE_DIR) / "static" / "vendor" / "swagger-ui"
    for name in ("swagger-ui-bundle.js", "swagger-ui.css", "LICENSE", "README.md"):
        assert (folder / name).is_file(), name
    readme = (folder / "README.md").read_text()
    assert re.search(r"swagger-ui-dist` \*\*\d+\.\d+\.\d+\*\*", readme)
    assert "Apache-2.0" in readme
    assert "Apache License" in (folder / "LICENSE").read_text()


def test_every_schema_of_the_api_has_a_name_of_its_own():
    # Two schemas of one name are one entry of /api/openapi.json: the second replaces the first, and
    # an answer of the first is described (and validated by clients) as the second. A usage report's
    # "UsageOut" once replaced a model call's, so every call's usage read as invalid.
    from ninja import Schema

    from contextviewer.urls import api  # noqa: F401 - every router's schemas imported

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    fields_by_name: dict[str, set] = {}
    for cls in subclasses(Schema):
        if cls.__module__.startswith("contextviewer."):
            fields_by_name.setdefault(cls.__name__, set()).add(tuple(sorted(cls.model_fields)))
    assert {name: shapes for name, shapes in fields_by_name.items() if len(shapes) > 1} == {}
