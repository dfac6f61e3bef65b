"""The conversation page: its gauge, its curve, its segments (archived behind each fold, and the
loaded one) and, inside a segment, one window of turn headers at a time.

Every function here issues a number of queries that does not grow with the conversation's
length: turns are summarized by aggregate queries grouped by turn, one bounded window at a time,
and the rest of a conversation is fetched as the reader scrolls or unfolds (turn_content.py reads
one turn's messages).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.db.models import Count, IntegerField, Max, Min, Q, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.template.defaultfilters import floatformat, pluralize
from django.template.loader import render_to_string
from django.utils import timezone

from contextviewer.core import branches, budget, tokens
from contextviewer.core.headline import summary_headline
from contextviewer.importers import formats

from contextviewer.conversations import calibration, figures, page_cache, segments as loader
from contextviewer.display import rendering
from contextviewer.display.templatetags.cv import tok, usd
from contextviewer.viewer.curve_view import CurveView, curve_view
from contextviewer.conversations.models import Conversation, Fold, Message, ModelCall

TURN_PAGE = 25  # turn headers per window (the first page stays under 100 KB)
TURN_PAGE_TEMPLATE = "viewer/conversation.html#turn-page"
ARCHIVED_FULL = 1  # latest archived segments shown whole (summary, turns on unfolding) on the first page
ARCHIVED_LISTED = 20  # older archived segments listed one line each at once (older ones load on request)


# --- gauge ------------------------------------------------------------------------------------


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
    at_call: bool = True  # what the latest call saw; False: the loaded view as it is now (gauge_upto)
    # The card's sentence on the tokenizer factor (gauge_view): the calls it was fitted over, how the
    # categories use it at this call; without a factor, the whole sentence.
    fitted_over: str = ""
    factor_use: str = ""
    no_factor: str = ""


def gauge_upto(latest: ModelCall | None, loaded: loader.LoadedInput) -> int | None:
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
    loaded: loader.LoadedInput,
    categories: dict[str, int] | None = None,
    fitted: budget.Calibration | None = None,
) -> GaugeView | None:
    """`categories`: the loaded categories when the caller holds them (page_cache), else summed
    here; `fitted`: the conversation's calibration (calibration.calibration), likewise."""
    if not spec or not spec.window:
        return None
    upto = gauge_upto(latest, loaded)
    if categories is None:
        categories = _loaded_categories(conv, loaded, upto)
    if fitted is None:
        fitted = calibration.calibration(conv)
    # A call whose log records no usage (usage 0: SWE-agent's steps, a re-imported export) is not
    # "0 tokens, measured": the gauge is then an estimate. After a later fold the latest
    # measurement is of a window that is gone: an estimate too.
    measured = (latest.context_size or None) if latest is not None and upto is not None else None
    prompt = calibration.unlogged_prompt(conv)
    g = budget.gauge(
        categories,
        spec=spec,
        measured=measured,
        cache_read=(latest.cache_read if measured else 0),
        rules=formats.harness(conv.agent, spec),
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
        used_pct=figures.percent(g.used, g.window),
        cache_pct=100.0 * g.cache_fraction if g.cache_fraction is not None else None,
        thresholds=[(label, tokens, 100.0 * tokens / scale) for label, tokens in g.thresholds],
        scale=scale,
        unavailable=[tokens.LABELS[key] for key in g.unavailable],
        at_call=upto is not None,
        **_factor_text(g),
    )


def _factor_text(g) -> dict[str, str]:
    """How the categories were scaled to the provider's tokens: by the fitted tokenizer factor (at a
    measured call, and the calls it was fitted over), by this call's measurement alone, or not at all."""
    calls = f"{g.fit_calls} measured call{pluralize(g.fit_calls)}"
    if g.factor:
        use = (
            f"; at this call ×{floatformat(g.calibration, 2)}, so the categories add up to the measurement"
            if g.is_measured else "; the categories are scaled by it"
        )
        return {"fitted_over": calls, "factor_use": use}
    if g.is_measured:
        return {"no_factor": f"No tokenizer factor fitted ({calls}); the categories are scaled ×{floatformat(g.calibration, 2)} to the measurement."}
    return {"no_factor": "No measured usage: every figure is an o200k estimate."}


