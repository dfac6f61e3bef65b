"""Usage and spend across sessions: the table of a `usage` report, computed from plain rows.

Pure: no Django. rows.py reads the store into Call, Session and FoldRow rows; table() groups them
by period (day, ISO week, month, or session) in the reader's timezone, and per model with
`breakdown`. Every figure comes from the rows given: each model call is one Call (the importers
store a call once, deduplicated by the provider's message and request ids), so nothing here
counts a streaming split, a sidechain replay or a re-emitted event twice.

Cost of a call: the agent's own figure where its log recorded one (``recorded``), else the list
price of its tokens (``estimated``, from prices.PriceBook), else unknown: the call's model is
named in ``unpriced`` and its tokens still counted; a period with unpriced calls says so beside
its cost, which is then a lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, tzinfo
from decimal import Decimal

from contextviewer.usage.prices import CallUsage, PriceBook

PERIODS = ("daily", "weekly", "monthly", "session")
TOKEN_KINDS = ("input_uncached", "cache_write", "cache_read", "output")


@dataclass(frozen=True, slots=True)
class Session:
    """A session: a main conversation with its sub-agents' and compactions' conversations."""

    id: int
    label: str
    agent: str
    project: str
    person: str
    started: datetime | None
    model: str = ""  # the session's model, for a recorded cost it keeps per session only
    recorded_cost: Decimal | None = None  # the agent's own figure for the whole session, where calls have none


@dataclass(frozen=True, slots=True)
class Call:
    """One model call, or several of one session, model, day and price tier summed (rows.py sums in SQL:
    their list price is the sum of theirs, the tier being the same)."""

    session: int
    model: str
    when: datetime | date | None  # a moment, or the day in the report's time zone
    usage: CallUsage
    recorded_cost: Decimal | None = None  # the agent's own figure for this call
    calls: int = 1
    unmeasured: int | None = None  # of `calls`, those whose log records no usage (None: 1 when usage is all zero)
    prompt: int | None = None  # the prompt size that picks the price tier (None: usage.prompt)
    reasoning: int | None = None  # of the output, the reasoning tokens the log recorded apart (None: none recorded)


@dataclass(frozen=True, slots=True)
class FoldRow:
    session: int
    when: datetime | None
    fold: int | None = None  # the fold's id in the store


@dataclass(slots=True)
class Figures:
    """One line of the table."""

    period: str
    model: str | None = None
    input_uncached: int = 0
    cache_write: int = 0
    cache_read: int = 0
    output: int = 0
    reasoning: int | None = None  # of the output; None where no call of the line recorded it
    cost_recorded: Decimal = Decimal(0)
    cost_estimated: Decimal = Decimal(0)
    unpriced: set[str] = field(default_factory=set)
    unpriced_calls: int = 0
    sessions: set[int] = field(default_factory=set)
    model_calls: int = 0
    unmeasured_calls: int = 0  # calls whose log records no usage: counted, neither tokens nor cost
    folds: int = 0

    @property
    def cost(self) -> Decimal:
        return self.cost_recorded + self.cost_estimated

    @property
    def prompt(self) -> int:
        return self.input_uncached + self.cache_write + self.cache_read

    @property
    def cache_hit_rate(self) -> float | None:
        """Share of the prompt tokens read from the cache; None when no call recorded a prompt."""
        return self.cache_read / self.prompt if self.prompt else None

    def as_dict(self) -> dict:
        return {
            "period": self.period,
            "model": self.model,  # with breakdown: the model of this line; None: every model
            "tokens": {"input": self.input_uncached, "cache_write": self.cache_write, "cache_read": self.cache_read,
                       "output": self.output, "reasoning": self.reasoning},
            "cost_usd": float(round(self.cost, 6)),
            "cost_recorded_usd": float(round(self.cost_recorded, 6)),
            "cost_estimated_usd": float(round(self.cost_estimated, 6)),
            "cost_complete": not self.unpriced_calls,
            "unpriced_models": sorted(self.unpriced),
            "unpriced_calls": self.unpriced_calls,
            "cache_hit_rate": None if self.cache_hit_rate is None else round(self.cache_hit_rate, 4),
            "sessions": len(self.sessions),
            "model_calls": self.model_calls,
            "unmeasured_calls": self.unmeasured_calls,
            "folds": self.folds,
        }


def _day(when: datetime | date | None, tz: tzinfo) -> date | None:
    if isinstance(when, datetime):
        return when.astimezone(tz).date()
    return when


def period_of(when: datetime | date | None, period: str, tz: tzinfo, session: Session) -> str:
    if period == "session":
        return session.label
    day = _day(when if when is not None else session.started, tz)
    if day is None:
        return "undated"
    if period == "daily":
        return day.isoformat()
    if period == "weekly":
        year, week, _ = day.isocalendar()
        return f"{year}-W{week:02d}"
    return f"{day.year}-{day.month:02d}"


def in_range(when: datetime | date | None, tz: tzinfo, since: date | None, until: date | None) -> bool:
    """Whether a moment's day in `tz` falls within [since, until] (both inclusive, either open)."""
    if since is None and until is None:
        return True
    day = _day(when, tz)
    if day is None:
        return False
    return (since is None or day >= since) and (until is None or day <= until)


