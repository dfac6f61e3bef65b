"""Issue 36, item 6: the index of conversations in a 1280 px window (1265 px beside its scrollbar;
headless Chromium draws none). Measured on real sessions, the table needed 1241 px and cut the Cost
column by what the scrollbar takes. The table stays inside its frame: every column, Cost the last,
is seen whole, with no page scroll sideways, and titles keep a readable width. A search lists its
hits as text (no `\\n` escapes) and a sub-agent's hit under its parent's title and its own task.
Screenshots: index-1280.png, index-1280-search.png."""

from __future__ import annotations

import json

import pytest

from contextviewer.conversations import search
from contextviewer.conversations.models import ConversationKind, Message
from tests.browser.screenshots import SCREENSHOTS
from tests.browser.test_viewer_flows import Watch, login
from tests.factories import build_conversation, make_project, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_TITLE = ("Refactor the transcript renderer so that tool results with ANSI colours, images and very long "
              "lines keep their layout when the conversation is exported to HTML and Markdown")  # fmt: skip
MODELS = ["claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-3-5-haiku-20241022"]


@pytest.fixture
def seeded(live_server):
    project = make_project("payments-service-monorepo-with-a-long-name", "Payments service monorepo (backend, workers and the admin UI)")
    user = make_user("ines", project=project)
    for i in range(6):
        built = build_conversation(project, turns=3, title=f"{LONG_TITLE} #{i}", model=MODELS[i % 3], subagent_turn=2,
                                   long_block_turn=None, image_turn=None)  # fmt: skip
        conv = built.conversation
        conv.cwd = "/home/developer/src/github.com/example-org/payments-service-monorepo/services/ledger-reconciliation"
        conv.model_names = MODELS
        conv.spend_tokens = 123_456_789
        conv.save()
    codex = build_conversation(project, turns=2, title="List the files", subagent_turn=None, long_block_turn=None, image_turn=None).conversation
    codex.agent, codex.model_names = "codex", ["gpt-5.6-luna", "gpt-5.5", "gpt-5.6-sol", "codex-auto-review", "gpt-5.4", "gpt-5.2"]
    codex.measured_calls = 0  # its peak an estimate: "~56 % 113k est."
    codex.save()
    compaction = build_conversation(project, turns=1, title="Summarise the conversation so far", subagent_turn=None,
                                    long_block_turn=None, image_turn=None, external_id=f"{codex.external_id}/acompact-1").conversation  # fmt: skip
    compaction.parent, compaction.kind, compaction.agent = codex, ConversationKind.COMPACTION, "codex"
    compaction.save()
    child = built.child
    child.title = ""  # a sub-agent its log gives no title
    child.save()
    last = child.messages.order_by("-position").first()
    script = "cd services/ledger\npytest -q tests/test_reconcile.py -k pangolin\necho done"
    blocks = [{"kind": "tool_call", "tool_id": "tp", "tool_name": "Bash", "tool_input": {"command": script},
               "text": json.dumps({"command": script})}]  # fmt: skip
    m = Message.objects.create(conversation=child, position=last.position + 1, turn=last.turn, role="assistant",
                               record_type="assistant", uuid="pangolin-call", blocks=blocks)  # fmt: skip
    search.index_messages(child.id, [(m.id, search.text_of_blocks(blocks))])
    return {"user": user, "child": child, "parent": child.parent}


def _overflow(page) -> dict:
    return page.evaluate(
        """() => {
          const table = document.querySelector('table.conversations');
          const frame = table.parentElement.getBoundingClientRect();
          const cost = [...table.querySelectorAll('thead th')].pop().getBoundingClientRect();
          const cell = table.querySelector('tbody tr td:last-child').getBoundingClientRect();
          return {table: table.scrollWidth, box: table.getBoundingClientRect().width, frame: frame.right,
                  cost: cost.right, cell: cell.right, page: document.documentElement.scrollWidth,
                  view: document.documentElement.clientWidth};
        }"""
    )


def test_the_index_fits_1280_px_with_its_cost_column_whole(page, live_server, seeded):
    watch = Watch(page)
    page.set_viewport_size({"width": 1265, "height": 900})  # a 1280 px window beside its scrollbar
    login(page.context, live_server, seeded["user"])
    page.goto(f"{live_server.url}/")
    page.wait_for_selector("table.conversations tbody tr")
    sizes = _overflow(page)
    assert sizes["page"] <= sizes["view"], sizes  # no sideways scroll of the page
    assert sizes["table"] <= sizes["box"] + 1, sizes  # nothing of the table cut by its rounded frame
    assert sizes["cost"] <= sizes["frame"] + 1 and sizes["cell"] <= sizes["frame"] + 1, sizes
    title = page.locator("table.conversations thead th").nth(1)
    assert title.bounding_box()["width"] >= 190  # titles stay readable, not a ribbon of one word a line
    cost = page.locator("table.conversations thead th").last
    assert cost.inner_text().strip().upper() == "COST (USD)" and cost.is_visible()
    page.screenshot(path=str(SCREENSHOTS / "index-1280.png"))

    # A search: the sub-agent's hit under its parent's title and its own task; its snippet as text
    page.fill("#q", "pangolin")
    page.wait_for_selector("#hits li.hit")
    hit = page.locator("#hits li.hit").first
    title = hit.locator(".hit-title").inner_text()
    assert title.startswith(LONG_TITLE[:40]) and title.endswith("› Explore")
    assert seeded["child"].external_id not in title
    snippet = hit.locator(".snippet").inner_text()
    assert "cd services/ledger pytest -q tests/test_reconcile.py -k pangolin echo done" in snippet
    assert "\\n" not in snippet and '{"' not in snippet
    sizes = _overflow(page)
    assert sizes["page"] <= sizes["view"] and sizes["table"] <= sizes["box"] + 1, sizes
    page.screenshot(path=str(SCREENSHOTS / "index-1280-search.png"))
    watch.assert_clean()
