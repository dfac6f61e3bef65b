"""The policy lab's pages: the lab of one conversation (/c/<pk>/lab/) and the project-wide table
(/policies/). Access as on the conversation page: a member of the conversation's project (any role)
sees it; anyone else gets a 404. The replay is open loop and every page says so."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from contextviewer.core.policylab import defaults as default_policies, get as get_policy, names as policy_names
from contextviewer.core.severity import CRITICAL_AT, WARN_AT
from contextviewer.importers import formats

from contextviewer.lab import replays as policylab
from contextviewer.conversations.models import Conversation, ConversationKind
from contextviewer.accounts.permissions import get_conversation_for_user, projects_for

CLIP_SHOWN = 6000  # characters of each side of a clip shown (the counts say how much more there is)
WIDTH, HEIGHT = 1000, 250


@dataclass
class Line:
    name: str
    label: str
    css: str
    path: str
    fires: list[tuple[float, float, int, int]] = field(default_factory=list)  # x, y, call index, tokens
    # A curve of one call is one point, and a path through one point draws nothing: its point is a dot.
    points: list[tuple[float, float, int, int]] = field(default_factory=list)  # x, y, call index, tokens


@dataclass
class LabCurve:
    width: int
    height: int
    lines: list[Line]
    bands: list[tuple[str, float, float]]
    ticks: list[tuple[float, str]]
    window: int
    calls: int


def _short(v: int) -> str:
    return f"{v / 1_000_000:.1f}M" if v >= 1_000_000 else f"{v / 1000:.0f}k" if v >= 1000 else str(v)


def _curve(window: int, baseline: policylab.PolicyResult, results: list[policylab.PolicyResult]) -> LabCurve | None:
    n = baseline.calls
    if not n:
        return None
    ymax = max([window, 1] + [max(r.totals, default=0) for r in [baseline, *results]])

    def y(v: float) -> float:
        return round(HEIGHT - HEIGHT * min(v, ymax) / ymax, 1)

    def x(i: int) -> float:  # one call: in the middle, not on the axis at the left edge
        return round(WIDTH * i / (n - 1), 1) if n > 1 else WIDTH / 2

    def path(values: list[int]) -> str:
        return " ".join(f"{'M' if i == 0 else 'L'}{x(i)} {y(v)}" for i, v in enumerate(values))

    def points(values: list[int]) -> list[tuple[float, float, int, int]]:
        return [(x(i), y(v), i, v) for i, v in enumerate(values)] if len(values) == 1 else []

    recorded = baseline.totals
    lines = [Line(baseline.name, "recorded (as logged)", "line-recorded", path(recorded), points=points(recorded))]
    for k, r in enumerate(results):
        # A dot sits on the policy's line where it acts: the level of the call before the action.
        fires = [(x(c), y(r.totals[max(c - 1, 0)]), c, t) for c, t in r.fire_points if 0 <= c < n]
        lines.append(Line(r.name, r.label, f"line-policy pl-{k % 8}", path(r.totals), fires, points(r.totals)))
    step = 10 ** max(0, int(math.log10(ymax)))
    while ymax / step > 6:
        step *= 2
    while ymax / step < 3 and step > 1:
        step //= 2
    ticks = [(y(v), _short(v)) for v in range(step, ymax + 1, max(step, 1))]
    bands = [
        ("warn", y(window * CRITICAL_AT), y(window * WARN_AT) - y(window * CRITICAL_AT)),
        ("critical", y(window), y(window * CRITICAL_AT) - y(window)),
    ] if window else []
    return LabCurve(WIDTH, HEIGHT, lines, bands, ticks, window, n)


def _chosen(request: HttpRequest, conv: Conversation) -> tuple[list[str], list[str]]:
    """(chosen policies, unknown names asked for): the GET form's, else the defaults."""
    known = [n for n in policy_names() if n != policylab.BASELINE]
    asked = [n for n in request.GET.getlist("policy") if n]
    unknown = [n for n in asked if n not in known]
    if asked:
        return [n for n in known if n in asked], unknown
    own = formats.harness(conv.agent).own_policy  # the policy of the harness that recorded it
    defaults = default_policies()  # the lab's default comparison, declared on the policies
    return [n for n in known if n in defaults or n == own], []


def _ends(text: str) -> tuple[str, int, str]:
    """(head, characters not shown, tail) of a long text: a clip's marker sits at the head's end
    or the tail, so both ends show; the page says how much lies between."""
    if len(text) <= CLIP_SHOWN:
        return text, 0, ""
    head, tail = CLIP_SHOWN * 2 // 3, CLIP_SHOWN // 3
    return text[:head], len(text) - head - tail, text[-tail:]


@login_required
@require_GET
def lab(request: HttpRequest, pk: int) -> HttpResponse:
    conv = get_conversation_for_user(request, pk)
    chosen, unknown = _chosen(request, conv)
    lab_session, results = policylab.cached_replays(conv, [policylab.BASELINE, *chosen])
    baseline, results = results[0], results[1:]
    if lab_session is None:
        lab_session = policylab.load_session(conv)
    window = lab_session.session.window
    rows = []
    for r in results:
        rows.append(
            {
                "r": r,
                "red_pct": 100.0 * r.red_zone_calls / r.calls if r.calls else 0.0,
                "facts_shown": [(a, a.facts[: policylab.FACTS_SHOWN], max(0, len(a.facts) - policylab.FACTS_SHOWN)) for a in r.actions],
            }
        )
    clips = [{"c": c, "given": _ends(c.given), "original": _ends(c.original or "")} for c in lab_session.clips]
    context = {
        "conv": conv,
        "policies": [(n, get_policy(n).label, n in chosen) for n in policy_names() if n != policylab.BASELINE],
        "unknown": unknown,
        "baseline": baseline,
        "baseline_red_pct": 100.0 * baseline.red_zone_calls / baseline.calls if baseline.calls else 0.0,
        "rows": rows,
        "curve": _curve(window, baseline, results),
        "window": window,
        "red_line": policylab.red_line(window),
        "note": policylab.OPEN_LOOP_NOTE,
        "clips": clips,
        "clipped_tokens": lab_session.clipped_tokens,
        "summaries_measured": lab_session.summaries_measured,
        "recorded_cost": policylab.recorded_cost(lab_session),
    }
    return render(request, "conversations/policylab.html", context)


@login_required
@require_GET
def project_table(request: HttpRequest) -> HttpResponse:
    projects = list(projects_for(request))
    slug = request.GET.get("project", "")
    project = next((p for p in projects if p.slug == slug), projects[0] if projects else None)
    error = f"No project {slug!r} of yours; showing {project.name}." if slug and project and project.slug != slug else ""
    names = [n for n in policy_names() if n != policylab.BASELINE]
    rows: list[policylab.ProjectRow] = []
    total = shown = 0
    if project is not None:
        qs = Conversation.objects.filter(project=project, kind=ConversationKind.MAIN, model_call_count__gt=0).order_by("-started_at", "-id")
        total = qs.count()
        convs = list(qs[: policylab.MAX_CONVERSATIONS])
        shown = len(convs)
        rows = policylab.project_table(convs, names)
    context = {
        "projects": projects,
        "project": project,
        "error": error,
        "rows": rows,
        "total": total,
        "shown": shown,
        "note": policylab.OPEN_LOOP_NOTE,
    }
    return render(request, "conversations/policy_table.html", context)
