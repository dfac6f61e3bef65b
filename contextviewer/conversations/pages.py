"""Page data: queries in, plain data out. Views stay thin; templates only print.

Every function here issues a number of queries that does not grow with the conversation's
length: turns are summarized by aggregate queries grouped by turn, one bounded window at a time,
and the rest of a conversation is fetched as the reader scrolls or unfolds.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Case, Count, F, IntegerField, Max, Min, Q, QuerySet, Sum, Value, When
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from contextviewer.core import branches, budget, harness, registry, tokens
from contextviewer.core.headline import summary_headline
from contextviewer.core.severity import severity
from contextviewer.importers import formats

from contextviewer.conversations import calibration as gauges, page_cache, rendering, tool_display as tools, segments as windows
from contextviewer.conversations.models import Conversation, Fold, Message, ModelCall

TURN_PAGE = 25  # turn headers per window (the first page stays under 100 KB)
MESSAGES_PER_TURN_PAGE = 120  # messages of one expanded turn per request
ARCHIVED_FULL = 1  # latest archived segments shown whole (summary, turns on unfolding) on the first page
ARCHIVED_LISTED = 20  # older archived segments listed one line each at once (older ones load on request)
FOLD_MARKS = 60  # fold marks drawn on the curve, at most (close ones merge)
CURVE_POINTS = 400  # points drawn on the curve, at most
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}


# --- shared -----------------------------------------------------------------------------------


def model_spec(conv: Conversation):
    names = conv.model_names or []
    return registry.lookup(names[-1] if names else "", override_window=conv.window)


def percent(used: int | float | None, window: int | None) -> float:
    if not used or not window:
        return 0.0
    return 100.0 * used / window


# --- index ------------------------------------------------------------------------------------

SORTS = {
    "started": "started_at",
    "title": "title",
    "agent": "agent",
    "project": "project__name",
    "duration": "duration",
    "messages": "message_count",
    "calls": "model_call_count",
    "peak": "peak_context",
    "folds": "fold_count",
    "spend": "spend_tokens",
}
INDEX_PAGE_SIZE = 50


@dataclass
class IndexRow:
    conversation: Conversation
    window: int | None
    peak_pct: float
    severity: str
    duration: timedelta | None
    cost: float | None
    children: list[IndexRow] = field(default_factory=list)


@dataclass
class Filters:
    project: str = ""
    agent: str = ""
    model: str = ""
    date_from: date | None = None
    date_to: date | None = None
    has_compaction: bool = False
    sort: str = "-started"
    q: str = ""

    @classmethod
    def from_query(cls, data) -> Filters:
        def as_date(value: str) -> date | None:
            try:
                return date.fromisoformat(value) if value else None
            except ValueError:
                return None

        sort = data.get("sort", "-started")
        if sort.lstrip("-") not in SORTS:
            sort = "-started"
        return cls(
            project=data.get("project", "")[:100],
            agent=data.get("agent", "")[:40],
            model=data.get("model", "")[:100],
            date_from=as_date(data.get("from", "")),
            date_to=as_date(data.get("to", "")),
            has_compaction=data.get("compacted") in {"1", "on", "true"},
            sort=sort,
            q=data.get("q", "")[:200],
        )

    def apply(self, qs: QuerySet) -> QuerySet:
        if self.project:
            qs = qs.filter(project__slug=self.project)
        if self.agent:
            qs = qs.filter(agent=self.agent)
        if self.model:
            qs = qs.filter(model_names__icontains=self.model)
        if self.date_from:
            qs = qs.filter(started_at__date__gte=self.date_from)
        if self.date_to:
            qs = qs.filter(started_at__date__lte=self.date_to)
        if self.has_compaction:
            qs = qs.filter(fold_count__gt=0)
        return qs

    def order_by(self) -> list:
        key = SORTS[self.sort.lstrip("-")]
        desc = self.sort.startswith("-")
        expr = F(key).desc(nulls_last=True) if desc else F(key).asc(nulls_last=True)
        return [expr, "-id"]

    def query_without(self, *names: str) -> str:
        from urllib.parse import urlencode

        values = {
            "project": self.project,
            "agent": self.agent,
            "model": self.model,
            "from": self.date_from.isoformat() if self.date_from else "",
            "to": self.date_to.isoformat() if self.date_to else "",
            "compacted": "1" if self.has_compaction else "",
            "sort": self.sort if self.sort != "-started" else "",
            "q": self.q,
        }
        return urlencode({k: v for k, v in values.items() if v and k not in names})


def _row(conv: Conversation, sums: dict[int, list[dict]]) -> IndexRow:
    spec = model_spec(conv)
    window = spec.window if spec else None
    duration = conv.ended_at - conv.started_at if conv.started_at and conv.ended_at else None
    return IndexRow(
        conversation=conv,
        window=window,
        peak_pct=percent(conv.peak_context, window),
        severity=severity(conv.peak_context, window),
        duration=duration,
        cost=_cost(sums.get(conv.id, []), conv.window),
    )


# Prompt-size bands for long-prompt pricing (registry thresholds are 100k and 200k tokens).
_BANDS = (0, 100_000, 200_000)


def _cost(per_model: list[dict], window_override: int | None) -> float | None:
    """Spend in dollars at list price where every model's prices are known; None otherwise.

    Usage is summed per (model, prompt band) in SQL; each sum is priced by registry.cost with the
    tier its band falls in, so long-prompt pricing stays per call without reading every call."""
    if not per_model:
        return None
    total = 0.0
    for s in per_model:
        spec = registry.lookup(s["model"] or "", override_window=window_override)
        long = spec.long_prompt_over is not None and _BANDS[s["band"]] >= spec.long_prompt_over
        tier = replace(spec, long_prompt_over=0 if long else None)
        w5, w1 = registry.split_cache_write(s["cache_write"] or 0, s["cache_write_5m"], s["cache_write_1h"])
        value = registry.cost(
            tier,
            input_uncached=s["input_uncached"] or 0,
            cache_write_5m=w5,
            cache_write_1h=w1,
            cache_read=s["cache_read"] or 0,
            output=s["output"] or 0,
        )
        if value is None:
            return None
        total += value
    return total


def _usage_sums(conversation_ids: list[int]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    if not conversation_ids:
        return out
    prompt = F("input_uncached") + F("cache_write") + F("cache_read")
    band = Case(
        When(Q(prompt__gt=_BANDS[2]), then=Value(2)),
        When(Q(prompt__gt=_BANDS[1]), then=Value(1)),
        default=Value(0),
        output_field=IntegerField(),
    )
    rows = (
        ModelCall.objects.filter(conversation_id__in=conversation_ids)
        .annotate(prompt=prompt)
        .annotate(band=band)
        .values("conversation_id", "model", "band")
        .annotate(
            input_uncached=Sum("input_uncached"),
            cache_write=Sum("cache_write"),
            cache_write_5m=Sum("cache_write_5m"),
            cache_write_1h=Sum("cache_write_1h"),
            cache_read=Sum("cache_read"),
            output=Sum("output"),
        )
        .order_by()
    )
    for r in rows:
        out.setdefault(r["conversation_id"], []).append(r)
    return out


@dataclass
class IndexPage:
    filters: Filters
    page: Page
    rows: list[IndexRow]
    projects: list
    agents: list[str]
    models: list[str]
    total: int

    @property
    def sort_key(self) -> str:
        return self.filters.sort.lstrip("-")

    @property
    def sort_dir(self) -> str:
        return "desc" if self.filters.sort.startswith("-") else "asc"

    @property
    def sort_urls(self) -> dict[str, str]:
        """Per column: the query that sorts by it (toggling the direction of the current one)."""
        base = self.filters.query_without("sort", "page")
        urls = {}
        for key in SORTS:
            if key == self.sort_key:
                value = key if self.sort_dir == "desc" else f"-{key}"
            else:
                value = key if key in {"title", "agent", "project"} else f"-{key}"
            urls[key] = (base + "&" if base else "") + f"sort={value}"
        return urls

    @property
    def page_query(self) -> str:
        base = self.filters.query_without("page")
        return base + "&" if base else ""


def index_page(user, data) -> IndexPage:
    from contextviewer.accounts.models import Project

    filters = Filters.from_query(data)
    base = Conversation.objects.for_user(user)
    qs = (
        filters.apply(base.top_level())
        .select_related("project")
        .annotate(duration=F("ended_at") - F("started_at"), child_count=Count("children", distinct=True))
        .order_by(*filters.order_by())
    )
    paginator = Paginator(qs, INDEX_PAGE_SIZE)
    page = paginator.get_page(data.get("page"))
    convs = list(page.object_list)
    children = list(
        base.filter(parent__in=[c.id for c in convs]).select_related("project").order_by("started_at", "id")[:2000]
    )
    # Spend per conversation: kept per version of its row (page_cache), summed for the others only.
    sums = page_cache.per_conversation(convs + children, "spend", _usage_sums, [])
    rows = [_row(c, sums) for c in convs]
    by_id = {r.conversation.id: r for r in rows}
    for child in children:
        by_id[child.parent_id].children.append(_row(child, sums))
    agents = list(base.order_by().values_list("agent", flat=True).distinct())
    models = sorted({m for names in base.order_by().values_list("model_names", flat=True).distinct()[:500] for m in names or []})
    return IndexPage(
        filters=filters,
        page=page,
        rows=rows,
        projects=list(Project.objects.for_user(user)),
        agents=agents,
        models=models,
        total=paginator.count,
    )


# --- conversation: gauge and curve ------------------------------------------------------------


@dataclass
class GaugeBar:
    key: str
    label: str
    tokens: int
    x: float  # percent of the bar
    width: float


@dataclass
class GaugeView:
    gauge: Any  # core.budget.Gauge
    bars: list[GaugeBar]
    used_pct: float
    cache_pct: float | None
    thresholds: list[tuple[str, int, float]]  # (label, tokens, percent of the bar)
    scale: int
    unavailable: list[str] = field(default_factory=list)  # labels of categories the gauge cannot size


def gauge_upto(latest: ModelCall | None, loaded: windows.LoadedInput) -> int | None:
    """The gauge shows what the latest call saw (the messages before it, not its own output), or,
    when the latest fold came after that call (a handoff made here, a fold at the end of the log)
    or that call wrote the fold's summary (opencode's compaction), the loaded view as it is now:
    None."""
    if latest is None:
        return None
    if loaded.fold is not None:
        summary_at = loaded.segment.summary_position if loaded.segment is not None else None
        if latest.position <= max(loaded.fold.position, summary_at if summary_at is not None else loaded.fold.position):
            return None
    return latest.position


def gauge_view(
    conv: Conversation,
    spec,
    latest: ModelCall | None,
    loaded: windows.LoadedInput,
    categories: dict[str, int] | None = None,
    fitted: budget.Calibration | None = None,
) -> GaugeView | None:
    """`categories`: the loaded categories when the caller holds them (page_cache), else summed
    here; `fitted`: the conversation's calibration (gauges.calibration), likewise."""
    if not spec or not spec.window:
        return None
    upto = gauge_upto(latest, loaded)
    if categories is None:
        categories = _loaded_categories(conv, loaded, upto)
    if fitted is None:
        fitted = gauges.calibration(conv)
    # A call whose log records no usage (usage 0: SWE-agent's steps, a re-imported export) is not
    # "0 tokens, measured": the gauge is then an estimate. After a later fold the latest
    # measurement is of a window that is gone: an estimate too.
    measured = (latest.context_size or None) if latest is not None and upto is not None else None
    prompt = gauges.unlogged_prompt(conv)
    g = budget.gauge(
        categories,
        spec=spec,
        measured=measured,
        cache_read=(latest.cache_read if measured else 0),
        agent=conv.agent,
        fitted=fitted,
        segment=fitted.segment_of(upto) if upto is not None else None,
        prompt=prompt.tokens,
        unavailable=prompt.unavailable,
        captured_version=prompt.version,
        captured_exact=prompt.exact,
    )
    parts = g.bar()
    # Over-full windows (a measurement above the window) widen the bar rather than hide the excess.
    scale = max(g.window, sum(t for _, _, t in parts), 1)
    bars: list[GaugeBar] = []
    x = 0.0
    for key, label, value in parts:
        width = 100.0 * value / scale
        bars.append(GaugeBar(key, label, value, x, width))
        x += width
    return GaugeView(
        gauge=g,
        bars=bars,
        used_pct=percent(g.used, g.window),
        cache_pct=100.0 * g.cache_fraction if g.cache_fraction is not None else None,
        thresholds=[(label, tokens, 100.0 * tokens / scale) for label, tokens in g.thresholds],
        scale=scale,
        unavailable=[tokens.LABELS[key] for key in g.unavailable],
    )


