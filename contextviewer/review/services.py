"""Review writes and reads shared by views, the API, the command and jobs: probes, judge, queues,
reviews, comments, pairwise votes, dashboard figures."""

from __future__ import annotations

import json
import logging
import math
import random
import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import timedelta
from itertools import combinations
from statistics import median

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from contextviewer.accounts.models import Project
from contextviewer.jobs import queue as jobs
from contextviewer.conversations import segments as windows
from contextviewer.conversations.models import Conversation, Fold, Message
from contextviewer.jobs.models import Job
from contextviewer.core import facts as core_facts
from contextviewer.core import tokens as core_tokens

from contextviewer.review.models import PROBE_VERSION, RUBRIC, Choice, Comment, FactProbe, JudgeRun, PairwiseComparison, QueueMode, Review, ReviewItem, ReviewQueue, ScoreConfig

log = logging.getLogger(__name__)

LOCK_FOR = timedelta(minutes=15)


class ReviewError(Exception):
    """A bad request a person should read (shown as the form's error)."""


# --- fact probes ------------------------------------------------------------------------------


def segment_start(fold: Fold) -> int:
    """First position of the fold's archived segment, as the conversation page shows it (the one
    window loader); a fold that makes no segment (a microcompact) starts and ends at itself."""
    segment = windows.archived_segment(fold)
    return segment.start if segment is not None else fold.position


def segment_messages(fold: Fold) -> list[Message]:
    """The messages of the fold's archived segment (none for a fold that makes no segment)."""
    segment = windows.archived_segment(fold)
    if segment is None:
        return []
    return list(
        Message.objects.filter(conversation_id=fold.conversation_id)
        .filter(windows.archived_q(segment))
        .defer("raw")
        .order_by("position")
    )


def _plain(m: Message) -> dict:
    return {"position": m.position, "turn": m.turn, "role": m.role, "blocks": m.blocks, "is_meta": m.is_meta}


def compute_probe(fold: Fold) -> FactProbe:
    """Probe one fold (idempotent: one FactProbe per fold, replaced when recomputed)."""
    conv = fold.conversation
    messages = segment_messages(fold)
    summary = fold.summary_text or ""
    report = core_facts.probe(
        [_plain(m) for m in messages],
        summary,
        cwd=conv.cwd,
        folded_tokens=sum(m.token_total for m in messages),
        summary_tokens=core_tokens.count_text(summary) if summary else 0,
    )
    values = {
        "project_id": conv.project_id,
        "conversation_id": conv.pk,
        "version": PROBE_VERSION,
        "retention": report.retention,
        "per_kind": report.per_kind(),
        "compression_ratio": report.compression_ratio,
        "folded_tokens": report.folded_tokens,
        "summary_tokens": report.summary_tokens,
        "facts": [f.as_dict() for f in report.facts],
        "segment_start": messages[0].position if messages else fold.position,
    }
    try:
        with transaction.atomic():
            probe, _ = FactProbe.objects.update_or_create(fold=fold, defaults=values)
    except IntegrityError:  # computed at the same moment elsewhere: same result
        probe = FactProbe.objects.get(fold=fold)
    return probe


def probe_for(fold: Fold) -> FactProbe:
    """The fold's probe, computed now when missing or made by an older extractor."""
    probe = FactProbe.objects.filter(fold=fold).first()
    if probe is None or probe.version != PROBE_VERSION:
        probe = compute_probe(fold)
    return probe


