"""The usage page in Chromium on a real folder's month (issue 37): the Claude Code and Codex sessions of
the shared fixtures from February 2026; the page's spend is the command's, its charts are drawn, no
console error or CSP violation. Saves usage.png (bin/screenshots: docs/screenshots/usage.png)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from contextviewer.ingest import files as ingest
from tests.browser.screenshots import shot_path
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import make_project, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_month_of_real_sessions(page, live_server, fixtures_dir, tmp_path):
    project = make_project("usage-month")
    user = make_user("usage-viewer", project=project)
    ingest.import_path(project, fixtures_dir / "claude-code")
    for path in sorted((fixtures_dir / "codex").glob("madshn__localpush__rollout-*.jsonl")):
        ingest.import_path(project, path)
    out = StringIO()
    call_command("usage", "monthly", "--project", project.slug, "--since", "2026-02-01", "--until", "2026-02-28", "--json", stdout=out)
    total = json.loads(out.getvalue())["total"]
    login(page.context, live_server, user)
    watch = Watch(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/projects/{project.slug}/usage/?since=2026-02-01&until=2026-02-28")
    assert page.locator(".usage-totals strong").inner_text() == f"${total['cost_usd']:,.2f}"
    assert page.locator("svg[aria-label='Spend per day by model'] rect").count() >= 4
    legend = page.locator(".legend").inner_text()
    assert "claude-opus-4-6" in legend and "gpt-5.3-codex" in legend
    assert page.locator("svg.heatmap rect").count() > 5
    page.screenshot(path=str(shot_path("usage.png", tmp_path)), full_page=True)
    watch.assert_clean()
