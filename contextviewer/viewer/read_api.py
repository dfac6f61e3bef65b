"""The read API of conversations (issue 22, item 8): the list with filters, one conversation with its
folds, its turns and messages (paged), and search. Thin views over the loaders the pages use
(index_page.Filters, conversation_page.turn_page, segments, search); every operation picks its
objects with accounts/permissions.py, so a token reads only its own project (404 elsewhere).

Pages: the list and search take `limit` and `offset` and answer `next_offset` (None on the last
page); turns and messages take a cursor (`from_turn`, `from_position`) and answer the next one.
A read through an API token leaves an audit event (`read.*`, via: token), as an export does."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from django.db.models import F, Prefetch, QuerySet
from django.utils import timezone
from ninja import Query, Schema
from ninja.responses import Status

from contextviewer.accounts.audit import audit_read
from contextviewer.accounts.auth import request_token
from contextviewer.accounts.permissions import get_conversation_for_user, projects_for
from contextviewer.viewer import conversation_page, index_page
from contextviewer.conversations import search as full_text, segments as loader, windows
from contextviewer.viewer.api import router  # the Router of DELETE /conversations/{id}: see below
from contextviewer.conversations.models import NO_SEGMENT_KINDS, Conversation, Message, ModelCall
from contextviewer.jobs.api import ErrorOut

# One path, one Router: ninja mounts each Router's paths apart, and Django routes a path to the
# first Router holding it, so a GET declared on another Router than DELETE /conversations/{id}
# answered 405. The read operations are declared on viewer/api.py's Router.

MAX_LIMIT = 200  # items per page of the list and of search
MAX_MESSAGES = 500  # messages per page
ERRORS = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut}


class Counts(Schema):
    messages: int
    model_calls: int
    tool_calls: int
    folds: int
    measured_calls: int  # model calls whose usage records their prompt tokens


class ConversationItem(Schema):
    id: int
    project: str  # the project's slug
    title: str
    external_id: str
    agent: str
    kind: str
    models: list[str]
    counts: Counts
    peak_context: int  # the largest prompt a call records, or when none does the largest estimate
    peak_estimated: bool  # no call records its prompt: peak_context is an estimate
    spend_tokens: int  # measured input and output tokens (0 when no call records usage)
    created_at: datetime  # imported
    started_at: datetime | None
    updated_at: datetime | None  # the last message's time
    parent_id: int | None
    children: list[int]  # sub-agents' conversation ids


class ConversationPage(Schema):
    count: int
    limit: int
    offset: int
    next_offset: int | None
    items: list[ConversationItem]


class FoldOut(Schema):
    id: int
    number: int | None  # 1.. as the page and builds number them; None: a microcompact (no summary, no segment)
    position: int
    kind: str
    origin: str
    trigger: str
    tokens_before: int | None
    tokens_after: int | None
    summary: str
    cost: dict | None  # usage of the summarizer's own call(s), when stored
    timestamp: datetime | None


class ConversationOut(ConversationItem):
    cwd: str
    git_branch: str
    window: int | None
    agent_type: str
    first_position: int | None
    last_position: int | None
    folds: list[FoldOut]


class TurnOut(Schema):
    turn: int
    first_position: int
    last_position: int
    messages: int
    tool_calls: int  # messages holding a tool call
    tokens: int
    started: datetime | None
    ended: datetime | None
    role: str
    first_line: str
    is_summary: bool
    branch_of: int | None  # the turn opens an abandoned branch: the turn the log went on with


class TurnPageOut(Schema):
    items: list[TurnOut]
    next_from_turn: int | None


class UsageOut(Schema):
    model: str
    input_uncached: int
    cache_write: int
    cache_read: int
    output: int
    output_is_lower_bound: bool
    reasoning: int | None  # of output, where the log records it apart (Codex, Gemini CLI)
    context: int  # input_uncached + cache_write + cache_read


class MessageOut(Schema):
    id: int
    position: int
    turn: int
    role: str
    record_type: str
    timestamp: datetime | None
    is_meta: bool
    is_compact_summary: bool
    is_sidechain: bool
    blocks: list  # as stored (masked at import)
    tokens: dict  # estimated tokens per category
    token_total: int
    usage: UsageOut | None  # the model call this message starts, when it does


class MessagePageOut(Schema):
    items: list[MessageOut]
    next_from_position: int | None


class WindowItemOut(Schema):
    role: str
    kind: str  # text | tool_call | tool_result | summary | thinking | image | other
    tool_id: str | None
    tool_name: str | None
    text: str
    tokens: int  # estimated tokens of the text
    note: str | None = None  # where the log cannot show the item (an encrypted summary)


class CallWindowOut(Schema):
    conversation: int
    call: int
    calls: int
    position: int
    model: str
    measured_input: int | None  # the call's measured input, None when the log has no usage
    estimated_context: int
    items: list[WindowItemOut]


class HitOut(Schema):
    conversation_id: int
    conversation_title: str
    message_id: int
    position: int
    turn: int
    role: str
    timestamp: datetime | None
    before: str
    match: str
    after: str


class SearchPageOut(Schema):
    query: str
    order: str
    limit: int
    offset: int
    next_offset: int | None
    items: list[HitOut]


# --- helpers ---------------------------------------------------------------------------------------


class BadQuery(ValueError):
    pass


def _bound(value: str | None, name: str, end: bool) -> datetime | None:
    """An ISO date (the whole day) or date-time, as an aware datetime; `end`: the bound is inclusive."""
    if not value:
        return None
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            moment = datetime.combine(day + timedelta(days=1) if end else day, time.min)
        else:
            moment = datetime.fromisoformat(value)
    except ValueError:
        raise BadQuery(f"{name}: give a date (2026-01-31) or a date-time (2026-01-31T12:00:00Z), not {value[:40]!r}.") from None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, timezone.get_current_timezone())
    return moment


def _limit(value: int, most: int) -> int:
    if value < 1 or value > most:
        raise BadQuery(f"limit: from 1 to {most}, not {value}.")
    return value


def _item(conv: Conversation, children: list[int]) -> dict:
    return {
        "id": conv.pk, "project": conv.project.slug, "title": conv.title, "external_id": conv.external_id,
        "agent": conv.agent, "kind": conv.kind, "models": [str(m) for m in conv.model_names or []],
        "counts": {"messages": conv.message_count, "model_calls": conv.model_call_count,
                   "tool_calls": conv.tool_call_count, "folds": conv.fold_count,
                   "measured_calls": conv.measured_calls},
        "peak_context": conv.peak_context, "peak_estimated": conv.peak_estimated, "spend_tokens": conv.spend_tokens,
        "created_at": conv.created_at,
        "started_at": conv.started_at, "updated_at": conv.ended_at, "parent_id": conv.parent_id, "children": children,
    }


def _children() -> Prefetch:
    return Prefetch("children", queryset=Conversation.objects.only("id", "parent_id", "started_at").order_by("started_at", "id"))


def fold_rows(conv: Conversation) -> list[dict]:
    """The conversation's folds as the page counts them (fold_count: every fold but an alternative
    summary), numbered as the page and builds number the folds that make segments."""
    rows, number = [], 0
    for f in conv.folds.counted().order_by("position", "id"):
        makes_segment = f.kind not in NO_SEGMENT_KINDS
        number += makes_segment
        rows.append({
            "id": f.pk, "number": number if makes_segment else None, "position": f.position, "kind": f.kind,
            "origin": f.origin, "trigger": f.trigger, "tokens_before": f.tokens_before, "tokens_after": f.tokens_after,
            "summary": f.summary_text, "cost": f.cost or None, "timestamp": f.timestamp,
        })
    return rows


def listed(request, filters: index_page.Filters, bounds: dict[str, datetime | None], subagents: bool) -> QuerySet:
    """The request's conversations (a token: its project's) under the index's filters and these bounds."""
    qs = Conversation.objects.filter(project__in=projects_for(request, "view"))
    if not subagents:
        qs = qs.top_level()
    qs = filters.apply(qs)
    for name, field in (("created", "created_at"), ("started", "started_at"), ("updated", "ended_at")):
        if bounds.get(f"{name}_from") is not None:
            qs = qs.filter(**{f"{field}__gte": bounds[f"{name}_from"]})
        if bounds.get(f"{name}_to") is not None:
            qs = qs.filter(**{f"{field}__lt": bounds[f"{name}_to"]})
    return qs.select_related("project").prefetch_related(_children()).order_by(F("started_at").desc(nulls_last=True), "-id")