def enqueue_probes(conversation: Conversation, *, user=None) -> Job | None:
    """Start a probes job for a conversation with folds (after an import or a handoff).

    The key names the folds present, so the same set of folds is probed once."""
    folds = list(
        Fold.objects.filter(conversation=conversation)
        .exclude(kind__in=windows.NO_SEGMENT_KINDS)  # nothing to probe: no summary, no segment
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    if not folds:
        return None
    key = f"probes:{conversation.pk}:{len(folds)}:{folds[-1]}"
    job, _ = jobs.create_job(
        conversation.project, "probes", {"conversation_id": conversation.pk}, user=user, idempotency_key=key
    )
    return job


def run_probes(job: Job, progress) -> dict:
    conv = Conversation.objects.filter(pk=job.params.get("conversation_id"), project=job.project).first()
    if conv is None:
        raise ReviewError("The conversation no longer exists.")
    folds = list(
        Fold.objects.filter(conversation=conv)
        .exclude(kind__in=windows.NO_SEGMENT_KINDS)
        .select_related("conversation")
        .order_by("position", "pk")
    )
    out = []
    for i, fold in enumerate(folds):
        progress(i / max(len(folds), 1), f"probing fold {i + 1} of {len(folds)}")
        probe = compute_probe(fold)
        out.append({"fold_id": fold.pk, "retention": probe.retention, "facts": len(probe.facts)})
    return {"conversation_id": conv.pk, "folds": out}


def probe_report(conv: Conversation) -> list[dict]:
    """Per fold: retention per kind and overall, compression, summary tokens, lost facts with turns."""
    rows = []
    folds = Fold.objects.filter(conversation=conv).exclude(kind__in=windows.NO_SEGMENT_KINDS)
    for fold in folds.select_related("conversation").order_by("position", "pk"):
        probe = probe_for(fold)
        rows.append(
            {
                "fold_id": fold.pk,
                "position": fold.position,
                "origin": fold.origin,
                "retention": probe.retention,
                "per_kind": probe.per_kind,
                "compression_ratio": probe.compression_ratio,
                "folded_tokens": probe.folded_tokens,
                "summary_tokens": probe.summary_tokens,
                "facts": len(probe.facts),
                "lost": [
                    {"kind": f["kind"], "text": f["text"], "turn": f["turn"], "position": f["position"]}
                    for f in probe.lost_facts
                ],
            }
        )
    return rows


# --- judge ------------------------------------------------------------------------------------

JUDGE_SYSTEM = (
    "You judge a context compaction: a summary that replaced a segment of an AI coding agent's "
    "transcript. Judge only from the segment given. Answer with one JSON object and nothing else."
)
JUDGE_SEGMENT_LIMIT = 120_000  # characters of flat transcript sent to the judge


def flat_transcript(messages: Iterable[Message], limit: int = JUDGE_SEGMENT_LIMIT) -> str:
    """The segment as one flat transcript (USER:/ASSISTANT:/TOOL lines), head and tail kept when long."""
    lines = []
    for m in messages:
        for b in m.blocks or ():
            kind, text = b.get("kind"), (b.get("text") or "")
            if kind == "thinking" or not text:
                continue
            if kind == "tool_call":
                lines.append(f"TOOL CALL {b.get('tool_name', '')}: {text}")
            elif kind == "tool_result":
                lines.append(f"TOOL RESULT: {text}")
            else:
                lines.append(f"{m.role.upper()}: {text}")
    flat = "\n".join(lines)
    if len(flat) > limit:
        half = limit // 2
        flat = flat[:half] + f"\n[... {len(flat) - limit} characters cut ...]\n" + flat[-half:]
    return flat


def judge_prompt(fold: Fold, probe: FactProbe, messages: list[Message]) -> str:
    listed = [{"id": i, "kind": f["kind"], "fact": f["text"][:300]} for i, f in enumerate(probe.facts[:200])]
    return (
        "<segment>\n" + flat_transcript(messages) + "\n</segment>\n\n"
        "<summary>\n" + (fold.summary_text or "") + "\n</summary>\n\n"
        "<facts>\n" + json.dumps(listed, ensure_ascii=False) + "\n</facts>\n\n"
        "1. For each fact, say whether the summary keeps it (states it, not merely a word of it).\n"
        "2. Split the summary into its factual statements; say whether the segment supports each.\n"
        "3. Score the summary 1-5 on: " + ", ".join(RUBRIC) + ".\n"
        'Answer: {"facts": [{"id": 0, "kept": true}], "statements": [{"text": "...", "supported": true}], '
        '"rubric": {"goal": 1, "constraints": 1, "decisions": 1, "state": 1, "next_steps": 1, "important_details": 1}}'
    )


def parse_judge_answer(answer: str, fact_count: int) -> dict:
    """recall, precision and rubric from the judge's JSON (tolerating a fenced or wrapped object)."""
    match = re.search(r"\{.*\}", answer or "", re.S)
    if not match:
        raise ReviewError("The judge's answer holds no JSON object.")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise ReviewError(f"The judge's answer is not valid JSON: {exc}") from exc
    judged = [f for f in data.get("facts") or [] if isinstance(f, dict) and isinstance(f.get("id"), int)]
    kept = {f["id"] for f in judged if f.get("kept") is True and 0 <= f["id"] < fact_count}
    statements = [s for s in data.get("statements") or [] if isinstance(s, dict)]
    rubric = {}
    for key in RUBRIC:
        value = (data.get("rubric") or {}).get(key)
        if isinstance(value, int | float) and 1 <= value <= 5:
            rubric[key] = value
    return {
        "recall": (len(kept) / fact_count) if fact_count else None,
        "precision": (sum(1 for s in statements if s.get("supported") is True) / len(statements)) if statements else None,
        "rubric": rubric,
        "details": {"facts": judged[:500], "statements": statements[:200]},
    }


def judge_fold(fold: Fold, provider, *, job: Job | None = None) -> JudgeRun:
    """Ask `provider` (contextviewer.providers.base.Provider) to judge the fold; store the run."""
    probe = probe_for(fold)
    messages = segment_messages(fold)
    prompt = judge_prompt(fold, probe, messages)
    completion = _complete(provider, fold, prompt, job)
    spend = {
        "input_tokens": completion.input_tokens,
        "output_tokens": completion.output_tokens,
        "cache_read_tokens": completion.cache_read_tokens,
        "cache_write_tokens": completion.cache_write_tokens,
        "cost_usd": completion.cost_usd,
    }
    run = JudgeRun(
        project_id=fold.conversation.project_id,
        fold=fold,
        job=job,
        provider=getattr(provider, "name", ""),
        model=completion.model,
        prompt=prompt,
        answer=completion.text,
        spend=spend,
    )
    try:
        parsed = parse_judge_answer(completion.text, len(probe.facts[:200]))
    except ReviewError as exc:
        run.details = {"error": str(exc)}
        run.save()
        raise
    run.recall, run.precision, run.rubric, run.details = parsed["recall"], parsed["precision"], parsed["rubric"], parsed["details"]
    run.save()
    return run


def _complete(provider, fold: Fold, prompt: str, job: Job | None):
    """Through the providers service when installed (bounded retries, spend in the ledger by role)."""
    try:
        from contextviewer.providers import services as provider_services
    except ImportError:
        return provider.complete(system=JUDGE_SYSTEM, prompt=prompt, role="judge", max_tokens=4096)
    return provider_services.complete(
        provider, project=fold.conversation.project, role="judge", system=JUDGE_SYSTEM, prompt=prompt,
        max_tokens=4096, job=job, conversation=fold.conversation,
    )


def start_judge(fold: Fold, *, user=None) -> Job:
    job, _ = jobs.create_job(fold.conversation.project, "judge", {"fold_id": fold.pk}, user=user)
    return job


def _project_provider(project: Project):
    try:
        from contextviewer.providers import services as provider_services
    except ImportError as exc:
        raise ReviewError("No LLM provider is available in this installation.") from exc
    provider = provider_services.get_provider(project)
    if provider is None or provider.name == "builtin":
        # The builtin provider writes summaries offline; it cannot read and judge one.
        raise ReviewError(
            "The judge needs an LLM provider (OpenAI-compatible or Anthropic): set one as this project's default."
        )
    return provider


def run_judge(job: Job, progress) -> dict:
    fold = Fold.objects.select_related("conversation").filter(pk=job.params.get("fold_id"), conversation__project=job.project).first()
    if fold is None:
        raise ReviewError("The fold no longer exists.")
    existing = JudgeRun.objects.filter(job=job).first()
    if existing is not None:  # run twice: one result
        return {"judge_run_id": existing.pk, "recall": existing.recall, "precision": existing.precision}
    progress(0.1, "asking the judge")
    run = judge_fold(fold, _project_provider(job.project), job=job)
    return {"judge_run_id": run.pk, "recall": run.recall, "precision": run.precision, "rubric": run.rubric}


# --- score configs ----------------------------------------------------------------------------


def score_config(project: Project) -> ScoreConfig:
    config, _ = ScoreConfig.objects.get_or_create(project=project)
    return config


def validate_fields(raw: str | list) -> list[dict]:
    """A score config from JSON text (the settings form) or a list (the API)."""
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        raise ReviewError(f"The score fields are not valid JSON: {exc.msg} (line {exc.lineno}).") from exc
    if not isinstance(data, list) or not data:
        raise ReviewError("The score fields must be a non-empty JSON list.")
    out, keys = [], set()
    for i, f in enumerate(data, 1):
        if not isinstance(f, dict):
            raise ReviewError(f"Field {i} must be an object with key, label and type.")
        key, label, kind = str(f.get("key", "")).strip(), str(f.get("label", "")).strip(), f.get("type")
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", key):
            raise ReviewError(f"Field {i}: key must be lowercase letters, digits or _ (got {key!r}).")
        if key in keys:
            raise ReviewError(f"Field {i}: the key {key!r} is used twice.")
        if kind not in {"scale", "bool", "text"}:
            raise ReviewError(f"Field {i}: type must be scale, bool or text (got {kind!r}).")
        item = {"key": key, "label": label[:100] or key, "type": kind}
        if kind == "scale":
            lo, hi = f.get("min", 1), f.get("max", 5)
            if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo < hi <= 10):
                raise ReviewError(f"Field {i}: a scale needs integer min < max within 0..10.")
            item.update(min=lo, max=hi)
        keys.add(key)
        out.append(item)
    return out


