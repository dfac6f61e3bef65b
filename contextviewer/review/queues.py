"""People's review: score configs, review queues with assignment and locking, blind scoring,
reviews, comments anchored to a turn or a fact, pairwise votes on two summaries of one segment."""

from __future__ import annotations

import json
import random
import re
from datetime import timedelta
from itertools import combinations

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from contextviewer.accounts import audit
from contextviewer.accounts.models import Membership, Project
from contextviewer.display.panels import Panel
from contextviewer.conversations.models import Fold
from contextviewer.providers.models import ProviderConfig
from contextviewer.review import alternatives
from contextviewer.review.errors import ReviewError
from contextviewer.review.models import Choice, Comment, PairwiseComparison, QueueMode, Review, ReviewItem, ReviewQueue, ScoreConfig
from contextviewer.review.probes import probe_for, review_folds, segment_turns

LOCK_FOR = timedelta(minutes=15)


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
    qs = review_folds(conversation__project=project).select_related("conversation")
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
    if blind:
        folds = _shuffled_segments(folds)
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


def _shuffled_segments(folds: list[Fold], rng: random.Random | None = None) -> list[Fold]:
    """The folds with the summaries of each segment in a random order: in a blind queue the
    original is not always the first item of its segment (the folds come by position, then id)."""
    rng = rng or random.Random()
    out: list[Fold] = []
    for i, fold in enumerate(folds):
        if i and (fold.conversation_id, fold.position) == (folds[i - 1].conversation_id, folds[i - 1].position):
            out.insert(len(out) - rng.randint(0, _run_length(out, fold)), fold)
        else:
            out.append(fold)
    return out


def _run_length(out: list[Fold], fold: Fold) -> int:
    """How many folds at the end of `out` stand for the same segment as `fold`."""
    n = 0
    while n < len(out) and (out[-1 - n].conversation_id, out[-1 - n].position) == (fold.conversation_id, fold.position):
        n += 1
    return n


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


def _blind_items(user, queue: ReviewQueue | None = None):
    """The unscored items of blind queues that keep summaries from `user`: items of queues the
    user reviews in (assigned, or the queue is open to all who may score in the project), except
    an open queue's own creator, who picked its folds and reads them outside it as before. Inside
    a queue (`queue`: the user reviews in it) its items count whoever created it."""
    scoring = [m.project_id for m in Membership.objects.filter(user=user) if m.can("score")]
    reviews_in = Q(queue__reviewers=user) | (Q(queue__reviewers__isnull=True) & ~Q(queue__created_by=user))
    if queue is not None:
        reviews_in |= Q(queue=queue)
    return (
        ReviewItem.objects.filter(queue__blind=True, queue__project_id__in=scoring)
        .filter(reviews_in)
        .exclude(reviews__reviewer=user)
        .distinct()
    )


def blind_fold_ids(user, conversation_id: int | None = None, *, queue: ReviewQueue | None = None) -> set[int]:
    """The summaries `user` may not see the origin or retention of: every summary of a segment
    (the original and those written again) for which the user holds an unscored item of a blind
    queue they review in (see _blind_items: not the creator of an open queue, outside it). The
    rule holds on every page and API answer, not only the queue's own item page."""
    if user is None or not user.is_authenticated:
        return set()
    items = _blind_items(user, queue)
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


def latest_fold_rows(user, folds: list[Fold]) -> list[dict]:
    """The review index's rows of the latest folds: {"fold", "probe", "hidden", "pending"}. The
    summaries of a segment `user` is blind to are one row, at the place of the newest, with no
    figure that differs by summary (retention, compression, size) and linked to the pending item:
    rows of their own would tell the one written again (the newer, with its own size)."""
    blind = blind_fold_ids(user)
    rows, seen = [], set()
    for fold in folds:
        if fold.pk not in blind:
            rows.append({"fold": fold, "probe": probe_for(fold), "hidden": False, "pending": []})
            continue
        segment = (fold.conversation_id, fold.position)
        if segment in seen:
            continue
        seen.add(segment)
        rows.append({"fold": fold, "probe": probe_for(fold), "hidden": True, "pending": pending_blind_items(user, fold)})
    return rows


