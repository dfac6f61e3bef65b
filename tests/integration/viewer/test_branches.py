"""Branches on the conversation page: a re-edited prompt's abandoned turns are marked "branch of
turn N" and set apart; the kept path, and parallel tool calls, are not marked."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation, Message
from tests.factories import make_project, make_user
from tests.sessions import SessionBuilder, write_lines

pytestmark = pytest.mark.django_db


def _turn_rows(html: str) -> dict[int, str]:
    """Each turn header on the page: turn number -> its <details ...> opening tag and summary."""
    rows = re.findall(r'(<details class="turn[^"]*" id="turn-(\d+)".*?</summary>)', html, re.S)
    return {int(n): row for row, n in rows}


def _heads(body: str) -> dict[str, str]:
    """Message id -> the head of the message box showing it (a response written as several records
    is one box: its later records are anchors inside it)."""
    heads = {}
    for box in body.split('<div class="message')[1:]:
        head = re.search(r'<div class="msg-head">(.*?)</div>', box, re.S)
        for mid in re.findall(r'id="m-(\d+)"', box.split('<div class="msg-head">', 1)[0]):
            heads[mid] = head.group(1) if head else ""
    return heads


def _import(tmp_path, client, lines: list[str]) -> Conversation:
    project = make_project()
    client.force_login(make_user(project=project))
    path = tmp_path / "session.jsonl"
    write_lines(path, lines)
    ingest.import_path(project, path)
    return Conversation.objects.get(project=project, parent=None)


def _parallel_tools(b: SessionBuilder, i: int) -> list[str]:
    """One response with two tool calls, one line each; each result hangs off its own call's line."""
    b.calls += 1
    msg = {"id": f"msg_par_{i}", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
           "usage": {"input_tokens": 3, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 9000, "output_tokens": 40}}
    lines, call_lines = [], []
    for k in range(2):
        block = {"type": "tool_use", "id": f"toolu_par_{i}_{k}", "name": "Read", "input": {"file_path": f"/src/m{k}.py"}}
        env = b._envelope("assistant", requestId=f"req_par_{i}", message={**msg, "content": [block]})
        lines.append(json.dumps(env))
        call_lines.append(env["uuid"])
    for k, call_uuid in enumerate(call_lines):
        b.parent = call_uuid
        block = {"type": "tool_result", "tool_use_id": f"toolu_par_{i}_{k}", "content": f"contents of m{k}"}
        lines.append(json.dumps(b._envelope("user", message={"role": "user", "content": [block]})))
    return lines


def test_a_re_edited_prompt_marks_the_abandoned_turn_as_a_branch(tmp_path, client):
    b = SessionBuilder()
    lines = b.turn(0)
    fork = b.parent
    lines += [b.user("Rename the helper to parse_rows"), *b.assistant("Renaming it", tool=("Bash", {"command": "sed -i s/x/parse_rows/ a.py"}))]
    lines += [b.tool_result("done"), *b.assistant("Renamed to parse_rows.")]
    b.parent = fork  # the person re-edits the prompt: a second user message with the same parent
    lines += [b.user("Rename the helper to parse_records instead"), *b.assistant("Renamed to parse_records.")]
    lines += b.turn(3)
    conv = _import(tmp_path, client, lines)

    html = client.get(reverse("conversation", args=[conv.id])).content.decode()
    rows = _turn_rows(html)
    assert sorted(rows) == [0, 1, 2, 3]
    assert "parse_rows" in rows[1] and "parse_records" in rows[2]
    assert 'class="turn branch"' in rows[1] and "branch of turn 2" in rows[1]
    for kept in (0, 2, 3):
        assert "branch" not in re.sub(r"parse_\w+", "", rows[kept]), kept

    # inside the abandoned turn every message says where the log went on; the kept turn says nothing
    abandoned = client.get(reverse("turn", args=[conv.id, 1]), HTTP_HX_REQUEST="true").content.decode()
    n_abandoned = Message.objects.filter(conversation=conv, turn=1).count()
    n_boxes = abandoned.count('<div class="message role-')  # a response's records share one box
    assert n_boxes == abandoned.count(" branch\" id=\"m-") > 0 and n_boxes <= n_abandoned
    assert abandoned.count("branch of turn 2") == 1  # one badge for the run of abandoned messages
    kept = client.get(reverse("turn", args=[conv.id, 2]), HTTP_HX_REQUEST="true").content.decode()
    assert "Renamed to parse_records." in kept and "badge branch" not in kept


