"""Issue 23: a turn full of long tool outputs comes in fragments of at most 150 KB each, as the
reader scrolls ("More messages of this turn"), and together they still hold every message; code
is an ordered list (the browser numbers it), not a table row per line."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from contextviewer.conversations.models import Conversation, Message
from contextviewer.ingest import files as ingest
from tests.factories import make_project, make_user
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db

LIMIT = 150_000


def _python_file(n: int) -> str:
    return "".join(f"{i:6d}→def handler_{n}_{i}(request, *args):  # {'x' * 40}\n" for i in range(1, 300))


def test_a_turn_of_long_reads_comes_in_fragments_under_150_kb(tmp_path, client):
    b = SessionBuilder()
    lines = [b.user("Read every handler module and summarise them")]
    for n in range(25):
        lines += [*b.assistant(f"Reading module {n}", tool=("Read", {"file_path": f"/w/src/handlers_{n}.py"}))]
        lines += [b.tool_result(_python_file(n))]
    lines += [*b.assistant("All 25 modules read.")]
    project = make_project()
    client.force_login(make_user(project=project))
    path = tmp_path / "session.jsonl"
    write_lines(path, lines)
    ingest.import_path(project, path)
    conv = Conversation.objects.get(project=project, parent=None)
    turn = Message.objects.filter(conversation=conv).order_by("position").first().turn

    url = reverse("turn", args=[conv.id, turn])
    seen, sizes = set(), []
    while url:
        html = client.get(url, HTTP_HX_REQUEST="true").content.decode()
        sizes.append(len(html.encode()))
        seen.update(int(p) for p in re.findall(r'class="message role-[^"]*" id="m-\d+" data-position="(\d+)"', html))
        seen.update(int(p) for p in re.findall(r'data-merged-position="(\d+)"', html))  # later records of a response
        assert "<tr>" not in html  # code lines are list items
        more = re.search(r'hx-get="([^"]+\?from=\d+)"', html)
        url = more.group(1).replace("&amp;", "&") if more else None
    assert len(sizes) > 1, sizes  # the turn did not come as one fragment
    assert max(sizes) <= LIMIT, sizes
    shown_on_their_own = {
        m.position for m in Message.objects.filter(conversation=conv, turn=turn)
        if not all(isinstance(b, dict) and b.get("kind") == "tool_result" for b in m.blocks or [])
    }
    assert shown_on_their_own <= seen  # results sit under their calls; every other message is there
    assert "All 25 modules read." in html