def _loaded_categories(conv: Conversation, loaded: loader.LoadedInput, upto: int | None) -> dict[str, int]:
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


# --- segments and turns ----------------------------------------------------------------------


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
    turns: TurnPage | None = None
    # `turns` rendered (the page's `turn-page` partial), made once with the kept page: 25 turn
    # headers cost 4-5 ms of template each time (conversation_page)
    turns_html: str = ""
    fold_cost: float | None = None  # the summarizer's own call(s), USD at list price

    @property
    def fold_cost_tokens(self) -> tuple[int, int] | None:
        cost = (self.fold.cost or {}) if self.fold else {}
        if not cost:
            return None
        prompt = sum(int(cost.get(k) or 0) for k in ("input_uncached", "cache_write", "cache_read"))
        return prompt, int(cost.get("output") or 0)

    @property
    def fold_call(self) -> str:
        """The summarizer's call of an archived segment's fold: "summary call 12k in, 2.1k out ($0.05)"."""
        figures = self.fold_cost_tokens
        if not figures:
            return ""
        cost = f" ({usd(self.fold_cost)})" if self.fold_cost is not None else ""
        return f"summary call {tok(figures[0])} in, {tok(figures[1])} out{cost}"

    @property
    def loaded_note(self) -> str:
        """What the loaded segment holds (its header)."""
        if not self.fold:
            return "what the model sees now"
        kept = len(self.preserved_positions)
        preserved = f", {kept} preserved message{pluralize(kept)}" if kept else ""
        return f"what the model sees now: the latest summary{preserved} and everything after the fold"

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

    @property
    def no_text(self) -> str:
        """The header of a turn without text: what it holds instead."""
        if self.tools:
            return f"{self.tools} tool call{pluralize(self.tools)}, no text"
        return f"{self.messages} message{pluralize(self.messages)}, no text"


@dataclass
class TurnPage:
    segment: int
    start: int
    end: int
    turns: list[TurnHeader]
    earlier_from: int | None  # first turn of the window before this one, when there is one
    later_from: int | None  # first turn after this window, when there is one
    to_turn: int | None

    # The queries of the links to the windows before and after this one (the `turn-page` partial).
    @property
    def earlier_query(self) -> str:
        return f"from={self.earlier_from}&to={self.turns[0].turn - 1 if self.turns else ''}"

    @property
    def later_query(self) -> str:
        to = f"&to={self.to_turn}" if self.to_turn is not None else ""
        return f"from={self.later_from}{to}"


def conversation_segments(conv: Conversation, layout: loader.SegmentLayout) -> list[SegmentView]:
    """The segments of the conversation's window (loader.load), with their turns."""
    raw = layout.segments
    if not raw:
        return []
    # Turn numbers at every segment edge: one query, bounded by the number of segments.
    edges = {p for s in raw for p in (s.start, s.end)}
    turn_at = dict(Message.objects.filter(conversation=conv, position__in=edges).values_list("position", "turn"))
    out = []
    for i, s in enumerate(raw):
        first, last = turn_at.get(s.start), turn_at.get(s.end)
        fold = layout.fold_of(s)
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
                fold_cost=figures.fold_cost(fold, conv.window) if fold and s.kind == "archived" else None,
            )
        )
    return out


def segment_folds(conv: Conversation) -> list[Fold]:
    """Folds that put messages away behind a summary (microcompactions only clear tool output)."""
    return loader.segment_folds(conv)


