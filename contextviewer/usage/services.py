"""One function behind `manage.py usage` and GET /api/projects/{slug}/usage: the query's words
checked (a clear message for each bad one), the rows read, the table computed."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.db.models import QuerySet

from contextviewer.usage import report, rows
from contextviewer.usage.prices import PriceBook, PriceFileError


class BadQuery(ValueError):
    """A word of the query that cannot be used; the message says which and what it takes."""


def _day(value: str | None, name: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise BadQuery(f"{name}: give a date like 2026-01-31, not {value[:40]!r}") from None


def _zone(name: str | None):
    try:
        return ZoneInfo(name or settings.TIME_ZONE)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadQuery(f"timezone: {name[:60]!r} is not a known time zone (e.g. UTC, Europe/Paris)") from None


_books: dict[str, tuple[float, PriceBook]] = {}


def price_book() -> PriceBook:
    """The prices: genai-prices' shipped data, with settings.USAGE_PRICES_FILE over it (read again when it changes)."""
    path = settings.USAGE_PRICES_FILE
    if not path:
        if "" not in _books:  # (built once: a PriceBook reads genai-prices' data)
            _books[""] = (0.0, PriceBook())
        return _books[""][1]
    try:
        stamp = Path(path).stat().st_mtime
    except OSError:
        stamp = -1.0
    cached = _books.get(path)
    if cached is None or cached[0] != stamp:
        try:
            cached = (stamp, PriceBook.from_file(path))
        except PriceFileError as exc:
            raise BadQuery(f"{exc} (CONTEXTVIEWER_USAGE_PRICES)") from None
        _books[path] = cached
    return cached[1]


def query(period: str, *, projects: QuerySet | None = None, project: str = "", agent: str = "", model: str = "",
          person: str = "", since: str | None = None, until: str | None = None, timezone: str | None = None,
          breakdown: bool = False) -> tuple[rows.Filters, report.Options]:
    """The query's words checked: the filters of the rows and the options of the table."""
    if period not in report.PERIODS:
        raise BadQuery(f"period: one of {', '.join(report.PERIODS)}, not {period[:40]!r}")
    tz = _zone(timezone)
    first, last = _day(since, "since"), _day(until, "until")
    if first and last and first > last:
        raise BadQuery(f"since ({first}) is after until ({last})")
    f = rows.Filters(projects=projects, project=project[:100], agent=agent[:40], model=model[:100], person=person[:150],
                     since=first, until=last, tz=tz)
    return f, report.Options(period, tz, first, last, breakdown)


def filters_of(f: rows.Filters) -> dict:
    return {"project": f.project or None, "agent": f.agent or None, "model": f.model or None, "person": f.person or None}


def usage(period: str, by_person: bool = False, **words) -> dict:
    """The report of `manage.py usage` and the API (the words of `query`); `by_person`: also each
    person's totals over the range (`people`), as the page shows them side by side."""
    f, opts = query(period, **words)
    book = price_book()
    sessions, calls, folds = rows.read(f, book)
    out = report.table(sessions, calls, folds, book, opts)
    out["filters"] = filters_of(f)
    out["people"] = people(sessions, calls, folds, book, opts) if by_person else None
    return out


def people(sessions, calls, folds, book: PriceBook, opts: report.Options, at_least: int = 1) -> list[dict]:
    """Each person's totals over the range, side by side (the person whose import brought a session
    in; "" for a watched folder's or a pushed one's without a user): one table per person over that
    person's rows. Empty when fewer than `at_least` people have sessions."""
    by_person: dict[str, list] = {}
    for s in sessions:
        by_person.setdefault(s.person, []).append(s)
    if len(by_person) < at_least:
        return []
    person_of = {s.id: s.person for s in sessions}
    calls_of: dict[str, list] = {}
    for c in calls:
        calls_of.setdefault(person_of.get(c.session, ""), []).append(c)
    totals = report.Options("monthly", opts.tz, opts.since, opts.until)
    out = []
    for name in sorted(by_person, key=lambda n: (n == "", n)):
        t = report.table(by_person[name], calls_of.get(name, []), folds, book, totals)["total"]
        if t["sessions"]:
            hit = t["cache_hit_rate"]
            out.append({"person": name, "total": t, "hit_pct": None if hit is None else 100 * hit})
    return out
