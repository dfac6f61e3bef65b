"""Re-mask stored rows with today's patterns (`python manage.py mask`): data imported before a kind
of secret was known, or before titles, fold summaries and job results were masked.

Every stored copy of transcript text goes through the one masking function again (secrets.mask):
messages (raw line, blocks; the kinds found join the message's `secrets` flag), fold summaries,
conversation titles and sub-agent descriptions, the lineage of builds, job results and errors,
fact probes and judge runs, and the search index. Masking masked text changes nothing, so a second
run finds nothing to change.

The search index is rebuilt from the masked messages when a message changed: on PostgreSQL the
changed messages' rows are written again; on SQLite the index is contentless (it cannot forget one
message's words without being told them exactly), so it is emptied and filled again, in the same
transaction as the messages (a run stopped halfway leaves the old rows and the old index, and the
next run starts over). On SQLite deleted content is overwritten with zeros (secure_delete) and the
write-ahead log is truncated at the end, so the old text does not stay in the database's files.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from django.apps import apps
from django.db import connection, transaction

from contextviewer.core.secrets import mask, mask_text, mask_value, may_hold_secret

from contextviewer.conversations import search
from contextviewer.conversations.models import Message

BATCH = 1000

Progress = Callable[[str, int, int], None]  # (what, rows done, rows in all)


@dataclass
class MaskReport:
    scanned: dict[str, int] = field(default_factory=dict)  # rows read, by table
    changed: dict[str, int] = field(default_factory=dict)  # rows rewritten, by table
    reindexed: int = 0  # messages written to the search index again
    log_truncated: bool | None = None  # SQLite: the write-ahead log was emptied (None: not SQLite)

    @property
    def total_changed(self) -> int:
        return sum(self.changed.values())


def _masked_json(value):
    """mask_value(value) and whether it changed anything."""
    masked = mask_value(value)
    return masked, masked != value


def _text_fields(model, *names: str):
    """Maskers of text columns; a masked text is cut to its column's length."""

    def masker(limit: int | None):
        def masked_str(value: str | None):
            masked = mask_text(value)[:limit]
            return masked, masked != (value or "")

        return masked_str

    return [(name, masker(model._meta.get_field(name).max_length)) for name in names]


def _json_fields(*names: str):
    return [(name, _masked_json) for name in names]


def _tables() -> list[tuple[str, type, list]]:
    """(name, model, [(field, masker)]) of every stored copy but messages (see _messages). Each app
    declares its stored copies of transcript text on its AppConfig (`masked_copies`: name, model,
    text fields, JSON fields), so this module needs no import of the apps above it (review)."""
    tables: list[tuple[str, type, list]] = []
    for config in apps.get_app_configs():
        for name, model_name, texts, jsons in getattr(config, "masked_copies", ()):
            model = config.get_model(model_name)
            tables.append((name, model, _text_fields(model, *texts) + _json_fields(*jsons)))
    return tables


def _batches(qs, fields: list[str]):
    """Rows of `qs` as (pk, *fields) tuples, BATCH at a time, in pk order."""
    last = 0
    while True:
        rows = list(qs.filter(pk__gt=last).order_by("pk").values_list("pk", *fields)[:BATCH])
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def _mask_table(name: str, model, fields: list, report: MaskReport, progress: Progress, dry_run: bool) -> None:
    total = model.objects.count()
    names = [f for f, _ in fields]
    done = changed = 0
    for rows in _batches(model.objects.all(), names):
        with transaction.atomic():
            for pk, *values in rows:
                updates = {}
                for (fname, masker), value in zip(fields, values):
                    masked, differs = masker(value)
                    if differs:
                        updates[fname] = masked
                if updates:
                    changed += 1
                    if not dry_run:
                        model.objects.filter(pk=pk).update(**updates)
        done += len(rows)
        progress(name, done, total)
    report.scanned[name] = done
    report.changed[name] = changed


