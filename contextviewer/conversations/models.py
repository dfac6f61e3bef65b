"""Sources, conversations, messages, model calls and folds (names from DESIGN.md)."""

from __future__ import annotations

import hashlib
import re

from django.conf import settings
from django.db import models
from django.db.models import Q

from contextviewer.accounts.models import Project
from contextviewer.core.secrets import mask_id
# The format registry: a row's default format.
from contextviewer.importers import formats


class SourceStatus(models.TextChoices):
    PENDING = "pending"
    IMPORTING = "importing"
    IMPORTED = "imported"  # every line read; bad lines, if any, are in errors
    FAILED = "failed"  # the file could not be read at all (errors says why)


class Source(models.Model):
    """One session file: a path on disk or an upload. Append-only imports resume at bytes_consumed."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sources")
    path = models.CharField(max_length=1024, help_text="absolute path, or upload:<sha256>/<name>")
    name = models.CharField(max_length=512)
    format = models.CharField(max_length=40, default=formats.default_name)
    compression = models.CharField(max_length=10, default="", blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    size = models.BigIntegerField(default=0)
    bytes_consumed = models.BigIntegerField(default=0)
    lines_consumed = models.IntegerField(default=0)
    prefix_sha256 = models.CharField(max_length=64, blank=True, help_text="sha256 of the consumed prefix")
    importer_version = models.CharField(max_length=20, blank=True)
    status = models.CharField(max_length=20, choices=SourceStatus.choices, default=SourceStatus.PENDING)
    errors = models.JSONField(default=list, blank=True)  # [{"line": n, "reason": "..."}], capped
    error_count = models.IntegerField(default=0)
    duplicate_count = models.IntegerField(default=0)
    blob = models.CharField(max_length=1024, blank=True, help_text="stored upload, relative to MEDIA_ROOT")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "path"], name="unique_source_path")]

    def __str__(self) -> str:
        return self.name


class ConversationKind(models.TextChoices):
    MAIN = "main"
    SUBAGENT = "subagent"
    COMPACTION = "compaction"  # a harness's compaction run: the summarizer's own call (its format says which)
    BUILD = "build"


class ConversationQuerySet(models.QuerySet):
    def for_user(self, user):
        if not user.is_authenticated:
            return self.none()
        return self.filter(project__memberships__user=user)

    def top_level(self):
        return self.filter(parent__isnull=True)

    def by_reference(self, ref: str):
        """CONVERSATION in the commands: an id, else a session's external id (a session imported
        into several projects matches once per project)."""
        ref = (ref or "").strip()
        if ref.isdigit() and self.filter(pk=int(ref)).exists():
            return self.filter(pk=int(ref))
        return self.filter(external_id=external_key(ref))


# The external id column's size. A log's session, thread or agent id can be longer (nothing bounds
# it); it is stored as external_key(id), the same key on every import and on every database.
EXTERNAL_ID_MAX = 255


# What no text column of PostgreSQL holds (SQLite does): NUL and lone surrogates.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _id_key() -> bytes:
    """The key of a masked id's hash (secrets.mask_id), derived from SECRET_KEY."""
    return hashlib.sha256(b"contextviewer masked ids\0" + settings.SECRET_KEY.encode()).digest()


def external_key(value: str) -> str:
    """An id as stored in a 255-character column: itself when it fits (and every database can hold
    it), else a readable prefix (NUL and lone surrogates as U+FFFD), "~" and the sha256 of the
    whole id (the whole id stays in the messages' raw records). A secret in it is masked
    (secrets.mask_id: distinct ids stay distinct)."""
    value = mask_id(value, _id_key)
    if len(value) <= EXTERNAL_ID_MAX and not _UNSTORABLE.search(value):
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    prefix = _UNSTORABLE.sub("\ufffd", value[:EXTERNAL_ID_MAX - len(digest) - 1])
    return f"{prefix}~{digest}"


