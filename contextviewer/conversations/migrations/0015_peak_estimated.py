"""A conversation's count of calls whose usage records their prompt, and, where none does, the
largest estimated context as its peak (Conversation.peak_estimated says so): a log that records
no usage per call (Crush, Go-era opencode, SWE-agent, some aider lines) had a peak of 0 and a
spend of 0 on the index, shown as measured. Existing
conversations get both from their stored calls (the estimates were stored with the calls).

And a conversation with fewer than two messages that carry a time (aider writes one per session)
has no last time: its duration was shown as 0 s; it is unknown."""

from django.db import migrations, models
from django.db.models import Count, F, IntegerField, Max, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce


def _figures(apps, schema_editor):
    Conversation = apps.get_model("conversations", "Conversation")
    ModelCall = apps.get_model("conversations", "ModelCall")
    calls = ModelCall.objects.filter(conversation_id=OuterRef("pk")).order_by().values("conversation_id")
    measured = calls.annotate(n=Count("pk", filter=Q(input_uncached__gt=0) | Q(cache_write__gt=0) | Q(cache_read__gt=0)))
    Conversation.objects.update(
        measured_calls=Coalesce(Subquery(measured.values("n")[:1], output_field=IntegerField()), Value(0))
    )
    estimated = calls.annotate(peak=Max("estimated_context"))
    Conversation.objects.filter(measured_calls=0, model_call_count__gt=0).update(
        peak_context=Coalesce(Subquery(estimated.values("peak")[:1], output_field=IntegerField()), F("peak_context")),
    )

    Message = apps.get_model("conversations", "Message")
    timed = (
        Message.objects.filter(conversation_id=OuterRef("pk"), timestamp__isnull=False)
        .order_by().values("conversation_id").annotate(n=Count("pk")).values("n")[:1]
    )
    once = list(
        Conversation.objects.filter(ended_at=F("started_at"))
        .annotate(timed=Coalesce(Subquery(timed, output_field=IntegerField()), Value(0)))
        .filter(timed__lt=2).values_list("pk", flat=True)
    )
    for start in range(0, len(once), 500):
        Conversation.objects.filter(pk__in=once[start : start + 500]).update(ended_at=None)


class Migration(migrations.Migration):

    dependencies = [
        ("conversations", "0014_message_lz4"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="measured_calls",
            field=models.IntegerField(default=0, help_text="model calls whose usage records their prompt tokens"),
        ),
        migrations.RunPython(_figures, migrations.RunPython.noop),
    ]
