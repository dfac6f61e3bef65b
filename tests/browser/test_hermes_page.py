"""A Hermes Agent conversation in a real browser (issue 39): the generated state.db
(tests/hermes_store.py) imported as a user would; its page names the agent, shows the gauge, the
curve and the fold's archived segment headed by Hermes's summary, CSP-clean."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from contextviewer.conversations.models import Conversation
from contextviewer.ingest import files as ingest
from tests.browser.test_format_pages import _open
from tests.browser.test_viewer_flows import login
from tests.factories import make_project, make_user
from tests.hermes_store import A, write_store

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_hermes_agent_page(page, live_server, tmp_path):
    project = make_project("hermes", "Hermes sessions")
    user = make_user("hermia", project=project)
    ingest.import_path(project, write_store(tmp_path / ".hermes" / "state.db"))
    conv = Conversation.objects.get(external_id=A, parent__isnull=True)
    assert conv.agent == "hermes" and conv.fold_count == 1
    login(page.context, live_server, user)
    _open(page, live_server, conv, "Hermes Agent", "hermes-conversation.png")
    archived = page.locator("#segments details.segment.archived").first
    expect(archived).to_contain_text("CONTEXT COMPACTION")
