"""Review pages read like the conversation page (issue 22, item 5): summaries rendered from
Markdown, archived turns through the conversation's block and tool views (no raw JSON), scores
under their configured labels, blind review that strips the harness's boilerplate from both
summaries, never blinds a queue's owner on their own fold page, and says which pending item keeps
the probes hidden."""

import html
import json
import re

import pytest
from django.test import Client

from contextviewer.accounts.models import Role
from contextviewer.conversations import segments
from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import JobStatus
from contextviewer.review import alternatives, blind, queues
from contextviewer.review.models import ReviewQueue
from tests.conftest import shared_fixtures_dir
from tests.factories import make_user
from tests.sessions import SessionBuilder, session_lines, write_lines

pytestmark = pytest.mark.django_db

PREAMBLE = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation."
)
CLOSING = (
    "If you need specific details from before compaction (like exact code snippets, error messages, or content you "
    "generated), read the full transcript at: /home/dev/.claude/projects/-home-dev-project/s.jsonl\n"
    "Please continue the conversation from where we left off without asking the user any further questions. "
    "Continue with the last task that you were asked to work on."
)
# A Claude Code summary as its fixtures write them (marot__spotter__*.jsonl, isCompactSummary lines).
CC_SUMMARY = (
    f"{PREAMBLE}\n\nAnalysis:\nLet me chronologically analyze the conversation:\n\n"
    "1. **Initial Request**: fix the failing tests in src/app_0.py and src/app_1.py.\n\n"
    "Summary:\n1. Primary Request and Intent:\n   The user asked to **fix the failing tests** in `src/app_0.py`.\n\n"
    "2. Pending Tasks:\n   - Run the full suite with `pytest -q`\n\n"
    f"{CLOSING}"
)


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _import(project, tmp_path, summary: str = CC_SUMMARY) -> Conversation:
    """Three turns (each a Bash call and its result), a Claude Code compaction with `summary`, then more work."""
    b = SessionBuilder()
    lines = session_lines(3, b)
    lines += [*b.assistant("Done: **all three** fixed, see `src/app_2.py`.")]
    boundary = b._envelope("system", subtype="compact_boundary", content="Conversation compacted", isMeta=False,
                           level="info", compactMetadata={"trigger": "auto", "preTokens": 150_000})
    compact = b._envelope("user", message={"role": "user", "content": summary}, isVisibleInTranscriptOnly=True,
                          isCompactSummary=True)
    lines += [json.dumps(boundary), json.dumps(compact)]
    lines += [*b.assistant("Continuing: running the full suite", tool=("Bash", {"command": "pytest -q"})),
              b.tool_result("12 passed"), *b.assistant("All green after the compaction.")]
    write_lines(tmp_path / "s.jsonl", lines)
    report = ingest.import_path(project, tmp_path / "s.jsonl")
    return Conversation.objects.get(pk=report.conversation_ids[0])


def _two_summaries(project, tmp_path):
    conv = _import(project, tmp_path)
    original = segments.segment_folds(conv)[0]
    job = alternatives.start(original, provider="builtin", enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    return original, conv.folds.get(pk=done.result["fold_id"])


def _section(page: str, css_class: str) -> str:
    """The HTML of the page's first <section> whose class list holds `css_class`, up to the next section."""
    start = page.index(f'<section class="card {css_class}')
    end = page.find("<section", start + 10)
    return page[start: end if end != -1 else len(page)]


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment))


def test_the_summary_is_rendered_from_markdown(project, user, tmp_path):
    conv = _import(project, tmp_path, summary="## Goal\nFix the **failing tests** in `src/app_0.py`.\n\n- run `pytest -q`\n")
    fold = segments.segment_folds(conv)[0]
    summary = _section(_client(user).get(f"/review/folds/{fold.pk}/").content.decode(), "summary-col")
    assert "<h4>Goal</h4>" in summary and "<strong>failing tests</strong>" in summary
    assert "<code>src/app_0.py</code>" in summary and "<li>run <code>pytest -q</code></li>" in summary
    assert "## Goal" not in summary and "**failing tests**" not in summary


def test_the_summary_stays_sanitized(project, user, tmp_path):
    conv = _import(project, tmp_path, summary="## Goal\n<script>alert(1)</script> [x](javascript:alert(2))\n")
    page = _client(user).get(f"/review/folds/{segments.segment_folds(conv)[0].pk}/").content.decode()
    summary = _section(page, "summary-col")
    assert "<script>" not in summary and 'href="javascript:' not in summary and "&lt;script&gt;" in summary