class Conversation(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="conversations")
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.SET_NULL, related_name="conversations")
    agent = models.CharField(max_length=40, default=formats.default_name)
    external_id = models.CharField(max_length=255, help_text="session id; sub-agents: <session id>/<agent id>")
    kind = models.CharField(max_length=20, choices=ConversationKind.choices, default=ConversationKind.MAIN)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    parent_tool_use_id = models.CharField(max_length=255, blank=True)
    agent_id = models.CharField(max_length=255, blank=True)
    agent_type = models.CharField(max_length=100, blank=True)
    title = models.CharField(max_length=500, blank=True)
    cwd = models.CharField(max_length=1024, blank=True)
    git_branch = models.CharField(max_length=255, blank=True)
    cli_version = models.CharField(max_length=40, blank=True)
    model_names = models.JSONField(default=list, blank=True)
    window = models.IntegerField(null=True, blank=True, help_text="context window override (tokens)")
    agent_links = models.JSONField(default=dict, blank=True, help_text="sub-agent id -> the tool call that started it")
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # Set by the folder watcher when the session's file grows: the page follows it until then.
    live_until = models.DateTimeField(null=True, blank=True, help_text="its file was growing: live until then")
    # Denormalized figures for the index (recomputed by the ingest service after each import).
    message_count = models.IntegerField(default=0)
    model_call_count = models.IntegerField(default=0)
    tool_call_count = models.IntegerField(default=0)
    fold_count = models.IntegerField(default=0)
    # The largest prompt a call's usage records; when no call records one (a log without usage),
    # the largest estimated context instead (peak_estimated).
    peak_context = models.IntegerField(default=0)
    measured_calls = models.IntegerField(default=0, help_text="model calls whose usage records their prompt tokens")
    spend_tokens = models.BigIntegerField(default=0)
    # Bumped by each import that changes stored messages in place (a format that rewrites its
    # records): the page figures' version sees a change no count shows.
    revision = models.IntegerField(default=0, help_text="imports that changed stored messages in place")
    lineage = models.JSONField(
        default=dict, blank=True, help_text="builds: source conversation, selection, created by, time"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ConversationQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "agent", "external_id"], name="unique_conversation")
        ]
        indexes = [models.Index(fields=["project", "parent", "started_at"])]

    @property
    def peak_estimated(self) -> bool:
        """No call records its prompt: peak_context is the largest estimated context."""
        return bool(self.model_call_count) and not self.measured_calls

    @property
    def usage_coverage(self) -> str:
        """How much of the spend the log records: "none" (no call records usage: the spend and its
        cost are unknown, not 0), "partial" (some calls record no prompt: the spend counts only
        what is recorded) or "all"."""
        if not self.measured_calls and not self.spend_tokens:
            return "none"
        return "partial" if self.measured_calls < self.model_call_count else "all"

    def __str__(self) -> str:
        return self.title or self.external_id

    def refresh_fold_count(self, save: bool = True) -> int:
        """Set `fold_count` from the stored folds: every fold but an alternative summary (another
        summary of a fold already counted). The one place it is computed (ingest, handoffs)."""
        self.fold_count = self.folds.counted().count()
        if save and self.pk is not None:
            Conversation.objects.filter(pk=self.pk).update(fold_count=self.fold_count)
        return self.fold_count

    @property
    def is_live(self) -> bool:
        from django.utils import timezone

        return self.live_until is not None and self.live_until > timezone.now()


class Message(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    position = models.IntegerField()
    turn = models.IntegerField(default=0, help_text="index of the turn the message belongs to")
    uuid = models.CharField(max_length=255, null=True, blank=True)
    parent_uuid = models.CharField(max_length=255, null=True, blank=True)
    role = models.CharField(max_length=20)
    record_type = models.CharField(max_length=60)
    subtype = models.CharField(max_length=60, blank=True)
    blocks = models.JSONField(default=list)
    raw = models.TextField(help_text="the source line, exactly as read")
    timestamp = models.DateTimeField(null=True, blank=True)
    is_sidechain = models.BooleanField(default=False)
    agent_id = models.CharField(max_length=255, blank=True)
    is_meta = models.BooleanField(default=False)
    is_compact_summary = models.BooleanField(default=False)
    flags = models.JSONField(default=dict, blank=True)
    api_message_id = models.CharField(
        max_length=255, blank=True, help_text="the model call (response id) an assistant message belongs to"
    )
    tokens = models.JSONField(default=dict, blank=True, help_text="estimated tokens per category")
    token_total = models.IntegerField(default=0)
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    line_no = models.IntegerField(null=True, blank=True)

    class Meta:
        ordering = ["position"]
        indexes = [
            models.Index(fields=["conversation", "turn", "position"]),
            # Search (conversations/search.py) orders and pages its matches by these columns: read
            # from this index, never from the row, whose raw line and blocks come before them.
            models.Index(fields=["id", "conversation", "timestamp", "position", "turn"], name="message_search_cover"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "position"], name="unique_message_position"),
            models.UniqueConstraint(
                fields=["conversation", "uuid"], condition=Q(uuid__isnull=False), name="unique_message_uuid"
            ),
        ]


