"""PostgreSQL: a message's raw line and blocks compressed with LZ4 instead of pglz.

Both are large text (a few KB per message, up to megabytes) that PostgreSQL compresses when it
stores them (TOAST). pglz was most of what the database did on an import (about 5 ms of every
9 ms of a 460 KB file's messages) and is slow to read back too; LZ4 compresses several times
faster and decompresses faster. Rows stored before keep pglz (PostgreSQL reads both); new values
get LZ4. Only where the server has it (PostgreSQL 14 or later, built with LZ4); SQLite: nothing.
"""

from django.db import migrations

COLUMNS = ("raw", "blocks")


def _lz4(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)"
        )
        if cursor.fetchone() is None:  # before PostgreSQL 14, or built without LZ4
            return
    table = schema_editor.quote_name("conversations_message")
    changes = ", ".join(f"ALTER COLUMN {schema_editor.quote_name(c)} SET COMPRESSION lz4" for c in COLUMNS)
    schema_editor.execute(f"ALTER TABLE {table} {changes}")


def _default(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression'")
        if cursor.fetchone() is None:
            return
    table = schema_editor.quote_name("conversations_message")
    changes = ", ".join(f"ALTER COLUMN {schema_editor.quote_name(c)} SET COMPRESSION DEFAULT" for c in COLUMNS)
    schema_editor.execute(f"ALTER TABLE {table} {changes}")


class Migration(migrations.Migration):
    dependencies = [("conversations", "0013_long_message_keys")]

    operations = [migrations.RunPython(_lz4, _default)]