def turn_page(
    conv: Conversation, segment: int, start: int, end: int, from_turn: int | None = None, to_turn: int | None = None
) -> TurnPage:
    """One window of turn headers inside positions [start, end], kept per version of the
    conversation's row (page_cache.row_version: an import that adds or rewrites messages, a
    re-mask, changes it). Plain data only (numbers, the first line of each turn, times): the page
    and the segment fragments share it; each caller gets its own copy of the window (the live
    poll changes its links), the headers themselves are shared, read only."""
    key = f"{conv.pk}:turn_page:{page_cache.row_version(conv)}:{(segment, start, end, from_turn, to_turn)}"
    return replace(page_cache.cached(key, lambda: _turn_page(conv, segment, start, end, from_turn, to_turn)))


def _turn_page(
    conv: Conversation, segment: int, start: int, end: int, from_turn: int | None = None, to_turn: int | None = None
) -> TurnPage:
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
    return TurnPage(segment, start, end, headers, earlier_from, later_from, to_turn)


@dataclass
class BranchMarks:
    """Messages on abandoned branches (core.branches), each with the turn of the message the log
    went on with at that fork; and the turns made only of such messages."""

    positions: dict[int, int] = field(default_factory=dict)
    turns: dict[int, int] = field(default_factory=dict)


def branch_marks(conv: Conversation) -> BranchMarks:
    """The conversation's branch marks, kept per version of the conversation's row (every import
    that adds or rewrites messages changes it: page_cache.row_version), so a page or turn request
    does not group every message of the conversation again (issue 23: 45 ms of an 82 ms page on
    41,000 messages); kept on the instance for the request too."""
    cached = getattr(conv, "_branch_marks", None)
    if cached is None:
        cached = page_cache.cached(f"{conv.pk}:branch_marks:{page_cache.row_version(conv)}", lambda: _branch_marks(conv))
        conv._branch_marks = cached
    return cached


def _branch_marks(conv: Conversation) -> BranchMarks:
    """One query when no two user or assistant messages share a parent (nearly every
    conversation), two otherwise."""
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
    recorded_cost: float | None = None  # a log without usage per call: the session's cost as the agent kept it
    listed: list[SegmentView] = field(default_factory=list)  # older archived segments, one line each
    listed_before: int | None = None  # index of the oldest listed segment, when older ones are hidden

    # The header's spend (conversation.html#header-counts), by how much of the log records usage.
    @property
    def spend_title(self) -> str:
        conv = self.conversation
        if conv.usage_coverage == "none":
            return "the log records no usage per call, so the spend is not known"
        if conv.usage_coverage == "partial":
            return (
                f"sum of measured input and output tokens: {conv.measured_calls} of {conv.model_call_count} calls "
                "record their prompt tokens, so this counts only what the log records"
            )
        return "sum of measured input and output tokens"

    @property
    def spend_text(self) -> str:
        conv = self.conversation
        if conv.usage_coverage == "none":
            if self.recorded_cost is None:
                return "spend not recorded"
            return f"spend not recorded · {usd(self.recorded_cost)} as {formats.label(conv.agent)} recorded it for the session"
        cost = f" · {usd(self.spend_cost)} at list price" if self.spend_cost is not None else ""
        return f"spend {tok(conv.spend_tokens)} tokens{cost}"

    @property
    def spend_partial(self) -> str:
        conv = self.conversation
        if conv.usage_coverage != "partial":
            return ""
        return f"(partial: {conv.measured_calls} of {conv.model_call_count} calls record their prompt)"


@dataclass
class FoldList:
    """Archived segments as one line each, newest last, and how many older ones are left."""

    rows: list[SegmentView]
    hidden: int
    before: int | None  # index of the oldest row, when older ones are left


def fold_list(conv: Conversation, before: int | None = None, segs: list[SegmentView] | None = None) -> FoldList:
    """The archived segments older than index `before`: the newest ARCHIVED_LISTED of them."""
    if segs is None:
        segs = conversation_segments(conv, loader.load(conv))
    older = [s for s in segs if s.kind == "archived" and (before is None or s.index < before)]
    rows = older[-ARCHIVED_LISTED:]
    hidden = len(older) - len(rows)
    return FoldList(rows, hidden, rows[0].index if hidden and rows else None)


