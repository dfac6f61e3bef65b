"""The index of conversations: filters from the query string, sorting, one page of rows (children
under their parent) with each row's window, peak, severity and spend. A fixed number of queries
per page, whatever the number of conversations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cached_property

from django.core.paginator import Page, Paginator
from django.db.models import F, QuerySet

from contextviewer.accounts.models import Project
from contextviewer.core.severity import severity

from contextviewer.conversations import figures, page_cache
from contextviewer.conversations.models import Conversation

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
UNSHOWN = ("agent_links", "lineage")  # JSON the index never shows: not read nor decoded


@dataclass
class IndexRow:
    conversation: Conversation
    window: int | None
    peak_pct: float
    severity: str
    duration: timedelta | None
    cost: float | None
    children: list[IndexRow] = field(default_factory=list)

    @property
    def shown(self) -> tuple:
        """Everything the index's row shows (the template keeps its HTML per these values)."""
        c = self.conversation
        return (
            c.id, c.agent, c.kind, c.agent_type, c.title, c.external_id, c.is_live, c.model_names, c.project.name,
            c.cwd, c.started_at, c.message_count, c.model_call_count, c.peak_context, c.measured_calls,
            c.spend_tokens, c.fold_count, self.window, self.peak_pct, self.severity, self.duration, self.cost,
        )

    @property
    def peak_title(self) -> str:
        """The peak meter's tooltip: the peak of the window, measured or estimated."""
        conv = self.conversation
        how = "estimated: the log records no usage per call" if conv.peak_estimated else "measured"
        return f"{conv.peak_context} of {self.window} tokens ({how})"

    @property
    def partial_note(self) -> str:
        """Why the spend of a conversation whose calls record usage only in part is marked."""
        conv = self.conversation
        return (
            f"{conv.measured_calls} of {conv.model_call_count} calls record their prompt tokens: "
            "this counts only what the log records"
        )


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

    @property
    def sort_key(self) -> str:
        return self.sort.lstrip("-")

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
    spec = figures.model_spec(conv)
    window = spec.window if spec else None
    duration = conv.ended_at - conv.started_at if conv.started_at and conv.ended_at else None
    return IndexRow(
        conversation=conv,
        window=window,
        peak_pct=figures.percent(conv.peak_context, window),
        severity=severity(conv.peak_context, window),
        duration=duration,
        cost=figures.cost(sums.get(conv.id, []), conv.window),
    )


@dataclass
class IndexPage:
    filters: Filters
    page: Page
    rows: list[IndexRow]
    total: int
    user: object = field(repr=False, default=None)
    base: QuerySet | None = field(repr=False, default=None)  # the user's conversations

    # The filter form's choices: read only by the full page (its form), not by the results fragment.
    @cached_property
    def projects(self) -> list:
        return list(Project.objects.for_user(self.user))

    @cached_property
    def agents(self) -> list[str]:
        return list(self.base.order_by().values_list("agent", flat=True).distinct())

    @cached_property
    def models(self) -> list[str]:
        names = self.base.order_by().values_list("model_names", flat=True).distinct()[:500]
        return sorted({m for row in names for m in row or []})

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
    filters = Filters.from_query(data)
    base = Conversation.objects.for_user(user)
    listed = filters.apply(base.top_level())
    qs = listed.select_related("project").defer(*UNSHOWN)
    if filters.sort_key == "duration":  # the only order that needs it: a row's duration is _row's
        qs = qs.annotate(duration=F("ended_at") - F("started_at"))
    qs = qs.order_by(*filters.order_by())
    paginator = _Paginator(qs, INDEX_PAGE_SIZE, listed)
    page = paginator.get_page(data.get("page"))
    convs = list(page.object_list)
    children = list(
        base.filter(parent__in=[c.id for c in convs]).select_related("project").defer(*UNSHOWN).order_by("started_at", "id")[:2000]
    )
    # Spend per conversation: kept per version of its row (page_cache), summed for the others only.
    sums = page_cache.per_conversation(convs + children, "spend", figures.usage_sums, [])
    rows = [_row(c, sums) for c in convs]
    by_id = {r.conversation.id: r for r in rows}
    for child in children:
        by_id[child.parent_id].children.append(_row(child, sums))
    return IndexPage(filters=filters, page=page, rows=rows, total=paginator.count, user=user, base=base)


class _Paginator(Paginator):
    """Counts the listed conversations without the page's joins and annotations."""

    def __init__(self, object_list, per_page, counted: QuerySet):
        super().__init__(object_list, per_page)
        self._counted = counted

    @cached_property
    def count(self) -> int:
        return self._counted.count()
