"""The project-wide policy table: every policy replayed over every main conversation of a project
in a `policy_table` job (jobs/kinds.py), the figures of each replay stored per conversation
revision (lab/models.PolicyReplay), and the table /policies/ reads from the stored rows alone.

Revision: what page_cache versions a conversation's row by (`page_cache.row_version`: the counts,
peak, spend, window and models every import recomputes, and the revision counter an import bumps
when it changes stored messages in place), with the agent, the fold count and TABLE_VERSION (the
figures' own version: raise it when the replay or the stored figures change). A re-import that
changes anything of these makes the conversation's rows stale; the next job replays it again.

A conversation that fails to replay is stored as failed (one row per policy with the error) at its
revision, and the job goes on; it is tried again once its revision changes.

Median peak: per policy, over the conversations where THAT policy acted, the median of its peak
(the largest window of its replay) beside the median of the recorded peak over the same
conversations. Taken over every conversation, or over those where any policy acted, the medians were
the recorded one for every policy (issue 36: 15k everywhere): most conversations stay small, no
fold policy acts in them, and picoclaw's and OpenHands' small thresholds put many small ones in
"any policy acted". Conversations whose calibration failed are left out (their replays are
uncalibrated estimates). The replay is open loop (replays.OPEN_LOOP_NOTE).
"""

from __future__ import annotations

import hashlib
import logging
import statistics
from dataclasses import dataclass, field

from django.core.paginator import Page, Paginator
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from contextviewer.core.secrets import mask_text
from contextviewer.core.policylab import defaults as default_policies, get as get_policy, names as policy_names

from contextviewer.accounts.models import Project
from contextviewer.conversations import page_cache
from contextviewer.conversations.models import Conversation, ConversationKind
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import Job, JobStatus
from contextviewer.lab import replays
from contextviewer.lab.models import PolicyReplay

log = logging.getLogger(__name__)

KIND = "policy_table"
UNRESOLVED = "unresolved"  # in a stored row's actions: actions after which the window stayed over the limit
TABLE_VERSION = 3  # the stored figures' version: raise it when the replays or the figures change
BATCH = 20  # conversations loaded at a time by the job
PER_PAGE = 50  # conversations listed per page
# The conversation fields a revision and the page's list read (nothing else is loaded).
FIELDS = (
    "id", "project_id", "title", "external_id", "agent", "created_at", "started_at", "message_count",
    "model_call_count", "fold_count", "peak_context", "measured_calls", "spend_tokens", "window",
    "model_names", "revision",
)
UP_TO_DATE, STALE, MISSING, FAILED = "up to date", "stale", "missing", "failed"


def table_policies() -> list[str]:
    """The policies of the table: every policy but the recorded baseline, in registry order."""
    return [n for n in policy_names() if n != replays.BASELINE]


def revision_of(conv: Conversation) -> str:
    """The conversation's revision for the table (see the module's docstring)."""
    parts = (TABLE_VERSION, page_cache.row_version(conv), conv.agent, conv.fold_count)
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def conversations(project: Project):
    """The project's main conversations with model calls, newest first (only FIELDS loaded)."""
    return (
        Conversation.objects.filter(project=project, kind=ConversationKind.MAIN, model_call_count__gt=0)
        .order_by(F("started_at").desc(nulls_last=True), "-id")
        .only(*FIELDS)
    )


def _stored(project: Project) -> dict[int, dict[str, tuple[str, bool]]]:
    """conversation id -> policy -> (revision, failed) of the stored rows."""
    out: dict[int, dict[str, tuple[str, bool]]] = {}
    for conv_id, policy, revision, error in PolicyReplay.objects.filter(project=project).values_list(
        "conversation_id", "policy", "revision", "error"
    ):
        out.setdefault(conv_id, {})[policy] = (revision, bool(error))
    return out


def status_of(revision: str, stored: dict[str, tuple[str, bool]] | None, wanted: list[str]) -> str:
    """up to date | failed (at this revision) | stale (rows of another revision) | missing."""
    if not stored:
        return MISSING
    held = [stored.get(n) for n in wanted]
    if all(h is not None and h[0] == revision for h in held):
        return FAILED if any(h[1] for h in held) else UP_TO_DATE
    return STALE if any(h is not None for h in held) else MISSING