def test_archived_turns_read_as_on_the_conversation_page_not_as_json(project, user, tmp_path):
    conv = _import(project, tmp_path)
    fold = segments.segment_folds(conv)[0]
    segment = _section(_client(user).get(f"/review/folds/{fold.pk}/").content.decode(), "segment-col")
    # The Bash calls show as commands with their output under them (the conversation's tool view) ...
    assert segment.count('class="tool-view tool-bash"') == 3
    assert "pytest tests/test_1.py</pre>" in segment and "1 failed, 1 passed" in segment
    # ... the assistant's Markdown as HTML, each message with the conversation page's id ...
    assert "<strong>all three</strong>" in segment and "**all three**" not in segment
    first = conv.messages.order_by("position").first()
    assert f'id="m-{first.pk}"' in segment
    # ... and no JSON outside the collapsed "raw" toggles (the old page printed each block's JSON).
    shown = re.sub(r'<details class="tool-raw">.*?</details>', "", segment, flags=re.S)
    assert '{"' not in _text(shown) and '"kind":' not in _text(shown) and '"command":' not in _text(shown)


def test_scores_are_shown_with_their_configured_labels(project, user, tmp_path):
    conv = _import(project, tmp_path)
    queues.save_score_config(project, [
        {"key": "fidelity", "label": "Fidelity", "type": "scale", "min": 1, "max": 5},
        {"key": "lost_detail", "label": "Lost detail", "type": "bool"},
        {"key": "comment", "label": "Comment", "type": "text"},
    ])
    queue = queues.create_queue(project, "labels", {}, user=user)
    item = queue.items.get(fold=segments.segment_folds(conv)[0])
    client = _client(user)
    r = client.post(f"/review/items/{item.pk}/", {"fidelity": "4", "lost_detail": "yes", "comment": "kept the paths"})
    assert r.status_code == 302
    score = _text(_section(client.get(f"/review/items/{item.pk}/").content.decode(), "score-card"))
    assert "Lost detail: yes" in score and "Fidelity: 4/5" in score and "Comment: kept the paths" in score
    assert "lost_detail" not in score and "True" not in score and "fidelity=" not in score


def test_blind_review_strips_the_harness_boilerplate_from_both_summaries(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)
    assert alt.summary_text.startswith("## Goal")  # the builtin summarizer's sections
    # Assigned to themselves: blind on every page and API answer, not only inside the queue.
    queue = queues.create_queue(project, "blind pairs", {}, mode="pairwise", blind=True, user=user, reviewers=[user])
    item = queue.items.get()
    client = _client(user)
    page = client.get(f"/review/items/{item.pk}/").content.decode()
    a, b = _section(page, "summary-a"), _section(page, "summary-b")
    shown = _text(a + b)
    for tell in ["This session is being continued", "ran out of context", "If you need specific details",
                 "read the full transcript", "Please continue the conversation", "Continue with the last task",
                 "## Goal", "1. Primary Request and Intent:", "Summary:\n", "Analysis:\n"]:
        assert tell not in shown, tell
    # Both sides open the same way: their sections are the same kind of heading.
    assert re.search(r'class="summary-text md" hx-disable><h4>', a) and re.search(r'class="summary-text md" hx-disable><h4>', b)
    both = a + b
    # One vocabulary of section names, in one order: Claude Code's "Primary Request and Intent" and
    # "Pending Tasks" are the builtin's "Goal" and "Next steps"; its analysis comes last, as notes.
    for side in (a, b):
        assert re.search(r'class="summary-text md" hx-disable><h4>Goal</h4>', side)
        assert "<h4>Next steps</h4>" in side
    for tell in ["Primary Request and Intent", "Pending Tasks", "State and what is done", "Analysis",
                 "Let me chronologically analyze the conversation:"]:
        assert tell not in shown, tell
    # Nothing else of the text changes.
    assert "<strong>fix the failing tests</strong>" in both and "<code>src/app_0.py</code>" in both
    answer = client.get(f"/api/review/folds/{original.pk}/summaries").json()  # the API hides them alike
    assert all(s["hidden"] and "This session is being continued" not in s["summary"] for s in answer)
    assert all(s["summary"].startswith("## Goal\n") for s in answer)
    # Voted: the summaries are shown as recorded.
    client.post(f"/review/items/{item.pk}/", {"choice": "a"})
    after = _text(client.get(f"/review/items/{item.pk}/").content.decode())
    assert "This session is being continued" in after and "Please continue the conversation" in after