def _masked_message(raw: str, blocks, flags):
    """(raw, blocks, flags) masked, or None when nothing changes."""
    new_raw, kinds = mask(raw) if raw and may_hold_secret(raw) else (raw, [])
    new_blocks = mask_value(blocks)
    if new_raw == raw and new_blocks == blocks:
        return None
    flags = dict(flags or {})
    known = list(flags.get("secrets") or [])
    for kind in kinds:
        if kind not in known:
            known.append(kind)
    if known:
        flags["secrets"] = known
    return new_raw, new_blocks, flags


def _mask_messages(report: MaskReport, progress: Progress, dry_run: bool) -> list[tuple[int, int]]:
    """Mask every message; (conversation id, message id) of those that changed."""
    total = Message.objects.count()
    done = 0
    changed: list[tuple[int, int]] = []
    for rows in _batches(Message.objects.all(), ["conversation_id", "raw", "blocks", "flags"]):
        with transaction.atomic():
            for pk, conversation_id, raw, blocks, flags in rows:
                masked = _masked_message(raw, blocks, flags)
                if masked is None:
                    continue
                changed.append((conversation_id, pk))
                if not dry_run:
                    new_raw, new_blocks, new_flags = masked
                    Message.objects.filter(pk=pk).update(raw=new_raw, blocks=new_blocks, flags=new_flags)
        done += len(rows)
        progress("messages", done, total)
    report.scanned["messages"] = done
    report.changed["messages"] = len(changed)
    return changed


def _index(conversation_id: int, pks: list[int]) -> int:
    rows = Message.objects.filter(pk__in=pks).values_list("pk", "blocks")
    return search.index_messages(conversation_id, ((pk, search.text_of_blocks(blocks)) for pk, blocks in rows))


def _reindex(changed: list[tuple[int, int]], report: MaskReport, progress: Progress) -> None:
    if connection.vendor != "sqlite":
        by_conversation: dict[int, list[int]] = {}
        for conversation_id, pk in changed:
            by_conversation.setdefault(conversation_id, []).append(pk)
        done = 0
        for conversation_id, pks in by_conversation.items():
            for start in range(0, len(pks), BATCH):
                with transaction.atomic():
                    report.reindexed += _index(conversation_id, pks[start : start + BATCH])
                done += len(pks[start : start + BATCH])
                progress("search index", done, len(changed))
        return
    # SQLite: empty the contentless index and fill it again from every (masked) message.
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {search.FTS_TABLE}({search.FTS_TABLE}) VALUES ('delete-all')")
    total = Message.objects.count()
    done = 0
    for rows in _batches(Message.objects.all(), ["conversation_id", "blocks"]):
        by_conversation: dict[int, list[tuple[int, str]]] = {}
        for pk, conversation_id, blocks in rows:
            by_conversation.setdefault(conversation_id, []).append((pk, search.text_of_blocks(blocks)))
        for conversation_id, texts in by_conversation.items():
            report.reindexed += search.index_messages(conversation_id, texts)
        done += len(rows)
        progress("search index", done, total)


def remask(*, progress: Progress | None = None, dry_run: bool = False) -> MaskReport:
    """Mask every stored copy again (see the module docstring). With dry_run, only count."""
    report = MaskReport()
    say: Progress = progress or (lambda what, done, total: None)
    sqlite = connection.vendor == "sqlite"
    if sqlite and not dry_run:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA secure_delete = ON")  # freed space is zeroed, not left holding old text
    # SQLite: one transaction for all (the index is rebuilt with the messages, or neither changes).
    with transaction.atomic() if sqlite else contextlib.nullcontext():
        changed = _mask_messages(report, say, dry_run)
        for name, model, fields in _tables():
            _mask_table(name, model, fields, report, say, dry_run)
        if changed and not dry_run:
            _reindex(changed, report, say)
        if dry_run and sqlite:
            transaction.set_rollback(True)
    if sqlite and not dry_run and report.total_changed:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            busy = cursor.fetchone()
            report.log_truncated = bool(busy) and busy[0] == 0
    return report
