"""`{% kept NAME VALUE... %}...{% endkept %}`: the enclosed HTML rendered once per NAME and values and
kept in this web process's memory (conversations/page_cache.py's small LRU), for a block rendered
again and again from the same few values (a row of the index, a page of search hits).

The values must be everything the block shows (a row's `shown`, a HitPage with its hits): the key
is made of them, with the language and the time zone dates are shown in, so a kept block is only
ever what rendering those values would give again. What a reader may see is checked before: the
values come from rows the reader's own query returned."""

from __future__ import annotations

import hashlib

from django import template
from django.utils import timezone, translation

from contextviewer.conversations import page_cache

register = template.Library()


class KeptNode(template.Node):
    def __init__(self, nodelist: template.NodeList, name: str, values: list[template.base.FilterExpression]):
        self.nodelist = nodelist
        self.name = name
        self.values = values

    def render(self, context) -> str:
        parts = (
            [v.resolve(context) for v in self.values], translation.get_language(), timezone.get_current_timezone_name()
        )
        digest = hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return page_cache.cached(f"kept:{self.name}:{digest}", lambda: self.nodelist.render(context))


@register.tag
def kept(parser, token) -> KeptNode:
    bits = token.split_contents()
    if len(bits) < 3:
        raise template.TemplateSyntaxError("{% kept NAME VALUE... %}: a name and at least one value")
    nodelist = parser.parse(("endkept",))
    parser.delete_first_token()
    return KeptNode(nodelist, bits[1].strip("\"'"), [parser.compile_filter(b) for b in bits[2:]])
