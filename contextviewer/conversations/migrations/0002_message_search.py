"""Full-text search structures (see conversations/search.py): FTS5 on SQLite, tsvector + GIN on PostgreSQL."""

from django.db import migrations

SQLITE_UP = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS conversations_message_fts USING fts5("
    "text, content='', tokenize='unicode61 remove_diacritics 2')",
]
SQLITE_DOWN = ["DROP TABLE IF EXISTS conversations_message_fts"]
POSTGRES_UP = [
    "CREATE TABLE IF NOT EXISTS conversations_message_search ("
    # No foreign key: Django's flush (TransactionTestCase) truncates model tables without CASCADE.
    # Rows of deleted messages never match (search joins the message table).
    " message_id bigint PRIMARY KEY,"
    " conversation_id bigint NOT NULL,"
    " document tsvector NOT NULL)",
    "CREATE INDEX IF NOT EXISTS conversations_message_search_doc ON conversations_message_search USING GIN (document)",
    "CREATE INDEX IF NOT EXISTS conversations_message_search_conv ON conversations_message_search (conversation_id)",
]
POSTGRES_DOWN = ["DROP TABLE IF EXISTS conversations_message_search"]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        statements = statements_by_vendor.get(schema_editor.connection.vendor, [])
        for sql in statements:
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("conversations", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_UP, "postgresql": POSTGRES_UP}),
            _run({"sqlite": SQLITE_DOWN, "postgresql": POSTGRES_DOWN}),
        ),
    ]
