"""Top tools: the tool calls of a project's sessions counted by tool name, in SQL over the stored
messages' blocks (a block of kind "tool_call" carries the name as the agent gave it, masked where
the import masked it: shown as stored).

One query per backend (SQLite's json_each, PostgreSQL's jsonb_array_elements), each first keeping the
messages whose blocks hold a tool call (a text match, a jsonb containment) so a message without one is
not parsed; the conversations are passed as one JSON parameter, so a project of thousands of sessions
makes no long list of parameters."""

from __future__ import annotations

import json
from datetime import datetime

from django.db import connection

from contextviewer.conversations.models import Message

_SQLITE = """
SELECT json_extract(b.value, '$.tool_name') AS name, COUNT(*) AS n
FROM {table} AS m, json_each(CASE WHEN json_type(m.blocks) = 'array' THEN m.blocks ELSE '[]' END) AS b
WHERE m.conversation_id IN (SELECT value FROM json_each(%s))
  AND m.timestamp >= %s AND m.timestamp < %s
  AND m.blocks LIKE '%%"tool_call"%%'
  AND json_extract(b.value, '$.kind') = 'tool_call'
GROUP BY name ORDER BY n DESC, name LIMIT %s
"""

_POSTGRES = """
SELECT b.value ->> 'tool_name' AS name, COUNT(*) AS n
FROM {table} AS m
CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(m.blocks) = 'array' THEN m.blocks ELSE '[]'::jsonb END) AS b(value)
WHERE m.conversation_id = ANY(ARRAY(SELECT jsonb_array_elements_text(%s::jsonb)::bigint))
  AND m.timestamp >= %s AND m.timestamp < %s
  AND m.blocks @> '[{{"kind": "tool_call"}}]'::jsonb
  AND b.value ->> 'kind' = 'tool_call'
GROUP BY name ORDER BY n DESC, name LIMIT %s
"""


def top_tools(conversation_ids: list[int], lo: datetime, hi: datetime, limit: int = 15) -> list[tuple[str, int]]:
    """(tool name, tool calls) of the messages of these conversations timed in [lo, hi), most used
    first; a call with no name counts as "(no name)"."""
    if not conversation_ids:
        return []
    sql = (_POSTGRES if connection.vendor == "postgresql" else _SQLITE).format(table=Message._meta.db_table)
    with connection.cursor() as cursor:
        adapt = connection.ops.adapt_datetimefield_value
        cursor.execute(sql, [json.dumps(conversation_ids), adapt(lo), adapt(hi), limit])
        found = cursor.fetchall()
    out: dict[str, int] = {}
    for name, n in found:
        key = name if isinstance(name, str) and name else "(no name)"
        out[key] = out.get(key, 0) + n
    return sorted(out.items(), key=lambda item: (-item[1], item[0]))
