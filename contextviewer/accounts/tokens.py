"""API token secrets: `cv_<prefix>_<secret>`. Only the SHA-256 of the whole token is stored; the
prefix (shown in lists) finds the row, and the hash is compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.utils import timezone

from .models import ApiToken

TOKEN_PREFIX = "cv_"
# last_used_at is written at most this often per token, so a busy client does not write on every call.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_secret() -> tuple[str, str]:
    """(full token, visible prefix)."""
    prefix = TOKEN_PREFIX + secrets.token_hex(4)
    return f"{prefix}_{secrets.token_urlsafe(32)}", prefix


def check(token: str) -> ApiToken | None:
    """The usable token for this secret (not revoked, not expired, owner active and still a member
    of the token's project), with last_used_at brought up to date; else None."""
    if not token or not token.startswith(TOKEN_PREFIX) or "_" not in token[len(TOKEN_PREFIX):]:
        return None
    prefix = token[: token.index("_", len(TOKEN_PREFIX))]
    row = ApiToken.objects.usable().select_related("user", "project").filter(prefix=prefix).first()
    if row is None or not hmac.compare_digest(row.token_hash, hash_token(token)):
        return None
    if not row.user.is_active or not row.user.memberships.filter(project_id=row.project_id).exists():
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        row.last_used_at = now
    return row
