"""Compaction review: fact probes, judge runs, score configs, queues, reviews, comments, pairwise."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from contextviewer.accounts.models import Project
from contextviewer.conversations.models import Conversation, Fold
from contextviewer.jobs.models import Job

# Bump when facts.py changes what it extracts: stale probes are recomputed lazily.
# 3: salience tiers (core/salience.py); 4: tier C stored as `background`, the continuation after the
# fold (core/continuation.py), a handoff's probe reads the previous summary; 5: an encrypted summary
# (Codex's remote compaction) has no size (summary_encrypted); 6: paths matched as a reviewer reads
# them (core/pathmatch.py: Windows, `~`, spaces, globs and folders: how "pattern"), errors are failed
# calls, a user's rejection its own kind. Probes of an older version are computed again.
PROBE_VERSION = 6


class FactProbe(models.Model):
    """The fact probe of one fold: which salient facts of its archived segment the summary keeps."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    fold = models.OneToOneField(Fold, on_delete=models.CASCADE, related_name="probe")
    version = models.IntegerField(default=PROBE_VERSION)
    retention = models.FloatField(null=True, blank=True, help_text="kept / all facts; None: no facts")
    per_kind = models.JSONField(default=dict, help_text="kind -> {total, kept, retention}")
    compression_ratio = models.FloatField(null=True, blank=True, help_text="folded tokens / summary tokens")
    folded_tokens = models.IntegerField(default=0)
    summary_tokens = models.IntegerField(default=0)
    summary_encrypted = models.BooleanField(
        default=False, help_text="the log keeps the summary encrypted: its size is not known (summary_tokens 0, no compression)"
    )
    facts = models.JSONField(default=list, help_text="tiers A and B: [{kind, text, key, position, turn, tier, kept, how, used_after}]")
    background = models.JSONField(default=list, blank=True, help_text="tier C facts, as `facts`")
    continuation = models.JSONField(
        default=dict, blank=True, help_text="what followed the fold (core/continuation.py); {} when nothing did"
    )
    segment_start = models.IntegerField(default=0)
    created_at = models.DateTimeField(auto_now=True)

    @property
    def lost_facts(self) -> list[dict]:
        return [f for f in self.facts if not f.get("kept")]


RUBRIC = ("goal", "constraints", "decisions", "state", "next_steps", "important_details")


class JudgeRun(models.Model):
    """One judge of one fold by an LLM provider: its own prompt, answer and spend."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    fold = models.ForeignKey(Fold, on_delete=models.CASCADE, related_name="judge_runs")
    job = models.OneToOneField(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="judge_run")
    provider = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=200, blank=True)
    prompt = models.TextField()
    answer = models.TextField(blank=True)
    recall = models.FloatField(null=True, blank=True)
    precision = models.FloatField(null=True, blank=True)
    rubric = models.JSONField(default=dict, blank=True, help_text="rubric item -> score 1..5")
    details = models.JSONField(default=dict, blank=True, help_text="facts and statements as judged")
    spend = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    @property
    def fidelity(self) -> int | None:
        """The rubric's mean on the human fidelity scale (1..5), for agreement with reviewers."""
        values = [v for v in self.rubric.values() if isinstance(v, int | float)]
        return round(sum(values) / len(values)) if values else None


def default_score_fields() -> list[dict]:
    return [
        {"key": "fidelity", "label": "Fidelity", "type": "scale", "min": 1, "max": 5},
        {"key": "lost_detail", "label": "Lost a load-bearing detail", "type": "bool"},
        {"key": "comment", "label": "Comment", "type": "text"},
    ]


class ScoreConfig(models.Model):
    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="score_config")
    fields = models.JSONField(default=default_score_fields)
    updated_at = models.DateTimeField(auto_now=True)


class QueueMode(models.TextChoices):
    SINGLE = "single", "Score each summary"
    PAIRWISE = "pairwise", "Compare two summaries of the same fold"


class ReviewQueue(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="review_queues")
    name = models.CharField(max_length=200)
    filters = models.JSONField(default=dict, blank=True)
    mode = models.CharField(max_length=20, choices=QueueMode.choices, default=QueueMode.SINGLE)
    # Blind: an item hides where its summaries came from and their retention until the reviewer's
    # score is in (a known origin or a low retention figure sways the score).
    blind = models.BooleanField(default=False)
    reviewers_per_item = models.PositiveIntegerField(default=1)
    reviewers = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="review_queues")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class ReviewItem(models.Model):
    queue = models.ForeignKey(ReviewQueue, on_delete=models.CASCADE, related_name="items")
    fold = models.ForeignKey(Fold, on_delete=models.CASCADE, related_name="review_items")
    # A pairwise item: the other summary of the same segment (A is `fold`, B is `fold_b`).
    fold_b = models.ForeignKey(Fold, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    order = models.IntegerField(default=0)
    locked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    locked_until = models.DateTimeField(null=True, blank=True)
    review_count = models.IntegerField(default=0, help_text="submitted reviews")

    class Meta:
        ordering = ["order", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["queue", "fold"], condition=models.Q(fold_b__isnull=True), name="unique_review_item"),
            models.UniqueConstraint(
                fields=["queue", "fold", "fold_b"], condition=models.Q(fold_b__isnull=False), name="unique_review_pair"
            ),
        ]

    @property
    def is_pair(self) -> bool:
        return self.fold_b_id is not None


class Review(models.Model):
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="reviews")
    fold = models.ForeignKey(Fold, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    scores = models.JSONField(default=dict)
    submitted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["submitted_at"]
        constraints = [models.UniqueConstraint(fields=["item", "reviewer"], name="unique_review")]


class Comment(models.Model):
    """A comment on a fold, anchored to a turn of its archived segment or to one of its facts."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    fold = models.ForeignKey(Fold, on_delete=models.CASCADE, related_name="review_comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    turn = models.IntegerField(null=True, blank=True)
    fact = models.CharField(max_length=600, blank=True, help_text="kind:key of the fact")
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]


class Choice(models.TextChoices):
    A = "a", "A better"
    B = "b", "B better"
    EQUAL = "equal", "Equal"


class PairwiseComparison(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    fold_a = models.ForeignKey(Fold, on_delete=models.CASCADE, related_name="+")
    fold_b = models.ForeignKey(Fold, on_delete=models.CASCADE, related_name="+")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    choice = models.CharField(max_length=10, choices=Choice.choices)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["fold_a", "fold_b", "reviewer"], name="unique_pairwise_vote")
        ]
