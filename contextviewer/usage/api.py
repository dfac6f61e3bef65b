"""GET /api/projects/{slug}/usage: the figures of `manage.py usage`, from the same function
(services.usage), for one project the caller may read (a token: its own project only, 404 elsewhere)."""

from __future__ import annotations

from ninja import Query, Router, Schema
from ninja.responses import Status

from contextviewer.accounts.audit import audit_read
from contextviewer.accounts.permissions import get_project_for_user
from contextviewer.jobs.api import ErrorOut
from contextviewer.usage import services

router = Router(tags=["usage"])


class UsageTokensOut(Schema):
    input: int  # uncached input
    cache_write: int
    cache_read: int
    output: int
    reasoning: int | None  # of output, where the agent recorded it apart; else None


class UsageLineOut(Schema):
    period: str
    model: str | None = None  # with breakdown: the model of this line
    tokens: UsageTokensOut
    cost_usd: float  # recorded + estimated; a lower bound when cost_complete is false
    cost_recorded_usd: float  # the agent's own figure where its log kept one
    cost_estimated_usd: float  # the list price of the recorded tokens
    cost_complete: bool
    unpriced_models: list[str]  # "no price known for" these: their calls' cost is not in cost_usd
    unpriced_calls: int
    cache_hit_rate: float | None  # cache reads / (input + cache writes + cache reads)
    sessions: int
    model_calls: int
    unmeasured_calls: int  # calls whose log records no usage
    folds: int


class UsagePersonOut(Schema):
    person: str  # the username whose imports brought the sessions in; "" for sessions no one's import brought
    total: UsageLineOut


class UsageReportOut(Schema):
    period: str
    timezone: str
    since: str | None
    until: str | None
    prices: str  # the price database (and version) the estimates come from
    lines: list[UsageLineOut]
    total: UsageLineOut
    unpriced_models: list[str]
    filters: dict
    people: list[UsagePersonOut] | None = None  # with by_person: each person's totals over the range


@router.get("/projects/{slug}/usage", response={200: UsageReportOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut})
def project_usage(
    request,
    slug: str,
    period: str = Query("daily", description="daily, weekly (ISO weeks), monthly or session"),
    agent: str = Query("", description="an agent (format) name, e.g. claude-code"),
    model: str = Query("", description="a model name, or part of one"),
    person: str = Query("", description="the username whose imports brought the sessions in"),
    since: str = Query("", description="first day (ISO date), in `timezone`"),
    until: str = Query("", description="last day (ISO date, inclusive)"),
    timezone: str = Query("", description="the days' time zone, e.g. Europe/Paris (default: the server's)"),
    breakdown: bool = Query(False, description="a line per model under each period"),
    by_person: bool = Query(False, description="also each person's totals over the range (`people`)"),
):
    """Tokens by kind, spend, cache hit rate, sessions, model calls and folds of the project's sessions
    per period: the figures of `manage.py usage`."""
    project = get_project_for_user(request, slug)
    try:
        table = services.usage(period, project=project.slug,
                               agent=agent, model=model, person=person, since=since or None, until=until or None,
                               timezone=timezone or None, breakdown=breakdown, by_person=by_person)
    except services.BadQuery as exc:
        return Status(400, {"detail": str(exc)})
    audit_read(request, project, "usage", f"usage {period}")
    return Status(200, table)
