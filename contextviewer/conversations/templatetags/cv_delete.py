"""The danger zone of the conversation page: a Delete button, for those who may delete."""

from django import template

register = template.Library()


@register.inclusion_tag("conversations/_danger_zone.html", takes_context=True)
def danger_zone(context, conv):
    from contextviewer.conversations import deletion

    request = context.get("request")
    user = getattr(request, "user", None)
    return {"conv": conv, "show": user is not None and deletion.may_delete(user, conv)}
