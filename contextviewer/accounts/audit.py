"""The audit log: who did what to which project, for security-relevant actions.

Call `record(request_or_user, project, action, target, **details)` from any app, e.g.
`audit.record(request, project, "provider.settings_changed", "openai", base_url=url)`.
Actions are dotted names: member.invited, member.role_changed, member.removed, token.created,
token.revoked, provider.settings_changed, conversation.deleted, export.created, ...
Never put secrets in details.

SQLite has one writer at a time, and an import writes a whole file in one transaction (all of it
or none): a large file holds the write lock for minutes. An event that cannot be written within
``WAIT_MS`` is appended to a spool file in the data directory (``SPOOL_NAME``) and written, with
its own time, by the next event that can be: the audited action (an export) goes on meanwhile."""

from __future__ import annotations

import datetime
import fcntl
import ipaddress
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import OperationalError, connection, transaction

from .models import AuditEvent, Project

WAIT_MS = 3000  # how long an event waits for SQLite's write lock before it is spooled
SPOOL_NAME = "audit-spool.jsonl"


def _actor_and_ip(request_or_user) -> tuple[Any, str | None]:
    if request_or_user is None:
        return None, None
    if hasattr(request_or_user, "META"):  # a request
        from .throttle import client_ip  # lazy: throttle loads auth's and admin's forms, which commands never need

        ip = client_ip(request_or_user) or None
        try:
            ipaddress.ip_address(ip or "")
        except ValueError:
            ip = request_or_user.META.get("REMOTE_ADDR") or None
        return getattr(request_or_user, "user", None), ip
    return request_or_user, None


def via(request_or_user) -> str:
    """How an audited action came in: "token" (an API call with a bearer token), "web" (a signed-in
    session: a page, or the API from the browser), "command" (no request: the command line)."""
    if request_or_user is None:
        return "command"
    if hasattr(request_or_user, "META"):
        from .auth import request_token  # lazy: auth loads ninja, which commands never need

        return "token" if request_token(request_or_user) is not None else "web"
    return "web"  # a plain user: a session


def record(request_or_user, project: Project | None, action: str, target: str = "", **details: Any) -> AuditEvent:
    actor, ip = _actor_and_ip(request_or_user)
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    event = AuditEvent(
        project=project,
        project_name=project.name if project is not None else "",
        actor=actor,
        actor_name=actor.get_username() if actor is not None else "",
        action=action[:60],
        target=str(target)[:300],
        details={k: v if isinstance(v, (str, int, float, bool, type(None), list, dict)) else str(v) for k, v in details.items()},
        ip=ip,
    )
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        event.save()
        return event
    try:
        with _short_wait():
            event.save()
    except OperationalError as exc:
        if "locked" not in str(exc):
            raise
        _spool(event)
        return event
    flush_spool()
    return event


def _spool_path() -> Path:
    return Path(settings.DATA_DIR) / SPOOL_NAME


@contextmanager
def _spool_lock():
    path = _spool_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield path
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextmanager
def _short_wait():
    """SQLite waits ``WAIT_MS`` for the write lock (its connection's timeout is 30 s)."""
    with connection.cursor() as cursor:
        cursor.execute(f"PRAGMA busy_timeout = {int(WAIT_MS)}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA busy_timeout = {int(settings.DATABASES['default']['OPTIONS']['timeout'] * 1000)}")


def _spool(event: AuditEvent) -> None:
    row = {
        "project_id": event.project_id, "project_name": event.project_name, "actor_id": event.actor_id,
        "actor_name": event.actor_name, "action": event.action, "target": event.target,
        "details": event.details, "ip": event.ip, "created_at": datetime.datetime.now(datetime.UTC).isoformat(),
    }  # fmt: skip
    with _spool_lock() as path, open(path, "a", encoding="utf-8") as spool:
        spool.write(json.dumps(row) + "\n")
        spool.flush()
        os.fsync(spool.fileno())


def flush_spool() -> int:
    """Write the spooled events (each with the time it happened); how many. They stay spooled when
    the database is still locked."""
    if not _spool_path().exists():
        return 0
    from django.contrib.auth import get_user_model

    with _spool_lock() as path:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        projects = set(Project.objects.filter(pk__in={r["project_id"] for r in rows}).values_list("pk", flat=True))
        users = set(get_user_model().objects.filter(pk__in={r["actor_id"] for r in rows}).values_list("pk", flat=True))
        try:
            with _short_wait(), transaction.atomic():
                for row in rows:
                    created_at = datetime.datetime.fromisoformat(row.pop("created_at"))
                    row["project_id"] = row["project_id"] if row["project_id"] in projects else None
                    row["actor_id"] = row["actor_id"] if row["actor_id"] in users else None
                    event = AuditEvent.objects.create(**row)
                    AuditEvent.objects.filter(pk=event.pk).update(created_at=created_at)
        except OperationalError as exc:
            if "locked" not in str(exc):
                raise
            return 0
        path.unlink()
    return len(rows)


def audit_read(request, project, what: str, target: str = "", **details) -> None:
    """A read through an API token leaves an audit event (a session's reads, like its pages, do not)."""
    if via(request) == "token":
        record(request, project, f"read.{what}", target, via="token", **details)
