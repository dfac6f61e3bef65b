"""What followed a fold (issue 17): a lost fact the conversation needed again, the paths it read
again, the tool calls before the first edit and the anticipated actions, stored on the probe and
given by `manage.py probes --json`, the review API and the fold page (which leads with them); a
handoff made here is probed with the previous summary it read, so what it carried over counts.

The conversation is built row by row (as tests/factories.py does) so each position is known:

    0  user       "Fix the date parsing in src/parser.py ..."           turn 0
    1  assistant  Read /home/dev/project/src/lost_helper.py              turn 0
    2  user       its result (names docs/iso_weeks.md: a background path)
    3  assistant  "The helper normalizes the dates."
    4  system     compact_boundary                   <- the fold (position 4)
    5  user       the summary (isCompactSummary): names src/parser.py, not lost_helper.py   turn 1
    6  assistant  Read /home/dev/project/src/lost_helper.py again        turn 1
    7  user       its result
    8  assistant  Edit /home/dev/project/src/parser.py
    9  user       its result
"""

from __future__ import annotations

import json
import re
import uuid as uuidlib
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from contextviewer.conversations.models import Conversation, Fold, Message
from contextviewer.review import probes

pytestmark = pytest.mark.django_db

CWD = "/home/dev/project"
LOST = "src/lost_helper.py"
SUMMARY = "Goal: fix the date parsing in src/parser.py. State: the parser is being edited. Next: run the tests."
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class Rows:
    """Messages of one conversation, added in order (position = order)."""

    def __init__(self, project, external_id: str = "continuation-1"):
        self.conv = Conversation.objects.create(
            project=project, agent="claude-code", external_id=external_id, title="Date parsing", cwd=CWD,
            model_names=["claude-sonnet-4-5-20250929"], started_at=T0,
        )
        self.messages: list[Message] = []
        self.calls = 0

    def add(self, role: str, turn: int, blocks: list[dict], **kw) -> Message:
        position = len(self.messages)
        m = Message.objects.create(
            conversation=self.conv, position=position, turn=turn, uuid=str(uuidlib.uuid4()), role=role,
            record_type=kw.pop("record_type", role), blocks=blocks, raw="{}", timestamp=T0 + timedelta(seconds=position),
            tokens={"text": 50}, token_total=50, **kw,
        )
        self.messages.append(m)
        return m

    def text(self, role: str, turn: int, text: str, **kw) -> Message:
        return self.add(role, turn, [{"kind": "text", "text": text}], **kw)

    def tool(self, turn: int, name: str, tool_input: dict, result: str) -> Message:
        self.calls += 1
        tool_id = f"toolu_{self.calls:04d}"
        call = self.add("assistant", turn, [
            {"kind": "tool_call", "tool_id": tool_id, "tool_name": name, "tool_input": tool_input, "text": json.dumps(tool_input)},
        ])
        self.add("user", turn, [{"kind": "tool_result", "tool_id": tool_id, "text": result}])
        return call

    def boundary(self, turn: int) -> Message:
        return self.add("system", turn, [{"kind": "other", "text": "Conversation compacted", "raw_type": "compact_boundary"}],
                        record_type="system", subtype="compact_boundary")

    def done(self) -> Conversation:
        self.conv.message_count = len(self.messages)
        self.conv.fold_count = self.conv.folds.counted().count()
        self.conv.save()
        return self.conv


def _lost_and_read_again(project) -> tuple[Conversation, Fold, dict[str, Message]]:
    rows = Rows(project)
    rows.text("user", 0, "Fix the date parsing in src/parser.py: the tests fail on ISO weeks.")
    first_read = rows.tool(0, "Read", {"file_path": f"{CWD}/{LOST}"}, "# see docs/iso_weeks.md\ndef normalize(d):\n    return d.isoformat()\n")
    rows.text("assistant", 0, "The helper normalizes the dates.")
    boundary = rows.boundary(0)
    summary = rows.text("user", 1, SUMMARY, is_compact_summary=True)
    read_again = rows.tool(1, "Read", {"file_path": f"{CWD}/{LOST}"}, "def normalize(d):\n    return d.isoformat()\n")
    rows.tool(1, "Edit", {"file_path": f"{CWD}/src/parser.py", "old_string": "a", "new_string": "b"}, "The file has been updated.")
    fold = Fold.objects.create(
        conversation=rows.conv, key="boundary-1", position=boundary.position, boundary=boundary, summary_message=summary,
        summary_text=SUMMARY, trigger="auto",
    )
    return rows.done(), fold, {"first_read": first_read, "read_again": read_again, "summary": summary}


