"""The analytics page's top tools, its "lost and needed again" per fold, and its side-by-side view
per person (issue 37, item 3).

The sessions are written here with tests/sessions.py, so every expected figure is counted from the
lines this file writes (each said where it is asserted)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from contextviewer.accounts.models import Membership, Role
from contextviewer.conversations.models import Conversation, Fold
from contextviewer.review.models import FactProbe
from tests.integration.usage.test_usage_synthetic import _import, _usage
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db

RANGE = "since=2026-02-01&until=2026-03-31"


def _session(path, session_id: str, tools: list[str]) -> None:
    """A prompt, then one model call per tool name (each calling that tool) and its result."""
    b = SessionBuilder(session_id)
    lines = [b.user("Look around the project.")]
    for name in tools:
        lines += b.assistant(f"Calling {name}.", tool=(name, {"path": "src/app.py"}))
        lines.append(b.tool_result("ok"))
    lines += b.assistant("Done.")
    write_lines(path, lines)


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def test_top_tools_counts_tool_calls_by_the_name_the_agent_gave(tmp_path, project, user):
    # Written: Read 3 times, Bash twice, an MCP tool once (its name kept whole), in one session.
    path = tmp_path / "tools.jsonl"
    _session(path, "aaaaaaaa-1111-4333-8444-555555555555",
             ["Read", "Bash", "Read", "mcp__github__create_issue", "Bash", "Read"])
    _import(project, path, user)
    c = _client(user)
    page = c.get(f"/projects/{project.slug}/usage/?{RANGE}").content.decode()
    assert f'hx-get="/projects/{project.slug}/usage/tools/?' in page  # the card loads after the page
    r = c.get(f"/projects/{project.slug}/usage/tools/?{RANGE}")
    assert r.status_code == 200
    html = r.content.decode()
    rows = [(name, int(n)) for name, n in
            re.findall(r"<td><code>([^<]+)</code></td><td class=\"num\">(\d+)</td>", html)]
    assert rows == [("Read", 3), ("Bash", 2), ("mcp__github__create_issue", 1)]
    # a range without the session (it is dated 2026-03-01, tests/sessions.py's T0) counts none
    none = c.get(f"/projects/{project.slug}/usage/tools/?since=2026-01-01&until=2026-01-31").content.decode()
    assert "No tool call in these days." in none
    # members only, as the page
    assert Client().get(f"/projects/{project.slug}/usage/tools/?{RANGE}").status_code == 302  # to the login page
    outsider = _client(get_user_model().objects.create_user("mallory-tools"))
    assert outsider.get(f"/projects/{project.slug}/usage/tools/?{RANGE}").status_code in (403, 404)
    # a bad range is said
    bad = c.get(f"/projects/{project.slug}/usage/tools/?since=2026-03-31&until=2026-02-01")
    assert bad.status_code == 400 and "the first day before the last" in bad.content.decode()


def test_lost_and_needed_again_per_fold_from_the_review_probes(tmp_path, project, user):
    path = tmp_path / "folds.jsonl"
    _session(path, "bbbbbbbb-1111-4333-8444-555555555555", ["Read", "Bash"])
    _import(project, path, user)
    conv = Conversation.objects.get(project=project)
    when = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)  # ISO week 2026-W09
    folds = [Fold.objects.create(conversation=conv, key=f"k{i}", position=2, timestamp=when) for i in range(3)]
    conv.refresh_fold_count()
    lost_needed = {"kind": "path", "text": "src/app.py", "key": "src/app.py", "kept": False, "used_after": True}
    lost_only = {**lost_needed, "key": "src/b.py", "used_after": False}
    kept = {**lost_needed, "key": "src/c.py", "kept": True, "used_after": False}
    # fold 0: two facts lost and needed again (one tier C); fold 1: one lost, not needed; fold 2: not probed
    FactProbe.objects.create(project=project, conversation=conv, fold=folds[0], facts=[lost_needed, lost_only, kept],
                             background=[{**lost_needed, "key": "npm test"}], continuation={"used_after": ["src/app.py"]})
    FactProbe.objects.create(project=project, conversation=conv, fold=folds[1], facts=[lost_only, kept],
                             continuation={"used_after": []})
    html = _client(user).get(f"/projects/{project.slug}/usage/?{RANGE}").content.decode()
    # 2 needed again in 2 measured folds: 1.00 per fold; 3 folds in the days
    assert "<strong>1.00</strong> facts per fold" in html
    assert "(2 in 2 measured folds; 3 folds in these days)" in html
    assert '<td>2026-W09</td><td class="num">3</td><td class="num">2</td><td class="num">2</td><td class="num">1.00</td>' in html
    # a probe of nothing after the fold (no continuation) measures nothing
    FactProbe.objects.filter(fold=folds[1]).update(continuation={})
    html = _client(user).get(f"/projects/{project.slug}/usage/?{RANGE}").content.decode()
    assert "<strong>2.00</strong> facts per fold" in html


def test_a_team_side_by_side_each_person_with_the_command_s_figures(tmp_path, project, user):
    bob = get_user_model().objects.create_user("bob-team", password="pw-bob-123")
    Membership.objects.create(project=project, user=bob, role=Role.MEMBER)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _session(a, "cccccccc-1111-4333-8444-555555555555", ["Read", "Read", "Bash"])  # 4 model calls
    _session(b, "dddddddd-1111-4333-8444-555555555555", ["Edit"])  # 2 model calls
    _import(project, a, user)
    _import(project, b, bob)
    html = _client(bob).get(f"/projects/{project.slug}/usage/?{RANGE}").content.decode()
    assert 'id="people-title">By person' in html
    for person, calls in ((user.username, 4), ("bob-team", 2)):
        total = _usage("monthly", "--project", project.slug, "--person", person)["total"]
        assert total["model_calls"] == calls
        row = html.split(f">{person}</a></td>")[1].split("</tr>")[0]
        cells = re.findall(r'<td class="num">([^<]*)</td>', row)
        assert cells[0] == f"${total['cost_usd']:,.2f}" and cells[1:3] == ["1", str(calls)]
    # the page of one person shows that person's sessions only
    alone = _client(bob).get(f"/projects/{project.slug}/usage/?{RANGE}&person=bob-team").content.decode()
    assert "1 · 2 model calls" in alone
    # The API and the command give the same side by side (by_person, --by-person).
    api = _client(bob).get(f"/api/projects/{project.slug}/usage?period=monthly&by_person=true&{RANGE}").json()
    command = _usage("monthly", "--project", project.slug, "--by-person", "--since", "2026-02-01", "--until", "2026-03-31")
    for people in (api["people"], command["people"]):
        assert [(p["person"], p["total"]["model_calls"], p["total"]["sessions"]) for p in people] == \
            sorted([("bob-team", 2, 1), (user.username, 4, 1)])
        assert sum(p["total"]["cost_usd"] for p in people) == pytest.approx(api["total"]["cost_usd"])
    assert _usage("monthly", "--project", project.slug)["people"] is None


def test_one_person_s_project_has_no_side_by_side(tmp_path, project, user):
    path = tmp_path / "solo.jsonl"
    _session(path, "eeeeeeee-1111-4333-8444-555555555555", ["Read"])
    _import(project, path, user)
    html = _client(user).get(f"/projects/{project.slug}/usage/?{RANGE}").content.decode()
    assert "By person" not in html


def test_prices_warmed_at_start_in_the_background_and_a_bad_price_file_said_by_the_page(tmp_path, project, user, settings,
                                                                                         monkeypatch):
    import threading

    from contextviewer import warmup

    failures = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    from contextviewer.usage import services

    bad = tmp_path / "prices.json"
    bad.write_text("{not json", encoding="utf-8")
    settings.USAGE_PRICES_FILE = str(bad)
    thread = warmup.warm_prices()  # what a web worker starts as it starts
    thread.join(timeout=30)
    assert not thread.is_alive() and failures == []  # done, and the bad file raised nothing in the thread
    settings.USAGE_PRICES_FILE = ""
    warmup.warm_prices().join(timeout=30)
    assert services.price_book().known("claude-opus-4-6")  # genai-prices' shipped data, read
    settings.USAGE_PRICES_FILE = str(bad)
    r = _client(user).get(f"/projects/{project.slug}/usage/?{RANGE}")
    assert r.status_code == 400 and "CONTEXTVIEWER_USAGE_PRICES" in r.content.decode()
