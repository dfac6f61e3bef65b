from django import template

from contextviewer.conversations import live

register = template.Library()


@register.filter
def live_poll(page, segment):
    """The poll state of a live conversation's page (None when it is not live)."""
    return live.poll_state(page, segment)
