"""`manage.py usage` and GET /api/projects/{slug}/usage on sessions written here (no shared fixtures):
the same figures from both, streaming splits counted once, filters by project, person, agent, model,
days and time zone, and clear messages for bad words.

The sessions (tests/sessions.py SessionBuilder): each model call of claude-opus-4-6 records 3
uncached input, 900 cache writes (no 1-hour split: 5-minute writes), output 40, and cache reads of
the context so far minus 903, the context starting at 12,000 and growing 900 per call; a turn is
two calls, the first written as two lines (a text block and a tool_use block, each line repeating
the call's usage, as Claude Code streams).

Three turns = 6 calls: reads sum to 6 x (12,000 - 903) + 900 x (1 + 2 + ... + 6) = 66,582 + 18,900 =
85,482; writes 6 x 900 = 5,400; input 18; output 240. At Opus 4.6's list price ($5 input, $6.25
5-minute write, $0.50 read, $25 output per million): 18 x 5 = 90; 5,400 x 6.25 = 33,750;
85,482 x 0.5 = 42,741; 240 x 25 = 6,000 -> 82,581 / 1e6 = $0.082581.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from contextviewer.accounts.models import Membership, Role
from contextviewer.accounts.services import create_token, get_or_create_project
from contextviewer.ingest import imports
from contextviewer.jobs import queue as jobs
from tests.integration.viewer.test_read_api import check_contract
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db


def _import(project, path, user):
    job, _created = imports.start_import(project, paths=[path], user=user, enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == "succeeded", done.error


def _usage(*args) -> dict:
    out = StringIO()
    call_command("usage", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def world(tmp_path, project, user):
    """Project 'test-project': alice's 3-turn session; bob's 1-turn session in another project."""
    from django.contrib.auth import get_user_model

    a = tmp_path / "alice.jsonl"
    write_lines(a, session_lines(3, SessionBuilder("aaaaaaaa-2222-4333-8444-555555555555")))
    _import(project, a, user)
    other = get_or_create_project("Other project")
    bob = get_user_model().objects.create_user("bob", password="pw-bob-123")
    Membership.objects.create(project=other, user=bob, role=Role.OWNER)
    b = tmp_path / "bob.jsonl"
    write_lines(b, session_lines(1, SessionBuilder("bbbbbbbb-2222-4333-8444-555555555555")))
    _import(other, b, bob)
    return project, other


def test_a_session_s_calls_are_counted_once_and_priced_at_list_price(world):
    project, _other = world
    t = _usage("daily", "--project", project.slug)
    (line,) = t["lines"]
    assert line["period"] == "2026-03-01"
    assert line["tokens"] == {"input": 18, "cache_write": 5400, "cache_read": 85482, "output": 240, "reasoning": None}
    assert line["model_calls"] == 6 and line["sessions"] == 1 and line["folds"] == 0
    assert line["cost_usd"] == pytest.approx(0.082581) and line["cost_estimated_usd"] == line["cost_usd"]
    assert line["cache_hit_rate"] == round(85482 / (18 + 5400 + 85482), 4)


def test_filters_pick_the_sessions_of_a_project_a_person_a_model_and_days(world):
    both = _usage("monthly")["total"]
    assert both["sessions"] == 2 and both["model_calls"] == 8
    assert _usage("monthly", "--person", "bob")["total"]["model_calls"] == 2
    assert _usage("monthly", "--person", "alice")["total"]["model_calls"] == 6
    assert _usage("monthly", "--person", "carol")["lines"] == []
    assert _usage("monthly", "--model", "opus-4-6")["total"]["model_calls"] == 8
    assert _usage("monthly", "--model", "gpt")["lines"] == []
    assert _usage("monthly", "--agent", "codex")["lines"] == []
    assert _usage("daily", "--until", "2026-02-28")["lines"] == []
    # 12:00 UTC on 1 March is 2 March in Kiritimati (UTC+14)
    assert [ln["period"] for ln in _usage("daily", "--timezone", "Pacific/Kiritimati")["lines"]] == ["2026-03-02"]
    assert _usage("daily", "--since", "2026-03-02", "--timezone", "Pacific/Kiritimati")["total"]["model_calls"] == 8


@pytest.mark.parametrize("args, words", [
    (("daily", "--since", "March"), "since: give a date like 2026-01-31"),
    (("daily", "--timezone", "Mars/Olympus"), "not a known time zone"),
    (("daily", "--since", "2026-03-02", "--until", "2026-03-01"), "is after until"),
])
def test_bad_words_are_said(world, args, words):
    with pytest.raises(CommandError, match=words):
        call_command("usage", *args, stdout=StringIO())


def test_an_unknown_model_is_said_in_the_table_and_never_priced_at_zero(world, tmp_path, project, user):
    b = SessionBuilder("cccccccc-2222-4333-8444-555555555555")
    lines = [ln.replace("claude-opus-4-6", "house-model-7") for ln in session_lines(1, b)]
    path = tmp_path / "house.jsonl"
    write_lines(path, lines)
    _import(project, path, user)
    out = StringIO()
    call_command("usage", "monthly", "--breakdown", stdout=out)
    text = out.getvalue()
    assert "no price known for house-model-7" in text
    house = next(ln for ln in _usage("monthly", "--breakdown")["lines"] if ln.get("model") == "house-model-7")
    assert house["cost_complete"] is False and house["unpriced_calls"] == 2 and house["cost_usd"] == 0
    assert ">= $" in text.splitlines()[1]  # the month's cost is shown as a lower bound


def test_the_api_answers_the_command_s_figures(world, user):
    project, other = world
    c = Client()
    c.force_login(user)
    openapi = c.get("/api/openapi.json").json()
    for query in ("period=daily", "period=monthly&breakdown=true", "period=session&timezone=Europe/Paris", "period=weekly&person=alice"):
        got = c.get(f"/api/projects/{project.slug}/usage?{query}")
        assert got.status_code == 200, got.content
        params = dict(p.split("=") for p in query.split("&"))
        args = [params.pop("period"), "--project", project.slug]
        for k, v in params.items():
            args += [f"--{k}"] if k == "breakdown" else [f"--{k}", v]
        assert got.json() | {"filters": None} == _usage(*args) | {"filters": None}
        check_contract(openapi, "/api/projects/{slug}/usage", got)
    bad = c.get(f"/api/projects/{project.slug}/usage?since=yesterday")
    assert bad.status_code == 400 and bad.json()["detail"].startswith("since: give a date")
    check_contract(openapi, "/api/projects/{slug}/usage", bad)
    assert c.get(f"/api/projects/{other.slug}/usage").status_code == 404  # alice is not in bob's project


def test_a_token_reads_its_own_project_s_usage_only(world, user):
    project, other = world
    _token, raw = create_token(user, project, "ci")
    c = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert c.get(f"/api/projects/{project.slug}/usage").json()["total"]["model_calls"] == 6
    assert c.get(f"/api/projects/{other.slug}/usage").status_code == 404
    assert Client().get(f"/api/projects/{project.slug}/usage").status_code == 401