# --- operations ------------------------------------------------------------------------------------


DATE_HELP = "ISO date (the whole day) or date-time"


@router.get("/conversations", response={200: ConversationPage, **ERRORS}, tags=["read"])
def list_conversations(
    request,
    project: str = Query("", description="a project's slug"),
    agent: str = Query("", description="the agent (format) name, e.g. claude-code"),
    model: str = Query("", description="a model name (or part of one) the conversation used"),
    created_from: str = Query("", description=f"imported on or after: {DATE_HELP}"),
    created_to: str = Query("", description=f"imported on or before: {DATE_HELP}"),
    started_from: str = Query("", description=f"started on or after: {DATE_HELP}"),
    started_to: str = Query("", description=f"started on or before: {DATE_HELP}"),
    updated_from: str = Query("", description=f"last message on or after: {DATE_HELP}"),
    updated_to: str = Query("", description=f"last message on or before: {DATE_HELP}"),
    subagents: bool = Query(False, description="list sub-agents' conversations too (else under their parent's `children`)"),
    limit: int = Query(50, description=f"items per page (1 to {MAX_LIMIT})"),
    offset: int = Query(0, ge=0),
):
    """The conversations the caller may read (a token: its project's), newest first, with their counts,
    peak context and sub-agents."""
    try:
        limit = _limit(limit, MAX_LIMIT)
        bounds = {name: _bound(value, name, name.endswith("_to")) for name, value in (
            ("created_from", created_from), ("created_to", created_to), ("started_from", started_from),
            ("started_to", started_to), ("updated_from", updated_from), ("updated_to", updated_to))}
    except BadQuery as exc:
        return Status(400, {"detail": str(exc)})
    filters = index_page.Filters(project=project[:100], agent=agent[:40], model=model[:100])
    qs = listed(request, filters, bounds, subagents)
    page = list(qs[offset : offset + limit + 1])
    more = len(page) > limit
    page = page[:limit]
    token = request_token(request)
    if token is not None:
        audit_read(request, token.project, "conversations", "conversation list", count=len(page), offset=offset)
    return Status(200, {
        "count": qs.count() if (more or offset) else len(page), "limit": limit, "offset": offset,
        "next_offset": offset + limit if more else None,
        "items": [_item(c, [k.pk for k in c.children.all()]) for c in page],
    })


