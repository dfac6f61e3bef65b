"""Deleting a conversation: one service for the page, the API, the command line and the admin.

What goes, in one transaction: the conversation and its sub-agents (and theirs), their messages,
model calls, folds, fact probes, judge runs, review items, reviews and comments on those folds,
their search entries (search.forget_conversations), and each source (file record) that no other
conversation was imported from, with its stored upload under MEDIA_ROOT (removed once the
transaction has committed, and only when no other source or waiting import still needs it).
What stays: builds made from it (they hold their own copy of every message; their lineage still
names where they came from), spend entries (the conversation link is cleared), jobs, and the audit
event that says who deleted what (id, external id, title, message count).

Who may: owners and admins of the conversation's project (the "delete" permission), the command
line (the server's operator), and staff in the Django admin."""

from __future__ import annotations

import logging
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from contextviewer.accounts import audit
from contextviewer.accounts.models import Membership
from contextviewer.core.secrets import mask_text

from contextviewer.conversations import search, upload_store
from contextviewer.conversations.models import Conversation, ConversationKind, Fold, Message, ModelCall, Source
from contextviewer.conversations.uploads import UPLOAD_DIR, safe_name
from contextviewer.jobs.models import Job, JobStatus

log = logging.getLogger(__name__)

PERMISSION = "delete"
BATCH = 2000
_UPLOAD = re.compile(r"^upload:([0-9a-f]{64})/")


class NotAllowed(Exception):
    """The caller's role may not delete this conversation (the message says why)."""


def refusal(user, conv: Conversation, membership: Membership | None = None) -> str | None:
    """Why ``user`` may not delete ``conv`` (None when they may). A token scoped to another
    project passes membership=None and is refused."""
    if not getattr(user, "is_authenticated", False):
        return "Sign in to delete conversations."
    if membership is None:
        membership = Membership.objects.filter(project_id=conv.project_id, user=user).first()
    if membership is None or membership.project_id != conv.project_id:
        return "You are not a member of this conversation's project."
    if not membership.can(PERMISSION):
        return (
            f"Your role ({membership.role}) in {conv.project.name} may not delete conversations: "
            "only owners and admins may."
        )
    return None


def may_delete(user, conv: Conversation) -> bool:
    return refusal(user, conv) is None


def tree_ids(conv: Conversation) -> list[int]:
    """The conversation and its sub-agents, theirs, and so on (parent first)."""
    ids, level = [conv.pk], [conv.pk]
    while level:
        level = list(Conversation.objects.filter(parent_id__in=level).exclude(pk__in=ids).values_list("pk", flat=True))
        ids += level
    return ids


def builds_of(ids: list[int]):
    """Builds made from any of these conversations (they keep their copy)."""
    return Conversation.objects.filter(kind=ConversationKind.BUILD, lineage__source__id__in=ids).exclude(pk__in=ids)


@dataclass
class Plan:
    """What deleting a conversation removes and keeps (the confirmation says it)."""

    conversation: Conversation
    ids: list[int]
    messages: int
    model_calls: int
    folds: int
    probes: int
    review_items: int
    builds_kept: int

    @property
    def subagents(self) -> int:
        return len(self.ids) - 1


def plan(conv: Conversation) -> Plan:
    ids = tree_ids(conv)
    folds = Fold.objects.filter(conversation_id__in=ids)
    return Plan(
        conversation=conv,
        ids=ids,
        messages=Message.objects.filter(conversation_id__in=ids).count(),
        model_calls=ModelCall.objects.filter(conversation_id__in=ids).count(),
        folds=Fold.objects.filter(conversation_id__in=ids).count(),
        # What review keeps on these folds, through the folds' relations (review sits above this app).
        probes=folds.filter(probe__isnull=False).count(),
        review_items=folds.aggregate(n=Count("review_items"))["n"],
        builds_kept=builds_of(ids).count(),
    )


@dataclass
class Deleted:
    id: int
    external_id: str
    title: str
    conversations: int
    messages: int
    search_entries: int
    sources_removed: int
    uploads_removed: list[str] = field(default_factory=list)
    builds_kept: int = 0

    def as_dict(self) -> dict:
        return {
            "id": self.id, "external_id": self.external_id, "title": self.title,
            "conversations": self.conversations, "subagents": self.conversations - 1, "messages": self.messages,
            "search_entries": self.search_entries, "sources_removed": self.sources_removed,
            "uploads_removed": len(self.uploads_removed), "builds_kept": self.builds_kept,
        }


def _upload_dir(source: Source) -> Path | None:
    m = _UPLOAD.match(source.path or "")
    if m is None:
        return None
    return Path(settings.MEDIA_ROOT) / UPLOAD_DIR / m.group(1)


def _upload_file(source: Source) -> Path | None:
    """The stored copy of an uploaded source (MEDIA_ROOT/uploads/<sha256>/<safe name>)."""
    if source.blob:
        return Path(settings.MEDIA_ROOT) / source.blob
    folder = _upload_dir(source)
    if folder is None:
        return None
    return folder / safe_name(source.path.split("/", 1)[1])


def _waiting_import_uses(folder: Path) -> bool:
    """A queued or running import job still to read an upload stored in ``folder``."""
    rel = str(folder.relative_to(settings.MEDIA_ROOT))
    for params in Job.objects.filter(kind="import", status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).values_list("params", flat=True):
        for upload in (params or {}).get("uploads") or ():
            if str(upload.get("blob") or "").startswith(rel + "/"):
                return True
    return False