def pending(project: Project) -> list[tuple[int, str]]:
    """(conversation id, revision) of the conversations whose rows are missing or stale, newest first."""
    wanted = [replays.BASELINE, *table_policies()]
    stored = _stored(project)
    out = []
    for conv in conversations(project):
        revision = revision_of(conv)
        if status_of(revision, stored.get(conv.pk), wanted) in (STALE, MISSING):
            out.append((conv.pk, revision))
    return out


# --- the job ----------------------------------------------------------------------------------


def latest_job(project: Project) -> Job | None:
    return Job.objects.filter(project=project, kind=KIND).order_by("-created_at", "-pk").first()


def start(project: Project, *, user=None) -> tuple[Job, bool]:
    """The project's running policy_table job, else a new one (or the one made for the same
    pending conversations, run again when it was cancelled or failed). (job, started now)."""
    running = Job.objects.filter(project=project, kind=KIND, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).first()
    if running is not None:
        return running, False
    todo = pending(project)
    digest = hashlib.sha256(repr(todo).encode()).hexdigest()[:24]
    job, new = jobs.create_job(project, KIND, {"conversations": len(todo)}, user=user, idempotency_key=f"{KIND}:{project.pk}:{digest}")
    if not new and job.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        jobs.retry(job)
        job.refresh_from_db()
        new = True
    return job, new


def replay_rows(conv: Conversation, revision: str, names: list[str]) -> list[PolicyReplay]:
    """The rows of one conversation: the baseline (its recorded peak) and each policy, replayed."""
    lab = replays.load_session(conv)
    results = replays.replay_all(conv, [replays.BASELINE, *names], lab)
    baseline = results[0]
    session = lab.session
    calibrated = bool(getattr(session, "calibrated", True))
    note = str(getattr(session, "calibration_note", "") or "")
    windows = [c.window or session.window for c in session.calls]
    now = timezone.now()
    return [
        PolicyReplay(
            project_id=conv.project_id, conversation_id=conv.pk, policy=r.name, revision=revision, calls=r.calls,
            peak=r.peak, recorded_peak=baseline.peak, fires=r.fires, folds=r.folds,
            # by kind, and UNRESOLVED: the actions that left the window over the policy's own limit
            actions={**r.by_kind, UNRESOLVED: len(r.unresolved)},
            tokens_saved=r.saved_tokens, red_zone_calls=r.red_zone_calls,
            overflow_calls=_overflow(r, windows),
            facts_at_risk=r.facts_at_risk, cost=r.cost, calibrated=calibrated, calibration_note=note, computed_at=now,
        )
        for r in results
    ]


def _overflow(result: replays.PolicyResult, windows: list[int]) -> int:
    """Calls whose replayed total exceeds the window: the replay's own count where it gives one."""
    counted = getattr(result, "overflow_calls", None)
    if counted is not None:
        return int(counted)
    return sum(1 for t, w in zip(result.totals, windows, strict=True) if w and t > w)


def failure_rows(conv: Conversation, revision: str, names: list[str], error: str) -> list[PolicyReplay]:
    now = timezone.now()
    return [
        PolicyReplay(project_id=conv.project_id, conversation_id=conv.pk, policy=n, revision=revision, error=mask_text(error)[:2000], computed_at=now)
        for n in [replays.BASELINE, *names]
    ]


def _save(conv_id: int, rows: list[PolicyReplay]) -> bool:
    """Replace the conversation's rows (False: it was deleted meanwhile)."""
    try:
        with transaction.atomic():
            if not Conversation.objects.filter(pk=conv_id).exists():
                return False
            PolicyReplay.objects.filter(conversation_id=conv_id).delete()
            PolicyReplay.objects.bulk_create(rows)
    except IntegrityError:  # deleted between the look and the write
        return False
    return True