def test_the_owners_fold_page_keeps_probes_and_compare_links_after_a_blind_queue(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)
    annotator = make_user("ann", project=project, role=Role.ANNOTATOR)
    owner = _client(user)
    r = owner.post(f"/projects/{project.slug}/review/queues/new/", {"name": "blind", "mode": "single", "blind": "on"})
    assert r.status_code == 302 and ReviewQueue.objects.get(name="blind").blind
    page = owner.get(f"/review/folds/{original.pk}/").content.decode()
    assert 'id="salient"' in page and 'id="retention"' in page and 'id="blind-note"' not in page
    assert f"/review/folds/{original.pk}/pairwise/{alt.pk}/" in page and "compare with fold" in page
    assert 'class="compare-link"' in page
    assert alternatives.origin_label(alt) in owner.get(f"/c/{original.conversation_id}/").content.decode()
    # The queue's reviewers (here anyone who may score) are blind to it everywhere meanwhile.
    theirs = _client(annotator).get(f"/review/folds/{original.pk}/").content.decode()
    assert 'id="salient"' not in theirs and 'id="blind-note"' in theirs and "compare with fold" not in theirs


def test_the_owner_reads_a_blind_queue_assigned_to_others_unblinded(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)
    annotator = make_user("ann", project=project, role=Role.ANNOTATOR)
    queue = queues.create_queue(project, "blind for ann", {}, blind=True, user=user, reviewers=[annotator])
    item = queue.items.get(fold=alt)
    page = _client(user).get(f"/review/items/{item.pk}/").content.decode()
    assert 'id="salient"' in page and alternatives.origin_label(alt) in page
    assert 'id="salient"' not in _client(annotator).get(f"/review/items/{item.pk}/").content.decode()


def test_the_hidden_probes_notice_names_the_pending_item(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)
    queue = queues.create_queue(project, "Blind single", {}, blind=True, user=user)
    mine, other = queue.items.get(fold=alt), queue.items.get(fold=original)
    client = _client(user)
    before = client.get(f"/review/items/{mine.pk}/").content.decode()
    assert "Hidden until your score is in" in before
    assert client.post(f"/review/items/{mine.pk}/", {"fidelity": "4", "lost_detail": "no"}).status_code == 302
    after = client.get(f"/review/items/{mine.pk}/").content.decode()
    probes = _section(after, "facts-col")
    assert "Hidden until you score the other summary of this segment:" in probes
    assert f'href="/review/items/{other.pk}/">Blind single, item {other.order + 1}</a>' in probes
    assert "Hidden until your score is in" not in after
    client.post(f"/review/items/{other.pk}/", {"fidelity": "3", "lost_detail": "no"})
    assert 'id="salient"' in client.get(f"/review/items/{mine.pk}/").content.decode()


def _fixture_summaries() -> list[str]:
    root = shared_fixtures_dir()
    if root is None or not (root / "claude-code").is_dir():
        pytest.skip("shared fixtures not found")
    out = []
    for path in sorted((root / "claude-code").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"isCompactSummary":true' not in line.replace(" ", ""):
                continue
            content = json.loads(line)["message"]["content"]
            out.append(content if isinstance(content, str) else "".join(b.get("text", "") for b in content if isinstance(b, dict)))
    return out


def test_disguise_on_the_real_claude_code_summaries_drops_only_the_boilerplate():
    texts = _fixture_summaries()
    # grep -c '"isCompactSummary":true' over /work/shared/fixtures/claude-code/*.jsonl: 5 lines in 5 files
    # (marot__spotter__{4d56..,8463..,ae4a..}, oneryalcin__fasthooks__sample_main_transcript, jazzyalex__agent-sessions__small).
    assert len(texts) == 5
    assert sum(t.startswith("This session is being continued") for t in texts) == 4
    for text in texts:
        out = blind.disguise(text)
        assert "This session is being continued" not in out and "If you need specific details" not in out
        assert "Please continue the conversation from where we left off" not in out
        original_lines = {line.strip() for line in text.splitlines()}
        for line in out.splitlines():
            if line.startswith("## ") or not line.strip():
                continue
            assert line.strip() in original_lines, line  # every other line as it was written
