"""The figures of a project's analytics page: spend per day by model (the usage table's), model
calls per weekday and hour, peak context as a share of the window, and how often sessions compact.
Every query is aggregated in SQL or reads one row per session; the template only draws."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.apps import apps
from django.conf import settings
from django.db.models import Max
from django.utils.module_loading import import_string

from contextviewer.conversations.models import Conversation, ConversationKind
from contextviewer.core import model_specs, severity
from contextviewer.usage import charts, report, rows, services, tools

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


def words(project, q: Query) -> dict:
    """The page's query as the words of services.query."""
    return {"project": project.slug, "agent": q.agent, "person": q.person, "since": q.since.isoformat(),
            "until": q.until.isoformat(), "timezone": q.timezone or None}


def build(project, q: Query) -> dict:
    f, opts = services.query("daily", breakdown=True, **words(project, q))
    book = services.price_book()
    hours: dict[str, int] = {}
    sessions, calls, folds = rows.read(f, book, hours)
    table = report.table(sessions, calls, folds, book, opts)
    series: dict[str, dict[str, float]] = {}
    for line in table["lines"]:
        if line["model"] and line["cost_usd"]:
            series.setdefault(line["model"], {})[line["period"]] = line["cost_usd"]
    days = _days(q.since, q.until)
    mains = Conversation.objects.filter(project=project, parent__isnull=True).exclude(kind=ConversationKind.BUILD)
    # The days' bounds in the report's zone (a `__date` lookup runs a Python function per row on SQLite).
    mains = mains.filter(started_at__gte=datetime.combine(q.since, time.min, tzinfo=f.tz),
                         started_at__lt=datetime.combine(q.until + timedelta(days=1), time.min, tzinfo=f.tz))
    if q.agent:
        mains = mains.filter(agent=q.agent)
    if q.person:
        mains = mains.filter(pk__in=[s.id for s in sessions])
    return {
        "table": table,
        "hit_pct": None if table["total"]["cache_hit_rate"] is None else 100 * table["total"]["cache_hit_rate"],
        "spend": charts.stacked_bars(days, series),
        "heatmap": charts.heatmap(_activity(hours, q)),
        "peaks": _peaks(mains),
        "compaction": _compaction(mains),
        "needed_again": _needed_again(folds, sessions, opts),
        "people": services.people(sessions, calls, folds, book, opts, at_least=2),
        "days": len(days),
    }


def top_tools(project, q: Query, limit: int = 15) -> dict:
    """The tool calls of the range's sessions (of q.person, q.agent) by tool name, most used first,
    with each one's bar (a share of the most used)."""
    f, _ = services.query("daily", **words(project, q))
    lo = datetime.combine(q.since, time.min, tzinfo=f.tz)
    hi = datetime.combine(q.until + timedelta(days=1), time.min, tzinfo=f.tz)
    top = tools.top_tools(rows.member_ids(f), lo, hi, limit)
    most = max((n for _, n in top), default=0) or 1
    return [{"name": name, "calls": n, "pct": round(100 * n / most)} for name, n in top]


def _fold_measures():
    """The function an app above this one declares to measure folds (review's `usage_fold_measures`:
    fold ids -> lost facts needed again after each probed fold), or None: usage may not import review
    (the layers), so it is declared on that app's AppConfig by dotted path, as fold panels are."""
    paths = [getattr(config, "usage_fold_measures", "") for config in apps.get_app_configs()]
    path = next((p for p in paths if p), "")
    return import_string(path) if path else None


def _needed_again(folds, sessions, opts: report.Options) -> dict:
    """Per ISO week: the folds, those measured (probed with what followed them) and how many facts
    they lost that the conversation needed again after the fold; the rate is per measured fold."""
    started = {s.id: s.started for s in sessions}
    in_range = [fo for fo in folds if fo.fold is not None
                and report.in_range(fo.when or started.get(fo.session), opts.tz, opts.since, opts.until)]
    measure = _fold_measures()
    found = measure([fo.fold for fo in in_range]) if measure and in_range else {}
    weeks: dict[str, list[int]] = {}
    for fo in in_range:
        when = fo.when or started.get(fo.session)
        day = report.period_of(when, "weekly", opts.tz, None) if when is not None else "undated"
        row = weeks.setdefault(day, [0, 0, 0])
        row[0] += 1
        if fo.fold in found:
            row[1] += 1
            row[2] += found[fo.fold]
    lines = [{"week": w, "folds": n, "measured": m, "needed": k, "rate": k / m if m else None}
             for w, (n, m, k) in sorted(weeks.items())]
    chart = charts.stacked_bars([x["week"] for x in lines],
                                {"needed again per fold": {x["week"]: x["rate"] for x in lines if x["rate"]}},
                                unit="", digits=2, width=360, height=120)
    measured = sum(x["measured"] for x in lines)
    return {"lines": lines, "chart": chart, "folds": len(in_range), "measured": measured,
            "needed": sum(x["needed"] for x in lines),
            "rate": sum(x["needed"] for x in lines) / measured if measured else None}


def _activity(hours: dict[str, int], q: Query) -> dict[tuple[int, int], int]:
    """Model calls per weekday and hour in the page's time zone, from the calls per UTC hour the
    report's grouped query counted (the days of the range only)."""
    tz = ZoneInfo(q.timezone or settings.TIME_ZONE)
    out: dict[tuple[int, int], int] = {}
    for hour, n in hours.items():
        moment = rows.local(hour, tz)
        if moment is not None and q.since <= moment.date() <= q.until:
            key = (moment.weekday(), moment.hour)
            out[key] = out.get(key, 0) + n
    return out


def _peaks(mains) -> dict:
    """Each session's peak context as a share of its window (measured where a call records its prompt)."""
    shares, estimated, windows = [], 0, {}
    for peak, window, names, measured, calls in mains.filter(peak_context__gt=0).values_list(
            "peak_context", "window", "model_names", "measured_calls", "model_call_count"):
        model = str(names[-1]) if names else ""
        if (model, window) not in windows:
            windows[model, window] = model_specs.lookup(model, override_window=window).window
        if windows[model, window]:
            shares.append(peak / windows[model, window])
            estimated += bool(calls) and not measured  # Conversation.peak_estimated
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
