"""A prompt typed while the agent worked (Claude Code `queue-operation` enqueue) is imported as a
queued user message: stored in the turn where it was typed, shown there with its mark."""

from __future__ import annotations

import pytest
from django.urls import reverse

from contextviewer.conversations.models import Conversation, Message
from contextviewer.ingest import files as ingest
from tests.factories import make_project, make_user
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db

TYPED = "<b>Also</b> keep the old name as an alias"
MARK = "queued while the agent worked"


def _lines(with_queue: bool) -> list[str]:
    b = SessionBuilder()
    lines = b.turn(0)
    lines += [b.user("Step 1: rename parse to parse_rows")]
    lines += b.assistant("Renaming it", tool=("Bash", {"command": "sed -i s/parse/parse_rows/ a.py"}))
    lines += [b.queue_operation("enqueue", TYPED)] if with_queue else []
    lines += [b.tool_result("done"), *b.assistant("Renamed.")]
    lines += [b.queue_operation("dequeue")] if with_queue else []
    lines += b.turn(2)
    return lines


def _import(tmp_path, name: str, lines: list[str]):
    project = make_project(slug=name)
    path = tmp_path / name / "session.jsonl"
    path.parent.mkdir()
    write_lines(path, lines)
    ingest.import_path(project, path)
    return project, Conversation.objects.get(project=project, parent=None)


def test_a_queued_prompt_is_stored_and_shown_in_the_turn_where_it_was_typed(tmp_path, client):
    _, plain = _import(tmp_path, "plain", _lines(with_queue=False))
    project, conv = _import(tmp_path, "queued", _lines(with_queue=True))

    queued = Message.objects.get(conversation=conv, flags__queued=True)
    assert (queued.role, queued.turn, queued.record_type) == ("user", 1, "queue-operation")
    assert queued.blocks == [{"kind": "text", "text": TYPED}]
    before = Message.objects.get(conversation=conv, position=queued.position - 1)
    assert before.turn == queued.turn
    # every other message keeps its turn: same as the session imported without the queue lines
    turns = dict(Message.objects.filter(conversation=conv).exclude(pk=queued.pk).values_list("uuid", "turn"))
    assert turns == dict(Message.objects.filter(conversation=plain).values_list("uuid", "turn"))
    assert max(turns.values()) == 2

    client.force_login(make_user(project=project))
    html = client.get(reverse("turn", args=[conv.id, 1]), HTTP_HX_REQUEST="true").content.decode()
    assert html.count(MARK) == 1
    assert "&lt;b&gt;Also&lt;/b&gt; keep the old name as an alias" in html and TYPED not in html
    head, _, rest = html.partition(MARK)
    assert f'id="m-{queued.id}"' in head.rsplit('<div class="message', 1)[-1]  # the mark sits on its message
    for other in (0, 2):
        assert MARK not in client.get(reverse("turn", args=[conv.id, other]), HTTP_HX_REQUEST="true").content.decode()
