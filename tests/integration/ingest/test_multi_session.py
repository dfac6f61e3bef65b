"""A file that holds several sessions (an aider history) is read again as sessions found by their
ids: a re-import after the file lost its first session puts nothing into the wrong conversation."""

import pytest

from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation


def _session(stamp: str, prompt: str, reply: str) -> str:
    return f"\n# aider chat started at {stamp}\n\n#### {prompt}  \n\n{reply}\n\n> Tokens: 1.2k sent, 40 received.\n"


@pytest.mark.django_db
def test_a_history_that_lost_its_first_session_keeps_each_session_in_its_own_conversation(tmp_path, project):
    path = tmp_path / ".aider.chat.history.md"
    first = _session("2026-03-01 10:00:00", "rename foo to bar", "Renamed foo to bar in src/app.py.")
    second = _session("2026-03-02 11:00:00", "add a test for bar", "Added tests/test_bar.py.")
    third = _session("2026-03-03 12:00:00", "update the changelog", "Updated CHANGELOG.md.")
    path.write_text(first + second)
    ingest.import_path(project, path)
    assert Conversation.objects.filter(agent="aider").count() == 2

    path.write_text(second + third)  # aider's history trimmed at the start, a new session appended
    ingest.import_path(project, path)
    by_prompt = {}
    for conv in Conversation.objects.filter(agent="aider"):
        texts = [b.get("text", "") for m in conv.messages.filter(role="user") for b in m.blocks]
        by_prompt[conv.external_id] = texts
    assert len(by_prompt) == 3
    for texts in by_prompt.values():
        assert len(texts) == 1, by_prompt  # one prompt per conversation: nothing appended to another's
    assert sorted(t[0] for t in by_prompt.values()) == ["add a test for bar", "rename foo to bar", "update the changelog"]
