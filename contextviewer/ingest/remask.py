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

Masking by value (issue 21). A secret found once in a conversation (by its pattern, or by its context
only: `aws_secret_access_key = <40 characters>`, a URL's password) is masked wherever the same value
stands in that conversation, its parent and its sub-agents: bare in a title or a text, as a JSON key,
JSON-escaped in a raw line. An import collects the clear values it found (in memory only: prepare.py
adds them to each PreparedMessage, the row maker gathers them, titles and fold summaries included) and,
after the file's rows are written, in the same transaction, `mask_by_value` masks every row of the
conversation tree with them: rows stored earlier (a secret first seen in a later line, a later file
or a sub-agent) and the new ones alike, the search entries of changed messages, fold summaries,
titles, sub-agent descriptions and the jobs of the project. Nothing at all is done when an import
found no value and the tree has no fingerprint, so an import without secrets costs nothing more.

What is kept for later imports (a growing file appended to, a sub-agent imported later) is never
the secret: only the values known by their context need keeping (every other kind is found by its
own pattern wherever it stands), and of those a fingerprint (an HMAC-SHA256 keyed by the project's
SECRET_KEY, and the value's length) in ingest.SecretPrint, on the tree's root. A later import of the
tree looks, in its texts, at every run of that length that stands alone, hashes it and compares:
a match gives the clear value back for the time of the import. A database alone does not allow
guessing a weak password offline; a changed SECRET_KEY loses the fingerprints (values found
again are fingerprinted again). Values shorter than 8 characters or of one class of characters
("postgres") are not masked by value (secrets.by_value), or every such word would be masked.

`python manage.py mask` does the same for every stored tree: the values the patterns find in its
rows (rows stored unmasked, before a kind was known) and those its fingerprints recognise. Rows
masked before masking by value existed no longer hold a context-found value in clear (it was
masked where it was found) and had no fingerprint: a bare copy of such a value cannot be found.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from django.apps import apps
from django.db import connection, transaction
from django.db.models import F, TextField
from django.db.models.functions import Cast

from django.conf import settings

from contextviewer.core import secrets
from contextviewer.core.secrets import mask, mask_text, mask_value, may_hold_secret

from contextviewer.conversations import search
from contextviewer.conversations.models import Conversation, Fold, Message
from contextviewer.ingest.models import SecretPrint

BATCH = 1000

Progress = Callable[[str, int, int], None]  # (what, rows done, rows in all)


@dataclass
class MaskReport:
    scanned: dict[str, int] = field(default_factory=dict)  # rows read, by table
    changed: dict[str, int] = field(default_factory=dict)  # rows rewritten, by table
    reindexed: int = 0  # messages written to the search index again
    log_truncated: bool | None = None  # SQLite: the write-ahead log was emptied (None: not SQLite)
    by_value: int = 0  # rows changed by masking known values (see mask_by_value)

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


def _mask_table(name: str, model, fields: list, report: MaskReport, progress: Progress, dry_run: bool, touched: dict) -> None:
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
                        touched.setdefault(name, set()).add(pk)
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
        # By value first: a value known by its context is found only while its context is in clear.
        by_value: list[tuple[int, int]] = []
        touched: dict[str, set[int]] = {}  # rows masked by value, by table: counted with the others
        if not dry_run:
            report.by_value = _mask_all_by_value(say, by_value, touched)
        changed = _mask_messages(report, say, dry_run)
        seen = {pk for _c, pk in changed}
        changed += [c for c in by_value if c[1] not in seen]
        report.changed["messages"] = len(changed)
        by_value_touched = {name: len(pks) for name, pks in touched.items()}
        for name, model, fields in _tables():
            _mask_table(name, model, fields, report, say, dry_run, touched)
            report.changed[name] += by_value_touched.get(name, 0)
        if changed and not dry_run:
            _reindex(changed, report, say)
            bump_revisions({c for c, _pk in changed})
        if not dry_run:  # titles and fold summaries: what the conversation's page shows
            bump_revisions(touched.get("conversations", set()))
            bump_revisions(set(Fold.objects.filter(pk__in=touched.get("folds", set())).values_list("conversation_id", flat=True)))
        if dry_run and sqlite:
            transaction.set_rollback(True)
    if sqlite and not dry_run and report.total_changed:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            busy = cursor.fetchone()
            report.log_truncated = bool(busy) and busy[0] == 0
    return report


# -- masking by value -------------------------------------------------------------------------------


def print_key() -> bytes:
    """The key of the secrets' fingerprints (derived from SECRET_KEY, never used for anything else)."""
    return hashlib.sha256(b"contextviewer secret fingerprints\0" + settings.SECRET_KEY.encode()).digest()


def _trees(conversation_ids) -> list[tuple[int, list[int]]]:
    """(root id, every conversation id of its tree) of the trees holding these conversations."""
    parents = dict(Conversation.objects.filter(pk__in=list(conversation_ids)).values_list("pk", "parent_id"))
    roots: set[int] = set()
    for pk, parent in parents.items():
        seen = {pk}
        while parent is not None and parent not in seen:  # up to the root (a cycle cannot loop)
            seen.add(parent)
            pk, parent = parent, Conversation.objects.filter(pk=parent).values_list("parent_id", flat=True).first()
        roots.add(pk)
    trees = []
    for root in sorted(roots):
        tree, level = [root], [root]
        while level:
            level = [c for c in Conversation.objects.filter(parent_id__in=level).values_list("pk", flat=True) if c not in tree]
            tree += level
        trees.append((root, tree))
    return trees


def _strings(value):
    """Every string of a JSON value, keys too."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)


def _texts(tree: list[int], since: int | None = None):
    """Every stored text of a tree that may hold a secret (messages, those after message `since`
    only when given, titles, fold summaries)."""
    messages = Message.objects.filter(conversation_id__in=tree)
    if since is not None:
        messages = messages.filter(pk__gt=since)
    for rows in _batches(messages, ["raw", "blocks"]):
        for _pk, raw, blocks in rows:
            yield raw or ""
            yield from _strings(blocks)
    yield from Conversation.objects.filter(pk__in=tree).values_list("title", flat=True)
    yield from Fold.objects.filter(conversation_id__in=tree).values_list("summary_text", flat=True)


def _learned(tree: list[int], prints, key: bytes, *, find: bool, since: int | None = None) -> dict[str, str]:
    """Clear values of a tree's texts: those the fingerprints recognise, and with find=True those the
    patterns find (rows stored unmasked)."""
    values: dict[str, str] = {}
    if not prints and not find:
        return values
    for text in _texts(tree, None if find else since):
        if not text:
            continue
        if prints:
            values.update(secrets.recognise(text, prints, key))
        if find:
            if may_hold_secret(text) or "\\u00" in text:
                secrets.mask_raw(text, values)
    return values


def _scoped(model, tree: list[int], projects: list[int]):
    """The rows of a masked copy belonging to a tree (or its project, for rows that name none)."""
    names = {f.name for f in model._meta.get_fields()}
    if model is Conversation:
        return model.objects.filter(pk__in=tree)
    if "conversation" in names:
        return model.objects.filter(conversation_id__in=tree)
    if "project" in names:
        return model.objects.filter(project_id__in=projects)
    return None


def _mask_tree(tree: list[int], masker: secrets.ValueMasker, messages: list | None, touched: dict) -> int:
    """Mask every stored copy of a tree's text with the known values; rows changed. The search
    entries of changed messages are replaced, or, when `messages` is a list, their (conversation
    id, message id) are added to it for the caller to index again; `touched` gets the ids changed, by table."""
    changed = 0
    for conversation_id in tree:
        reindex: list[tuple[int, str, str]] = []
        # The blocks as JSON text: only a row that may hold a value is decoded (a big conversation
        # with one secret is read once, at the speed of substring scans).
        messages_qs = Message.objects.filter(conversation_id=conversation_id).annotate(blocks_json=Cast("blocks", TextField()))
        for rows in _batches(messages_qs, ["raw", "blocks_json", "flags"]):
            for pk, raw, blocks_json, flags in rows:
                if not masker.may_hold(raw) and not masker.may_hold(blocks_json):
                    continue
                blocks = json.loads(blocks_json) if isinstance(blocks_json, str) else blocks_json
                new_raw, kinds = masker.mask(raw)
                new_blocks = masker.mask_value(blocks)
                if new_raw == raw and new_blocks == blocks:
                    continue
                flags = dict(flags or {})
                known = list(flags.get("secrets") or [])
                flags["secrets"] = known + [k for k in kinds if k not in known]
                Message.objects.filter(pk=pk).update(raw=new_raw, blocks=new_blocks, flags=flags)
                changed += 1
                touched.setdefault("messages", set()).add(pk)
                if messages is not None:
                    messages.append((conversation_id, pk))
                    continue
                before, after = search.text_of_blocks(blocks), search.text_of_blocks(new_blocks)
                if before != after:
                    reindex.append((pk, before, after))
        search.reindex_messages(conversation_id, reindex)
    projects = list(Conversation.objects.filter(pk__in=tree).values_list("project_id", flat=True).distinct())
    for name, model, fields in _tables():
        qs = _scoped(model, tree, projects)
        if qs is None:
            continue
        names = [f for f, _ in fields]
        for rows in _batches(qs, names):
            for pk, *values in rows:
                updates = {}
                for fname, value in zip(names, values):
                    if isinstance(value, str):
                        limit = model._meta.get_field(fname).max_length
                        new = masker.mask_text(value)[:limit]
                    else:
                        new = masker.mask_value(value)
                    if new != value:
                        updates[fname] = new
                if updates:
                    model.objects.filter(pk=pk).update(**updates)
                    changed += 1
                    touched.setdefault(name, set()).add(pk)
    return changed


def bump_revisions(conversation_ids) -> None:
    """A new revision for these conversations: their pages' fragments, kept per revision
    (conversations/page_cache.py), are rendered again from the masked rows."""
    ids = list(conversation_ids)
    for start in range(0, len(ids), BATCH):
        Conversation.objects.filter(pk__in=ids[start : start + BATCH]).update(revision=F("revision") + 1)


def _keep_prints(root: int, values: dict[str, str], key: bytes, known: set[str]) -> None:
    rows = [
        SecretPrint(conversation_id=root, kind=kind, length=length, digest=digest)
        for kind, length, digest in secrets.fingerprints(values, key)
        if digest not in known
    ]
    SecretPrint.objects.bulk_create(rows, ignore_conflicts=True)


def mask_by_value(
    conversation_ids,
    values: dict[str, str],
    *,
    since: int | None = None,
    find: bool = False,
    messages: list | None = None,
    touched: dict | None = None,
) -> int:
    """Mask the known secret values (value -> kind, clear, from this import) and those the trees'
    fingerprints recognise in every stored copy of these conversations' trees; keep the new
    values' fingerprints. `since`: the last message id stored before this import (the messages
    after it are the only ones the fingerprints need looking at: the others were masked by the
    imports that stored them). With find=True the trees' rows are searched for values too (`mask`).
    Returns the rows changed. Runs in the caller's transaction."""
    ids = list(conversation_ids)
    if not ids:
        return 0
    key = print_key()
    changed = 0
    for root, tree in _trees(ids):
        prints = [list(p) for p in SecretPrint.objects.filter(conversation_id=root).values_list("kind", "length", "digest")]
        if not prints and not find and not secrets.ValueMasker(values):
            continue  # nothing known: the usual case, and free
        known = dict(values)
        for value, kind in _learned(tree, prints, key, find=find, since=since).items():
            known.setdefault(value, kind)
        masker = secrets.ValueMasker(known)
        if masker:
            rows = _mask_tree(tree, masker, messages, {} if touched is None else touched)
            changed += rows
            if rows:
                bump_revisions(tree)
        _keep_prints(root, known, key, {p[2] for p in prints})
    return changed


def _mask_all_by_value(progress: Progress, messages: list, touched: dict) -> int:
    """mask_by_value of every stored tree, finding values in its rows (`manage.py mask`)."""
    roots = list(Conversation.objects.filter(parent__isnull=True).order_by("pk").values_list("pk", flat=True))
    changed = 0
    for done, root in enumerate(roots, 1):
        changed += mask_by_value([root], {}, find=True, messages=messages, touched=touched)
        progress("masked by value (conversations)", done, len(roots))
    return changed