def test_a_lost_path_read_again_after_the_fold_is_needed_again_in_the_command_and_the_api(project, user, client):
    conv, fold, at = _lost_and_read_again(project)
    probe = probes.probe_for(fold)
    lost = next(f for f in probe.facts if f["kind"] == "path" and f["key"] == LOST)
    assert not lost["kept"] and lost["used_after"] is True and lost["position"] == at["first_read"].position
    assert probe.continuation["after_messages"] == 4  # positions 6..9: the summary message is not "after"
    assert probe.continuation["reread_after"] == [LOST]
    kept = next(f for f in probe.facts if f["kind"] == "path" and f["key"] == "src/parser.py")
    assert kept["kept"] and "used_after" not in kept  # only a lost fact is marked

    out = StringIO()
    call_command("probes", str(conv.pk), "--json", stdout=out)
    (row,) = json.loads(out.getvalue())["folds"]
    (lost_row,) = [f for f in row["lost"] if f["text"].endswith(LOST)]
    assert lost_row == {"kind": "path", "text": f"{CWD}/{LOST}", "turn": 0, "position": at["first_read"].position,
                        "tier": "B", "used_after": True}
    assert row["reread_after"] == [LOST]
    assert set(row["anticipated"]) == {"hits", "of"} and row["anticipated"]["of"] >= row["anticipated"]["hits"] >= 0
    assert row["calls_before_first_edit"] == 1  # the Read, then the Edit
    (background,) = row["background"]
    assert background == {"kind": "path", "text": "docs/iso_weeks.md", "turn": 0, "position": at["first_read"].position + 1,
                          "tier": "C", "used_after": False, "kept": False}
    text = StringIO()
    call_command("probes", str(conv.pk), stdout=text)
    assert "1 tool calls before the first edit" in text.getvalue() and f"re-read {LOST}" in text.getvalue()
    assert f"{CWD}/{LOST}  (needed again)" in text.getvalue()

    client.force_login(user)
    api = client.get(f"/api/review/folds/{fold.pk}/probe").json()
    assert api["lost"] == row["lost"] and api["background"] == row["background"]
    assert api["reread_after"] == [LOST] and api["anticipated"] == row["anticipated"]
    assert api["calls_before_first_edit"] == 1
    (report,) = client.get(f"/api/review/conversations/{conv.pk}/probes").json()
    assert {k: report[k] for k in ("lost", "background", "reread_after", "anticipated", "calls_before_first_edit")} == {
        k: row[k] for k in ("lost", "background", "reread_after", "anticipated", "calls_before_first_edit")
    }


def test_a_fold_nothing_follows_stores_no_continuation(project):
    rows = Rows(project, "continuation-end")
    rows.text("user", 0, "Fix the date parsing in src/parser.py.")
    rows.tool(0, "Read", {"file_path": f"{CWD}/{LOST}"}, "def normalize(d): ...")
    last = rows.text("assistant", 0, "Read it.")
    rows.done()
    fold = Fold.objects.create(conversation=rows.conv, key="handoff:end", position=last.position, kind="handoff",
                               origin="generated", summary_text=SUMMARY)
    probe = probes.probe_for(fold)
    assert probe.continuation == {}
    assert all("used_after" not in f or f["used_after"] is False for f in probe.facts)
    (row,) = probes.probe_report(rows.conv)
    assert row["reread_after"] == [] and row["anticipated"] is None and row["calls_before_first_edit"] is None


def _two_handoffs(project, second_summary: str) -> tuple[Fold, Fold]:
    """Two handoffs made here: the first's summary (no message of its own) names two files the
    second segment never mentions."""
    rows = Rows(project, f"handoffs-{uuidlib.uuid4()}")
    rows.text("user", 0, "Fix the date parsing in src/parser.py.")
    rows.tool(0, "Read", {"file_path": f"{CWD}/src/parser.py"}, "def parse(s): ...")
    end1 = rows.text("assistant", 0, "Read it.")
    first = Fold.objects.create(
        conversation=rows.conv, key="handoff:1", position=end1.position, kind="handoff", origin="generated",
        summary_text="Goal: fix the date parsing. Files: src/carried_kept.py and src/carried_lost.py. Next: edit.",
    )
    rows.text("user", 1, "Go on with the ISO weeks.")
    rows.tool(1, "Bash", {"command": "pytest tests/test_weeks.py -q"}, "1 failed")
    end2 = rows.text("assistant", 1, "One test still fails.")
    second = Fold.objects.create(
        conversation=rows.conv, key="handoff:2", position=end2.position, kind="handoff", origin="generated",
        summary_text=second_summary,
    )
    rows.done()
    return first, second


