"""The Job row: the job database (not Celery's result store) that the UI polls."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from contextviewer.accounts.models import Project


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class JobQuerySet(models.QuerySet):
    def for_user(self, user):
        if not user.is_authenticated:
            return self.none()
        return self.filter(project__memberships__user=user)


class Job(models.Model):
    """The job database (not Celery's result store): what the UI polls through a permissioned view."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=40)  # import | handoff | build | title | judge | export
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress = models.FloatField(default=0.0)
    progress_text = models.CharField(max_length=500, blank=True)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    attempts = models.IntegerField(default=0)
    idempotency_key = models.CharField(max_length=255, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Who runs it ("host/pid-namespace:pid:start-time") and when that process last said it is alive:
    # a running job whose worker stopped beating is taken over (jobs.claim / jobs.reconcile).
    worker_id = models.CharField(max_length=255, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # A part of a bigger job (a folder import's batch of sessions): run by any worker, or by the
    # parent's own process; the parent sums their progress and merges their results (queue.run_parts).
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="parts")

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        db_table = "conversations_job"  # the table it had when it lived in conversations (kept: no data moves)

    @property
    def kind_label(self) -> str:
        """The kind in words ("policy_table" -> "policy table")."""
        return self.kind.replace("_", " ")

    @property
    def is_finished(self) -> bool:
        return self.status in {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED}