class ModelCall(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="model_calls")
    message = models.ForeignKey(Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="model_calls")
    position = models.IntegerField(help_text="position of the call's first message")
    api_message_id = models.CharField(max_length=255)
    request_id = models.CharField(max_length=255, blank=True)
    model = models.CharField(max_length=100, blank=True)
    input_uncached = models.IntegerField(default=0)
    cache_write = models.IntegerField(default=0)
    cache_write_5m = models.IntegerField(null=True, blank=True)
    cache_write_1h = models.IntegerField(null=True, blank=True)
    cache_read = models.IntegerField(default=0)
    output = models.IntegerField(default=0)
    output_is_lower_bound = models.BooleanField(default=False)
    reasoning = models.IntegerField(null=True, blank=True, help_text="of output, the reasoning tokens, where the log records them")
    estimated_context = models.IntegerField(default=0, help_text="estimate of the visible messages in the call's input")
    timestamp = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["position"]
        # The page's latest call and its curve read a conversation's calls by position.
        indexes = [models.Index(fields=["conversation", "position"], name="modelcall_conv_position")]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "api_message_id", "request_id"], name="unique_model_call"
            )
        ]

    @property
    def context_size(self) -> int:
        return self.input_uncached + self.cache_write + self.cache_read


class FoldOrigin(models.TextChoices):
    IMPORTED = "imported"
    GENERATED = "generated"


class FoldKind(models.TextChoices):
    """What wrote a fold. Importers write COMPACT and MICROCOMPACT (core/records.py FoldRecord.kind);
    a handoff job here writes HANDOFF, "summarize this fold again" ALTERNATIVE."""

    COMPACT = "compact", "compaction"  # the agent's own: a summary stands in for the archived messages
    # Old tool results cleared in place (Claude Code's microcompact_boundary): no summary, no segment.
    MICROCOMPACT = "microcompact", "microcompaction"
    HANDOFF = "handoff", "handoff"  # a fold made here (builds/handoffs.py): a new summary at the end
    # Another summary of a fold's archived segment (review/alternatives.py): same position, never in
    # play, only for review to probe and compare.
    ALTERNATIVE = "alternative", "alternative summary"


# Kinds that make no segment: they clear content in place and stand in for nothing.
NO_SEGMENT_KINDS = frozenset({FoldKind.MICROCOMPACT.value})


class FoldQuerySet(models.QuerySet):
    def segment_makers(self):
        """Folds that make segments (conversations/segments.py): not a microcompact (it stands in for
        nothing) and not an alternative summary (it shares the segment of the fold in play)."""
        return self.exclude(kind__in=[*NO_SEGMENT_KINDS, FoldKind.ALTERNATIVE])

    def counted(self):
        """Folds a conversation's fold_count counts: every fold but an alternative summary."""
        return self.exclude(kind=FoldKind.ALTERNATIVE)

    def summaries(self):
        """Folds whose summary stands for an archived segment, alternative summaries included (what
        review probes, scores and compares): every fold but a microcompact."""
        return self.exclude(kind__in=NO_SEGMENT_KINDS)


class Fold(models.Model):
    """A summary that stands in for every message up to `position` (inclusive). Deletes nothing."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="folds")
    key = models.CharField(max_length=255, help_text="boundary uuid, or a job's idempotency key")
    position = models.IntegerField(help_text="last position the fold puts away")
    boundary = models.ForeignKey(Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    summary_message = models.ForeignKey(Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    summary_text = models.TextField(blank=True)
    kind = models.CharField(max_length=20, choices=FoldKind.choices, default=FoldKind.COMPACT)
    origin = models.CharField(max_length=20, choices=FoldOrigin.choices, default=FoldOrigin.IMPORTED)
    trigger = models.CharField(max_length=40, blank=True)
    tokens_before = models.IntegerField(null=True, blank=True)
    tokens_after = models.IntegerField(null=True, blank=True)
    preserved = models.JSONField(default=list, blank=True, help_text="uuids kept verbatim across the fold")
    summary_last = models.BooleanField(default=False, help_text="the summary is sent after the preserved messages (Codex 0.171)")
    cost = models.JSONField(default=dict, blank=True, help_text="usage of the summarizer's own call(s)")
    timestamp = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = FoldQuerySet.as_manager()

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["conversation", "key"], name="unique_fold_key")]


class StoredUpload(models.Model):
    """An upload's file kept in the database (CONTEXTVIEWER_UPLOAD_STORE=database: conversations/
    upload_store.py), so that a worker on another machine reads what the web process received.
    ``key`` is its path under MEDIA_ROOT (uploads/<sha256>/<name>); the bytes are in chunks."""

    key = models.CharField(max_length=1100, unique=True)
    size = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.key


class StoredUploadChunk(models.Model):
    upload = models.ForeignKey(StoredUpload, on_delete=models.CASCADE, related_name="chunks")
    index = models.IntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["upload", "index"], name="unique_upload_chunk")]