@router.get("/conversations/{conversation_id}", response={200: ConversationOut, **ERRORS}, tags=["read"])
def get_conversation(request, conversation_id: int):
    """One conversation: its counts, sub-agents and folds (position, kind, origin, trigger, tokens
    before and after, summary, the summarizer's cost when stored)."""
    conv = get_conversation_for_user(request, conversation_id)
    first, last = loader.bounds(conv)
    children = list(conv.children.order_by("started_at", "id").values_list("id", flat=True))
    audit_read(request, conv.project, "conversation", f"conversation {conv.pk}")
    return Status(200, {
        **_item(conv, children), "cwd": conv.cwd, "git_branch": conv.git_branch, "window": conv.window,
        "agent_type": conv.agent_type, "first_position": first, "last_position": last, "folds": fold_rows(conv),
    })


@router.get("/conversations/{conversation_id}/turns", response={200: TurnPageOut, **ERRORS}, tags=["read"])
def conversation_turns(request, conversation_id: int, from_turn: int | None = Query(None, description="the first turn of the page")):
    """The conversation's turns, a page at a time (as the page's turn headers): pass `next_from_turn` back as `from_turn`."""
    conv = get_conversation_for_user(request, conversation_id)
    first, last = loader.bounds(conv)
    if first is None:
        return Status(200, {"items": [], "next_from_turn": None})
    page = conversation_page.turn_page(conv, 0, first, last, from_turn=from_turn)
    audit_read(request, conv.project, "turns", f"conversation {conv.pk}", from_turn=from_turn)
    return Status(200, {
        "items": [{
            "turn": t.turn, "first_position": t.first_position, "last_position": t.last_position, "messages": t.messages,
            "tool_calls": t.tools, "tokens": t.tokens, "started": t.started, "ended": t.ended, "role": t.role,
            "first_line": t.first_line, "is_summary": t.is_summary, "branch_of": t.branch_of,
        } for t in page.turns],
        "next_from_turn": page.later_from,
    })


@router.get("/conversations/{conversation_id}/calls/{call}/window", response={200: CallWindowOut, **ERRORS}, tags=["read"])
def call_window(request, conversation_id: int, call: str):
    """What model call `call` (1 = the first, as on the curve; or `last`) carried, in the order sent:
    the summary of the fold in effect, the messages it preserved, then every message after it up to
    the call (the loader the page and `manage.py window` read)."""
    conv = get_conversation_for_user(request, conversation_id)
    try:
        window = windows.call_window(conv, call)
    except windows.NoSuchCall as e:
        return Status(404, {"detail": str(e)})
    audit_read(request, conv.project, "window", f"conversation {conv.pk}", call=window.call)
    return Status(200, window.as_dict())


