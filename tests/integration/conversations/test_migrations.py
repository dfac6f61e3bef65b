"""A database made before formats were pluggable keeps working: its rows are Claude Code's, and
the call each assistant message belongs to is filled in from its raw line."""

import json

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("conversations", "0004_conversation_lineage")]
AFTER = [("conversations", "0005_message_api_message_id")]


@pytest.mark.django_db(transaction=True)
def test_existing_rows_are_claude_code_and_get_their_call_ids():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    Project = apps.get_model("accounts", "Project")
    Conversation = apps.get_model("conversations", "Conversation")
    Message = apps.get_model("conversations", "Message")
    project = Project.objects.create(slug="old", name="Old")
    conv = Conversation.objects.create(project=project, external_id="s-1")
    line = {"type": "assistant", "message": {"id": "msg_01ABC", "role": "assistant", "content": []}}
    Message.objects.create(conversation=conv, position=0, role="user", record_type="user", raw=json.dumps({"type": "user"}))
    Message.objects.create(conversation=conv, position=1, role="assistant", record_type="assistant", raw=json.dumps(line))
    Message.objects.create(conversation=conv, position=2, role="assistant", record_type="assistant", raw="not json")

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    Conversation = apps.get_model("conversations", "Conversation")
    Message = apps.get_model("conversations", "Message")
    assert Conversation.objects.get(external_id="s-1").agent == "claude-code"
    assert list(Message.objects.order_by("position").values_list("api_message_id", flat=True)) == ["", "msg_01ABC", ""]

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())  # back to the latest schema for the next tests
