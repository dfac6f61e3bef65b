"""Times with their date and zone, as plain text (the templates write the <time> element):

    <time datetime="{{ v|iso }}" title="{{ v|when:'seconds' }}">{{ v|when }}</time>

`when` shows the date, hour and zone ("2026-11-24 14:03 UTC"); `when:"time"` only the hour (a turn
inside a conversation whose date is on the page); `when:"seconds"` all of it, for the title."""

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format

register = template.Library()

FORMATS = {"": "Y-m-d H:i T", "time": "H:i:s", "seconds": "Y-m-d H:i:s T"}


@register.filter
def when(value, style: str = "") -> str:
    if not value:
        return ""
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    return date_format(local, FORMATS.get(style, FORMATS[""]))


@register.filter
def iso(value) -> str:
    return value.isoformat() if value else ""