def _loaded_categories(conv: Conversation, loaded: windows.LoadedInput, upto: int | None) -> dict[str, int]:
    """Estimated tokens per category of what the latest call saw: one aggregate query over the
    loaded segment (summary, preserved tail, everything after the latest fold)."""
    if loaded.segment is None:
        return {}
    qs = Message.objects.filter(conversation=conv).filter(loaded.positions_q())
    if upto is not None:  # what the call at `upto` saw: the messages before it
        qs = qs.filter(position__lt=upto)
    keys = list(tokens.CATEGORIES)
    sums = qs.aggregate(**{f"c_{i}": Sum(Cast(KeyTextTransform(k, "tokens"), IntegerField())) for i, k in enumerate(keys)})
    out = {k: int(sums[f"c_{i}"] or 0) for i, k in enumerate(keys)}
    # A summary kept beside the messages (efferent's checkpoints, picoclaw's meta file, a handoff
    # made here) is in the window too, once its fold comes before the call.
    if loaded.summary_text and (upto is None or loaded.fold.position < upto):
        out["summary"] += tokens.count_text(loaded.summary_text)
    return out


@dataclass
class CurvePoint:
    x: float
    y_measured: float | None
    y_estimated: float | None
    position: int
    turn: int | None
    measured: int
    estimated: int
    severity: str


