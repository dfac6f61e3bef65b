from django import template

register = template.Library()


@register.filter
def pct(value, digits: int = 1):
    """0.123 -> '12.3 %'; None -> '—'."""
    if value is None or value == "":
        return "—"
    return f"{float(value) * 100:.{int(digits)}f} %"


@register.filter
def ratio(value):
    return "—" if value in (None, "") else f"{float(value):.1f}×"


@register.filter
def num(value, digits: int = 0):
    if value is None or value == "":
        return "—"
    return f"{float(value):,.{int(digits)}f}"


@register.filter
def get(mapping, key):
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def bar(value):
    """A width in percent for a retention bar (0..100)."""
    if value in (None, ""):
        return 0
    return max(0, min(100, round(float(value) * 100)))


@register.inclusion_tag("review/_summaries.html", takes_context=True)
def fold_summaries(context, fold, hide_origin=False):
    """The summaries of a fold's segment (the original and those written again), compare links
    and the "summarize this fold again" form; `hide_origin` for a blind item not yet scored."""
    from contextviewer.accounts.models import Membership
    from contextviewer.providers.models import ProviderConfig
    from contextviewer.review import alternatives

    request = context["request"]
    original = alternatives.original(fold)
    from contextviewer.review.services import blind_fold_ids

    found = alternatives.summaries(original)
    # A blind item of this segment waits for the user's score: no origins, and not the original first.
    hide_origin = hide_origin or bool(blind_fold_ids(request.user, original.conversation_id) & {f.pk for f in found})
    if hide_origin:
        found = alternatives.blind_order(found, request.user)
    rows = [{"fold": f, "origin": alternatives.origin_label(f), "is_this": f.pk == fold.pk} for f in found]
    member = Membership.objects.filter(project_id=original.conversation.project_id, user=request.user).first()
    configs = list(ProviderConfig.objects.filter(project_id=original.conversation.project_id).exclude(provider="builtin"))
    return {
        "fold": fold, "original": original, "rows": rows, "hide_origin": hide_origin, "request": request,
        "csrf_token": context.get("csrf_token"), "can_edit": bool(member and member.can("edit")),
        "providers": ["builtin"] + [c.provider for c in configs],
        "default_provider": next((c.provider for c in configs if c.is_default), "builtin"),
    }
