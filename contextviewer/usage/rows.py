"""The rows of a usage report read from the store (report.py computes the table from them).

A session is a main conversation and everything under it (sub-agents, the harness's compaction
runs): their model calls and folds are the session's. Builds made here are not sessions of an
agent and are left out. The person of a session is the user whose import brought it in (the
import job's requester); a session a watched folder brought in has none.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from decimal import Decimal, InvalidOperation

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Case, CharField, Count, F, IntegerField, QuerySet, Sum, Value, When
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast, Coalesce, Substr

from contextviewer.conversations.models import Conversation, ConversationKind, Fold, FoldOrigin, Message, ModelCall
from contextviewer.jobs.models import Job
from contextviewer.usage.prices import CallUsage, PriceBook
from contextviewer.usage.report import Call, FoldRow, Session


@dataclass(frozen=True, slots=True)
class Filters:
    projects: QuerySet | None = None  # the projects the caller may read
    project: str = ""  # a slug
    agent: str = ""
    model: str = ""  # part of a model name
    person: str = ""  # a username
    since: date | None = None
    until: date | None = None
    tz: tzinfo | None = None


def _cost(value) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    try:
        return Decimal(repr(value))
    except InvalidOperation:
        return None


def people(conversation_ids: set[int], project_ids: set[int]) -> dict[int, str]:
    """Conversation id -> the username of the first import job that names it in its result."""
    out: dict[int, str] = {}
    jobs = (Job.objects.filter(kind="import", parent__isnull=True, project_id__in=project_ids, created_by__isnull=False)
            .order_by("created_at", "id").values_list("created_by_id", "result"))
    names = dict(get_user_model().objects.values_list("id", "username"))
    for user_id, result in jobs:
        for item in (result or {}).get("conversations") or ():
            conv = item.get("id") if isinstance(item, dict) else None  # ingest/imports.py conversation_summary
            if isinstance(conv, int) and conv in conversation_ids and conv not in out:
                out[conv] = names.get(user_id, "")
    return out


def _roots(convs: list[dict]) -> dict[int, int]:
    parent = {c["id"]: c["parent_id"] for c in convs}
    roots: dict[int, int] = {}
    for cid in parent:
        seen, node = set(), cid
        while parent.get(node) is not None and node not in seen:
            seen.add(node)
            node = parent[node]
        roots[cid] = node
    return roots


def _window(f: Filters) -> tuple[datetime | None, datetime | None]:
    """A day wider than the asked range each side, for the database; report.in_range cuts it exactly in f.tz."""
    lo = datetime.combine(f.since - timedelta(days=1), time.min, tzinfo=f.tz) if f.since else None
    hi = datetime.combine(f.until + timedelta(days=2), time.min, tzinfo=f.tz) if f.until else None
    return lo, hi


def _sessions(f: Filters) -> tuple[list[dict], dict[int, int], list[dict], dict[int, str]]:
    """The conversations the filters keep, each one's main conversation, the mains (of f.person
    only, when given) and the person of each main."""
    qs = Conversation.objects.exclude(kind=ConversationKind.BUILD)
    if f.projects is not None:
        qs = qs.filter(project__in=f.projects)
    if f.project:
        qs = qs.filter(project__slug=f.project)
    if f.agent:
        qs = qs.filter(agent=f.agent)
    convs = list(qs.values("id", "parent_id", "project_id", "project__slug", "agent", "external_id", "title",
                           "started_at", "model_names"))
    roots = _roots(convs)
    mains = [c for c in convs if roots[c["id"]] == c["id"]]
    who = people({c["id"] for c in mains}, {c["project_id"] for c in mains})
    if f.person:
        mains = [c for c in mains if who.get(c["id"]) == f.person]
    return convs, roots, mains, who


def id_set(ids) -> RawSQL:
    """`ids` as ONE query parameter, for `field__in=`: a list of thousands of ids costs Django about
    12 ms per query to prepare one by one (a 1,000-session page spent 120 ms on it), and SQLite caps
    the parameters of one statement."""
    ids = [int(i) for i in ids]
    if connection.vendor == "postgresql":
        return RawSQL("SELECT unnest(%s::bigint[])", [ids])
    return RawSQL("SELECT value FROM json_each(%s)", [json.dumps(ids)])


def member_ids(f: Filters) -> list[int]:
    """The conversations of the sessions the filters keep (mains, sub-agents, compaction runs)."""
    _, roots, mains, _ = _sessions(f)
    keep = {c["id"] for c in mains}
    return [cid for cid, root in roots.items() if root in keep]


def read(f: Filters, book: PriceBook, activity: dict[str, int] | None = None) -> tuple[list[Session], list[Call], list[FoldRow]]:
    """The sessions, calls and folds the filters keep; `activity`, when given, gets their model calls
    per UTC hour (the heatmap of the page, from the same grouped query)."""
    convs, roots, mains, who = _sessions(f)
    keep = {c["id"] for c in mains}
    members = [cid for cid, root in roots.items() if root in keep]

    calls_qs = ModelCall.objects.filter(conversation_id__in=id_set(members))
    if f.model:
        calls_qs = calls_qs.filter(model__icontains=f.model)
    lo, hi = _window(f)
    if lo is not None:
        calls_qs = calls_qs.exclude(timestamp__lt=lo)
    if hi is not None:
        calls_qs = calls_qs.exclude(timestamp__gte=hi)
    calls = _calls(calls_qs, members, roots, f, book, activity)
    calls += _fold_calls(members, roots, f)
    session_cost = _session_totals(members) if not f.model else {}
    sessions = []
    for c in mains:
        names = c["model_names"] or []
        total = session_cost.get(c["id"])
        sessions.append(Session(
            id=c["id"], label=f"{c['started_at']:%Y-%m-%d} {c['external_id'][:40]}" if c["started_at"] else c["external_id"][:40],
            agent=c["agent"], project=c["project__slug"], person=who.get(c["id"], ""), started=c["started_at"],
            model=str(names[-1]) if names else "", recorded_cost=total))
    folds = [FoldRow(roots[cid], when, pk) for pk, cid, when in
             Fold.objects.counted().filter(conversation_id__in=id_set(members)).values_list("id", "conversation_id", "timestamp")]
    if f.model:  # a session and its folds count where one of its calls is of that model
        with_model = {c.session for c in calls}
        sessions = [s for s in sessions if s.id in with_model]
        folds = [fo for fo in folds if fo.session in with_model]
    return sessions, calls, folds


_TOKENS = ("input_uncached", "cache_write", "cache_write_1h", "cache_read", "output", "reasoning")


def _calls(calls_qs, members: list[int], roots: dict[int, int], f: Filters, book: PriceBook,
           activity: dict[str, int] | None = None) -> list[Call]:
    """The calls, summed in SQL per conversation, model, day (in f.tz) and price tier; a call whose
    message records the agent's own cost (``flags["cost"]``) one by one, that cost going to the
    message's first call only. `activity`, when given, gets the calls per UTC hour ('YYYY-MM-DD HH')."""
    out: list[Call] = []
    # The messages that record a cost first (one pass over messages, no join over every call).
    priced = list(Message.objects.filter(conversation_id__in=id_set(members), flags__has_key="cost").order_by().values_list("id", flat=True))
    own = list(calls_qs.filter(message_id__in=id_set(priced)).order_by("id").values_list(
        "id", "conversation_id", "message_id", "message__flags", "model", "timestamp", *_TOKENS)) if priced else []
    seen: set[int] = set()
    for _pk, conv_id, message_id, flags, model, when, unc, write, write_1h, read_, output, reasoning in own:
        cost = None if message_id in seen else _cost((flags or {}).get("cost"))
        seen.add(message_id)
        if activity is not None and when is not None:
            hour = when.astimezone(UTC).strftime("%Y-%m-%d %H" if whole_hours(f.tz) else "%Y-%m-%d %H:%M")
            activity[hour] = activity.get(hour, 0) + 1
        out.append(Call(roots[conv_id], model or "", when, CallUsage(unc, write, write_1h or 0, read_, output), cost,
                        reasoning=reasoning))
    rest = calls_qs.exclude(pk__in=id_set([row[0] for row in own])) if own else calls_qs
    starts = sorted({s for m in rest.order_by().values_list("model", flat=True).distinct() for s in book.tier_starts(m or "")})
    prompt = F("input_uncached") + F("cache_write") + F("cache_read")
    band = Case(*[When(prompt_size__gt=s, then=Value(i + 1)) for i, s in reversed(list(enumerate(starts)))],
                default=Value(0), output_field=IntegerField())
    zero = Case(When(prompt_size=0, output=0, then=Value(1)), default=Value(0), output_field=IntegerField())
    groups = (rest.annotate(prompt_size=prompt).annotate(band=band, hour=utc_hour(f.tz), zero=zero)
              .values("conversation_id", "model", "hour", "band")
              .annotate(n=Count("id"), unmeasured=Sum("zero"), unc=Sum("input_uncached"), write=Sum("cache_write"),
                        write_1h=Sum(Coalesce("cache_write_1h", 0)), read=Sum("cache_read"), output=Sum("output"),
                        reasoning=Sum("reasoning"))
              .order_by())
    days: dict[tuple, list] = {}  # the hours of one day in f.tz summed again
    reasoning: dict[tuple, int] = {}  # of those, the reasoning tokens where calls recorded them
    for g in groups:
        day = local(g["hour"], f.tz)
        if activity is not None and g["hour"]:
            activity[g["hour"]] = activity.get(g["hour"], 0) + g["n"]
        key = (g["conversation_id"], g["model"] or "", day.date() if day else None, g["band"])
        sums = days.setdefault(key, [0] * 7)
        for i, k in enumerate(("n", "unmeasured", "unc", "write", "write_1h", "read", "output")):
            sums[i] += g[k] or 0
        if g["reasoning"] is not None:
            reasoning[key] = reasoning.get(key, 0) + g["reasoning"]
    for key, (n, unmeasured, *tokens) in days.items():
        conv_id, model, day, band = key
        out.append(Call(roots[conv_id], model, day, CallUsage(*tokens), None, calls=n, unmeasured=unmeasured,
                        prompt=starts[band - 1] + 1 if band else 0, reasoning=reasoning.get(key)))
    return out


