from django import template

from contextviewer.display import rendering
from contextviewer.review import blind as blind_text
from contextviewer.review.models import Choice

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
def summary_size(probe) -> str:
    """A probe's summary size in words: "2,060 tokens", or for an encrypted summary (Codex's remote
    compaction) that its size is not known."""
    if probe is None:
        return "—"
    if getattr(probe, "summary_encrypted", False):
        return "encrypted: size unknown"
    return f"{num(probe.summary_tokens)} tokens"


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
def summaries_panel(context, panel):
    """The summaries of a fold's segment, compare links and the "summarize this fold again" form,
    from what the view prepared (review.queues.summaries_panel)."""
    return {**panel, "request": context["request"], "csrf_token": context.get("csrf_token")}


@register.filter
def choice_label(value) -> str:
    """A pairwise vote in words: "a" -> "A better"."""
    try:
        return str(Choice(value).label)
    except ValueError:
        return str(value)


@register.filter
def summary_html(text, blind=False):
    """A summary as the conversation page renders it (Markdown, sanitized: display/rendering.py);
    in blind review without the harness's boilerplate and with the same heading form on every side."""
    text = str(text or "")
    return rendering.markdown_html(blind_text.disguise(text) if blind else text)
