"""Issue 36, item 5: the policy table's "Median peak" was the same (15k) for every policy and for
the recorded row. It was taken over the conversations where ANY policy acted: on a real project most
of those are small ones where only picoclaw or OpenHands (small thresholds) act, and there every
other policy's peak is the recorded one, so each median was the recorded median. Now each policy's
median is over the conversations where IT acted, beside the recorded median over the same ones.

Checked by hand on seven real Claude Code sessions (four reach a policy's threshold, three stay
small). Each figure was read two ways: in the stored rows (lab/models.PolicyReplay, the table's
list) and by `python manage.py policies <id> --json` (the lab's own replay); both agree, and each
recorded peak is the conversation's measured peak (Conversation.peak_context). Peaks per
conversation (* = the policy acted there):

    session    recorded   claude_code  efferent_engine  openhands  cwm
    4d5611e5   164,831*   164,831*     85,111*          112,851*   150,050*
    8463c716   167,094*   167,094*     93,277*          126,670*   149,974*
    ae4a77f8   141,787*   141,787*     86,305*           77,931*   149,997*
    e9f146fa    75,387*    53,928*     75,387            62,505*    75,387
    the three small ones (5c0375b4, d6e0bada, 55604662): every peak the recorded one, no action

So claude_code acted in 4d5611e5, 8463c716, ae4a77f8, e9f146fa: median of 53,928 / 141,787 / 164,831
/ 167,094 is (141,787 + 164,831) / 2 = 153,309, recorded 75,387 / 141,787 / 164,831 / 167,094 gives
153,309. efferent_engine acted in 4d5611e5,
8463c716, ae4a77f8: median of 85,111 / 93,277 / 86,305 is 86,305, recorded 164,831. openhands acted
in all four: (77,931 + 112,851) / 2 = 95,391, recorded (141,787 + 164,831) / 2 = 153,309. cwm in
4d5611e5, 8463c716 and ae4a77f8: median of 149,974 / 149,997 / 150,050 is 149,997, recorded
141,787 / 164,831 / 167,094 gives 164,831.

ae4a77f8 (issue 34, item 3): its user ran /compact at call 138 and it then ran claude-opus-4-6,
whose API window is 1M; Claude Code ran it in 200k (the session never passed 200k), so the lab
replays those calls in 200k: claude_code replays the user's /compact where the log has it and is
measured again after it (peak 141,787, the recorded one), and cwm acts at 75 % of 200k. Before,
those calls were replayed in 1M: claude_code went on to 212,174 without folding (the silent
overflow of the issue), cwm too. Under the old rule (the four where any policy acted) claude_code's median was
(164,831 + 167,094) / 2 = 165,962.5 of 212,174 / 167,094 / 164,831 / 53,928 and the recorded 153,309,
whatever the policy did."""

from __future__ import annotations

import pytest

from contextviewer.ingest import files as ingest
from contextviewer.jobs import queue as jobs
from contextviewer.lab import table as policy_table
from tests.factories import make_project, make_user

pytestmark = pytest.mark.django_db

SESSIONS = [
    "marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
    "marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
    "marot__spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "Mai0313__VibeCodingTracker__test_conversation_claude_code.jsonl",  # e9f146fa
    "marot__spotter__short.jsonl",
    "marot__spotter__tool_heavy.jsonl",
    "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
]


def test_each_policy_median_peak_is_over_the_real_sessions_it_acted_in(client, fixtures_dir):
    project = make_project()
    for name in SESSIONS:
        ingest.import_path(project, fixtures_dir / "claude-code" / name)
    job, _ = policy_table.start(project)
    assert jobs.run(job.pk).status == "succeeded"
    t = policy_table.table(project)
    assert t.up_to_date == 7 and t.uncalibrated == 0
    rows = {r.name: r for r in t.rows}
    figures = {n: (rows[n].median_over, rows[n].median_peak, rows[n].recorded_median_peak) for n in rows}
    assert figures["claude_code"] == (4, 153_309, 153_309)
    assert figures["efferent_engine"] == (3, 86_305, 164_831)
    assert figures["openhands"] == (4, 95_391, 153_309)
    assert figures["cwm"] == (3, 149_997, 164_831)
    assert len({r.median_peak for r in t.rows}) > 3  # not one figure for every policy

    client.force_login(make_user(project=project))
    html = client.get("/policies/", {"project": project.slug}).content.decode()
    engine = html.split('id="policy-efferent_engine"', 1)[1].split("</tr>", 1)[0]
    assert "86k" in engine and "(165k recorded)" in engine and "over the 3 conversations it acted in" in engine
    recorded = html.split('id="policy-recorded"', 1)[1].split("</tr>", 1)[0]
    assert "row, over the same conversations" in recorded and "153k" not in recorded