def save_score_config(project: Project, raw, *, user=None, request=None) -> ScoreConfig:
    fields = validate_fields(raw)
    config = score_config(project)
    config.fields = fields
    config.save()
    _audit(request or user, project, "review.score_config_changed", "score config", fields=[f["key"] for f in fields])
    return config


def validate_scores(config: ScoreConfig, data) -> dict:
    scores, missing = {}, []
    for f in config.fields:
        raw = data.get(f["key"])
        raw = raw.strip() if isinstance(raw, str) else raw
        if f["type"] == "scale":
            if raw in (None, ""):
                missing.append(f["label"])
                continue
            try:
                value = int(raw)
            except (TypeError, ValueError):
                raise ReviewError(f"{f['label']}: give a whole number from {f['min']} to {f['max']}.") from None
            if not f["min"] <= value <= f["max"]:
                raise ReviewError(f"{f['label']}: give a whole number from {f['min']} to {f['max']}.")
            scores[f["key"]] = value
        elif f["type"] == "bool":
            if raw in (None, ""):
                missing.append(f["label"])
                continue
            if str(raw).lower() not in {"yes", "no", "true", "false", "1", "0", "on"}:
                raise ReviewError(f"{f['label']}: answer yes or no.")
            scores[f["key"]] = str(raw).lower() in {"yes", "true", "1", "on"}
        else:
            scores[f["key"]] = (raw or "")[:5000]
    if missing:
        raise ReviewError("Missing: " + ", ".join(missing) + ".")
    return scores


