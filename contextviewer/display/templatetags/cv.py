"""Filters for the viewer's templates. Only `markdown` returns HTML, through rendering.markdown_html
(escape first, then nh3), and `panel` a template rendered with autoescaping; everything else
returns plain text that autoescaping prints."""

from __future__ import annotations

from datetime import timedelta

from django import template
from django.template.loader import render_to_string

from contextviewer.display import rendering
from contextviewer.core import tokens as token_core
from contextviewer.core.severity import severity as severity_of
from contextviewer.importers import formats

register = template.Library()


@register.filter
def agent_label(name: str) -> str:
    """What people call the agent whose format wrote a conversation ("codex" -> "Codex CLI")."""
    return formats.label(name)


@register.filter
def fold_tokens(fold) -> str:
    """A fold's window before and after it: "167k → 13k tokens"; where no measured call follows it
    yet, "167k tokens before; no call after it yet" (ingest/fold_figures.py fills it when one comes)."""
    before = getattr(fold, "tokens_before", None)
    after = getattr(fold, "tokens_after", None)
    if before and after is not None:
        return f"{tok(before)} → {tok(after)} tokens"
    if before:
        return f"{tok(before)} tokens before; no call after it yet"
    if after is not None:
        return f"{tok(after)} tokens after"
    return ""


@register.filter
def fold_tokens_note(fold) -> str:
    """Where `fold_tokens`' figures come from (a tooltip): the agent's log, or this app's handoff,
    whose summary is an o200k count."""
    if getattr(fold, "origin", None) == "generated":
        return ("before: the window at the latest measured call, or its o200k estimate where no call measured it; "
                "after: the summary, counted with o200k (an estimate)")
    return ("before: the window as the agent logged it at the fold, or the last measured call before it; "
            "after: the next measured call's input, or the agent's own figure")


@register.filter
def markdown(text: str):
    return rendering.markdown_html(text or "")


@register.filter
def tok(value) -> str:
    """12 / 1.2k / 12k / 1.2M."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        return "–"
    if abs(n) >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if abs(n) >= 10_000:
        return f"{n / 1000:.0f}k"
    if abs(n) >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


@register.filter
def pct(value) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "–"
    return f"{v:.0f} %" if v >= 10 or v == 0 else f"{v:.1f} %"


@register.filter
def usd(value) -> str:
    if value is None:
        return ""
    v = float(value)
    return f"${v:,.2f}" if v >= 0.01 else f"${v:.4f}"


@register.filter
def duration(value) -> str:
    if not isinstance(value, timedelta):
        return "–"
    s = int(value.total_seconds())
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m {s:02d}s"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h}h {m:02d}m"
    return f"{h // 24}d {h % 24}h"


@register.filter
def category_label(key: str) -> str:
    return token_core.LABELS.get(key, key.replace("_", " "))


@register.filter
def num(value) -> str:
    """A float for SVG attributes: always a dot, never an exponent."""
    try:
        return f"{float(value):.2f}"
    except (TypeError, ValueError):
        return "0"


@register.simple_tag
def severity(used, window) -> str:
    return severity_of(used, window)


@register.filter
def get(mapping, key):
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.simple_tag(takes_context=True)
def panel(context, p):
    """A card another app prepared for this page (viewer/panels.py): its template rendered
    with its context (autoescaped as any template); nothing is queried here."""
    return render_to_string(p.template, {**p.context, "csrf_token": context.get("csrf_token")}, request=context.get("request"))