@dataclass
class CurveView:
    width: int
    height: int
    points: list[CurvePoint]
    measured_path: str
    estimated_path: str
    bands: list[tuple[str, float, float]]  # (severity, y, height)
    folds: list[dict]
    ymax: int
    window: int | None
    total_calls: int
    data: str  # compact figures for app.js hover: x,position,turn,measured,estimated;...
    ticks: list[tuple[float, str]]
    thresholds: list[tuple[str, int, float]] = field(default_factory=list)  # the harness's auto-fold: (label, tokens, y)


def curve_view(conv: Conversation, spec, folds: list[Fold]) -> CurveView | None:
    calls = windows.call_points(conv)
    if not calls:
        return None
    window = calls[-1].window
    fold_positions = sorted(f.position for f in folds)
    measured_values = [c.measured or 0 for c in calls]
    keep = downsample(measured_values, [c.position for c in calls], fold_positions, CURVE_POINTS)
    peak = max(max(measured_values), max(c.estimated or 0 for c in calls))
    ymax = max(window or 0, peak, 1)
    width, height = 1000, 250
    n = len(calls)

    def y(v: float) -> float:
        return round(height - height * min(v, ymax) / ymax, 1)

    def x_of(i: int) -> float:
        if n == 1:  # one call: its point (drawn as a dot, a path through one point draws nothing) mid-chart
            return round(width / 2, 1)
        return round(width * i / (n - 1), 1)

    points = []
    for i in keep:
        call = calls[i]
        measured, est = call.measured or 0, call.estimated or 0
        points.append(
            CurvePoint(
                x=x_of(i),
                y_measured=y(measured) if measured else None,
                y_estimated=y(est) if est else None,
                position=call.position,
                turn=call.turn,
                measured=measured,
                estimated=est,
                severity=call.severity,
            )
        )
    measured_path = _path([(p.x, p.y_measured) for p in points])
    estimated_path = _path([(p.x, p.y_estimated) for p in points])
    bands = []
    if window:
        bands = [
            ("warn", y(window * 0.9), y(window * 0.7) - y(window * 0.9)),
            ("critical", y(window), y(window * 0.9) - y(window)),
        ]
    call_positions = [c.position for c in calls]
    fold_marks = []
    import bisect

    for f in folds:
        i = bisect.bisect_right(call_positions, f.position)
        fold_marks.append(
            {
                "x": x_of(min(i, n - 1)),
                "trigger": f.trigger or f.kind,
                "before": f.tokens_before,
                "after": f.tokens_after,
                "position": f.position,
            }
        )
    if len(fold_marks) > FOLD_MARKS:
        fold_marks = _merge_marks(fold_marks, width)
    data = ";".join(f"{p.x},{p.position},{'' if p.turn is None else p.turn},{p.measured},{p.estimated}" for p in points)
    ticks = [(y(v), _short(v)) for v in _ticks(ymax)]
    last_spec = windows.call_spec(conv, calls[-1].model)
    line = harness.rules(conv.agent, last_spec).fold_line(last_spec)
    thresholds = [(line[0], line[1], y(line[1]))] if line else []
    return CurveView(
        width, height, points, measured_path, estimated_path, bands, fold_marks, ymax, window, n, data, ticks, thresholds
    )