def utc_hour(tz=None):
    """A call's hour in UTC as text, 'YYYY-MM-DD HH', without a function per row (SQLite runs Django's
    date functions in Python, a second per 100,000 calls): both backends write a UTC timestamp in ISO
    order. A zone whose offset is not whole hours (India, Nepal) gets the minute, 'YYYY-MM-DD HH:MM'."""
    return Substr(Cast("timestamp", CharField()), 1, 13 if whole_hours(tz) else 16)


def whole_hours(tz) -> bool:
    """Whether the zone is a whole number of hours from UTC, winter and summer."""
    return tz is None or all((tz.utcoffset(datetime(2026, m, 1)) or timedelta()).total_seconds() % 3600 == 0 for m in (1, 7))


@functools.lru_cache(maxsize=65536)
def local(hour: str | None, tz) -> datetime | None:
    """The start of a UTC hour ('YYYY-MM-DD HH') or minute in `tz`."""
    if not hour:
        return None
    return datetime.strptime(hour, "%Y-%m-%d %H:%M" if len(hour) > 13 else "%Y-%m-%d %H").replace(tzinfo=UTC).astimezone(tz)


def _session_totals(conversation_ids: list[int]) -> dict[int, Decimal]:
    """Per session: the sum of its conversations' recorded session cost (``flags["session_totals"]``
    on a conversation's first messages, a log that keeps usage per session only)."""
    out: dict[int, Decimal] = {}
    rows = Message.objects.filter(conversation_id__in=id_set(conversation_ids), position__lt=2, flags__has_key="session_totals")
    convs = dict(Conversation.objects.filter(pk__in=id_set(conversation_ids)).values_list("id", "parent_id"))
    roots = _roots([{"id": k, "parent_id": v} for k, v in convs.items()])
    seen: set[int] = set()
    for conv_id, flags in rows.order_by("conversation_id", "position").values_list("conversation_id", "flags"):
        if conv_id in seen:
            continue
        cost = _cost(((flags or {}).get("session_totals") or {}).get("cost"))
        if cost is not None:
            seen.add(conv_id)
            out[roots[conv_id]] = out.get(roots[conv_id], Decimal(0)) + cost
    return out