def _remove_unused_sources(source_ids: set[int]) -> tuple[int, list[Path]]:
    """Delete the sources no remaining conversation was imported from (a build's copied messages
    do not count: they need nothing of the source); return how many, and the upload files and
    folders to remove once committed."""
    removed, paths = 0, []
    for source in Source.objects.filter(pk__in=source_ids):
        imported = Conversation.objects.filter(source=source).exclude(kind=ConversationKind.BUILD).exists()
        imported = imported or Message.objects.filter(source=source).exclude(conversation__kind=ConversationKind.BUILD).exists()
        if imported:
            continue  # another conversation of the same file (an aider history, a database): kept
        file, folder = _upload_file(source), _upload_dir(source)
        source.delete()
        removed += 1
        if folder is None:
            continue  # a file on disk: not ours to remove
        prefix = source.path.split("/", 1)[0] + "/"
        if not Source.objects.filter(path__startswith=prefix).exists() and not _waiting_import_uses(folder):
            paths.append(folder)  # every copy of these bytes, whatever name it was uploaded under
        elif file is not None and not any(_upload_file(s) == file for s in Source.objects.filter(path__startswith=prefix)):
            paths.append(file)
    return removed, paths


def _remove_files(paths: list[Path]) -> None:
    root = (Path(settings.MEDIA_ROOT) / "uploads").resolve()
    for path in paths:
        try:
            _remove_stored(path)
        except upload_store.StoreError as exc:  # as below: the rows are gone, a copy left behind is logged
            log.warning("delete: could not remove %s from the shared upload store: %s", path, exc)
        try:
            resolved = path.resolve()
            if root not in resolved.parents:
                continue
            if resolved.is_dir():
                shutil.rmtree(resolved)
            elif resolved.exists():
                resolved.unlink()
                try:
                    resolved.parent.rmdir()  # the sha256 folder, once empty
                except OSError:
                    pass
        except OSError as exc:  # the rows are gone; a file left behind is logged, not fatal
            log.warning("delete: could not remove %s: %s", path, exc)


def _remove_stored(path: Path) -> None:
    """The shared store's copy (upload_store.py): a sha256 folder (uploads/<sha>) is a folder key."""
    rel = path.relative_to(settings.MEDIA_ROOT).as_posix()
    upload_store.remove(rel + "/" if rel.count("/") == 1 else rel)


def delete_conversation(conv: Conversation, *, actor=None, via: str = "command") -> Deleted:
    """Delete ``conv`` with everything that belongs to it (see the module docstring).

    ``actor``: the request (page, API, admin) or a user, or None (the command line); the caller
    has checked the permission. Returns what went."""
    ids = tree_ids(conv)
    project = conv.project
    sqlite = connection.vendor == "sqlite"
    secure = None
    if sqlite and not connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA secure_delete")
            secure = cursor.fetchone()[0]
            cursor.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed, not left holding the text
    try:
        with transaction.atomic():
            conv = Conversation.objects.select_for_update().get(pk=conv.pk)
            ids = tree_ids(conv)
            source_ids = set(Conversation.objects.filter(pk__in=ids, source__isnull=False).values_list("source_id", flat=True))
            source_ids |= set(
                Message.objects.filter(conversation_id__in=ids, source__isnull=False).values_list("source_id", flat=True).distinct()
            )
            messages = Message.objects.filter(conversation_id__in=ids).count()
            builds = list(builds_of(ids).only("pk", "lineage"))
            builds_kept = len(builds)
            now = timezone.now().isoformat()
            for build in builds:  # its lineage still names the source, and says it is gone
                build.lineage = {**build.lineage, "source": {**build.lineage["source"], "deleted_at": now}}
                build.save(update_fields=["lineage"])
            entries = search.forget_conversations(ids)
            # Messages in batches, loading only their ids (a long session's raw lines stay on disk).
            pks = list(Message.objects.filter(conversation_id__in=ids).values_list("pk", flat=True))
            for start in range(0, len(pks), BATCH):
                Message.objects.filter(pk__in=pks[start : start + BATCH]).only("pk").delete()
            # Folds with what hangs on them (probes, judge runs, review items, reviews, comments).
            Fold.objects.filter(conversation_id__in=ids).delete()
            Conversation.objects.filter(pk__in=ids).delete()
            sources_removed, paths = _remove_unused_sources(source_ids)
            deleted = Deleted(
                id=conv.pk, external_id=conv.external_id, title=mask_text(conv.title), conversations=len(ids),
                messages=messages, search_entries=entries, sources_removed=sources_removed,
                uploads_removed=[str(p) for p in paths], builds_kept=builds_kept,
            )
            audit.record(
                actor, project, "conversation.deleted", f"conversation {conv.pk}",
                conversation_id=conv.pk, external_id=conv.external_id, title=deleted.title, agent=conv.agent,
                kind=conv.kind, message_count=messages, subagents=len(ids) - 1, sources_removed=sources_removed,
                uploads_removed=len(paths), builds_kept=builds_kept, via=via,
            )
            transaction.on_commit(lambda: _remove_files(paths))
    finally:
        if secure is not None:
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA secure_delete = {int(secure)}")
    return deleted
