"""The policy table's stored replays: per conversation and policy, the figures of one replay at one
revision of the conversation (lab/table.py computes them in a `policy_table` job; /policies/ reads
them and replays nothing).

A row is up to date while its `revision` equals the conversation's current one (table.revision_of:
the figures an import recomputes on the conversation's row, its in-place revision counter and its
imported folds). Only numbers are kept, never transcript text: a re-mask has nothing here to forget.
"""

from __future__ import annotations

from django.db import models

from contextviewer.accounts.models import Project
from contextviewer.conversations.models import Conversation


class PolicyReplay(models.Model):
    """One policy replayed over one conversation (open loop), or the failure to replay it (`error`)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="policy_replays")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="policy_replays")
    policy = models.CharField(max_length=40)
    revision = models.CharField(max_length=64, help_text="the conversation's revision the figures were computed at")
    calls = models.IntegerField(default=0)
    peak = models.IntegerField(default=0, help_text="the replayed window's largest total (provider tokens)")
    recorded_peak = models.IntegerField(default=0, help_text="the recorded curve's peak of the same conversation")
    fires = models.IntegerField(default=0, help_text="every action the policy took")
    folds = models.IntegerField(default=0)
    actions = models.JSONField(default=dict, blank=True, help_text="actions by kind: folds, clips, clears, offloads, drops")
    tokens_saved = models.BigIntegerField(default=0)
    red_zone_calls = models.IntegerField(default=0)
    overflow_calls = models.IntegerField(default=0, help_text="calls whose replayed total exceeds the window")
    facts_at_risk = models.IntegerField(default=0)
    cost = models.FloatField(null=True, blank=True, help_text="USD at list price, modelled")
    calibrated = models.BooleanField(default=True, help_text="whether the session's calibration succeeded")
    calibration_note = models.TextField(blank=True)
    error = models.TextField(blank=True, help_text="why the conversation could not be replayed (no figures then)")
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["conversation", "policy"], name="unique_policy_replay")]
        indexes = [models.Index(fields=["project", "policy"])]

    def __str__(self) -> str:
        return f"{self.policy} over conversation {self.conversation_id}"
