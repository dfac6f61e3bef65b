"""Exports write what the agent loads (issue 19, item 2): by default the loaded view (the latest
fold's summary, its preserved tail and what followed it), with the whole record on request
(`view=full`: the API, the page's second row of links, `manage.py export --view full`)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from contextviewer.builds import services as builds
from contextviewer.conversations.models import Conversation, Fold
from contextviewer.ingest import files as ingest
from tests.integration.builds.test_builds_after_fold import SUMMARY, compaction
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db

HANDOFF = "## Goal\nFix the tests.\n## Next steps\nRun pytest on module_2."


def _import(project, path) -> Conversation:
    report = ingest.import_path(project, path)
    return Conversation.objects.get(pk=report.conversation_ids[0])


@pytest.fixture
def compacted(project, tmp_path) -> Conversation:
    """Two turns, Claude Code's own compaction (boundary + summary), then the agent's work after it."""
    b = SessionBuilder()
    lines = session_lines(2, b) + compaction(b)
    lines += [*b.assistant("Continuing: running the full suite", tool=("Bash", {"command": "pytest -q"})),
              b.tool_result("12 passed"), *b.assistant("All green after the compaction.")]
    write_lines(tmp_path / "s.jsonl", lines)
    return _import(project, tmp_path / "s.jsonl")


@pytest.fixture
def handed_off(project, tmp_path) -> Conversation:
    """Three turns, then a handoff made here (a fold at the end with its summary)."""
    b = SessionBuilder()
    lines = session_lines(3, b)
    write_lines(tmp_path / "h.jsonl", lines)
    conv = _import(project, tmp_path / "h.jsonl")
    last = conv.messages.order_by("-position").first()
    Fold.objects.create(conversation=conv, key="handoff:test", position=last.position, kind="handoff", origin="generated",
                        summary_text=HANDOFF)
    return conv


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _anthropic_texts(content: bytes) -> list[str]:
    doc = json.loads(content)
    return [b.get("text") or "" for m in doc["messages"] for b in m["content"] if b["type"] == "text"]


def test_the_default_export_is_the_loaded_view_and_view_full_the_whole_record(compacted, user):
    client = _client(user)
    loaded = client.get(f"/api/conversations/{compacted.pk}/export", {"format": "anthropic"})
    assert loaded.status_code == 200
    texts = _anthropic_texts(loaded.content)
    assert texts[0] == SUMMARY  # the summary first
    assert "All green after the compaction." in texts and "Continuing: running the full suite" in texts
    assert not any("Step 0" in t or "Step 1" in t for t in texts), "what the summary stands for stays out"
    assert "Loaded view: fold 1's summary" in loaded["X-Export-Notes"]

    full = client.get(f"/api/conversations/{compacted.pk}/export", {"format": "anthropic", "view": "full"})
    every = _anthropic_texts(full.content)
    assert any("Step 0" in t for t in every) and SUMMARY in every and "All green after the compaction." in every
    assert len(every) > len(texts)

    bad = client.get(f"/api/conversations/{compacted.pk}/export", {"format": "anthropic", "view": "some"})
    assert bad.status_code == 400 and "Unknown view" in bad.json()["detail"]
    assert client.get(f"/c/{compacted.pk}/export/markdown/", {"view": "some"}).status_code == 400


def test_a_claude_code_export_after_a_handoff_made_here_starts_from_its_summary(handed_off, user):
    client = _client(user)
    r = client.get(f"/api/conversations/{handed_off.pk}/export", {"format": "claude-code"})
    assert r.status_code == 200
    lines = [json.loads(line) for line in r.content.decode().splitlines()]
    users = [line for line in lines if line.get("type") == "user"]
    assert users and users[0]["message"]["content"] == HANDOFF and users[0].get("isCompactSummary") is True
    assert not any("Step 0" in json.dumps(line) for line in lines if line["type"] != "custom-title")
    whole = client.get(f"/api/conversations/{handed_off.pk}/export", {"format": "claude-code", "view": "full"})
    assert "Step 1" in whole.content.decode() and HANDOFF not in whole.content.decode()
    assert whole["X-Session-Id"] != r["X-Session-Id"], "the two files can sit side by side"


def test_the_page_offers_both_views_and_the_command_takes_view(compacted, user):
    page = _client(user).get(f"/c/{compacted.pk}/build/").content.decode()
    assert f'href="/c/{compacted.pk}/export/markdown/"' in page
    assert f'href="/c/{compacted.pk}/export/markdown/?view=full"' in page
    assert "claude --resume" in page

    out, err = StringIO(), StringIO()
    call_command("export", str(compacted.pk), format="markdown", stdout=out, stderr=err)
    body = out.getvalue().split("\n", 1)[1]  # under the title (the first prompt)
    assert SUMMARY in body and "Step 0" not in body and "Step 1" not in body
    out = StringIO()
    call_command("export", str(compacted.pk), format="markdown", view="full", stdout=out, stderr=StringIO())
    assert "Step 1" in out.getvalue()


def test_without_a_fold_the_loaded_view_is_the_whole_record(project, tmp_path):
    write_lines(tmp_path / "p.jsonl", session_lines(2))
    conv = _import(project, tmp_path / "p.jsonl")
    assert builds.export(conv, "markdown").content == builds.export(conv, "markdown", view="full").content


def test_a_builds_page_says_how_to_continue_it_in_the_agent(compacted, user):
    from contextviewer.jobs import queue as jobs

    done = jobs.run(builds.start_build(compacted, "", "", after_fold=1, user=user).pk)
    assert done.status == "succeeded", done.error
    built = Conversation.objects.get(pk=done.result["conversation_id"])
    client = _client(user)
    assert f'href="/c/{built.pk}/build/#continue"' in client.get(f"/c/{built.pk}/").content.decode()
    page = client.get(f"/c/{built.pk}/build/").content.decode()
    exported = builds.export(built, "claude-code")
    assert "Continue in the agent" in page and f">{exported.filename}<" in page
    folder = "~/.claude/projects/-home-dev-project"
    for command in (f"mkdir -p {folder}", f"mv ~/Downloads/{exported.filename} {folder}/",
                    f"cd /home/dev/project &amp;&amp; claude --resume {exported.session_id}"):
        assert command in page, command


def _preserved_fold_lines() -> list[str]:
    """Claude Code 2.1.197+'s auto fold with a preserved tail (as its real run writes it, issue 33):
    the answer of turn 1 and the new prompt are written BEFORE the compact_boundary (the prompt
    twice, same uuid), the boundary starts a new root and names them in compactMetadata
    (preservedSegment head..tail through the parent chain, anchored at the summary), then the
    summary, then the call the new prompt asked for, its result and the answer."""
    b = SessionBuilder()
    lines = session_lines(1, b)
    lines += [b.user("Step 1: rename status to final in notes.txt"),
              *b.assistant("Reading notes.txt", tool=("Read", {"file_path": "notes.txt"})), b.tool_result("status: draft"),
              *b.assistant("notes.txt now reads 'status: final'.")]
    answer = json.loads(lines[-1])["uuid"]
    prompt = b.user("cv-prompt-3: run the tests")
    lines += [prompt, prompt]
    tail = json.loads(prompt)["uuid"]
    b.parent = None  # the boundary starts a new root
    boundary = b._envelope("system", subtype="compact_boundary", content="Conversation compacted", isMeta=False,
                           level="info", logicalParentUuid=tail)
    summary = b._envelope("user", message={"role": "user", "content": SUMMARY}, isVisibleInTranscriptOnly=True,
                          isCompactSummary=True)
    boundary["compactMetadata"] = {
        "trigger": "auto", "preTokens": 185_030, "postTokens": 795,
        "preservedSegment": {"headUuid": answer, "anchorUuid": summary["uuid"], "tailUuid": tail},
        "preservedMessages": {"anchorUuid": summary["uuid"], "uuids": [answer, tail], "allUuids": [answer, tail]},
    }
    lines += [json.dumps(boundary), json.dumps(summary)]
    lines += [*b.assistant("Running the tests", tool=("Bash", {"command": "pytest -q"})), b.tool_result("12 passed"),
              *b.assistant("All 12 tests pass.")]
    return lines


def test_the_loaded_export_after_a_fold_with_a_preserved_tail_written_before_its_boundary(project, tmp_path):
    """`export --view loaded` keeps what Claude Code sent after the fold: [summary, preserved tail,
    new prompt, call, result] in that order (builds/services.py `_with_preserved`; a build takes
    whole turns, and the preserved answer and prompt sit in the turn the boundary ends)."""
    write_lines(tmp_path / "f.jsonl", _preserved_fold_lines())
    conv = _import(project, tmp_path / "f.jsonl")
    out = StringIO()
    call_command("export", str(conv.pk), format="anthropic", view="loaded", stdout=out, stderr=StringIO())
    blocks = [(m["role"], b["type"], b.get("text") or b.get("tool_use_id") or b.get("id") or "")
              for m in json.loads(out.getvalue())["messages"] for b in m["content"]]
    call = next(i for i, (_, kind, _) in enumerate(blocks) if kind == "tool_use")
    tool_id = blocks[call][2]
    assert blocks == [
        ("user", "text", SUMMARY),
        ("assistant", "text", "notes.txt now reads 'status: final'."),  # the preserved tail
        ("user", "text", "cv-prompt-3: run the tests"),  # the new prompt, preserved too
        ("assistant", "text", "Running the tests"),
        ("assistant", "tool_use", tool_id),  # the call
        ("user", "tool_result", tool_id),  # its result
        ("assistant", "text", "All 12 tests pass."),
    ], blocks
    assert not any("Step" in text for _, _, text in blocks), "what the summary stands for stays out"