def message_page(conv: Conversation, from_position: int | None, limit: int, turn: int | None) -> tuple[list[Message], int | None]:
    """Messages in position order from `from_position` (of one turn when given), and the next page's first position."""
    qs = Message.objects.filter(conversation=conv).defer("raw")
    if turn is not None:
        qs = qs.filter(turn=turn)
    if from_position is not None:
        qs = qs.filter(position__gte=from_position)
    rows = list(qs.order_by("position")[: limit + 1])
    return rows[:limit], rows[limit].position if len(rows) > limit else None


def _usage(call: ModelCall | None) -> dict | None:
    if call is None:
        return None
    return {"model": call.model, "input_uncached": call.input_uncached, "cache_write": call.cache_write,
            "cache_read": call.cache_read, "output": call.output, "output_is_lower_bound": call.output_is_lower_bound,
            "reasoning": call.reasoning,
            "context": call.context_size}


@router.get("/conversations/{conversation_id}/messages", response={200: MessagePageOut, **ERRORS}, tags=["read"])
def conversation_messages(
    request,
    conversation_id: int,
    turn: int | None = Query(None, description="only this turn's messages"),
    from_position: int | None = Query(None, description="the first position of the page"),
    limit: int = Query(100, description=f"messages per page (1 to {MAX_MESSAGES})"),
):
    """The conversation's messages in order, with their blocks as stored (masked at import), estimated
    tokens and the usage of the model call each starts: pass `next_from_position` back as `from_position`."""
    conv = get_conversation_for_user(request, conversation_id)
    try:
        limit = _limit(limit, MAX_MESSAGES)
    except BadQuery as exc:
        return Status(400, {"detail": str(exc)})
    rows, next_position = message_page(conv, from_position, limit, turn)
    calls: dict[int, ModelCall] = {}
    for call in ModelCall.objects.filter(conversation=conv, position__in=[m.position for m in rows]).order_by("position", "id"):
        calls.setdefault(call.position, call)
    audit_read(request, conv.project, "messages", f"conversation {conv.pk}", turn=turn, from_position=from_position, count=len(rows))
    return Status(200, {
        "items": [{
            "id": m.pk, "position": m.position, "turn": m.turn, "role": m.role, "record_type": m.record_type,
            "timestamp": m.timestamp, "is_meta": m.is_meta, "is_compact_summary": m.is_compact_summary,
            "is_sidechain": m.is_sidechain, "blocks": m.blocks or [], "tokens": m.tokens or {}, "token_total": m.token_total,
            "usage": _usage(calls.get(m.position)),
        } for m in rows],
        "next_from_position": next_position,
    })


@router.get("/search", response={200: SearchPageOut, **ERRORS}, tags=["read"])
def search_messages(
    request,
    q: str = Query("", description="every word must match (the last one as a prefix)"),
    project: str = Query("", description="only this project (its slug)"),
    order: str = Query("rank", description=" | ".join(full_text.ORDERS)),
    limit: int = Query(20, description=f"hits per page (1 to {MAX_LIMIT})"),
    offset: int = Query(0, ge=0),
):
    """Messages matching `q` in the projects the caller may read (a token: its project), with a snippet."""
    if order not in full_text.ORDERS:
        return Status(400, {"detail": f"order: one of {', '.join(full_text.ORDERS)}, not {order[:40]!r}."})
    try:
        limit = _limit(limit, MAX_LIMIT)
    except BadQuery as exc:
        return Status(400, {"detail": str(exc)})
    projects = projects_for(request, "view")
    if project:
        projects = projects.filter(slug=project[:100])
    query = q.strip()[:200]
    hits = full_text.search(request.user, query, limit + 1, offset=offset, order=order, projects=[p.pk for p in projects])
    more = len(hits) > limit
    token = request_token(request)
    if token is not None:
        audit_read(request, token.project, "search", query[:100], count=len(hits[:limit]), offset=offset)
    return Status(200, {
        "query": query, "order": order, "limit": limit, "offset": offset, "next_offset": offset + limit if more else None,
        "items": [{
            "conversation_id": h.conversation_id, "conversation_title": h.conversation_title, "message_id": h.message_id,
            "position": h.position, "turn": h.turn, "role": h.role, "timestamp": h.timestamp,
            "before": h.before, "match": h.match, "after": h.after,
        } for h in hits[:limit]],
    })

