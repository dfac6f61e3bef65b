"""What did call N carry (issue 33, item 4): one loader for `manage.py window`, the API and the page a
curve point opens, on a real Claude Code session with a compaction.

Checked by hand on marot__spotter__4d5611e5 (a json script over its lines): the compact_boundary is
line 754, its isCompactSummary line 755; the first assistant line after them, line 760, starts the
first call after the fold (call 62 of 139): it carried the summary and nothing else the log holds.
Call 61 starts at line 742 (assistant text "Now update the shared transcript component ..."): its
window ends with the tool result of toolu_01T2Tc41xbhf1o4byZigBwB8 (line 741, the Write of line
731), and it starts with the session's first prompt, "Work on bead spotter-dov. ..."."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from contextviewer.accounts import services
from contextviewer.conversations import windows
from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from tests.factories import make_project, make_user

pytestmark = pytest.mark.django_db

REAL = "claude-code/marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


@pytest.fixture
def spotter(fixtures_dir):
    project = make_project("window")
    ingest.import_path(project, fixtures_dir / REAL)
    conv = Conversation.objects.get(project=project, parent__isnull=True, external_id__startswith="4d5611e5")
    return project, conv


def test_the_window_before_and_after_the_fold_is_what_the_log_says_was_sent(spotter):
    _project, conv = spotter
    before, after = windows.call_window(conv, 61), windows.call_window(conv, 62)
    assert (before.calls, after.calls) == (139, 139)
    assert before.items[0]["kind"] == "text" and before.items[0]["text"].startswith("Work on bead spotter-dov.")
    last = before.items[-1]
    assert (last["kind"], last["tool_id"]) == ("tool_result", "toolu_01T2Tc41xbhf1o4byZigBwB8")
    assert before.measured == 164_831  # line 742's usage: input + cache creation + cache read
    assert [i["kind"] for i in after.items] == ["summary"]
    assert after.items[0]["text"].startswith("This session is being continued from a previous conversation")
    assert after.measured == 36_081 and after.items[0]["tokens"] > 1000
    # Every call id of the tool calls and results before the fold is paired, in order.
    calls = [i["tool_id"] for i in before.items if i["kind"] == "tool_call"]
    results = [i["tool_id"] for i in before.items if i["kind"] == "tool_result"]
    assert calls == results and len(calls) > 40


def test_the_command_and_the_api_give_the_same_items(spotter):
    project, conv = spotter
    out = StringIO()
    call_command("window", str(conv.pk), "--call", "62", "--json", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["call"] == 62 and [i["kind"] for i in printed["items"]] == ["summary"]
    user = make_user("win-owner", project=project)
    token = services.create_token(user, project, "cli")[1]
    client = Client()
    r = client.get(f"/api/conversations/{conv.pk}/calls/62/window", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200 and r.json()["items"] == printed["items"]
    last = client.get(f"/api/conversations/{conv.pk}/calls/last/window", headers={"Authorization": f"Bearer {token}"}).json()
    assert last["call"] == 139 and last["items"] == windows.call_window(conv, 139).as_dict()["items"]
    bad = client.get(f"/api/conversations/{conv.pk}/calls/140/window", headers={"Authorization": f"Bearer {token}"})
    assert bad.status_code == 404 and "has 139 model calls (1 to 139)" in bad.json()["detail"]
    text = StringIO()
    with pytest.raises(SystemExit):
        call_command("window", str(conv.pk), "--call", "zero", stderr=text)
    assert "call must be a number from 1 to 139, or last" in text.getvalue()


def test_the_page_shows_the_items_and_links_the_neighbours_and_the_turn(spotter, client):
    project, conv = spotter
    user = make_user("win-viewer", project=project)
    client.force_login(user)
    html = client.get(f"/c/{conv.pk}/calls/62/window/").content.decode()
    assert "What call 62 of 139 carried" in html and "36,081" in html and "summary" in html
    assert f"/c/{conv.pk}/calls/61/window/" in html and f"/c/{conv.pk}/calls/63/window/" in html and "open turn" in html
    assert client.get(f"/c/{conv.pk}/calls/999/window/").status_code == 404
    other = make_user("win-outsider", project=make_project("elsewhere"))
    client.force_login(other)
    assert client.get(f"/c/{conv.pk}/calls/62/window/").status_code == 404