def run_policy_table(job: Job, progress) -> dict:
    """Replay every policy over each conversation of the job's project whose rows are missing or
    stale, in batches, saving each conversation's rows as it goes (a cancelled or stopped job keeps
    what it did). A conversation that fails to replay is stored as failed and the job goes on."""
    names = table_policies()
    todo = pending(job.project)
    total = len(todo)
    done = replayed = 0
    failed: list[dict] = []
    for start_at in range(0, total, BATCH):
        batch = todo[start_at : start_at + BATCH]
        by_id = Conversation.objects.in_bulk([pk for pk, _ in batch])
        for pk, revision in batch:
            progress(done / total, f"{done} of {total} conversations")  # a cancel stops here, before the next one
            conv = by_id.get(pk)
            if conv is not None:
                ok = True
                try:
                    rows = replay_rows(conv, revision, names)
                except DatabaseError:
                    raise  # the database's trouble, not the conversation's: the job fails, the rows so far stay
                except Exception as exc:  # one conversation's failure is recorded; the others go on
                    if type(exc).__name__ == "SoftTimeLimitExceeded":  # the worker's time is up (Celery)
                        raise
                    log.warning("policy table: conversation %s failed to replay", pk, exc_info=True)
                    error = f"{type(exc).__name__}: {exc}"
                    rows = failure_rows(conv, revision, names, error)
                    failed.append({"conversation_id": pk, "error": error})
                    ok = False
                replayed += int(_save(pk, rows) and ok)  # not counted: deleted meanwhile
            done += 1
    progress(1.0, f"{done} of {total} conversation{'s' if total != 1 else ''}")
    return {"conversations": total, "replayed": replayed, "failed": failed, "policies": names}


def table_outcome(job) -> dict:
    """The job page's account of a policy_table job (jobs/kinds.py OUTCOMES): how many
    conversations it replayed, which failed, and the table it filled."""
    result = job.result or {}
    failed = result.get("failed") or []
    figures = [
        ("Conversations to replay", result.get("conversations", 0)),
        ("Replayed", result.get("replayed", 0)),
        ("Failed", len(failed)),
        ("Policies", ", ".join(get_policy(n).label for n in result.get("policies") or [] if n in policy_names())),
    ]
    links = [("Open the policy table", f"{reverse('policy_table')}?project={job.project.slug}")]
    links += [(f"Policy lab of conversation {f['conversation_id']} (failed)", reverse("policy_lab", args=[f["conversation_id"]]))
              for f in failed[:5]]
    return {"heading": "The policy table", "figures": figures, "links": links}


# --- the page ---------------------------------------------------------------------------------


@dataclass
class PolicyRow:
    name: str
    label: str
    conversations: int  # replayed, up to date
    acted: int  # of which the policy acted in
    median_peak: float | None  # of its peaks over the calibrated conversations it acted in (None: none)
    recorded_median_peak: float | None  # of the recorded peaks over the same conversations
    median_over: int  # the calibrated conversations it acted in: what both medians are taken over
    folds_per_100_calls: float | None
    red_zone_calls: int
    overflow_calls: int
    facts_at_risk: int
    # Conversations where the policy let the window go past the model's window, or could not bring it
    # under its own limit: flagged on the page (no silent overflow).
    over_window: int = 0
    over_limit: int = 0

    @property
    def flagged(self) -> bool:
        return bool(self.over_window or self.over_limit)

    @property
    def flag_text(self) -> str:
        """What the flag says: where the policy could not get under its limit, or went past the window."""
        def conversations(n: int) -> str:
            return f"{n} conversation{'' if n == 1 else 's'}"
        parts = []
        if self.over_limit:
            parts.append(f"could not get under its limit in {conversations(self.over_limit)}")
        if self.over_window:
            parts.append(f"went past the window in {conversations(self.over_window)}")
        return "; ".join(parts)


@dataclass
class ConversationRow:
    id: int
    title: str
    status: str
    recorded_peak: int | None
    cells: list[tuple[int, int] | None]  # per default policy: (folds, peak), None: not replayed
    error: str = ""
    calibrated: bool = True
    estimated: bool = False  # no call records its usage: every figure of the row is the lab's estimate


