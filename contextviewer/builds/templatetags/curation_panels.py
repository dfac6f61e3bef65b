"""The Handoff and "Fold at X %" cards of the conversation page, with their own data."""

from django import template

register = template.Library()


@register.inclusion_tag("conversations/_handoff.html", takes_context=True)
def handoff_panel(context, conv):
    from contextviewer.builds import handoffs as handoff

    request = context["request"]
    return {**handoff.panel_context(request.user, conv), "request": request, "csrf_token": context.get("csrf_token")}


@register.inclusion_tag("conversations/_fold_preview.html", takes_context=True)
def fold_preview_panel(context, conv):
    from contextviewer.builds import handoffs as handoff

    # The threshold starts where the conversation's own harness folds (harness.py).
    return {"conv": conv, "at": handoff.default_fold_percent(conv), "request": context["request"]}
