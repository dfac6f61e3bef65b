"""Blind review tells nothing of a summary's origin (issue 36, item 2): the review index gives a blind
segment one row with no figure that differs by summary (size, compression), the API keeps size and
compression back too, both summaries read in one neutral layout (one vocabulary of section names,
in one order), and a blind queue does not always put the recorded summary first.

An encrypted summary (Codex's remote compaction) has no size we know (item 5): the pages say so and
the dashboard leaves it out of its medians."""

from __future__ import annotations

import json
import random
import re
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.test import Client

from contextviewer.accounts.models import Role
from contextviewer.conversations import segments
from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from contextviewer.review import blind, dashboard, probes, queues
from tests.factories import make_user
from tests.integration.review.test_review_pages_render import _fixture_summaries, _two_summaries
from tests.integration.review.test_summarize_again import _import

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _latest_folds(page: str) -> list[str]:
    table = page.split('<table class="folds">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr[ >].*?</tr>", table.split("<tbody>", 1)[1], re.S)
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", r)).strip() for r in rows]


def test_the_review_index_gives_a_blind_segment_one_row_without_its_sizes(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)
    annotator = make_user("ann", project=project, role=Role.ANNOTATOR)
    queue = queues.create_queue(project, "blind pairs", {}, mode="pairwise", blind=True, user=user, reviewers=[annotator])
    sizes = [f"{probes.probe_for(f).summary_tokens:,}" for f in (original, alt)]
    ratios = [f"{probes.probe_for(f).compression_ratio:.1f}×" for f in (original, alt)]
    assert sizes[0] != sizes[1]  # the summary written again would be told by its size
    client = _client(annotator)
    rows = _latest_folds(client.get(f"/projects/{project.slug}/review/").content.decode())
    assert len(rows) == 1, rows  # two rows, newest first, would tell the one written again
    assert "after your score" in rows[0] and "blind" in rows[0]
    for figure in [*sizes, *ratios]:
        assert figure not in rows[0], figure
    page = client.get(f"/projects/{project.slug}/review/").content.decode()
    assert f'href="/review/items/{queue.items.get().pk}/"' in page  # the row leads to the item to score

    client.post(f"/review/items/{queue.items.get().pk}/", {"choice": "a"})
    rows = _latest_folds(client.get(f"/projects/{project.slug}/review/").content.decode())
    assert len(rows) == 2 and all(any(s in r for s in sizes) for r in rows), rows


def test_the_api_keeps_a_blind_summarys_size_and_compression_back(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)
    annotator = make_user("ann", project=project, role=Role.ANNOTATOR)
    queues.create_queue(project, "blind pairs", {}, mode="pairwise", blind=True, user=user, reviewers=[annotator])
    answer = _client(annotator).get(f"/api/review/folds/{alt.pk}/probe").json()
    assert answer["hidden"] and answer["summary_tokens"] is None and answer["compression_ratio"] is None
    rows = _client(annotator).get(f"/api/review/conversations/{original.conversation_id}/probes").json()
    assert all(r["hidden"] and r["summary_tokens"] is None and r["compression_ratio"] is None for r in rows), rows
    answer = _client(user).get(f"/api/review/folds/{alt.pk}/probe").json()  # the owner picked the folds: not blind
    assert answer["summary_tokens"] == probes.probe_for(alt).summary_tokens > 0


def test_a_blind_pair_reads_in_one_layout_whatever_wrote_it(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)  # Claude Code's nine labelled sections, and the builtin's four
    annotator = make_user("ann", project=project, role=Role.ANNOTATOR)
    queue = queues.create_queue(project, "blind pairs", {}, mode="pairwise", blind=True, user=user, reviewers=[annotator])
    page = _client(annotator).get(f"/review/items/{queue.items.get().pk}/").content.decode()
    headings = {}
    for key in ("a", "b"):
        column = page.split(f'<section class="card summary-{key}">', 1)[1].split("</section>", 1)[0]
        assert re.search(r"<h2>\s*[AB]\s*</h2>", column), column[:200]  # no fold id: the later one is the one written again
        headings[key] = re.findall(r"<h4>(.*?)</h4>", column)
    for names in headings.values():
        assert names[:1] == ["Goal"] and "Next steps" in names, names
        assert set(names) <= set(blind.NEUTRAL), names
        assert names == sorted(names, key=blind.NEUTRAL.index)  # one order
    for tell in ["Primary Request and Intent", "State and what is done", "Pending Tasks", "This session is being continued"]:
        assert tell not in page, tell
    assert f"fold {original.pk}" not in page and f"fold {alt.pk}" not in page


def test_the_real_claude_code_summaries_and_the_builtin_share_one_vocabulary():
    builtin = "## Goal\nfix it\n\n## State and what is done\nedited a.py\n\n## Next steps\nrun the tests\n\n## Constraints and preferences\nno API change\n"
    gemini = "<state_snapshot>\n    <overall_goal>\n        Fix the parser.\n    </overall_goal>\n    <current_plan>\n        1. [DONE] read it\n    </current_plan>\n</state_snapshot>"
    for text in [*_fixture_summaries(), builtin, gemini]:
        out = blind.disguise(text)
        names = [line[3:] for line in out.splitlines() if line.startswith("## ")]
        assert set(names) <= set(blind.NEUTRAL), names
        assert names == sorted(names, key=blind.NEUTRAL.index)
        assert "Let me chronologically analyze" not in out and "<overall_goal>" not in out
        assert not re.search(r"^## .*\n {4}", out, re.M)  # no section reads as code for its indentation
    assert blind.disguise(builtin).startswith("## Goal\nfix it\n\n## Constraints\nno API change\n\n## State\nedited a.py")
    assert blind.disguise(gemini) == "## Goal\nFix the parser.\n\n## Next steps\n1. [DONE] read it\n"


def test_a_blind_queue_does_not_always_put_the_recorded_summary_first(project, user, tmp_path):
    original, alt = _two_summaries(project, tmp_path)
    firsts = {queues._shuffled_segments([original, alt], random.Random(seed))[0].pk for seed in range(20)}
    assert firsts == {original.pk, alt.pk}
    # A segment's summaries stay together, the segments in their order.
    folds = [SimpleNamespace(pk=pk, conversation_id=conv, position=at) for pk, conv, at in
             [(1, 1, 10), (2, 1, 10), (3, 1, 10), (4, 1, 30), (5, 2, 10), (6, 2, 10)]]
    for seed in range(20):
        out = [f.pk for f in queues._shuffled_segments(folds, random.Random(seed))]
        assert sorted(out[:3]) == [1, 2, 3] and out[3] == 4 and sorted(out[4:]) == [5, 6], out


# --- an encrypted summary -------------------------------------------------------------------------


def _remote_compaction(project, fixtures_dir, tmp_path) -> Conversation:
    """A real Codex rollout with a remote compaction. The fixture's redaction wrote a placeholder in
    the compacted line's `message` ("[REDACTED_MESSAGE len=0 ...]": it was empty, as Codex writes it
    for a remote compaction): put back as it was, the summary is the encrypted item."""
    source = next((fixtures_dir / "codex").glob("madshn__localpush__rollout-2026-02-23T12-54-34-*.jsonl"))
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") == "compacted" and str(record["payload"].get("message", "")).startswith("[REDACTED_MESSAGE len=0 "):
            record["payload"]["message"] = ""
        lines.append(json.dumps(record))
    path = tmp_path / source.name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = ingest.import_path(project, path)
    return Conversation.objects.get(pk=report.conversation_ids[0])


def test_an_encrypted_summary_has_no_size_and_stays_out_of_the_medians(project, user, fixtures_dir, tmp_path):
    codex = _remote_compaction(project, fixtures_dir, tmp_path)
    (fold,) = segments.segment_folds(codex)
    probe = probes.probe_for(fold)
    assert probe.summary_encrypted and probe.summary_tokens == 0 and probe.compression_ratio is None
    claude = segments.segment_folds(_import(project, tmp_path))[0]
    claude_size = probes.probe_for(claude).summary_tokens

    data = dashboard.dashboard([project], "agent")
    rows = {r["name"]: r for r in data["rows"]}
    assert rows["codex"]["encrypted"] == 1 and rows["codex"]["summary_p50"] is None and rows["codex"]["compression_p50"] is None
    # The medians are the readable summary's alone (the encrypted one would pull them down).
    assert data["total"]["summary_p50"] == claude_size and data["total"]["encrypted"] == 1
    assert data["total"]["compression_p50"] == probes.probe_for(claude).compression_ratio

    client = _client(user)
    page = client.get(f"/projects/{project.slug}/review/dashboard/").content.decode()
    codex_row = next(r for r in re.findall(r"<tr>.*?</tr>", page, re.S) if "<td>codex</td>" in r)
    assert "1 encrypted: size unknown" in codex_row
    assert "encrypted: size unknown" in client.get(f"/projects/{project.slug}/review/").content.decode()
    fold_page = client.get(f"/review/folds/{fold.pk}/").content.decode()
    assert "the log keeps this summary encrypted: its size and the compression are not known" in fold_page
    answer = client.get(f"/api/review/folds/{fold.pk}/probe").json()
    assert answer["summary_encrypted"] is True and answer["summary_tokens"] is None
    csv = client.get(f"/projects/{project.slug}/review/dashboard/?format=csv").content.decode().splitlines()
    assert csv[0].endswith(",summaries_encrypted") and csv[-1].endswith(",1")
    out = StringIO()
    call_command("probes", str(codex.pk), stdout=out)
    assert "summary encrypted (size unknown)" in out.getvalue()