# --- queues -----------------------------------------------------------------------------------


def folds_matching(project: Project, filters: dict):
    """Folds of the project by the queue filters: agent, source (name contains), date range, retention below."""
    qs = Fold.objects.filter(conversation__project=project).exclude(kind__in=windows.NO_SEGMENT_KINDS)
    qs = qs.select_related("conversation")
    if filters.get("agent"):
        qs = qs.filter(conversation__agent=filters["agent"])
    if filters.get("source"):
        qs = qs.filter(conversation__source__name__icontains=filters["source"])
    if filters.get("origin"):
        qs = qs.filter(origin=filters["origin"])
    if filters.get("date_from"):
        qs = qs.filter(Q(timestamp__date__gte=filters["date_from"]) | Q(timestamp__isnull=True, created_at__date__gte=filters["date_from"]))
    if filters.get("date_to"):
        qs = qs.filter(Q(timestamp__date__lte=filters["date_to"]) | Q(timestamp__isnull=True, created_at__date__lte=filters["date_to"]))
    folds = list(qs.order_by("conversation_id", "position", "pk"))
    below = filters.get("retention_below")
    if below not in (None, ""):
        threshold = float(below) / 100
        folds = [f for f in folds if (r := probe_for(f).retention) is not None and r < threshold]
    return folds


