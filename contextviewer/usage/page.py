"""The figures of a project's analytics page: spend per day by model (the usage table's), model
calls per weekday and hour, peak context as a share of the window, and how often sessions compact.
Every query is aggregated in SQL or reads one row per session; the template only draws."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Count, Max

from contextviewer.conversations import figures
from contextviewer.conversations.models import Conversation, ConversationKind, ModelCall
from contextviewer.core import severity
from contextviewer.usage import charts, rows, services

DEFAULT_DAYS = 30
PEAK_EDGES = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
PEAK_LABELS = ["<10", "10", "20", "30", "40", "50", "60", "70", "80", "90", "≥100"]
SEVERITY_FILLS = {severity.OK: "#16a34a", severity.WARN: "#d97706", severity.CRITICAL: "#dc2626"}


@dataclass(frozen=True, slots=True)
class Query:
    since: date
    until: date
    person: str = ""
    agent: str = ""
    timezone: str = ""


def default_range(project) -> tuple[date, date]:
    """The 30 days up to the project's latest session start (today when it has none)."""
    latest = Conversation.objects.filter(project=project).aggregate(m=Max("started_at"))["m"]
    until = latest.date() if latest else date.today()
    return until - timedelta(days=DEFAULT_DAYS - 1), until


def _days(since: date, until: date) -> list[str]:
    return [(since + timedelta(days=i)).isoformat() for i in range((until - since).days + 1)]


def build(project, q: Query) -> dict:
    table = services.usage("daily", project=project.slug, agent=q.agent, person=q.person, since=q.since.isoformat(),
                           until=q.until.isoformat(), timezone=q.timezone or None, breakdown=True)
    series: dict[str, dict[str, float]] = {}
    for line in table["lines"]:
        if line["model"] and line["cost_usd"]:
            series.setdefault(line["model"], {})[line["period"]] = line["cost_usd"]
    days = _days(q.since, q.until)
    mains = Conversation.objects.filter(project=project, parent__isnull=True).exclude(kind=ConversationKind.BUILD)
    mains = mains.filter(started_at__date__gte=q.since, started_at__date__lte=q.until)
    if q.agent:
        mains = mains.filter(agent=q.agent)
    return {
        "table": table,
        "hit_pct": None if table["total"]["cache_hit_rate"] is None else 100 * table["total"]["cache_hit_rate"],
        "spend": charts.stacked_bars(days, series),
        "heatmap": charts.heatmap(_activity(project, q)),
        "peaks": _peaks(mains),
        "compaction": _compaction(mains),
        "days": len(days),
    }


def _activity(project, q: Query) -> dict[tuple[int, int], int]:
    """Model calls per weekday and hour in the page's time zone, counted per UTC hour in SQL."""
    tz = ZoneInfo(q.timezone or settings.TIME_ZONE)
    lo = datetime.combine(q.since, time.min, tzinfo=tz)
    hi = datetime.combine(q.until + timedelta(days=1), time.min, tzinfo=tz)
    calls = ModelCall.objects.filter(conversation__project=project, timestamp__gte=lo, timestamp__lt=hi)
    if q.agent:
        calls = calls.filter(conversation__agent=q.agent)
    out: dict[tuple[int, int], int] = {}
    for hour, n in calls.annotate(hour=rows.utc_hour(tz)).values_list("hour").annotate(n=Count("id")).order_by():
        moment = rows.local(hour, tz)
        if moment is not None:
            key = (moment.weekday(), moment.hour)
            out[key] = out.get(key, 0) + n
    return out


def _peaks(mains) -> dict:
    """Each session's peak context as a share of its window (measured where a call records its prompt)."""
    shares, estimated = [], 0
    for conv in mains.filter(peak_context__gt=0).only("id", "peak_context", "window", "model_names", "measured_calls",
                                                        "model_call_count"):
        window = figures.model_spec(conv).window
        if window:
            shares.append(conv.peak_context / window)
            estimated += conv.peak_estimated
    fills = [SEVERITY_FILLS[severity.severity_of_fraction(edge)] for edge in PEAK_EDGES[:-1]] + [SEVERITY_FILLS[severity.CRITICAL]]
    chart = charts.histogram(shares, PEAK_EDGES, PEAK_LABELS, fills=fills)
    chart["estimated"] = estimated
    return chart


def _compaction(mains) -> dict:
    """How many sessions compacted, and how many folds each main conversation made."""
    per_session = list(mains.values_list("fold_count", flat=True))
    compacted = sum(1 for n in per_session if n)
    chart = charts.histogram([float(n) for n in per_session], [0, 1, 2, 3, 5], ["0", "1", "2", "3–4", "5+"])
    return {"sessions": len(per_session), "compacted": compacted, "folds": sum(per_session), "chart": chart}