def hides_fold(user, fold: Fold, *, queue: ReviewQueue | None = None) -> bool:
    """Whether `user` is blind to this summary's origin and retention (see blind_fold_ids)."""
    return fold.pk in blind_fold_ids(user, fold.conversation_id, queue=queue)


def pending_blind_items(user, fold: Fold, *, queue: ReviewQueue | None = None) -> list[ReviewItem]:
    """The unscored blind items that keep this summary's origin and retention from `user`: items
    of any summary of its segment (same conversation, same position), each with the queue it is
    in. Empty: nothing is hidden. The pages name them ("Hidden until you score ...")."""
    if user is None or not user.is_authenticated:
        return []
    same_segment = Q(fold__conversation_id=fold.conversation_id, fold__position=fold.position) | Q(
        fold_b__conversation_id=fold.conversation_id, fold_b__position=fold.position
    )
    return list(_blind_items(user, queue).filter(same_segment).select_related("queue").order_by("queue_id", "order", "pk"))


def score_rows(config: ScoreConfig, scores: dict) -> list[dict]:
    """A review's scores as people read them, in the config's order: {"label", "value"} with the
    field's label ("Lost a load-bearing detail") and its value in words ("yes", "4/5");
    a score whose field left the config keeps its key, made readable. Empty text is left out."""
    fields = {f["key"]: f for f in config.fields}
    order = [k for k in fields if k in scores] + [k for k in scores if k not in fields]
    rows = []
    for key in order:
        value, field = scores[key], fields.get(key, {})
        kind = field.get("type") or ("bool" if isinstance(value, bool) else "scale" if isinstance(value, int) else "text")
        if value in ("", None):
            continue
        if kind == "bool":
            shown = "yes" if value is True or str(value).lower() in {"yes", "true", "1", "on"} else "no"
        elif kind == "scale" and "max" in field:
            shown = f"{value}/{field['max']}"
        else:
            shown = str(value)
        rows.append({"key": key, "label": field.get("label") or key.replace("_", " ").capitalize(), "value": shown})
    return rows


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
        if turn_value not in segment_turns(fold):
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
    return list(review_folds(conversation_id=fold.conversation_id, position=fold.position).exclude(pk=fold.pk).order_by("pk"))


def summaries_panel(user, fold: Fold, *, hide_origin: bool = False) -> dict:
    """What the "summaries of this segment" panel shows under a fold (review/_summaries.html): the
    summaries of its segment (the original and those written again) with their origins, and the
    "summarize this fold again" form for those who may edit. A blind item of this segment waiting
    for the user's score (or `hide_origin`) hides the origins, and the original is not first."""
    original = alternatives.original(fold)
    found = alternatives.summaries(original)
    hide_origin = hide_origin or bool(blind_fold_ids(user, original.conversation_id) & {f.pk for f in found})
    if hide_origin:
        found = alternatives.blind_order(found, user)
    project_id = original.conversation.project_id
    member = Membership.objects.filter(project_id=project_id, user=user).first() if getattr(user, "is_authenticated", False) else None
    configs = list(ProviderConfig.objects.filter(project_id=project_id).exclude(provider="builtin"))
    return {
        "fold": fold,
        "original": original,
        "rows": [{"fold": f, "origin": alternatives.origin_label(f), "is_this": f.pk == fold.pk} for f in found],
        "hide_origin": hide_origin,
        "can_edit": bool(member and member.can("edit")),
        "providers": ["builtin"] + [c.provider for c in configs],
        "default_provider": next((c.provider for c in configs if c.is_default), "builtin"),
    }


def summaries_card(request, fold: Fold) -> Panel:
    """The summaries panel under a fold on the conversation page (declared in
    ReviewConfig.fold_panels): the same data as on a review item."""
    return Panel("review/_summaries.html", summaries_panel(request.user, fold))


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


def _audit(actor, project, action: str, target: str, **details) -> None:
    audit.record(actor, project, action, target, **details)