def parse_filters(data) -> dict:
    filters = {}
    for key in ("agent", "source", "origin"):
        if (data.get(key) or "").strip():
            filters[key] = data.get(key).strip()[:200]
    for key in ("date_from", "date_to"):
        value = (data.get(key) or "").strip()
        if value:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
                raise ReviewError(f"{key.replace('_', ' ')}: use the form YYYY-MM-DD.")
            filters[key] = value
    below = (str(data.get("retention_below") or "")).strip().rstrip("%")
    if below:
        try:
            value = float(below)
        except ValueError:
            raise ReviewError("Retention below: give a percentage from 0 to 100.") from None
        if not 0 <= value <= 100:
            raise ReviewError("Retention below: give a percentage from 0 to 100.")
        filters["retention_below"] = value
    return filters


def summary_pairs(folds: list[Fold], rng: random.Random | None = None) -> list[tuple[Fold, Fold]]:
    """Every pair of summaries of the same segment among the folds' segments (the original and
    the summaries written again beside it), each pair in a random A/B order: which side is the
    recorded compaction is not a pattern a reviewer can learn."""
    from contextviewer.review import alternatives

    rng = rng or random.Random()
    seen: set[tuple[int, int]] = set()
    out = []
    for fold in folds:
        key = (fold.conversation_id, fold.position)
        if key in seen:
            continue
        seen.add(key)
        for a, b in combinations(alternatives.summaries(fold), 2):
            out.append((a, b) if rng.random() < 0.5 else (b, a))
    return out


def create_queue(
    project: Project, name: str, filters: dict, *, reviewers_per_item: int = 1, reviewers=(), user=None,
    mode: str = QueueMode.SINGLE, blind: bool = False,
) -> ReviewQueue:
    name = (name or "").strip()
    if not name:
        raise ReviewError("Give the queue a name.")
    if not 1 <= int(reviewers_per_item) <= 20:
        raise ReviewError("Reviewers per item: from 1 to 20.")
    if mode not in QueueMode.values:
        raise ReviewError("Mode: score each summary, or compare two summaries of the same fold.")
    folds = folds_matching(project, filters)
    if not folds:
        raise ReviewError("No fold matches these filters.")
    if mode == QueueMode.PAIRWISE:
        pairs = summary_pairs(folds)
        if not pairs:
            raise ReviewError(
                "No fold matching these filters has two summaries yet: summarize one again "
                "(on its conversation page or its review page) first."
            )
        items = [(a, b) for a, b in pairs]
    else:
        items = [(f, None) for f in folds]
    with transaction.atomic():
        queue = ReviewQueue.objects.create(
            project=project, name=name[:200], filters=filters, reviewers_per_item=reviewers_per_item, created_by=user,
            mode=mode, blind=bool(blind),
        )
        ReviewItem.objects.bulk_create([ReviewItem(queue=queue, fold=a, fold_b=b, order=i) for i, (a, b) in enumerate(items)])
        members = project.memberships.filter(user__in=list(reviewers)).values_list("user_id", flat=True)
        queue.reviewers.set(list(members))
    return queue


def can_review_in(queue: ReviewQueue, user) -> bool:
    """Assigned reviewers review; a queue with no assignment is open to everyone who may score."""
    return not queue.reviewers.exists() or queue.reviewers.filter(pk=user.pk).exists()


def lock_item(item: ReviewItem, user) -> bool:
    """Take (or renew) the lock on an item; False when someone else holds an unexpired lock."""
    now = timezone.now()
    updated = ReviewItem.objects.filter(
        Q(locked_by__isnull=True) | Q(locked_by=user) | Q(locked_until__lt=now), pk=item.pk
    ).update(locked_by=user, locked_until=now + LOCK_FOR)
    if updated:
        item.locked_by, item.locked_until = user, now + LOCK_FOR
    return bool(updated)


def release_item(item: ReviewItem, user) -> None:
    ReviewItem.objects.filter(pk=item.pk, locked_by=user).update(locked_by=None, locked_until=None)


