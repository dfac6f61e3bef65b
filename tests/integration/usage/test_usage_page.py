"""The analytics page of a project (issue 37, item 3): the same spend and counts as the command,
the access rules of every project page, and a bad word said, not a crash.

The session is tests/sessions.py's (see test_usage_synthetic.py for its working: 6 calls of
claude-opus-4-6, $0.082581 at list price, on 2026-03-01 at 12:00 UTC)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from contextviewer.accounts.services import get_or_create_project
from tests.integration.usage.test_usage_synthetic import _import, _usage
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db


@pytest.fixture
def imported(tmp_path, project, user):
    path = tmp_path / "s.jsonl"
    write_lines(path, session_lines(3, SessionBuilder("dddddddd-2222-4333-8444-555555555555")))
    _import(project, path, user)
    return project


def test_the_page_shows_the_command_s_figures_and_its_charts(imported, user):
    c = Client()
    c.force_login(user)
    r = c.get(f"/projects/{imported.slug}/usage/")
    assert r.status_code == 200
    html = r.content.decode()
    total = _usage("daily", "--project", imported.slug, "--since", "2026-01-31", "--until", "2026-03-01")["total"]
    assert total["cost_usd"] == pytest.approx(0.082581)
    assert "<strong>$0.08</strong>" in html  # the 30 days up to the latest session, the command's figure
    assert "1 · 6 model calls · 0 folds" in html
    # the spend chart: one bar for 1 March, titled with its model and its dollars
    assert re.search(r"<title>2026-03-01 · claude-opus-4-6: \$0\.08</title>", html)
    # the heatmap: 6 calls on a Sunday (1 March 2026) at 12:00 UTC
    assert "Sun 12:00–12:59: 6 model calls" in html
    assert len(r.content) < 100_000


def test_only_members_see_it(imported):
    assert Client().get(f"/projects/{imported.slug}/usage/").status_code == 302  # to the login page
    outsider = get_user_model().objects.create_user("mallory")
    get_or_create_project("Mallory's")
    c = Client()
    c.force_login(outsider)
    assert c.get(f"/projects/{imported.slug}/usage/").status_code in (403, 404)


def test_a_bad_time_zone_or_range_is_said(imported, user):
    c = Client()
    c.force_login(user)
    r = c.get(f"/projects/{imported.slug}/usage/?timezone=Mars/Olympus")
    assert r.status_code == 400 and "not a known time zone" in r.content.decode()
    r = c.get(f"/projects/{imported.slug}/usage/?since=2026-03-02&until=2026-03-01")
    assert r.status_code == 400 and "Pick at most a year" in r.content.decode()
