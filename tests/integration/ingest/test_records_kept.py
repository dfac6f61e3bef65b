"""Records are not lost without a word (issue 40, item 3): each record an import does not keep is
in the import's errors, with its place and its reason.

Message arrays (OpenAI chat, LangChain): 25 elements sharing one id once kept 2 of them and said
nothing; now the first is kept and each of the others is said ("element 7: its id 'same' is the id
of element 2, so it was not kept").
"""

from __future__ import annotations

import json

import pytest

from contextviewer.conversations.models import Message, Source
from contextviewer.ingest import files as ingest

pytestmark = pytest.mark.django_db


def test_elements_sharing_one_id_are_each_kept_or_said_with_their_place(project, tmp_path):
    items = [{"type": "system", "data": {"content": "Be helpful.", "type": "system", "id": None}}]
    items += [{"type": "human" if n % 2 else "ai", "data": {"content": f"message {n}", "type": "human" if n % 2 else "ai",
                                                           "id": "same"}} for n in range(1, 25)]
    path = tmp_path / "lc.json"
    path.write_text(json.dumps(items))

    report = ingest.import_path(project, path)

    kept = Message.objects.filter(conversation__project=project).count()
    not_kept = [e for e in report.errors if "so it was not kept" in e["reason"]]
    assert kept + len(not_kept) == 25  # every element: stored, or said
    assert [e["line"] for e in not_kept] == list(range(3, 26))
    assert not_kept[0]["reason"] == "element 3: its id 'same' is the id of element 2, so it was not kept"
    # The file's page lists them too (Source.errors).
    source = Source.objects.get(project=project)
    assert any(e["reason"] == not_kept[-1]["reason"] for e in source.errors)
