"""Builds of "a fold's summary plus what followed it" (Claude Code: the summary is a user message
that assistant messages follow, with no prompt after it), and the summary-and-its-turns exclusion
through the command, the API and the page alike."""

import html
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from contextviewer.builds import services as builds
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.conversations.models import Conversation, ConversationKind
from contextviewer.jobs.models import JobStatus
from tests.sessions import SessionBuilder, session_lines, write_lines

SUMMARY = "Summary of the earlier work: fixed src/app_0.py and src/app_1.py; next, run the full suite."


def compaction(b: SessionBuilder) -> list[str]:
    """A Claude Code compact boundary, then the compaction summary as a user message."""
    boundary = b._envelope("system", subtype="compact_boundary", content="Conversation compacted", isMeta=False,
                           level="info", compactMetadata={"trigger": "auto", "preTokens": 150_000})
    summary = b._envelope("user", message={"role": "user", "content": SUMMARY}, isVisibleInTranscriptOnly=True,
                          isCompactSummary=True)
    return [json.dumps(boundary), json.dumps(summary)]


@pytest.fixture
def compacted(project, tmp_path) -> Conversation:
    b = SessionBuilder()
    lines = session_lines(2, b) + compaction(b)
    # No user prompt after the summary: the agent goes on by itself.
    lines += [*b.assistant("Continuing: running the full suite", tool=("Bash", {"command": "pytest -q"})),
              b.tool_result("12 passed"), *b.assistant("All green after the compaction.")]
    write_lines(tmp_path / "s.jsonl", lines)
    report = ingest.import_path(project, tmp_path / "s.jsonl")
    return Conversation.objects.get(pk=report.conversation_ids[0])


def _texts(conv: Conversation) -> list[str]:
    return [b.get("text") for m in conv.messages.order_by("position") for b in m.blocks if b.get("kind") == "text"]


@pytest.mark.django_db
def test_after_fold_through_the_command_keeps_the_summary_and_the_agents_work_after_it(compacted):
    out = StringIO()
    call_command("build", str(compacted.pk), after_fold="1", json=True, stdout=out)
    answer = json.loads(out.getvalue())
    assert answer["status"] == "succeeded", answer
    built = Conversation.objects.get(pk=answer["result"]["conversation_id"])
    texts = _texts(built)
    assert texts[0] == SUMMARY and built.messages.order_by("position").first().is_compact_summary
    assert "Continuing: running the full suite" in texts and texts[-1] == "All green after the compaction."
    assert not any("Step 0" in t or "Step 1" in t for t in texts)  # what the summary stands for stays out
    assert built.lineage["selection"]["after_fold"] == 1
    assert built.messages.filter(role="system", subtype="compact_boundary").count() == 0


@pytest.mark.django_db
def test_after_fold_through_the_api_and_the_page(compacted, user):
    client = Client()
    client.force_login(user)
    r = client.post(f"/api/conversations/{compacted.pk}/builds", {"after_fold": 1}, content_type="application/json")
    assert r.status_code == 202, r.content
    done = jobs.run(r.json()["id"])
    assert done.status == JobStatus.SUCCEEDED, done.error
    assert _texts(Conversation.objects.get(pk=done.result["conversation_id"]))[0] == SUMMARY

    page = client.get(f"/c/{compacted.pk}/")
    assert f"/c/{compacted.pk}/build/?after_fold=1" in page.content.decode()
    preview = client.get(f"/c/{compacted.pk}/build/", {"after_fold": "1"})
    assert preview.status_code == 200
    shown = html.unescape(preview.content.decode())
    assert "<em>summary</em> Summary of the earlier work" in shown and "<strong>1 turn</strong>, 5 messages" in shown
    assert "<li value=\"0\">Step 0" not in shown
    assert client.get(f"/c/{compacted.pk}/build/", {"after_fold": "7"}).status_code == 400
    bad = client.get(f"/c/{compacted.pk}/build/", {"after_fold": "two"})
    assert bad.status_code == 400 and "give one fold number" in bad.content.decode()
    r = client.post(f"/c/{compacted.pk}/build/create/", {"after_fold": "1", "idempotency_key": "p1"})
    assert r.status_code == 302 and "/jobs/" in r["Location"]


@pytest.mark.django_db
def test_turns_holding_a_summary_and_turns_it_stands_for_are_refused_everywhere(compacted, user):
    spans = builds.turn_spans(compacted)
    summary_turn = compacted.messages.get(is_compact_summary=True).turn
    everything = f"{spans[0].turn}-{spans[-1].turn}"
    expected = f"turn {summary_turn} holds fold 1's summary, and fold 1 put turn 0 away"

    err = StringIO()
    with pytest.raises(SystemExit):
        call_command("build", str(compacted.pk), turns=everything, stderr=err, stdout=StringIO())
    assert expected in err.getvalue() and "Select either the summary or those turns" in err.getvalue()

    client = Client()
    client.force_login(user)
    r = client.post(f"/api/conversations/{compacted.pk}/builds", {"turns": everything}, content_type="application/json")
    assert r.status_code == 400 and expected in r.json()["detail"]
    page = client.get(f"/c/{compacted.pk}/build/", {"turns": everything})
    assert page.status_code == 400 and expected in html.unescape(page.content.decode())
    # The summary's turn on its own, or the turns before it, are fine.
    assert builds.validate(compacted, str(summary_turn), "").turns == [summary_turn]
    assert builds.validate(compacted, f"0-{summary_turn - 1}", "").turns == list(range(summary_turn))
    assert not Conversation.objects.filter(kind=ConversationKind.BUILD).exists()