def _fold_calls(members: list[int], roots: dict[int, int], f: Filters) -> list[Call]:
    """The harness's own compaction calls where its log keeps their usage on the fold (``Fold.cost``)
    rather than as a call of a conversation: one Call per fold. A fold whose cost names the
    conversation of its compaction run (a harness that logs that run as a sub-agent's file) is that
    conversation's call, counted there. A fold made here (a handoff) is this
    server's spend, not the agent's, and is left out."""
    out: list[Call] = []
    folds = Fold.objects.filter(conversation_id__in=id_set(members), origin=FoldOrigin.IMPORTED).exclude(cost={})
    for conv_id, when, cost in folds.values_list("conversation_id", "timestamp", "cost"):
        if not isinstance(cost, dict) or cost.get("conversation_id") is not None:
            continue  # a fold whose cost names a conversation: that conversation's call, already counted
        model = str(cost.get("model") or "")
        if f.model and f.model.lower() not in model.lower():
            continue
        usage = CallUsage(*(max(0, int(cost.get(k) or 0)) if isinstance(cost.get(k), (int, float)) else 0
                            for k in ("input_uncached", "cache_write", "cache_write_1h", "cache_read", "output")))
        if not (f.since and when is None) and any((usage.prompt, usage.output)):
            out.append(Call(roots[conv_id], model, when, usage))
    return out