def next_item(queue: ReviewQueue, user, *, after: ReviewItem | None = None) -> ReviewItem | None:
    """The next item this user may review: not reviewed by them, short of reviews, not locked by another."""
    now = timezone.now()
    qs = (
        queue.items.exclude(reviews__reviewer=user)
        .filter(review_count__lt=queue.reviewers_per_item)
        .filter(Q(locked_by__isnull=True) | Q(locked_by=user) | Q(locked_until__lt=now))
    )
    if after is not None:
        later = qs.filter(Q(order__gt=after.order) | Q(order=after.order, pk__gt=after.pk)).first()
        if later is not None:
            return later
    return qs.first()


def neighbours(item: ReviewItem) -> tuple[ReviewItem | None, ReviewItem | None]:
    items = item.queue.items.all()
    prev = items.filter(Q(order__lt=item.order) | Q(order=item.order, pk__lt=item.pk)).order_by("-order", "-pk").first()
    nxt = items.filter(Q(order__gt=item.order) | Q(order=item.order, pk__gt=item.pk)).first()
    return prev, nxt


def submit_review(item: ReviewItem, user, data) -> Review:
    if item.is_pair:
        choice = str(data.get("choice") or "").strip()
        if choice not in Choice.values:
            raise ReviewError("Choose A better, B better or equal.")
        scores = {"choice": choice, "comment": str(data.get("comment") or "")[:5000]}
    else:
        scores = validate_scores(score_config(item.queue.project), data)
    with transaction.atomic():
        if Review.objects.filter(item=item, reviewer=user).exists():
            raise ReviewError("You have already reviewed this fold in this queue.")
        locked = ReviewItem.objects.filter(pk=item.pk).filter(
            Q(locked_by__isnull=True) | Q(locked_by=user) | Q(locked_until__lt=timezone.now())
        )
        if not locked.exists():
            raise ReviewError("Someone else is reviewing this fold right now.")
        review = Review.objects.create(item=item, fold=item.fold, reviewer=user, scores=scores)
        if item.is_pair:  # the vote counts with the pairwise page's votes on the same two summaries
            record_pairwise(item.fold, item.fold_b, user, scores["choice"], scores["comment"])
        ReviewItem.objects.filter(pk=item.pk).update(review_count=F("review_count") + 1, locked_by=None, locked_until=None)
    return review


def hides_origin(item: ReviewItem, user) -> bool:
    """A blind queue's item hides origin and retention from a reviewer until their score is in."""
    return item.queue.blind and not Review.objects.filter(item=item, reviewer=user).exists()


def blind_fold_ids(user, conversation_id: int | None = None) -> set[int]:
    """The summaries `user` may not see the origin or retention of: every summary of a segment
    (the original and those written again) for which the user holds an unscored item of a blind
    queue (one they may score in: assigned, or the queue is open to all who may score). The rule
    holds on every page and API answer, not only the queue's own item page."""
    if user is None or not user.is_authenticated:
        return set()
    from contextviewer.accounts.models import Membership

    scoring = [m.project_id for m in Membership.objects.filter(user=user) if m.can("score")]
    items = (
        ReviewItem.objects.filter(queue__blind=True, queue__project_id__in=scoring)
        .filter(Q(queue__reviewers=user) | Q(queue__reviewers__isnull=True))
        .exclude(reviews__reviewer=user)
    )
    if conversation_id is not None:
        items = items.filter(fold__conversation_id=conversation_id)
    ids = set(items.values_list("fold_id", flat=True)) | set(items.exclude(fold_b=None).values_list("fold_b_id", flat=True))
    if not ids:
        return set()
    segments = set(Fold.objects.filter(pk__in=ids).values_list("conversation_id", "position"))
    q = Q()
    for conv_id, position in segments:
        q |= Q(conversation_id=conv_id, position=position)
    return set(Fold.objects.filter(q).values_list("pk", flat=True))


def hides_fold(user, fold: Fold) -> bool:
    """Whether `user` is blind to this summary's origin and retention (see blind_fold_ids)."""
    return fold.pk in blind_fold_ids(user, fold.conversation_id)