def test_parallel_tool_calls_are_not_branches(tmp_path, client):
    b = SessionBuilder()
    lines = [b.user("Read both modules"), *_parallel_tools(b, 0), *b.assistant("Both read.")]
    lines += [b.user("Now read them again"), *_parallel_tools(b, 1), *b.assistant("Read again.")]
    conv = _import(tmp_path, client, lines)
    # the log does fork (a call's line has the next call line and its own result as children)
    parents = list(Message.objects.filter(conversation=conv).values_list("parent_uuid", flat=True))
    assert any(parents.count(p) > 1 for p in parents if p)

    html = client.get(reverse("conversation", args=[conv.id])).content.decode()
    assert sorted(_turn_rows(html)) == [0, 1]
    assert "badge branch" not in html
    for turn in (0, 1):
        body = client.get(reverse("turn", args=[conv.id, turn]), HTTP_HX_REQUEST="true").content.decode()
        assert "contents of m1" in body and "badge branch" not in body


@pytest.mark.fixtures
def test_a_real_session_with_an_interrupted_prompt_shows_it_as_a_branch(client, fixtures_dir):
    # A prompt typed while a tool ran, then interrupted: written late in the file with an older
    # parent; the conversation went on from the earlier path.
    path = fixtures_dir / "claude-code" / "moredip__session-share__0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    if not path.exists():
        pytest.skip(f"{path.name} is absent")
    project = make_project()
    client.force_login(make_user(project=project))
    ingest.import_path(project, path)
    conv = Conversation.objects.get(project=project, parent=None)
    # the delivered prompt (record_type "user"), not the queued copy typed earlier (queue-operation)
    prompt = Message.objects.get(conversation=conv, record_type="user", blocks__icontains="are they still being written?")
    interrupted = Message.objects.get(conversation=conv, parent_uuid=prompt.uuid)
    sibling = Message.objects.filter(conversation=conv, parent_uuid=prompt.parent_uuid).exclude(pk=prompt.pk).get()

    html = client.get(reverse("conversation", args=[conv.id]), {"turn": prompt.turn}).content.decode()
    rows = _turn_rows(html)
    assert "are they still being written?" in rows[prompt.turn]
    assert f"branch of turn {sibling.turn}" in rows[prompt.turn] and 'branch"' in rows[prompt.turn]
    # Only the prompt's turn is marked: the "[Request interrupted by user]" turn also holds the
    # kept path's last answer (written after it in the file), so its header stays unmarked.
    assert [t for t, row in rows.items() if "badge branch" in row] == [prompt.turn]
    assert interrupted.turn == prompt.turn + 1
    assert Message.objects.filter(conversation=conv, turn=interrupted.turn, blocks__icontains="Done!").exists()

    body = client.get(reverse("turn", args=[conv.id, prompt.turn]), HTTP_HX_REQUEST="true").content.decode()
    block = re.search(rf'<div class="message[^"]*" id="m-{prompt.id}".*?</div>', body, re.S).group(0)
    assert " branch" in block and f"branch of turn {sibling.turn}" in block
    # inside the mixed turn: the interrupted line marked, the kept answer after it not
    body = client.get(reverse("turn", args=[conv.id, interrupted.turn]), HTTP_HX_REQUEST="true").content.decode()
    heads = _heads(body)
    assert f"branch of turn {sibling.turn}" in heads[str(interrupted.id)]
    done = Message.objects.get(conversation=conv, turn=interrupted.turn, blocks__icontains="Done!")
    assert "branch" not in heads[str(done.id)]


def test_branch_marks_are_kept_per_import_and_follow_a_grown_file(tmp_path, client):
    """Issue 23: the fork marks are not grouped again over every message on each page and turn
    request; a file that grows with a re-edited prompt shows the new branch on the next request."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from contextviewer.conversations import page_cache

    page_cache.clear()
    b = SessionBuilder()
    lines = b.turn(0) + b.turn(1)
    conv = _import(tmp_path, client, lines)
    assert client.get(reverse("conversation", args=[conv.id])).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert client.get(reverse("conversation", args=[conv.id])).status_code == 200
        assert client.get(reverse("turn", args=[conv.id, 1]), HTTP_HX_REQUEST="true").status_code == 200
    grouped = [q["sql"] for q in queries.captured_queries if "HAVING" in q["sql"].upper()]
    assert grouped == [], grouped

    fork = b.parent
    more = [b.user("Rename the helper to parse_rows"), *b.assistant("Renamed to parse_rows.")]
    b.parent = fork
    more += [b.user("Rename the helper to parse_records instead"), *b.assistant("Renamed to parse_records.")]
    write_lines(tmp_path / "session.jsonl", lines + more)
    ingest.import_path(conv.project, tmp_path / "session.jsonl")
    rows = _turn_rows(client.get(reverse("conversation", args=[conv.id])).content.decode())
    assert "parse_rows" in rows[2] and "branch of turn 3" in rows[2], rows.get(2)
