"""Many rows in one statement: the bulk INSERT and UPDATE of a large import.

The ORM's per-value preparation (and building model instances) costs more than the database does
on a large import; these take dicts of field attnames and do the same conversions once per field.
New rows go in with one prepared INSERT run for every row on SQLite (in-process: no round trip),
and with one ``COPY ... FROM STDIN`` on PostgreSQL (one stream, no statement per row).
"""

from __future__ import annotations

import json
import operator
import time
from collections.abc import Collection
from datetime import timezone as dt_timezone

from django.db import connection, models


def _as_is(text: str) -> str:
    return text


def _column_adapter(field, encoded: bool = False):
    """How one field goes into a raw INSERT, or None when the driver takes the value as it is
    (the ORM's per-value preparation is the slowest part of a large import; these are the same
    conversions, done once per field). An `encoded` JSON field's values are JSON text already."""
    postgres = connection.vendor == "postgresql"
    if isinstance(field, models.JSONField):
        if postgres:
            from psycopg.types.json import Jsonb

            if encoded:
                return lambda value: Jsonb(value, dumps=_as_is)
            return Jsonb
        return None if encoded else _encode_json
    if isinstance(field, models.DateTimeField):
        return connection.ops.adapt_datetimefield_value if postgres else _sqlite_datetime
    if isinstance(field, models.BooleanField) and postgres:
        return bool  # sqlite3 stores any int; PostgreSQL's boolean column takes only bool
    return None


def inserted_pks(count: int) -> list[int] | None:
    """The pks of the `count` rows the last insert_rows just added, where the database tells
    without a query: SQLite's AUTOINCREMENT gives consecutive rowids to the rows of one
    statement run while this transaction holds the write lock. None elsewhere."""
    if connection.vendor != "sqlite" or not count:
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_insert_rowid()")
        last = cursor.fetchone()[0]
    return list(range(last - count + 1, last + 1))


def _sqlite_datetime(value) -> str:
    """What the SQLite backend's adapt_datetimefield_value stores (USE_TZ: naive UTC text),
    without its per-value settings lookups."""
    if value.utcoffset() is not None:
        value = value.astimezone(dt_timezone.utc).replace(tzinfo=None)
    return str(value)


def _encode_json(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def insert_rows(model, rows: list[dict], *, encoded: Collection[str] = ()) -> None:
    """Insert many new rows (dicts of field attnames, missing ones take the field's default)
    with one prepared statement. Fields named in `encoded` are JSON fields whose values are
    already JSON text.

    Model instances are not built: on a large import that costs more than the database does."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    sql = (
        f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({columns}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    names = [f.attname for f in fields]
    defaults = {f.attname: f.get_default() for f in fields}
    adapters = [
        (i, adapt) for i, f in enumerate(fields) if (adapt := _column_adapter(f, f.attname in encoded)) is not None
    ]
    values_of = operator.itemgetter(*names)
    if not rows:
        return
    values = []
    for row in rows:
        if len(row) != len(names):
            row = {**defaults, **row}
        row_values = values_of(row)
        if adapters:
            row_values = list(row_values)
            for i, adapt in adapters:
                if row_values[i] is not None:
                    row_values[i] = adapt(row_values[i])
        values.append(row_values)
    if connection.vendor == "postgresql":
        _copy(model._meta.db_table, fields, values)
        return
    with connection.cursor() as cursor:
        cursor.executemany(sql, values)


def _copy_type(field) -> str | None:
    """The PostgreSQL type name psycopg knows a column by ("varchar" for varchar(255)), or None."""
    from psycopg import postgres

    db_type = field.target_field.rel_db_type(connection) if field.is_relation else field.db_type(connection)
    info = postgres.types.get((db_type or "").split("(")[0])
    return info.name if info is not None else None


def _copy(table: str, fields: list, values: list) -> None:
    """COPY the rows into the table: one stream (psycopg's ``Cursor.copy``), no statement per row;
    in the binary format where every column's type is known (no escaping of the text on either
    side: the raw lines are full of backslashes). Logged like a query where queries are (DEBUG,
    CaptureQueriesContext)."""
    quote = connection.ops.quote_name
    types = [_copy_type(f) for f in fields]
    binary = all(types)
    sql = f"COPY {quote(table)} ({', '.join(quote(f.column) for f in fields)}) FROM STDIN" + (
        " (FORMAT BINARY)" if binary else ""
    )
    started = time.monotonic()
    with connection.cursor() as cursor, connection.wrap_database_errors:
        with cursor.cursor.copy(sql) as copy:
            if binary:
                copy.set_types(types)
            for row in values:
                copy.write_row(row)
    if connection.queries_logged:
        connection.queries_log.append(
            {"sql": f"{len(values)} rows: {sql}", "time": f"{time.monotonic() - started:.3f}"}
        )


def update_rows(model, rows: list[dict], fields: list[str], *, encoded: Collection[str] = ()) -> None:
    """Set `fields` (attnames) of existing rows, each a dict with its "id", with one prepared
    statement; `encoded` as in insert_rows."""
    if not rows:
        return
    meta = model._meta
    by_attname = {f.attname: f for f in meta.concrete_fields}
    columns = [by_attname[name] for name in fields]
    quote = connection.ops.quote_name
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {', '.join(f'{quote(f.column)} = %s' for f in columns)} "
        f"WHERE {quote(meta.pk.column)} = %s"
    )
    adapters = [(i, adapt) for i, f in enumerate(columns) if (adapt := _column_adapter(f, f.attname in encoded)) is not None]
    values = []
    for row in rows:
        row_values = [row[name] for name in fields]
        for i, adapt in adapters:
            if row_values[i] is not None:
                row_values[i] = adapt(row_values[i])
        values.append([*row_values, row["id"]])
    with connection.cursor() as cursor:
        cursor.executemany(sql, values)