def visible_reviews(item: ReviewItem, user) -> list[Review]:
    """Blind until submitted: a reviewer sees the others' scores only after submitting their own."""
    if not Review.objects.filter(item=item, reviewer=user).exists():
        return []
    return list(item.reviews.select_related("reviewer"))


def add_comment(fold: Fold, user, text: str, *, turn=None, fact: str = "") -> Comment:
    text = (text or "").strip()
    if not text:
        raise ReviewError("Write a comment first.")
    if len(text) > 10_000:
        raise ReviewError("A comment holds at most 10,000 characters.")
    turn_value = None
    if turn not in (None, ""):
        try:
            turn_value = int(turn)
        except (TypeError, ValueError):
            raise ReviewError("The turn must be a number.") from None
        segment = windows.archived_segment(fold)
        turns = (
            set(
                Message.objects.filter(conversation_id=fold.conversation_id)
                .filter(windows.archived_q(segment))
                .values_list("turn", flat=True)
                .distinct()
            )
            if segment is not None
            else set()
        )
        if turn_value not in turns:
            raise ReviewError(f"Turn {turn_value} is not in this fold's archived segment.")
    fact = (fact or "").strip()
    if fact:
        known = {f"{f['kind']}:{f['key']}" for f in probe_for(fold).facts}
        if fact not in known:
            raise ReviewError("That fact is not one of this fold's facts.")
    return Comment.objects.create(
        project_id=fold.conversation.project_id, fold=fold, author=user, turn=turn_value, fact=fact[:600], text=text
    )


# --- pairwise ---------------------------------------------------------------------------------


def pair_candidates(fold: Fold) -> list[Fold]:
    """Other summaries of the same segment: folds of the conversation at the same position."""
    return list(
        Fold.objects.filter(conversation_id=fold.conversation_id, position=fold.position)
        .exclude(pk=fold.pk)
        .exclude(kind__in=windows.NO_SEGMENT_KINDS)
        .order_by("pk")
    )


def record_pairwise(fold_a: Fold, fold_b: Fold, user, choice: str, comment: str = "") -> PairwiseComparison:
    if fold_a.pk == fold_b.pk:
        raise ReviewError("Compare two different summaries.")
    if fold_a.conversation_id != fold_b.conversation_id or fold_a.position != fold_b.position:
        raise ReviewError("These two summaries do not stand for the same segment.")
    if choice not in Choice.values:
        raise ReviewError("Choose A better, B better or equal.")
    vote, _ = PairwiseComparison.objects.update_or_create(
        fold_a=fold_a,
        fold_b=fold_b,
        reviewer=user,
        defaults={"project_id": fold_a.conversation.project_id, "choice": choice, "comment": (comment or "")[:5000]},
    )
    return vote


# --- dashboard --------------------------------------------------------------------------------

