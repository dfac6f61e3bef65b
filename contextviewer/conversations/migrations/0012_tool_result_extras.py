"""Tool results stored before their format's importer put what the log records beside the text on
the result block's `extra` (a Claude Code Bash call's stdout and stderr apart, a clip's marker and
original; an efferent clip's marker and omitted tokens) get it now, re-derived from the stored raw
record and blocks by the same pure functions the importers use (each format's `fill_extras`,
importers/formats.py), so the viewer and the policy lab, which no longer read raw records, show
what they showed before.

Only messages that can hold a tool result are read (role "tool", or a line flagged as carrying a
tool's result), of conversations whose format has something to fill, a few hundred at a time,
each batch in its own transaction (the fill is idempotent: a message already filled is left as it
is, so a migration stopped midway runs again safely). The filled extras are masked as an import
masks blocks."""

import re

from django.db import migrations, transaction
from django.db.models import Q

from contextviewer.core import secrets
from contextviewer.importers import formats

BATCH = 300
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")  # what no column holds (ingest/prepare.py storable)


def _storable(value):
    if isinstance(value, str):
        return _UNSTORABLE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_storable(v) for v in value]
    if isinstance(value, dict):
        return {_storable(k): _storable(v) for k, v in value.items()}
    return value


def _stored(old: list, new: list) -> list:
    """`new` with each extra that differs from `old`'s made storable and masked."""
    out = []
    for i, b in enumerate(new):
        before = old[i] if i < len(old) else None
        if isinstance(b, dict) and isinstance(b.get("extra"), dict) and (not isinstance(before, dict) or before.get("extra") != b["extra"]):
            b = {**b, "extra": secrets.mask_value(_storable(b["extra"]))}
        out.append(b)
    return out


def fill_extras(apps, schema_editor):
    Message = apps.get_model("conversations", "Message")
    hooks = {f.name: f.fill_extras for f in formats.registry() if f.fill_extras is not None}
    if not hooks:
        return
    wanted = Message.objects.filter(conversation__agent__in=list(hooks)).filter(Q(role="tool") | Q(flags__has_key="tool_use_result"))
    last = 0
    while True:
        rows = list(
            wanted.filter(pk__gt=last).order_by("pk").values_list("pk", "conversation__agent", "raw", "blocks")[:BATCH]
        )
        if not rows:
            return
        last = rows[-1][0]
        changed = []
        for pk, agent, raw, blocks in rows:
            if not isinstance(blocks, list):
                continue
            filled = hooks[agent](raw or "", blocks)
            if filled is not None and (filled := _stored(blocks, filled)) != blocks:
                changed.append(Message(pk=pk, blocks=filled))
        if changed:
            with transaction.atomic():
                Message.objects.bulk_update(changed, ["blocks"])


class Migration(migrations.Migration):
    atomic = False  # one transaction per batch: a large database is not filled in one

    dependencies = [
        ("conversations", "0011_fold_kind_choices"),
    ]

    operations = [
        migrations.RunPython(fill_extras, migrations.RunPython.noop, elidable=True),
    ]