def conversation_page(conv: Conversation, focus_turn: int | None = None) -> ConversationPage:
    """The page's figures, segments, turn headers and sub-agents, kept per version of what the page
    shows (page_cache.content_version: one query of index look-ups beside the row the access
    check loaded) and focused turn; computed once per process otherwise. The conversation and its
    parent are this request's. What is kept is shared by the requests of the process: read only."""
    # The page's times are shown in the current time zone (the kept turn headers hold them).
    key = f"{conv.pk}:page:{page_cache.content_version(conv)}:{focus_turn}:{timezone.get_current_timezone_name()}"
    kept = page_cache.cached(key, lambda: _conversation_page(conv, loader.load(conv), focus_turn))
    return replace(kept, conversation=conv, parent=conv.parent if conv.parent_id else None)


def _conversation_page(conv: Conversation, layout: loader.SegmentLayout, focus_turn: int | None) -> ConversationPage:
    spec = figures.model_spec(conv)
    folds = layout.folds
    segs = conversation_segments(conv, layout)
    latest = ModelCall.objects.filter(conversation=conv).order_by("-position", "-id").first()
    # Figures that scan the whole conversation are computed once per conversation version (the
    # focused turn aside: shared by every focus).
    version = page_cache.version(conv, layout)
    loaded = loader.loaded_input(conv, layout)
    categories = None
    if spec and spec.window:
        categories = page_cache.figures(
            conv, layout, "gauge", lambda: _loaded_categories(conv, loaded, gauge_upto(latest, loaded)), version
        )
    fitted = page_cache.figures(conv, layout, "calibration", lambda: calibration.calibration(conv), version)
    gauge = gauge_view(conv, spec, latest, loaded, categories, fitted)
    curve = page_cache.figures(conv, layout, "curve", lambda: curve_view(conv, spec, folds), version)
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
            s.turns = turn_page(conv, s.index, s.start, s.end, from_turn=focus_turn)
        elif s.kind == "loaded" and target is None:
            s.open = True
            s.turns = turn_page(conv, s.index, s.start, s.end)
        if s.turns is not None:
            s.turns_html = render_to_string(TURN_PAGE_TEMPLATE, {"conv": conv, "turns_page": s.turns})
    # The first page stays small however many folds: the latest archived segments (and the one
    # holding the focused turn) whole, the older ones one line each, the oldest on request.
    archived = [s for s in segs if s.kind == "archived"]
    whole = {id(s) for s in archived[-ARCHIVED_FULL:]} | {id(s) for s in archived if s.open}
    older = fold_list(conv, segs=[s for s in archived if id(s) not in whole])
    segs = [s for s in segs if s.kind != "archived" or id(s) in whole]
    children = list(
        conv.children.order_by("started_at", "id").only(
            "id", "parent", "title", "external_id", "agent_type", "kind", "message_count", "parent_tool_use_id", "peak_context", "started_at"
        )[:200]
    )
    sums = page_cache.figures(conv, layout, "spend", lambda: figures.usage_sums([conv.id]), version)
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
        parent=None,  # this request's (conversation_page)
        children=children,
        spend_cost=figures.cost(sums.get(conv.id, []), conv.window),
        recorded_cost=(
            page_cache.figures(conv, layout, "recorded_cost", lambda: figures.recorded_cost(conv), version)
            if conv.usage_coverage == "none" and conv.model_call_count else None
        ),
    )


def segment_by_index(conv: Conversation, index: int) -> SegmentView | None:
    """One segment of the conversation (read only: kept per version, page_cache.content_version,
    and shared by the fragments that unfold or scroll it)."""
    segs = page_cache.cached(
        f"{conv.pk}:segments:{page_cache.content_version(conv)}", lambda: conversation_segments(conv, loader.load(conv))
    )
    return segs[index] if 0 <= index < len(segs) else None
