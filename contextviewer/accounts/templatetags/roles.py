"""What a role may do, for templates: pages offer only what the user's role allows.

    {% load roles %}
    {% if user|can_anywhere:"import" %}…{% endif %}
    {% project_can project "edit" as can_edit %}
    {% judge_refusal project as why_not %}   ("" when the judge can run)
"""

from django import template

from contextviewer.accounts.models import Membership

register = template.Library()


@register.filter
def can_anywhere(user, permission: str) -> bool:
    """The user may do this in at least one of their projects."""
    if not getattr(user, "is_authenticated", False):
        return False
    return any(m.can(permission) for m in Membership.objects.filter(user=user).only("role"))


@register.simple_tag(takes_context=True)
def project_can(context, project, permission: str) -> bool:
    user = context.get("user") or getattr(context.get("request"), "user", None)
    if project is None or not getattr(user, "is_authenticated", False):
        return False
    member = Membership.objects.filter(user=user, project=project).only("role").first()
    return bool(member and member.can(permission))


@register.simple_tag
def judge_refusal(project) -> str:
    """Why the judge cannot run for this project ("" when it can): it needs a provider that reads."""
    from contextviewer.review.services import ReviewError, _project_provider

    try:
        _project_provider(project)
    except ReviewError as exc:
        return str(exc)
    except Exception as exc:  # a broken provider setting: say so rather than offer a failing job
        return f"The project's provider cannot be used: {exc}"
    return ""


@register.simple_tag(takes_context=True)
def invitation_link(context, invitation) -> str:
    """The link an invited email address opens to set a password and join ("" for a username's)."""
    from contextviewer.accounts.join import link_for

    if invitation.user_id or not invitation.email:
        return ""
    return link_for(invitation, context.get("request"))
