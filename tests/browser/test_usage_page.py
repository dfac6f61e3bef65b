"""The usage page in Chromium on a real folder's month (issue 37): the Claude Code and Codex sessions of
the shared fixtures from February 2026, the Claude Code ones imported by one member and the Codex ones by
another; the page's spend is the command's, its charts are drawn, the top tools load after the page,
the folds' "lost and needed again" is the review probes', each person is shown beside the other, no
console error or CSP violation. Saves usage.png (bin/screenshots: docs/screenshots/usage.png)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from contextviewer.accounts.models import Role
from contextviewer.conversations.models import Fold
from contextviewer.review import probes
from tests.browser.screenshots import shot_path
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import make_project, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_month_of_real_sessions(page, live_server, fixtures_dir, tmp_path):
    project = make_project("usage-month")
    user = make_user("usage-viewer", project=project)
    other = make_user("usage-colleague", project=project, role=Role.MEMBER)
    _import_as(project, [fixtures_dir / "claude-code"], user)
    _import_as(project, sorted((fixtures_dir / "codex").glob("madshn__localpush__rollout-*.jsonl")), other)
    needed = measured = 0
    for fold in Fold.objects.counted().filter(conversation__project=project, timestamp__month=2):
        probe = probes.compute_probe(fold)
        if probe.continuation:
            measured += 1
            needed += sum(1 for f in [*probe.facts, *probe.background] if not f.get("kept") and f.get("used_after"))
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
    tools = page.locator("table.usage-tools tbody tr")
    tools.first.wait_for()
    shown = dict(zip(page.locator("table.usage-tools tbody td code").all_inner_texts(),
                     [int(n.replace(",", "")) for n in page.locator("table.usage-tools tbody td.num").all_inner_texts()], strict=True))
    # Counted apart from the importer (Codex's tools have other names); checked once by hand with a
    # one-off script over the same files: Bash 284, Read 133, Edit 121, Grep 33, Glob 28.
    for name, n in _claude_code_tools(fixtures_dir / "claude-code").items():
        if name in ("Bash", "Read", "Edit", "Grep", "Glob"):
            assert shown[name] == n, name
    if measured:
        assert f"({needed} in {measured} measured folds" in page.locator("section[aria-labelledby=needed-title]").inner_text()
    people = page.locator("table.usage-people tbody").inner_text().lower()  # (th are shown in capitals)
    assert "usage-viewer" in people and "usage-colleague" in people
    page.screenshot(path=str(shot_path("usage.png", tmp_path)), full_page=True)
    watch.assert_clean()


def _import_as(project, paths, user) -> None:
    """Import as `user` (the person of the sessions), through the import job as the page does."""
    from contextviewer.ingest import imports
    from contextviewer.jobs import queue as jobs

    job, _created = imports.start_import(project, paths=list(paths), user=user, enqueue=False)
    assert jobs.run(job.pk).status == "succeeded"


def _claude_code_tools(folder) -> dict[str, int]:
    """Tool calls by name in the Claude Code files of February 2026, read apart from the importer:
    each tool_use block once per file by its id (a call streamed as several lines repeats none)."""
    seen, out = set(), {}
    for path in sorted(folder.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict) or record.get("type") != "assistant" or not str(record.get("timestamp", "")).startswith("2026-02"):
                continue
            for block in (record.get("message") or {}).get("content") or ():
                if isinstance(block, dict) and block.get("type") == "tool_use" and (path, block.get("id")) not in seen:
                    seen.add((path, block.get("id")))
                    out[block.get("name")] = out.get(block.get("name"), 0) + 1
    return out