def test_a_handoff_is_probed_with_the_previous_summary_it_read(project):
    first, second = _two_handoffs(project, "Goal: ISO weeks. Files: src/carried_kept.py. State: pytest tests/test_weeks.py -q fails.")
    probe = probes.probe_for(second)
    carried = {f["key"]: f for f in [*probe.facts, *probe.background] if f["key"].startswith("src/carried_")}
    assert set(carried) == {"src/carried_kept.py", "src/carried_lost.py"}  # carried over from the first summary
    assert carried["src/carried_kept.py"]["kept"] and not carried["src/carried_lost.py"]["kept"]
    segment_start = probes.segment_start(second)
    assert all(f["position"] == segment_start for f in carried.values())  # at the head of the segment
    assert probe.folded_tokens > 150  # the three messages (50 each) and the previous summary
    # The first handoff has no fold before it: nothing is prepended.
    assert not any(f["key"].startswith("src/carried_") for f in probes.probe_for(first).background)


def test_an_imported_fold_reads_its_previous_summary_message_once(project):
    conv, fold, _ = _lost_and_read_again(project)
    last = conv.messages.order_by("-position").first()
    handoff = Fold.objects.create(conversation=conv, key="handoff:x", position=last.position, kind="handoff",
                                  origin="generated", summary_text="Goal: parser. Next: run the tests.")
    messages, _ = probes.probed_messages(handoff)
    assert [m["position"] for m in messages] == list(range(5, 10))  # the summary message is one of them, once
    assert probes.previous_summary(handoff) is None


def _positions(html: str, *needles: str) -> list[int]:
    found = [html.find(n) for n in needles]
    assert all(i >= 0 for i in found), [n for n, i in zip(needles, found, strict=True) if i < 0]
    return found


def test_the_fold_page_leads_with_what_was_needed_again_and_links_each_fact_to_its_message(project, user, client):
    conv, fold, at = _lost_and_read_again(project)
    client.force_login(user)
    html = client.get(f"/review/folds/{fold.pk}/").content.decode()
    order = _positions(
        html, 'id="needed-again"', 'id="reread-after"', 'id="calls-before-edit"', 'id="anticipated"', 'id="salient"',
        'id="background"',
    )
    assert order == sorted(order)
    needed = html[order[0]:order[1]]
    link = f'/c/{conv.pk}/?turn=0#m-{at["first_read"].pk}'
    assert f"{CWD}/{LOST}" in needed and link in needed  # the fact, linked to the message it came from
    reread = html[order[1]:order[2]]
    assert LOST in reread and link in reread
    assert "1</strong> tool call before the first edit" in html
    assert re.search(r"anticipated: <strong>\d+</strong> of \d+ first actions touch what the summary names", html)
    background = re.search(r'<details class="background" id="background"[^>]*>', html).group(0)
    assert " open" not in background  # closed
    assert re.search(r"<summary>\d+ background facts? \(paths only seen in tool output", html)
    # Every fact of the salient list links to its message on the conversation page.
    salient = html[order[4]:order[5]]
    hrefs = re.findall(r'href="(/c/\d+/\?turn=\d+#m-\d+)"', salient)
    assert link in hrefs and len(hrefs) == salient.count('<li class="fact ')

    # The link opens the conversation at that turn, where the message row carries that id.
    page = client.get(f"/c/{conv.pk}/?turn=0")
    assert page.status_code == 200 and 'id="turn-0"' in page.content.decode()
    turn = client.get(f"/c/{conv.pk}/turns/0/").content.decode()
    assert f'id="m-{at["first_read"].pk}" data-position="{at["first_read"].position}"' in turn


def test_the_fold_page_escapes_fact_text(project, user, client):
    rows = Rows(project, "escape")
    rows.text("user", 0, "Never touch <script>alert(1)</script>/evil.py please, keep src/a.py.")
    end = rows.text("assistant", 0, "OK.")
    rows.text("user", 1, "Now <script>alert(1)</script>/evil.py again.")
    rows.done()
    fold = Fold.objects.create(conversation=rows.conv, key="handoff:e", position=end.position, kind="handoff",
                               origin="generated", summary_text="Goal: keep src/a.py.")
    client.force_login(user)
    html = client.get(f"/review/folds/{fold.pk}/").content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
