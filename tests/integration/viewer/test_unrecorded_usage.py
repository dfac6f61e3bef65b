"""Real logs that record no usage per call, or only part of it: the index and the page never show
a measured 0 for what the log does not record.

Checked by hand on the fixtures (temporary copies opened with Python's sqlite3, the aider file read
in an editor):

- Crush `jbpratt__quay__crush.db` (+ its WAL): the `messages` table has no token or cost column;
  `sessions` keeps per session a `cost` and token counts. Session `5ee78d3f-…` (17 messages) has
  cost 0.20369145; its child agent session `toolu_vrtx_01LW…` has its own, 0.3784269, which is
  larger, so the parent's does not include it.
- Go-era opencode `peder1981__futurista__opencode.db`: session `49df5790-…` has cost 0.0419224.
- aider `Aider-AI__aider__chat-history.md`, the session started 2024-08-15 10:07:30 (lines 69347
  to 69714): no time but its header's "aider chat started at"; three usage lines, "Tokens: 0 sent,
  551 received", "0 sent, 779 received" and "0 sent, 722 received" (aider 0.50.2-dev wrote 0 for
  what it sent): 2,052 output tokens recorded, no prompt recorded for any of the 3 calls, "$0.03
  session" by aider's own count. The one started 10:15:20 (lines 69718 to 69728) holds aider's
  start-up lines and no request.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from tests.integration.ingest.test_every_format import index_row

pytestmark = [pytest.mark.django_db, pytest.mark.fixtures]


@pytest.fixture
def owner(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _header(owner: Client, conv: Conversation) -> str:
    html = owner.get(reverse("conversation", args=[conv.pk])).content.decode()
    return re.search(r'<span class="header-counts".*?</span>\s*</span>', html, re.S).group(0)


@pytest.mark.parametrize(
    "rel, external_id, label, cost",
    [
        ("crush/jbpratt__quay__crush.db", "5ee78d3f-abf5-487a-82f0-02cf36a0e8ee", "Crush", "$0.20"),
        ("opencode-go/peder1981__futurista__opencode.db", "49df5790-ea83-4c1a-adbc-8cb53d2ff798", "opencode (Go)", "$0.04"),
    ],
)
def test_a_store_without_usage_per_call_shows_its_session_cost_and_no_measured_zero(
    project, owner, fixtures_dir, rel, external_id, label, cost
):
    report = ingest.import_path(project, fixtures_dir / rel)
    assert not report.refused, report.errors
    conv = Conversation.objects.get(project=project, external_id=external_id)
    assert conv.model_call_count > 0 and conv.measured_calls == 0 and conv.spend_tokens == 0
    row = index_row(owner.get(reverse("index")).content.decode(), conv)
    assert "est.</span>" in row and "~" in row  # the peak, as an estimate
    assert "$0.0000" not in row and not re.search(r'spend-tokens">\s*0\s*<', row)
    header = _header(owner, conv)
    assert "spend not recorded" in header
    assert f"{cost} as {label} recorded it for the session" in header, header


def test_aider_lines_that_record_no_prompt_make_a_partial_spend(project, owner, fixtures_dir, tmp_path):
    lines = (fixtures_dir / "aider" / "Aider-AI__aider__chat-history.md").read_text().splitlines(keepends=True)
    path = tmp_path / ".aider.chat.history.md"
    path.write_text("".join(lines[69346:69728]))  # the sessions of 2024-08-15 10:07:30 to 10:15:20, whole
    report = ingest.import_path(project, path)
    assert not report.refused, report.errors
    convs = {c.started_at.strftime("%H:%M:%S"): c for c in Conversation.objects.filter(project=project)}
    conv = convs["10:07:30"]
    assert (conv.model_call_count, conv.measured_calls, conv.spend_tokens) == (3, 0, 551 + 779 + 722)
    assert conv.peak_estimated and conv.usage_coverage == "partial"
    # Only the session's header line carries a time: how long it ran is not known (it was "0s").
    assert conv.started_at.isoformat() == "2024-08-15T10:07:30+00:00" and conv.ended_at is None
    row = index_row(owner.get(reverse("index")).content.decode(), conv)
    assert re.search(r'<td class="num nowrap duration"><span class="muted" title="the log gives fewer than two times', row)
    assert "2.1k" in row and "0 of 3 calls record their prompt tokens" in row
    assert "$0.03" in row  # 2,052 output tokens at claude-3-5-sonnet's $15 per million: aider's own figure
    header = _header(owner, conv)
    assert "spend 2.1k tokens" in header and "(partial: 0 of 3 calls record their prompt)" in header, header

    # 10:15:20: aider's start-up lines and no request, so no model call: no peak, spend or
    # duration, and the gauge is the window the next call would read.
    idle = convs["10:15:20"]
    assert idle.model_call_count == 0 and idle.message_count > 0
    row = index_row(owner.get(reverse("index")).content.decode(), idle)
    assert 'title="the log holds no model call">–' in row and "%" not in row
    page = owner.get(reverse("conversation", args=[idle.pk])).content.decode()
    assert "Window now" in page and "Window at the latest model call" not in page
    assert "spend not recorded" in _header(owner, idle)

