"""An agent's own session format is offered only for that agent's conversations: a conversation
another agent wrote is not passed off as a Claude Code session. The other exports work for all."""

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation
from tests.sessions import session_lines, write_lines


@pytest.fixture
def two_conversations(tmp_path, project):
    write_lines(tmp_path / "a.jsonl", session_lines(2))
    ingest.import_path(project, tmp_path / "a.jsonl")
    native = Conversation.objects.get()
    other = Conversation.objects.get(pk=native.pk)
    other.pk = None
    other.external_id = "from-another-agent"
    other.agent = "another-agent"  # what any non-Claude Code format stores
    other.save()
    return native, other


@pytest.mark.django_db
def test_the_claude_code_export_is_offered_only_for_claude_code_conversations(two_conversations, user, client):
    native, other = two_conversations
    client.force_login(user)
    native_page = client.get(reverse("conversation", args=[native.pk])).content.decode()
    other_page = client.get(reverse("conversation", args=[other.pk])).content.decode()
    assert 'data-export="claude-code"' in native_page
    assert 'data-export="claude-code"' not in other_page
    for fmt in ("openai", "anthropic", "markdown"):
        assert f'data-export="{fmt}"' in other_page

    refused = client.get(f"/api/conversations/{other.pk}/export", {"format": "claude-code"})
    assert refused.status_code == 400
    assert "cannot be exported as Claude Code JSONL" in refused.json()["detail"]
    assert client.get(reverse("export_download", args=[other.pk, "claude-code"])).status_code == 400
    assert client.get(f"/api/conversations/{other.pk}/export", {"format": "markdown"}).status_code == 200
    assert client.get(f"/api/conversations/{native.pk}/export", {"format": "claude-code"}).status_code == 200


@pytest.mark.django_db
def test_the_export_command_says_why(two_conversations):
    _native, other = two_conversations
    err = io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("export", str(other.pk), "--format", "claude-code", stdout=io.StringIO(), stderr=err)
    assert exit_info.value.code == 2
    assert "another agent's own session file" in err.getvalue()
