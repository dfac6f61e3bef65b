"""The policy lab's pages: the lab of one conversation (/c/<pk>/lab/) and the project-wide table
(/policies/). Access as on the conversation page: a member of the conversation's project (any role)
sees it; anyone else gets a 404. The table reads the figures the policy_table job stored (lab/table.py);
starting that job takes the "edit" permission. The replay is open loop and every page says so."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.timesince import timesince
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from contextviewer.core.policylab import defaults as default_policies, get as get_policy, names as policy_names
from contextviewer.core.severity import CRITICAL_AT, WARN_AT
from contextviewer.importers import formats
from contextviewer.display.templatetags.cv import tok

from contextviewer.lab import replays as policylab, table as policy_table
from contextviewer.conversations.models import Conversation
from contextviewer.jobs import queue as jobs
from contextviewer.accounts.permissions import can, get_conversation_for_user, get_membership_for_user, projects_for

CLIP_SHOWN = 6000  # characters of each side of a clip shown (the counts say how much more there is)
WIDTH, HEIGHT = 1000, 250


@dataclass
class Line:
    name: str
    label: str
    css: str
    path: str
    fires: list[tuple[float, float, int, int]] = field(default_factory=list)  # x, y, call index, tokens
    # Calls whose window holds more than the model's window: marked on the window's line.
    overflows: list[tuple[float, float, int, int]] = field(default_factory=list)  # x, y, call index, tokens
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

    def fires(r: policylab.PolicyResult) -> list[tuple[float, float, int, int]]:
        # A dot sits on the line where it acts: the level of the call before the action.
        return [(x(c), y(r.totals[max(c - 1, 0)]), c, t) for c, t in r.fire_points if 0 <= c < n]

    def overflows(r: policylab.PolicyResult) -> list[tuple[float, float, int, int]]:
        return [(x(i), y(window), i, t) for i, t in enumerate(r.totals) if window and t > window]

    estimate = "" if baseline.calibrated else " line-estimate"
    recorded = baseline.totals
    lines = [
        Line(
            baseline.name, "recorded (as logged)", "line-recorded", path(recorded), fires=fires(baseline), points=points(recorded),
            overflows=overflows(baseline),
        )
    ]
    for k, r in enumerate(results):
        label = r.label if r.calibrated else f"{r.label} (uncalibrated estimate)"
        lines.append(
            Line(
                r.name, label, f"line-policy pl-{k % 8}{estimate}", path(r.totals), fires=fires(r), points=points(r.totals),
                overflows=overflows(r),
            )
        )
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


def _row(r: policylab.PolicyResult) -> dict:
    """One policy's row and action list: its red-zone share, which of its figures are measured, and
    each action's effect and facts (the first ones)."""
    return {
        "r": r,
        "red_pct": 100.0 * r.red_zone_calls / r.calls if r.calls else 0.0,
        "measured_until": _measured_until(r),
        "facts_shown": [
            (a, _effect(a), a.facts[: policylab.FACTS_SHOWN], max(0, len(a.facts) - policylab.FACTS_SHOWN)) for a in r.actions
        ],
    }


def _measured_until(r: policylab.PolicyResult) -> str:
    if r.estimated_from is None:
        return "· every call measured"
    if r.estimated_from == 0:
        return "· estimated from the first call"
    return f"· measured until call {r.estimated_from - 1}, estimated from call {r.estimated_from}"


# Actions that reshape the whole window (its size before and after), beside the folds and drops;
# the others clip one result (the tokens they removed from it).
WINDOW_ACTIONS = {"microcompact", "clear", "compress", "args_truncate"}


def _effect(a: policylab.Action) -> str:
    """What one action did: "window 90k → 20k tokens, 12 messages dropped", or for a clip
    "removed 3.1k tokens of one result (5.0k → 1.9k)"."""
    if a.group in ("folds", "drops") or a.kind in WINDOW_ACTIONS:
        text = f"window {tok(a.tokens_before)} → {tok(a.tokens_after)} tokens"
    else:
        text = f"removed {tok(a.saved)} tokens of one result ({tok(a.tokens_before)} → {tok(a.tokens_after)})"
    if a.dropped:
        text += f", {a.dropped} message{pluralize(a.dropped)} dropped"
    if a.clipped:
        text += f", {a.clipped} clipped"
    return text


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
    rows = [_row(r) for r in results]
    clips = [{"c": c, "given": _ends(c.given), "original": _ends(c.original or "")} for c in lab_session.clips]
    context = {
        "conv": conv,
        "policies": [(n, get_policy(n).label, n in chosen) for n in policy_names() if n != policylab.BASELINE],
        "unknown": unknown,
        "baseline": baseline,
        "baseline_row": _row(baseline),
        "rows": rows,
        "rows_with_baseline": [_row(baseline), *rows],
        "calibrated": lab_session.session.calibrated,
        "calibration_note": lab_session.session.calibration_note,
        "curve": _curve(window, baseline, results),
        "window": window,
        "red_line": policylab.red_line(window),
        "note": policylab.OPEN_LOOP_NOTE,
        "clips": clips,
        "clipped_tokens": lab_session.clipped_tokens,
        "summaries_measured": lab_session.summaries_measured,
        "recorded_cost": policylab.recorded_cost(lab_session),
    }
    return render(request, "lab/policylab.html", context)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def project_table(request: HttpRequest) -> HttpResponse:
    """The project-wide policy table, from the rows the policy_table job stored (no replay here)."""
    projects = list(projects_for(request))
    slug = request.GET.get("project", "")
    project = next((p for p in projects if p.slug == slug), projects[0] if projects else None)
    error = f"No project {slug!r} of yours; showing {project.name}." if slug and project and project.slug != slug else ""
    job = policy_table.latest_job(project) if project is not None else None
    if request.htmx and request.GET.get("poll"):  # the job's progress, polled while it runs
        response = render(request, "lab/policy_table.html#table-job", {"project": project, **_job_context(job)})
        if job is None or job.is_finished:
            response["HX-Refresh"] = "true"  # done: the whole page again, with the new figures
        return response
    context = {
        "projects": projects,
        "project": project,
        "error": error,
        "table": policy_table.table(project, request.GET.get("page")) if project is not None else None,
        "can_start": can(request, project, "edit"),
        "note": policylab.OPEN_LOOP_NOTE,
        **_job_context(job),
    }
    return render(request, "lab/policy_table.html", context)


def _job_context(job) -> dict:
    progress, text = jobs.current_progress(job) if job is not None else (0.0, "")
    return {"job": job, "progress_pct": int(progress * 100), "progress_text": text, "job_outcome": _job_outcome(job)}


def _job_outcome(job) -> str:
    """How the table's latest job ended: "succeeded 4 minutes ago (2 conversations failed to replay)"."""
    if job is None:
        return ""
    text = job.get_status_display().lower()
    if job.finished_at:
        text += f" {timesince(job.finished_at)} ago"
    failed = (job.result if isinstance(job.result, dict) else {}).get("failed")
    if failed:
        n = len(failed) if hasattr(failed, "__len__") else 0
        text += f" ({n} conversation{pluralize(n)} failed to replay)"
    return text


@login_required
@require_POST
def project_table_start(request: HttpRequest) -> HttpResponse:
    """Start the project's policy_table job (or find the one running) and go back to the table."""
    member = get_membership_for_user(request, request.POST.get("project", ""), "edit", doing="update the policy table")
    policy_table.start(member.project, user=request.user)
    return redirect(f"{reverse('policy_table')}?{urlencode({'project': member.project.slug})}")