@dataclass(frozen=True, slots=True)
class Options:
    period: str = "daily"
    tz: tzinfo | None = None
    since: date | None = None
    until: date | None = None
    breakdown: bool = False


def _moment(when: datetime | date | None, tz: tzinfo) -> datetime | None:
    """A day's noon in `tz` (the date that picks a price), or the moment itself."""
    if when is None or isinstance(when, datetime):
        return when
    return datetime.combine(when, time(12), tzinfo=tz)


def table(sessions: list[Session], calls: list[Call], folds: list[FoldRow], prices: PriceBook, opts: Options) -> dict:
    """The report: its lines (one per period, or per period and model with breakdown), the totals
    and what could not be priced."""
    if opts.period not in PERIODS:
        raise ValueError(f"period: one of {', '.join(PERIODS)}, not {opts.period!r}")
    tz = opts.tz
    by_id = {s.id: s for s in sessions}
    lines: dict[tuple, Figures] = {}
    total = Figures(period="total")

    def line(session: Session, when: datetime | None, model: str | None, per_model: bool = True) -> list[Figures]:
        key = period_of(when, opts.period, tz, session)
        out = [lines.setdefault((key, None), Figures(period=key))]
        if opts.breakdown and per_model:
            name = model or "(unknown model)"
            out.append(lines.setdefault((key, name), Figures(period=key, model=name)))
        return out + [total]

    called = {call.session for call in calls}
    for call in calls:
        session = by_id.get(call.session)
        if session is None or not in_range(call.when or session.started, tz, opts.since, opts.until):
            continue
        cost = call.recorded_cost
        measured = any(getattr(call.usage, kind) for kind in TOKEN_KINDS)
        unmeasured = call.unmeasured if call.unmeasured is not None else (0 if measured else call.calls)
        priced_by_session = session.recorded_cost is not None  # the agent kept its cost per session only
        estimated = None
        if cost is None and measured and not priced_by_session:
            estimated = prices.cost(call.model, _moment(call.when or session.started, tz), call.usage, prompt=call.prompt)
        for f in line(session, call.when, call.model):
            f.model_calls += call.calls
            f.unmeasured_calls += unmeasured
            f.sessions.add(session.id)
            for kind in TOKEN_KINDS:
                setattr(f, kind, getattr(f, kind) + getattr(call.usage, kind))
            if call.reasoning is not None:
                f.reasoning = (f.reasoning or 0) + call.reasoning
            if cost is not None:
                f.cost_recorded += cost
            elif priced_by_session or not measured:
                continue
            elif estimated is not None:
                f.cost_estimated += estimated
            else:
                f.unpriced_calls += call.calls - unmeasured
                f.unpriced.add(call.model or "(unknown model)")
    for session in sessions:  # a session's own recorded cost, and sessions with no call at all
        if not in_range(session.started, tz, opts.since, opts.until):
            continue
        if session.recorded_cost is None and session.id in called:
            continue
        # no call and no cost: a session of its period, of no model
        for f in line(session, session.started, session.model or None, per_model=session.recorded_cost is not None):
            f.sessions.add(session.id)
            if session.recorded_cost is not None:
                f.cost_recorded += session.recorded_cost
    for fold in folds:
        session = by_id.get(fold.session)
        if session is None or not in_range(fold.when or session.started, tz, opts.since, opts.until):
            continue
        for f in line(session, fold.when, None, per_model=False):
            f.folds += 1
    ordered = [lines[k] for k in sorted(lines, key=lambda k: (k[0], k[1] is not None, k[1] or ""))]
    return {
        "period": opts.period,
        "timezone": str(tz),
        "since": opts.since.isoformat() if opts.since else None,
        "until": opts.until.isoformat() if opts.until else None,
        "prices": prices.database,
        "lines": [f.as_dict() for f in ordered],
        "total": total.as_dict(),
        "unpriced_models": sorted(total.unpriced),
    }

