"""Ids read from a log, as the 255-character columns hold them.

A message's uuid and parent uuid, a model call's response and request ids, a fold's boundary,
summary and preserved uuids come from the log, and nothing bounds their length. PostgreSQL refuses
a value over a column's size ("value too long for type character varying(255)") where SQLite
stores it whole, and neither holds NUL. So every such id is stored as ``external_key(id)``: itself
when it fits, else a readable prefix and the sha256 of the whole id (the whole id stays in the
message's raw record). The same key on every import and on both databases, so dedupe, a reply's
parent, a call's message and a fold's preserved tail still find each other.

The other values a record brings to a column are made storable on both databases alike: a token
count no model has (over MAX_TOKENS, not a number, NaN) makes its call's usage a bad record with
that reason (an integer column of PostgreSQL refused it, failing the whole file; the sums of a
conversation's figures would overflow too); a fold's token figures out of range are left empty;
NaN, the infinities, NUL and lone surrogates in a fold's metadata or a sub-agent link, and NUL and
lone surrogates in a record's type, subtype or model, are written as a JSON log writes them or as
U+FFFD. The raw line keeps every value as it was. A sub-agent's key is its parent's and its own
(``child_key``).

Secrets are masked here too (issue 40): an id holding one (a session named after a token, a tool
call id) is stored as ``external_key(id)``, which masks it and keeps distinct ids distinct
(secrets.mask_id); a name or a path (a record's type, a model, a fold's trigger, a sub-agent's
type, the session's cwd, git branch and version, a bad record's reason) is masked as text. The raw
line and the blocks are masked in prepare.py.
"""

from __future__ import annotations

import json

from contextviewer.core.records import AgentLink, BadLine, FoldRecord, SessionInfo, UsageRecord
from contextviewer.core.secrets import mask_text, mask_value, may_hold_secret

from contextviewer.conversations.models import EXTERNAL_ID_MAX, external_key
from contextviewer.ingest.prepare import _MAY_HOLD_UNSTORABLE as _ESCAPED_UNSTORABLE, _UNSTORABLE
from contextviewer.ingest.prepare import PreparedMessage, _encode, finite, storable

MAX_TOKENS = 500_000_000  # per figure: no model's window is near it; three of them still fit an integer column
_USAGE = ("input_uncached", "cache_write", "cache_read", "output")
_USAGE_OPTIONAL = ("cache_write_5m", "cache_write_1h")


def child_key(parent_key: str, agent_id: str) -> str:
    """A sub-agent's external id, ``<session>/<agent id>``, from its parent's stored key (both kept
    within the column: see ``external_key``)."""
    return external_key(f"{parent_key}/{external_key(agent_id)}")


def _unfit(value: str | None) -> bool:
    """Whether a column cannot hold ``value`` as it is (too long, NUL, a lone surrogate)."""
    return bool(value) and (len(value) > EXTERNAL_ID_MAX or "\x00" in value or not value.isascii())


def _secret(value: str | None) -> bool:
    return bool(value) and may_hold_secret(value)


def _key(value: str | None) -> str | None:
    """An id as stored: see ``external_key`` (a secret in it masked)."""
    return external_key(value) if _unfit(value) or _secret(value) else value


def _text(value: str | None) -> str | None:
    """A name or a path as stored: storable, a secret in it masked."""
    value = storable(value)
    return mask_text(value) if _secret(value) else value


def stored_keys(record):
    """``record`` with its ids as stored (the record itself when every id fits, as almost always)."""
    if isinstance(record, PreparedMessage):
        fields = (record.uuid, record.parent_uuid, record.api_message_id, record.record_type, record.subtype, record.model)
        if any(_unfit(v) for v in fields) or may_hold_secret("\n".join(v for v in fields if v)):
            record = record._replace(
                uuid=_key(record.uuid), parent_uuid=_key(record.parent_uuid), api_message_id=_key(record.api_message_id),
                record_type=_text(record.record_type), subtype=_text(record.subtype), model=_text(record.model),
            )
        return _text_storable(record)
    elif isinstance(record, UsageRecord):
        record.api_message_id = _key(record.api_message_id) or ""
        record.request_id = _key(record.request_id)
        record.message_uuid = _key(record.message_uuid)
        record.model = _text(record.model)
        return _usage(record)
    elif isinstance(record, FoldRecord):
        _fold(record)
    elif isinstance(record, AgentLink):
        record.tool_use_id = _key(storable(record.tool_use_id))
        record.agent_type, record.description = _text(record.agent_type), _text(record.description)
    elif isinstance(record, SessionInfo):
        record.window = _count(record.window)
        record.models = [_text(m) for m in storable(record.models or [])]
        record.cwd, record.git_branch, record.cli_version = _text(record.cwd), _text(record.git_branch), _text(record.cli_version)
        record.agent_type = _text(record.agent_type)
    elif isinstance(record, BadLine):
        record.reason = _text(record.reason)
    return record


def _fold(record: FoldRecord) -> None:
    record.boundary_uuid = _key(record.boundary_uuid)
    record.summary_uuid = _key(record.summary_uuid)
    if any(_unfit(u) or _secret(u) for u in record.preserved_uuids):
        record.preserved_uuids = [_key(u) for u in record.preserved_uuids]
    record.tokens_before = _count(record.tokens_before)
    record.tokens_after = _count(record.tokens_after)
    record.metadata = storable(finite(record.metadata))
    record.summary_text = storable(record.summary_text or "")
    record.trigger = _text(record.trigger)
    if record.cost:
        record.cost = mask_value(storable(finite(record.cost)))


def _text_storable(message: PreparedMessage) -> PreparedMessage:
    """A message whose blocks or flags hold NUL or a lone surrogate that its raw line did not show
    as an escape (prepare.py looks there first): replaced by U+FFFD, as prepare.storable does."""
    changes = {}
    for name in ("blocks", "flags"):
        text = getattr(message, name)
        if "\\u" in text and _ESCAPED_UNSTORABLE.search(text):
            changes[name] = _encode(storable(json.loads(text)))
    for name in ("search_text", "first_text"):
        text = getattr(message, name)
        if text and ("\x00" in text or not text.isascii()) and _UNSTORABLE.search(text):
            changes[name] = storable(text)
    return message._replace(**changes) if changes else message


def _count(value) -> int | None:
    """A token figure as an integer column holds it, or None where it is no figure a model has."""
    if isinstance(value, float) and value == value and abs(value) <= MAX_TOKENS:
        return int(value)
    if isinstance(value, int) and abs(value) <= MAX_TOKENS:
        return int(value)
    return None


def _shown(value) -> str:
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer of {len(str(abs(value))) if value.bit_length() < 10_000 else 'thousands of'} digits"
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:40]}... ({len(text):,} characters)"


def _usage(record: UsageRecord):
    """The call's usage, or a bad record saying which figure no model has."""
    for name in _USAGE + _USAGE_OPTIONAL:
        value = getattr(record, name)
        if value is None and name in _USAGE_OPTIONAL:
            continue
        figure = _count(value)
        if figure is None:
            shown = _shown(value)
            return BadLine(
                line_no=record.line_no,
                offset=0,
                reason=f"the usage of model call {record.api_message_id[:80]} has a token count no model has "
                f"({name} {shown}, over {MAX_TOKENS:,} or not a number): that call's usage was not kept, its messages were",
            )
        setattr(record, name, figure)
    return record
