"""Formatting for the project pages. Who may do what is decided in views (accounts/permissions.py),
which pass `can_*` flags; the navigation's flags come from accounts/context_processors.py.

    {% load roles %}
    {% invitation_link invitation as join_link %}   ("" for an invitation by username)
"""

from django import template
from contextviewer.accounts.join import link_for

register = template.Library()


@register.simple_tag(takes_context=True)
def invitation_link(context, invitation) -> str:
    """The link an invited email address opens to set a password and join ("" for a username's)."""

    if invitation.user_id or not invitation.email:
        return ""
    return link_for(invitation, context.get("request"))
