"""Times with their date and zone: `{{ value|when }}` → <time datetime="…" title="2026-11-24 14:03:09 UTC">.

The text shows the date, hour and zone ("2026-11-24 14:03 UTC"); `{{ value|when:"time" }}` shows
only the hour (a turn inside a conversation whose date is on the page), the title still has it all."""

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html

register = template.Library()

FORMATS = {"": "Y-m-d H:i T", "time": "H:i:s", "seconds": "Y-m-d H:i:s T"}


@register.filter
def when(value, style: str = ""):
    if not value:
        return ""
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    return format_html(
        '<time datetime="{}" title="{}">{}</time>',
        value.isoformat(),
        date_format(local, "Y-m-d H:i:s T"),
        date_format(local, FORMATS.get(style, FORMATS[""])),
    )
