"""Drop the foreign key an earlier 0002 put on the PostgreSQL search table (flush needs none)."""

from django.db import migrations


def drop_fk(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "ALTER TABLE conversations_message_search DROP CONSTRAINT IF EXISTS conversations_message_search_message_id_fkey"
        )


class Migration(migrations.Migration):
    dependencies = [("conversations", "0002_message_search")]

    operations = [migrations.RunPython(drop_fk, migrations.RunPython.noop)]
