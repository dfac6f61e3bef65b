"""/api/docs in Chromium: the vendored Swagger UI lists the operations with no CSP violation."""

import pytest

from tests.browser.test_viewer_flows import Watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_api_docs_lists_operations_under_the_csp(page, live_server):
    watch = Watch(page)
    external = []
    page.on("request", lambda r: external.append(r.url) if not r.url.startswith(live_server.url) else None)
    page.goto(f"{live_server.url}/api/docs")
    page.wait_for_selector(".opblock", timeout=15000)
    summaries = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/conversations" in s for s in summaries)
    assert page.locator(".info .title").inner_text().startswith("contextviewer")
    assert external == []
    watch.assert_clean()
