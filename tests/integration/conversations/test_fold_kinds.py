"""Fold kinds: every kind the code writes is a choice of Fold.kind; the folds that make segments and
the folds a conversation counts are one query each (Fold.objects.segment_makers / counted,
Conversation.refresh_fold_count)."""

from __future__ import annotations

import pytest

from contextviewer.conversations import segments as loader
from contextviewer.conversations.models import NO_SEGMENT_KINDS, Conversation, Fold, FoldKind, Message
from contextviewer.importers.claude_code import parser as claude_code
from tests.factories import make_project

pytestmark = pytest.mark.django_db


def test_every_kind_an_importer_writes_is_a_choice():
    written = {"compact", *claude_code.FOLD_SUBTYPES.values()}  # every other format writes "compact"
    assert written <= set(FoldKind.values)
    assert {loader.ALTERNATIVE, *NO_SEGMENT_KINDS} <= set(FoldKind.values)
    assert Fold._meta.get_field("kind").choices == FoldKind.choices


def test_segment_makers_and_the_fold_count_leave_out_what_they_should():
    conv = Conversation.objects.create(project=make_project(), external_id="s")
    Message.objects.bulk_create([Message(conversation=conv, position=p, role="user") for p in range(10)])
    for key, pos, kind in [("a", 2, FoldKind.COMPACT), ("m", 3, FoldKind.MICROCOMPACT), ("h", 5, FoldKind.HANDOFF),
                           ("alt", 2, FoldKind.ALTERNATIVE)]:
        Fold.objects.create(conversation=conv, key=key, position=pos, kind=kind)
    assert [f.key for f in conv.folds.segment_makers().order_by("position")] == ["a", "h"]
    assert [f.key for f in loader.segment_folds(conv)] == ["a", "h"]
    assert conv.folds.counted().count() == 3  # a microcompact counts, an alternative summary does not
    assert conv.refresh_fold_count() == 3
    conv.refresh_from_db()
    assert conv.fold_count == 3
