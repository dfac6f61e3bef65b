# Message.api_message_id: the model call an assistant message belongs to, for every format.

import json

from django.db import migrations, models


def fill_call_ids(apps, schema_editor):
    """Rows imported before formats were pluggable are all Claude Code lines: the call an
    assistant line belongs to is its message.id."""
    Message = apps.get_model("conversations", "Message")
    Conversation = apps.get_model("conversations", "Conversation")
    Source = apps.get_model("conversations", "Source")
    Conversation.objects.filter(agent="").update(agent="claude-code")
    Source.objects.filter(format="").update(format="claude-code")
    batch = []
    for pk, raw in Message.objects.filter(role="assistant").values_list("pk", "raw").iterator(chunk_size=2000):
        try:
            obj = json.loads(raw)
            value = obj.get("message", {}).get("id") if isinstance(obj, dict) else None
        except (ValueError, AttributeError):
            value = None
        if isinstance(value, str) and value:
            batch.append(Message(pk=pk, api_message_id=value[:255]))
        if len(batch) >= 2000:
            Message.objects.bulk_update(batch, ["api_message_id"])
            batch = []
    if batch:
        Message.objects.bulk_update(batch, ["api_message_id"])


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0004_conversation_lineage'),
    ]

    operations = [
        migrations.AddField(
            model_name='message',
            name='api_message_id',
            field=models.CharField(blank=True, help_text='the model call (response id) an assistant message belongs to', max_length=255),
        ),
        migrations.RunPython(fill_call_ids, migrations.RunPython.noop),
    ]