def _merge_marks(marks: list[dict], width: int) -> list[dict]:
    """At most FOLD_MARKS fold marks: marks closer than width / FOLD_MARKS become one (its title
    counts them), so a conversation of hundreds of folds draws a bounded curve."""
    out: list[dict] = []
    step = width / FOLD_MARKS
    for m in marks:
        if out and m["x"] - out[-1]["x"] < step:
            out[-1]["count"] = out[-1].get("count", 1) + 1
            out[-1]["after"] = m["after"]
            continue
        out.append(dict(m))
    return out


def _ticks(ymax: int) -> list[int]:
    step = 10 ** max(0, int(math.log10(max(ymax, 1))))
    while ymax / step < 3:
        step //= 2 if step > 1 else 1
        if step <= 1:
            break
    while ymax / step > 6:
        step *= 2
    return list(range(0, ymax + 1, max(step, 1)))[1:]


def _short(v: int) -> str:
    if v >= 1_000_000:
        return f"{v / 1_000_000:.1f}M"
    if v >= 1000:
        return f"{v / 1000:.0f}k"
    return str(v)


def _path(points: list[tuple[float, float | None]]) -> str:
    parts = []
    pen = False
    for x, y in points:
        if y is None:
            pen = False
            continue
        parts.append(f"{'L' if pen else 'M'}{x} {y}")
        pen = True
    return " ".join(parts)


