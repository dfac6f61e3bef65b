"""The limit on a client's idempotency key, said the same way by every endpoint and form.

A job's key is stored as "<kind>:<ids>:<client key>" in a 255-character column (Job.idempotency_key):
PostgreSQL refuses a longer value (a 500 if nothing checked it first) and SQLite keeps it whole, so
the client's part is capped well below the column, leaving room for the prefix, and refused with a
400 that states the limit before anything is stored. Pure of Django."""

from __future__ import annotations

MAX_IDEMPOTENCY_KEY = 200  # characters of the client's key
COLUMN_LENGTH = 255  # Job.idempotency_key


class IdempotencyKeyTooLong(ValueError):
    """A key over the limit; the message says the limit and the length received."""


def check(key: str | None) -> str | None:
    """The client's key unchanged (None or "" for none), or IdempotencyKeyTooLong."""
    if key and len(key) > MAX_IDEMPOTENCY_KEY:
        raise IdempotencyKeyTooLong(
            f"idempotency_key is {len(key)} characters long; the limit is {MAX_IDEMPOTENCY_KEY} characters."
        )
    return key


def check_stored(key: str) -> str:
    """A full job key (prefix included) that fits the column, or IdempotencyKeyTooLong."""
    if len(key) > COLUMN_LENGTH:
        raise IdempotencyKeyTooLong(
            f"the job's idempotency key is {len(key)} characters long; the column holds {COLUMN_LENGTH} "
            f"(a client's key may have at most {MAX_IDEMPOTENCY_KEY} characters)."
        )
    return key
