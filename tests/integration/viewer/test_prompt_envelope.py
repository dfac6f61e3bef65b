"""A turn is named by what the user typed, not by the envelope an agent wraps it in: Cursor's prompt
is "<timestamp>Friday, May 8, 2026, 6:05 AM (UTC+5:30)</timestamp>" then "<user_query>" and the
words (tests/cursor_transcripts.py, from the facts in importers/cursor/parser.py's docstring). Seen
on the page: turn #0 read "<timestamp>Friday, May 8, …</timestamp>". The message itself keeps the
whole text (the window shows what the model was sent)."""

from __future__ import annotations

import pytest

from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from tests.cursor_transcripts import write_projects
from tests.factories import make_project, make_user

pytestmark = pytest.mark.django_db


def test_a_cursor_prompt_is_named_by_its_words_not_its_time_stamp(client, tmp_path):
    project = make_project()
    client.force_login(make_user(project=project))
    ingest.import_path(project, write_projects(tmp_path / "projects"))
    conv = Conversation.objects.get(project=project, parent__isnull=True, title__startswith="add a health check")
    page = client.get(f"/c/{conv.pk}/").content.decode()
    turns = page[page.index("LOADED"):] if "LOADED" in page else page
    assert "add a health check endpoint and wire it into the router" in turns
    assert "&lt;timestamp&gt;" not in turns and "&lt;user_query&gt;" not in turns
    first = conv.messages.order_by("position").first()
    assert first.blocks[0]["text"].startswith("<timestamp>Friday, May 8, 2026")  # stored as sent