def downsample(values: list[int], positions: list[int], fold_positions: list[int], limit: int) -> list[int]:
    """Indices to draw: every point when few; else per bucket the maximum and the minimum, plus the
    last call before and the first call after each fold (so drops stay drops), plus both ends."""
    n = len(values)
    if n <= limit:
        return list(range(n))
    import bisect

    keep = {0, n - 1}
    for fp in fold_positions:
        i = bisect.bisect_right(positions, fp)
        if 0 < i < n:
            keep.update((i - 1, i))
    buckets = max(1, (limit - len(keep)) // 2)
    size = n / buckets
    for b in range(buckets):
        lo, hi = int(b * size), min(n, int((b + 1) * size))
        if lo >= hi:
            continue
        chunk = range(lo, hi)
        keep.add(max(chunk, key=values.__getitem__))
        keep.add(min(chunk, key=values.__getitem__))
    return sorted(keep)


# --- conversation: segments and turns ---------------------------------------------------------


@dataclass
class SegmentView:
    index: int
    kind: str  # archived | loaded
    start: int
    end: int
    fold: Fold | None  # the fold heading an archived segment; the latest fold for the loaded one
    first_turn: int | None
    last_turn: int | None
    turn_count: int
    summary_position: int | None
    preserved_positions: list[int]
    open: bool = False
    turns: TurnWindow | None = None
    fold_cost: float | None = None  # the summarizer's own call(s), USD at list price

    @property
    def fold_cost_tokens(self) -> tuple[int, int] | None:
        cost = (self.fold.cost or {}) if self.fold else {}
        if not cost:
            return None
        prompt = sum(int(cost.get(k) or 0) for k in ("input_uncached", "cache_write", "cache_read"))
        return prompt, int(cost.get("output") or 0)

    @property
    def element_id(self) -> str:
        return f"segment-{self.index}"

    @property
    def headline(self) -> str:
        """One line of the fold's summary (the compact list of older folds)."""
        return summary_headline(self.fold.summary_text) if self.fold else ""


@dataclass
class TurnHeader:
    turn: int
    first_position: int
    last_position: int
    messages: int
    tools: int
    tokens: int
    started: datetime | None
    ended: datetime | None
    first_line: str
    role: str
    is_summary: bool
    branch_of: int | None = None  # the turn opens an abandoned branch: the turn the log went on with


@dataclass
class TurnWindow:
    segment: int
    start: int
    end: int
    turns: list[TurnHeader]
    earlier_from: int | None  # first turn of the window before this one, when there is one
    later_from: int | None  # first turn after this window, when there is one
    to_turn: int | None


def positions_bounds(conv: Conversation) -> tuple[int | None, int | None]:
    return windows.bounds(conv)


def conversation_segments(conv: Conversation, win: windows.Window) -> list[SegmentView]:
    """The segments of the conversation's window (windows.load), with their turns."""
    raw = win.segments
    if not raw:
        return []
    # Turn numbers at every segment edge: one query, bounded by the number of segments.
    edges = {p for s in raw for p in (s.start, s.end)}
    turn_at = dict(Message.objects.filter(conversation=conv, position__in=edges).values_list("position", "turn"))
    out = []
    for i, s in enumerate(raw):
        first, last = turn_at.get(s.start), turn_at.get(s.end)
        fold = win.fold_of(s)
        out.append(
            SegmentView(
                index=i,
                kind=s.kind,
                start=s.start,
                end=s.end,
                fold=fold,
                first_turn=first,
                last_turn=last,
                turn_count=(last - first + 1) if first is not None and last is not None else 0,
                summary_position=s.summary_position,
                preserved_positions=list(s.preserved_positions or ()),
                fold_cost=_fold_cost(fold, conv.window) if fold and s.kind == "archived" else None,
            )
        )
    return out


def _fold_cost(fold: Fold, window: int | None) -> float | None:
    cost = fold.cost or {}
    if not cost:
        return None
    return _cost(
        [
            {
                "model": cost.get("model") or "",
                "band": 0,
                "input_uncached": cost.get("input_uncached"),
                "cache_write": cost.get("cache_write"),
                "cache_write_5m": None,
                "cache_write_1h": None,
                "cache_read": cost.get("cache_read"),
                "output": cost.get("output"),
            }
        ],
        window,
    )


def segment_folds(conv: Conversation) -> list[Fold]:
    """Folds that put messages away behind a summary (microcompactions only clear tool output)."""
    return windows.segment_folds(conv)


def turn_window(
    conv: Conversation, segment: int, start: int, end: int, from_turn: int | None = None, to_turn: int | None = None
) -> TurnWindow:
    """One window of turn headers inside positions [start, end]: three queries, whatever the length."""
    in_segment = Message.objects.filter(conversation=conv, position__gte=start, position__lte=end)
    qs = in_segment
    if from_turn is not None:
        qs = qs.filter(turn__gte=from_turn)
    if to_turn is not None:
        qs = qs.filter(turn__lte=to_turn)
    # The window's turns first, from the (conversation, turn, position) index alone; then the
    # figures of those turns only (by the list alone: given a turn range too, SQLite reads every
    # message from there to the end). Grouping the whole segment by turn would read (and match
    # the blocks of) every message in it: a window would cost as much as the segment is long.
    window_turns = list(qs.order_by("turn").values_list("turn", flat=True).distinct()[: TURN_PAGE + 1])
    groups = [] if not window_turns else list(
        in_segment.filter(turn__in=window_turns)
        .values("turn")
        .annotate(
            first=Min("position"),
            last=Max("position"),
            n=Count("id"),
            tokens=Sum("token_total"),
            started=Min("timestamp"),
            ended=Max("timestamp"),
            tools=Count("id", filter=Q(blocks__icontains='"tool_call"')),
        )
        .order_by("turn")
    )
    later_from = groups[TURN_PAGE]["turn"] if len(groups) > TURN_PAGE else None
    groups = groups[:TURN_PAGE]
    firsts = {
        m.position: m
        for m in Message.objects.filter(conversation=conv, position__in=[g["first"] for g in groups]).only(
            "position", "blocks", "role", "is_compact_summary"
        )
    }
    headers = []
    for g in groups:
        m = firsts.get(g["first"])
        headers.append(
            TurnHeader(
                turn=g["turn"],
                first_position=g["first"],
                last_position=g["last"],
                messages=g["n"],
                tools=g["tools"],
                tokens=g["tokens"] or 0,
                started=g["started"],
                ended=g["ended"],
                first_line=_first_line(m) if m else "",
                role=m.role if m else "",
                is_summary=bool(m and m.is_compact_summary),
                branch_of=branch_marks(conv).turns.get(g["turn"]),
            )
        )
    earlier_from = None
    if from_turn is not None and headers:
        seg_first = Message.objects.filter(conversation=conv, position=start).values_list("turn", flat=True).first()
        if seg_first is not None and seg_first < headers[0].turn:
            earlier_from = max(seg_first, headers[0].turn - TURN_PAGE)
    return TurnWindow(segment, start, end, headers, earlier_from, later_from, to_turn)


@dataclass
class BranchMarks:
    """Messages on abandoned branches (core.branches), each with the turn of the message the log
    went on with at that fork; and the turns made only of such messages."""

    positions: dict[int, int] = field(default_factory=dict)
    turns: dict[int, int] = field(default_factory=dict)


def branch_marks(conv: Conversation) -> BranchMarks:
    """The conversation's branch marks: one query when no two user or assistant messages share a
    parent (nearly every conversation), two otherwise; kept on the instance for the request."""
    cached = getattr(conv, "_branch_marks", None)
    if cached is not None:
        return cached
    marks = BranchMarks()
    forks = (
        Message.objects.filter(conversation=conv, role__in=sorted(branches.HEAD_ROLES), parent_uuid__isnull=False)
        .values("parent_uuid")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    if forks.exists():
        rows = list(
            Message.objects.filter(conversation=conv)
            .order_by("position")
            .values_list("position", "turn", "uuid", "parent_uuid", "role", "api_message_id")
        )
        nodes = [branches.Node(uuid, parent, role, call or "") for _, _, uuid, parent, role, call in rows]
        abandoned = branches.abandoned(nodes)
        marks.positions = {rows[i][0]: rows[kept][1] for i, kept in abandoned.items()}
        # A turn is marked only when all of it was abandoned (a turn may hold both, in file order).
        whole: dict[int, int | None] = {}
        for i, row in enumerate(rows):
            turn = row[1]
            kept_turn = rows[abandoned[i]][1] if i in abandoned else None
            if turn not in whole:
                whole[turn] = kept_turn
            elif whole[turn] is not None and kept_turn is None:
                whole[turn] = None
        marks.turns = {t: k for t, k in whole.items() if k is not None}
    conv._branch_marks = marks
    return marks


def _first_line(m: Message) -> str:
    for b in m.blocks or []:
        if not isinstance(b, dict):
            continue
        kind = b.get("kind")
        if kind in {"text", "thinking"} and b.get("text"):
            return rendering.first_line(b["text"]).lstrip("#> ")
        if kind == "tool_call":
            return f"{b.get('tool_name') or 'tool'}: " + rendering.first_line(b.get("text") or "")
        if kind == "tool_result":
            return "result: " + rendering.first_line(b.get("text") or "")
        if kind == "image":
            return "[image]"
    return ""


@dataclass
class ConversationPage:
    conversation: Conversation
    spec: Any
    gauge: GaugeView | None
    curve: CurveView | None
    segments: list[SegmentView]
    hidden_archived: int  # older archived segments not even listed (they load on request)
    folds: list[Fold]
    latest: ModelCall | None
    last_turn: int | None
    focus_turn: int | None
    parent: Conversation | None
    children: list[Conversation]
    spend_cost: float | None
    listed: list[SegmentView] = field(default_factory=list)  # older archived segments, one line each
    listed_before: int | None = None  # index of the oldest listed segment, when older ones are hidden


@dataclass
class FoldList:
    """Archived segments as one line each, newest last, and how many older ones are left."""

    rows: list[SegmentView]
    hidden: int
    before: int | None  # index of the oldest row, when older ones are left


def fold_list(conv: Conversation, before: int | None = None, segs: list[SegmentView] | None = None) -> FoldList:
    """The archived segments older than index `before`: the newest ARCHIVED_LISTED of them."""
    if segs is None:
        segs = conversation_segments(conv, windows.load(conv))
    older = [s for s in segs if s.kind == "archived" and (before is None or s.index < before)]
    rows = older[-ARCHIVED_LISTED:]
    hidden = len(older) - len(rows)
    return FoldList(rows, hidden, rows[0].index if hidden and rows else None)


def conversation_page(conv: Conversation, focus_turn: int | None = None) -> ConversationPage:
    spec = model_spec(conv)
    win = windows.load(conv)
    folds = win.folds
    segs = conversation_segments(conv, win)
    latest = ModelCall.objects.filter(conversation=conv).order_by("-position", "-id").first()
    # Figures that scan the whole conversation are computed once per conversation version.
    version = page_cache.version(conv, win)
    loaded = windows.loaded_input(conv, win)
    categories = None
    if spec and spec.window:
        categories = page_cache.figures(
            conv, win, "gauge", lambda: _loaded_categories(conv, loaded, gauge_upto(latest, loaded)), version
        )
    fitted = page_cache.figures(conv, win, "calibration", lambda: gauges.calibration(conv), version)
    gauge = gauge_view(conv, spec, latest, loaded, categories, fitted)
    curve = page_cache.figures(conv, win, "curve", lambda: curve_view(conv, spec, folds), version)
    last_turn = Message.objects.filter(conversation=conv).order_by("-position").values_list("turn", flat=True).first()

    target = None
    if focus_turn is not None:
        # The segment holding the turn opens at a window starting from that turn.
        pos = Message.objects.filter(conversation=conv, turn=focus_turn).order_by("position").values_list("position", flat=True).first()
        if pos is not None:
            target = next((s for s in segs if s.start <= pos <= s.end), None)
    for s in segs:
        if s is target:
            s.open = True
            s.turns = turn_window(conv, s.index, s.start, s.end, from_turn=focus_turn)
        elif s.kind == "loaded" and target is None:
            s.open = True
            s.turns = turn_window(conv, s.index, s.start, s.end)
    # The first page stays small however many folds: the latest archived segments (and the one
    # holding the focused turn) whole, the older ones one line each, the oldest on request.
    archived = [s for s in segs if s.kind == "archived"]
    whole = {id(s) for s in archived[-ARCHIVED_FULL:]} | {id(s) for s in archived if s.open}
    older = fold_list(conv, segs=[s for s in archived if id(s) not in whole])
    segs = [s for s in segs if s.kind != "archived" or id(s) in whole]
    children = list(conv.children.order_by("started_at", "id").only("id", "title", "external_id", "agent_type", "message_count", "parent_tool_use_id", "peak_context", "started_at")[:200])
    parent = conv.parent if conv.parent_id else None
    sums = page_cache.figures(conv, win, "spend", lambda: _usage_sums([conv.id]), version)
    return ConversationPage(
        conversation=conv,
        spec=spec,
        gauge=gauge,
        curve=curve,
        segments=segs,
        hidden_archived=older.hidden,
        listed=older.rows,
        listed_before=older.before,
        folds=folds,
        latest=latest,
        last_turn=last_turn,
        focus_turn=focus_turn,
        parent=parent,
        children=children,
        spend_cost=_cost(sums.get(conv.id, []), conv.window),
    )


def segment_by_index(conv: Conversation, index: int) -> SegmentView | None:
    segs = conversation_segments(conv, windows.load(conv))
    return segs[index] if 0 <= index < len(segs) else None


# --- one turn: messages -> blocks -------------------------------------------------------------


@dataclass
class BlockView:
    message_id: int
    index: int
    kind: str
    mode: str  # markdown | ansi | plain | json | image | other
    text: str = ""
    clip: rendering.Clip | None = None
    ansi: list[rendering.Segment] | None = None
    tool_name: str = ""
    tool_id: str = ""
    is_error: bool = False
    media_type: str = ""
    data_size: int = 0
    image_index: int | None = None
    images: list[int] = field(default_factory=list)  # image indices inside a tool result
    raw_type: str = ""
    result: BlockView | None = None  # a tool call's result, shown under it
    result_tokens: dict | None = None
    subagent: Conversation | None = None
    tool_input: Any = None
    extra: dict | None = None  # a tool result's run as the log records it beside the text (Block.extra)
    tool: tools.ToolView | None = None  # a tool call as people read it (None: the generic view)

    @property
    def element_id(self) -> str:
        return f"b-{self.message_id}-{self.index}"


@dataclass
class MessageView:
    message: Message
    blocks: list[BlockView]
    tokens: list[tuple[str, int]]
    branch_of: int | None = None  # on an abandoned branch: the turn the log went on with
    branch_starts: bool = False  # the first message shown of a run on an abandoned branch (badged)


@dataclass
class TurnView:
    turn: int
    messages: list[MessageView]
    more_from: int | None  # position to continue from, when the turn has more messages


def block_view(message: Message, index: int, block: dict, image_index: int | None, full: bool = False) -> BlockView:
    kind = block.get("kind") or "other"
    text = block.get("text") or ""
    if not isinstance(text, str):
        text = str(text)
    view = BlockView(message_id=message.id, index=index, kind=kind, mode="plain", text=text)
    view.tool_name = str(block.get("tool_name") or "")
    view.tool_id = str(block.get("tool_id") or "")
    view.is_error = bool(block.get("is_error"))
    view.raw_type = str(block.get("raw_type") or "")
    if kind == "tool_result" and isinstance(block.get("extra"), dict):
        view.extra = block["extra"]
    if kind == "tool_call":
        view.mode = "json"
        view.tool_input = block.get("tool_input")
        view.text = rendering.tool_input_text(view.tool_input, text)
    elif kind == "image":
        view.mode = "image"
        view.media_type = str(block.get("media_type") or "")
        view.data_size = int(block.get("data_size") or 0)
        view.image_index = image_index
        return view
    elif kind == "text" and (message.role == "assistant" or message.is_compact_summary):
        view.mode = "markdown"
    elif kind == "tool_result" and rendering.has_ansi(view.text):
        view.mode = "ansi"
    elif kind == "other":
        view.mode = "other"
    view.clip = rendering.clip(view.text, limit=10**12 if full else rendering.BLOCK_LIMIT)
    if view.clip.clipped:
        view.mode = "ansi" if view.mode == "ansi" else "plain"  # a clipped head is shown verbatim
    if view.mode == "ansi":
        view.ansi = rendering.ansi_segments(view.clip.head)
        view.clip = rendering.Clip("", rendering.strip_ansi(view.clip.tail), view.clip.hidden)
    return view


def _message_blocks(message: Message, full: bool = False) -> list[BlockView]:
    views = []
    image_index = 0
    for i, b in enumerate(message.blocks or []):
        if not isinstance(b, dict):
            b = {"kind": "other", "text": str(b)}
        v = block_view(message, i, b, image_index if b.get("kind") == "image" else None, full)
        if b.get("kind") == "image":
            image_index += 1
        elif b.get("kind") == "tool_result" and b.get("images"):
            count = int(b.get("images") or 0)
            v.images = list(range(image_index, image_index + count))
            image_index += count
        views.append(v)
    return views


def turn_view(conv: Conversation, turn: int, from_position: int | None = None) -> TurnView:
    qs = Message.objects.filter(conversation=conv, turn=turn).order_by("position")
    if from_position is not None:
        qs = qs.filter(position__gte=from_position)
    rows = list(qs.defer("raw")[: MESSAGES_PER_TURN_PAGE + 1])
    more_from = rows[MESSAGES_PER_TURN_PAGE].position if len(rows) > MESSAGES_PER_TURN_PAGE else None
    rows = rows[:MESSAGES_PER_TURN_PAGE]
    per_message = [(m, _message_blocks(m)) for m in rows]
    # Tool calls sit with their results: a result found in this window moves under its call.
    calls = {b.tool_id: b for _, blocks in per_message for b in blocks if b.kind == "tool_call" and b.tool_id}
    children = {}
    if calls:
        children = {c.parent_tool_use_id: c for c in conv.children.filter(parent_tool_use_id__in=list(calls)).only("id", "title", "external_id", "agent_type", "message_count", "parent_tool_use_id")}
    out = []
    marks = branch_marks(conv).positions if rows else {}
    for m, blocks in per_message:
        kept = []
        for b in blocks:
            if b.kind == "tool_result" and b.tool_id in calls and calls[b.tool_id].result is None:
                calls[b.tool_id].result = b
                calls[b.tool_id].result_tokens = m.tokens
                continue
            if b.kind == "tool_call":
                b.subagent = children.get(b.tool_id)
            kept.append(b)
        if kept or not blocks:
            tokens_by_kind = sorted(((k, v) for k, v in (m.tokens or {}).items() if v), key=lambda kv: -kv[1])
            branch_of = marks.get(m.position)
            starts = branch_of is not None and (not out or out[-1].branch_of != branch_of)
            out.append(MessageView(m, kept, tokens_by_kind, branch_of, starts))
    _tool_views(list(calls.values()))
    return TurnView(turn, out, more_from)


def _tool_views(calls: list[BlockView]) -> None:
    """Each tool call's readable view; a Bash result's stdout and stderr come from its line's
    toolUseResult (read only for those lines), other results' from the block's own `extra`."""
    wanted = [c.result.message_id for c in calls if c.result is not None and c.tool_name == "Bash"]
    extras = {}
    if wanted:
        rows = Message.objects.filter(id__in=wanted, flags__has_key="tool_use_result").values_list("id", "raw")
        extras = {pk: tools.tool_use_result(raw) for pk, raw in rows}
    for c in calls:
        r = c.result
        c.tool = tools.tool_view(
            c.tool_name,
            c.tool_input,
            r.text if r is not None else None,
            r.is_error if r is not None else False,
            (extras.get(r.message_id) or r.extra) if r is not None else None,
        )
        if c.tool is not None and c.tool.kind == "bash" and r is not None and r.clip is not None and r.clip.clipped:
            c.tool.shows_result = False  # a long output stays in the result block, with "Load the rest"


def full_block(message: Message, index: int) -> BlockView | None:
    blocks = message.blocks or []
    if not 0 <= index < len(blocks):
        return None
    b = blocks[index] if isinstance(blocks[index], dict) else {"kind": "other", "text": str(blocks[index])}
    return block_view(message, index, b, None, full=True)


# --- images -----------------------------------------------------------------------------------


def image_data(message: Message, index: int) -> tuple[str, bytes] | None:
    """The index-th base64 image of a message's raw record, as (media type, bytes). Only PNG, JPEG,
    GIF and WebP whose bytes match their declared type; never a URL (remote images are not fetched).
    Where a format keeps its images is the format's business (importers/formats.py)."""
    fmt = formats.get(message.conversation.agent)
    found = fmt.images(message.raw) if fmt is not None else []
    if not 0 <= index < len(found):
        return None
    source = found[index]
    media_type = str(source.get("media_type") or "").lower()
    if media_type not in IMAGE_TYPES or source.get("type", "base64") != "base64":
        return None
    try:
        data = base64.b64decode(source.get("data") or "", validate=False)
    except (binascii.Error, ValueError):
        return None
    if not _magic_matches(media_type, data):
        return None
    return media_type, data


def _magic_matches(media_type: str, data: bytes) -> bool:
    if media_type == "image/png":
        return data.startswith(b"\x89PNG\r\n\x1a\n")
    if media_type == "image/jpeg":
        return data.startswith(b"\xff\xd8\xff")
    if media_type == "image/gif":
        return data[:6] in (b"GIF87a", b"GIF89a")
    if media_type == "image/webp":
        return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    return False