@dataclass
class Table:
    rows: list[PolicyRow]
    defaults: list[tuple[str, str]]  # (name, label) of the policies the list shows
    total: int = 0
    up_to_date: int = 0
    stale: int = 0
    missing: int = 0
    failed: int = 0
    uncalibrated: int = 0  # up-to-date conversations whose calibration failed
    page: Page | None = None
    listed: list[ConversationRow] = field(default_factory=list)

    @property
    def todo(self) -> int:
        return self.stale + self.missing


ROW_FIELDS = (
    "conversation_id", "policy", "revision", "calls", "peak", "recorded_peak", "fires", "folds", "red_zone_calls",
    "overflow_calls", "facts_at_risk", "calibrated", "error", "actions",
)


def _median(values: list[int]) -> float | None:
    return statistics.median(values) if values else None


def table(project: Project, page: int | str | None = 1) -> Table:
    """The table from the stored rows (two queries: the conversations, the rows), and one page of
    the conversations (PER_PAGE)."""
    names = table_policies()
    wanted = [replays.BASELINE, *names]
    shown = [n for n in names if n in default_policies()]
    convs = list(conversations(project))
    by_conv: dict[int, dict[str, dict]] = {}
    for values in PolicyReplay.objects.filter(project=project).values_list(*ROW_FIELDS):
        row = dict(zip(ROW_FIELDS, values, strict=True))
        by_conv.setdefault(row["conversation_id"], {})[row["policy"]] = row

    out = Table(rows=[], defaults=[(n, get_policy(n).label) for n in shown], total=len(convs))
    status: dict[int, str] = {}
    fresh: list[dict[str, dict]] = []  # the rows of the up-to-date conversations
    for conv in convs:
        rows = by_conv.get(conv.pk) or {}
        s = status[conv.pk] = status_of(revision_of(conv), {n: (r["revision"], bool(r["error"])) for n, r in rows.items()}, wanted)
        if s == UP_TO_DATE:
            out.up_to_date += 1
            fresh.append(rows)
        elif s == FAILED:
            out.failed += 1
        elif s == STALE:
            out.stale += 1
        else:
            out.missing += 1
    out.uncalibrated = sum(1 for rows in fresh if not rows[replays.BASELINE]["calibrated"])
    calibrated = [rows for rows in fresh if rows[replays.BASELINE]["calibrated"]]
    for n in names:
        mine = [rows[n] for rows in fresh]
        calls = sum(r["calls"] for r in mine)
        acted = [rows for rows in calibrated if rows[n]["fires"]]  # the median set of this policy
        out.rows.append(
            PolicyRow(
                name=n, label=get_policy(n).label, conversations=len(mine), acted=sum(1 for r in mine if r["fires"]),
                median_peak=_median([rows[n]["peak"] for rows in acted]),
                recorded_median_peak=_median([rows[replays.BASELINE]["peak"] for rows in acted]), median_over=len(acted),
                folds_per_100_calls=100.0 * sum(r["folds"] for r in mine) / calls if calls else None,
                red_zone_calls=sum(r["red_zone_calls"] for r in mine),
                overflow_calls=sum(r["overflow_calls"] for r in mine),
                facts_at_risk=sum(r["facts_at_risk"] for r in mine),
                over_window=sum(1 for r in mine if r["overflow_calls"]),
                over_limit=sum(1 for r in mine if (r["actions"] or {}).get(UNRESOLVED)),
            )
        )

    paginator = Paginator(convs, PER_PAGE)
    out.page = paginator.get_page(page)
    for conv in out.page.object_list:
        rows = by_conv.get(conv.pk) or {}
        base = rows.get(replays.BASELINE)
        failed = next((r["error"] for r in rows.values() if r["error"]), "")
        out.listed.append(
            ConversationRow(
                id=conv.pk, title=conv.title or conv.external_id, status=status[conv.pk],
                recorded_peak=base["peak"] if base and not failed else None,
                cells=[(rows[n]["folds"], rows[n]["peak"]) if n in rows and not failed else None for n in shown],
                error=failed, calibrated=bool(base["calibrated"]) if base else True,
                estimated=not conv.measured_calls,
            )
        )
    return out


__all__ = [
    "KIND",
    "PER_PAGE",
    "Table",
    "latest_job",
    "pending",
    "revision_of",
    "run_policy_table",
    "start",
    "table",
    "table_policies",
]
