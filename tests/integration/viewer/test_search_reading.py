"""Issue 36, item 6: search hits as they read. A snippet from a tool's input or a result the log wrote
as JSON shows the text, not `\\n` escapes; a sub-agent's hit is titled by the conversation that
started it and the sub-agent's own task, never by its id."""

from __future__ import annotations

import json
import shutil

import pytest
from django.urls import reverse

from contextviewer.conversations import search
from contextviewer.conversations.models import Conversation, Message
from contextviewer.ingest import files as ingest
from tests.factories import build_conversation, make_project, make_user

pytestmark = pytest.mark.django_db


def _add_message(conv: Conversation, blocks: list[dict]) -> Message:
    last = conv.messages.order_by("-position").first()
    m = Message.objects.create(conversation=conv, position=last.position + 1, turn=last.turn, role="assistant",
                               record_type="assistant", uuid=f"extra-{last.position + 1}", blocks=blocks)  # fmt: skip
    search.index_messages(conv.id, [(m.id, search.text_of_blocks(blocks))])
    return m


def test_snippets_of_tool_inputs_and_json_results_read_as_text(client):
    project = make_project()
    user = make_user(project=project)
    conv = build_conversation(project, turns=1, subagent_turn=None).conversation
    script = "cat > notes.txt <<'EOF'\nfirst line\nthe quagga migration\nlast line\nEOF"
    _add_message(conv, [{"kind": "tool_call", "tool_id": "t9", "tool_name": "Bash", "tool_input": {"command": script},
                         "text": json.dumps({"command": script})}])  # fmt: skip
    logged = json.dumps({"output": "Directory: C:\\w\r\n\r\nMode Name\r\n-a--- okapi.py\r\n-a--- zebra.py\r\n", "metadata": {"exit_code": 0}})
    _add_message(conv, [{"kind": "tool_result", "tool_id": "t9", "text": logged}])

    for word, expect in (("quagga", "first line the quagga migration last line"), ("okapi", "Directory: C:\\w Mode Name -a--- okapi.py -a--- zebra.py")):
        [hit] = search.search(user, word)
        shown = f"{hit.before}{hit.match}{hit.after}"
        assert expect in shown, shown
        for raw in ("\\n", "\\r", '{"', '\\"'):
            assert raw not in shown, (word, raw, shown)

    client.force_login(user)
    html = client.get(reverse("index"), {"q": "quagga"}).content.decode()
    assert "first line the <mark>quagga</mark> migration last line" in html


def test_a_word_found_only_in_the_stored_json_still_gets_a_snippet():
    project = make_project()
    user = make_user(project=project)
    conv = build_conversation(project, turns=1, subagent_turn=None).conversation
    _add_message(conv, [{"kind": "tool_call", "tool_id": "t8", "tool_name": "Grep", "tool_input": {"zorillapattern": "x"},
                         "text": json.dumps({"zorillapattern": "x"})}])  # fmt: skip
    [hit] = search.search(user, "zorillapattern")
    assert hit.match == "zorillapattern"


def test_a_subagents_hit_is_titled_by_its_parent_and_its_task(client):
    project = make_project()
    user = make_user(project=project)
    built = build_conversation(project, turns=3, subagent_turn=2, title="Make the parser strict")
    child = built.child
    child.title = ""  # a sub-agent the log gives no title: its hit was titled by its id
    child.save()
    _add_message(child, [{"kind": "text", "text": "the aardwolf module has no tests"}])
    [hit] = search.search(user, "aardwolf")
    assert hit.conversation_id == child.id
    assert (hit.parent_title, hit.task) == ("Make the parser strict", "Explore")
    assert hit.conversation_title == "Make the parser strict › Explore"
    assert child.external_id not in hit.conversation_title

    client.force_login(user)
    html = client.get(reverse("index"), {"q": "aardwolf"}).content.decode()
    assert '<span class="hit-title">Make the parser strict <span class="hit-task">› Explore</span></span>' in html


def test_a_real_subagents_hit_names_the_task_its_call_gave(fixtures_dir, tmp_path):
    """marot/spotter: an Explore sub-agent started by a Task call described "Explore transcript
    rendering codebase"; its hit reads "<the session's title> › Explore: Explore transcript ..."."""
    project = make_project()
    user = make_user(project=project)
    sid = "4d5611e5-241a-462a-8d15-5122611a9569"
    src = fixtures_dir / "claude-code" / f"marot__spotter__{sid}"
    shutil.copy(src.with_suffix(".jsonl"), tmp_path / f"{sid}.jsonl")
    shutil.copytree(src, tmp_path / sid)
    for path in sorted(tmp_path.rglob("*.jsonl")):
        ingest.import_file(project, path)
    child = Conversation.objects.get(project=project, agent_id="a2898e3")
    hits = [h for h in search.search(user, "thorough exploration", limit=50) if h.conversation_id == child.id]
    assert hits
    assert hits[0].parent_title == str(child.parent)
    assert hits[0].task == "Explore transcript rendering codebase"
    assert hits[0].conversation_title == f"{child.parent} › Explore transcript rendering codebase"