GROUPS = ("agent", "source", "cli_version", "provider", "month")


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (p in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def cohen_kappa(pairs: list[tuple]) -> float | None:
    """Unweighted Cohen's kappa of two raters over paired labels; None with fewer than two pairs."""
    if len(pairs) < 2:
        return None
    n = len(pairs)
    labels = {a for a, _ in pairs} | {b for _, b in pairs}
    observed = sum(1 for a, b in pairs if a == b) / n
    expected = sum((sum(1 for a, _ in pairs if a == k) / n) * (sum(1 for _, b in pairs if b == k) / n) for k in labels)
    if expected == 1:
        return 1.0 if observed == 1 else None
    return (observed - expected) / (1 - expected)


def _group_value(fold: Fold, group: str) -> str:
    conv = fold.conversation
    if group == "agent":
        return conv.agent or "?"
    if group == "source":
        return conv.source.format if conv.source_id and conv.source else ("generated" if fold.origin == "generated" else "?")
    if group == "cli_version":
        return conv.cli_version or "?"
    if group == "provider":
        # Folds made here name their provider (cost, or the trigger "handoff (openai)"); imported
        # folds were written by the agent's own summarizer.
        named = (fold.cost or {}).get("provider") or (m.group(1) if (m := re.match(r"handoff \((\w+)\)", fold.trigger or "")) else "")
        return named or (f"{conv.agent} (own)" if fold.origin == "imported" else "generated")
    when = fold.timestamp or fold.created_at
    return when.strftime("%Y-%m") if when else "?"


def dashboard(projects, group: str = "agent") -> dict:
    """Retention per kind beside the baseline, compression, summary size p50/p99, fidelity and
    judge/human agreement, per group value and overall."""
    if group not in GROUPS:
        group = "agent"
    folds = list(
        Fold.objects.filter(conversation__project__in=projects)
        .exclude(kind__in=windows.NO_SEGMENT_KINDS)
        .select_related("conversation", "conversation__source")
    )
    probes = {p.fold_id: p for p in FactProbe.objects.filter(fold__in=folds)}
    missing = [f for f in folds if f.pk not in probes or probes[f.pk].version != PROBE_VERSION]
    for f in missing[:200]:  # lazily, bounded per page view; the probes job covers the rest
        probes[f.pk] = compute_probe(f)
    fidelity: dict[int, list[int]] = defaultdict(list)
    for r in Review.objects.filter(fold__in=folds).values("fold_id", "scores"):
        value = (r["scores"] or {}).get("fidelity")
        if isinstance(value, int):
            fidelity[r["fold_id"]].append(value)
    judged: dict[int, int] = {}
    for run in JudgeRun.objects.filter(fold__in=folds).order_by("created_at"):
        if run.fidelity is not None:
            judged[run.fold_id] = run.fidelity
    buckets: dict[str, list[Fold]] = defaultdict(list)
    for f in folds:
        buckets[_group_value(f, group)].append(f)
    rows = [_row(name, members, probes, fidelity, judged) for name, members in sorted(buckets.items())]
    total = _row("all", folds, probes, fidelity, judged)
    return {"group": group, "groups": GROUPS, "rows": rows, "total": total, "baseline": core_facts.BASELINE, "kinds": core_facts.KINDS}


def _row(name: str, folds: list[Fold], probes: dict, fidelity: dict, judged: dict) -> dict:
    ps = [probes[f.pk] for f in folds if f.pk in probes]
    kinds = {}
    for kind in core_facts.KINDS:
        total = sum((p.per_kind.get(kind) or {}).get("total", 0) for p in ps)
        kept = sum((p.per_kind.get(kind) or {}).get("kept", 0) for p in ps)
        kinds[kind] = {"total": total, "kept": kept, "retention": kept / total if total else None}
    all_total = sum(k["total"] for k in kinds.values())
    all_kept = sum(k["kept"] for k in kinds.values())
    ratios = [p.compression_ratio for p in ps if p.compression_ratio is not None]
    sizes = [p.summary_tokens for p in ps if p.summary_tokens]
    scores = [s for f in folds for s in fidelity.get(f.pk, [])]
    pairs = [
        (judged[f.pk], round(sum(fidelity[f.pk]) / len(fidelity[f.pk])))
        for f in folds
        if f.pk in judged and fidelity.get(f.pk)
    ]
    return {
        "name": name,
        "folds": len(folds),
        "kinds": kinds,
        "retention": all_kept / all_total if all_total else None,
        "compression_p50": median(ratios) if ratios else None,
        "summary_p50": percentile(sizes, 50),
        "summary_p99": percentile(sizes, 99),
        "fidelity_mean": sum(scores) / len(scores) if scores else None,
        "reviews": len(scores),
        "kappa": cohen_kappa(pairs),
        "kappa_pairs": len(pairs),
    }


def dashboard_csv_rows(data: dict) -> list[list]:
    header = [data["group"], "folds", "retention"] + [f"{k}_retention" for k in data["kinds"]] + [
        "compression_p50", "summary_tokens_p50", "summary_tokens_p99", "fidelity_mean", "reviews", "kappa"
    ]
    out = [header]
    for row in [*data["rows"], data["total"]]:
        out.append(
            [row["name"], row["folds"], row["retention"]]
            + [row["kinds"][k]["retention"] for k in data["kinds"]]
            + [row["compression_p50"], row["summary_p50"], row["summary_p99"], row["fidelity_mean"], row["reviews"], row["kappa"]]
        )
    return out


def _audit(actor, project, action: str, target: str, **details) -> None:
    try:
        from contextviewer.accounts import audit
    except ImportError:
        return
    audit.record(actor, project, action, target, **details)
