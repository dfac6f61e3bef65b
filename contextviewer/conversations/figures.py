"""Figures that both the index and the conversation page show: a conversation's model (and
window), how full a window is, and spend at list price (summed in SQL per model and prompt band).
"""

from __future__ import annotations

from dataclasses import replace

from django.db.models import Case, F, IntegerField, Q, Sum, Value, When

from contextviewer.core import model_specs

from contextviewer.conversations.models import Conversation, Fold, ModelCall

# Prompt-size bands for long-prompt pricing (registry thresholds are 100k and 200k tokens).
_BANDS = (0, 100_000, 200_000)


def model_spec(conv: Conversation):
    names = conv.model_names or []
    return model_specs.lookup(names[-1] if names else "", override_window=conv.window)


def percent(used: int | float | None, window: int | None) -> float:
    if not used or not window:
        return 0.0
    return 100.0 * used / window


_USAGE = ("input_uncached", "cache_write", "cache_read", "output")


def cost(per_model: list[dict], window_override: int | None) -> float | None:
    """Spend in dollars at list price where every model's prices are known and some usage is
    recorded; None otherwise.

    Usage is summed per (model, prompt band) in SQL; each sum is priced by model_specs.cost with the
    tier its band falls in, so long-prompt pricing stays per call without reading every call."""
    if not any(s[k] for s in per_model for k in _USAGE):  # no usage recorded: no spend to price
        return None
    total = 0.0
    for s in per_model:
        spec = model_specs.lookup(s["model"] or "", override_window=window_override)
        long = spec.long_prompt_over is not None and _BANDS[s["band"]] >= spec.long_prompt_over
        tier = replace(spec, long_prompt_over=0 if long else None)
        w5, w1 = model_specs.split_cache_write(s["cache_write"] or 0, s["cache_write_5m"], s["cache_write_1h"])
        value = model_specs.cost(
            tier,
            input_uncached=s["input_uncached"] or 0,
            cache_write_5m=w5,
            cache_write_1h=w1,
            cache_read=s["cache_read"] or 0,
            output=s["output"] or 0,
        )
        if value is None:
            return None
        total += value
    return total


def usage_sums(conversation_ids: list[int]) -> dict[int, list[dict]]:
    """Per conversation: its calls' usage summed per (model, prompt band), the input of cost()."""
    out: dict[int, list[dict]] = {}
    if not conversation_ids:
        return out
    prompt = F("input_uncached") + F("cache_write") + F("cache_read")
    band = Case(
        When(Q(prompt__gt=_BANDS[2]), then=Value(2)),
        When(Q(prompt__gt=_BANDS[1]), then=Value(1)),
        default=Value(0),
        output_field=IntegerField(),
    )
    rows = (
        ModelCall.objects.filter(conversation_id__in=conversation_ids)
        .annotate(prompt=prompt)
        .annotate(band=band)
        .values("conversation_id", "model", "band")
        .annotate(
            input_uncached=Sum("input_uncached"),
            cache_write=Sum("cache_write"),
            cache_write_5m=Sum("cache_write_5m"),
            cache_write_1h=Sum("cache_write_1h"),
            cache_read=Sum("cache_read"),
            output=Sum("output"),
        )
        .order_by()
    )
    for r in rows:
        out.setdefault(r["conversation_id"], []).append(r)
    return out


def fold_cost(fold: Fold, window: int | None) -> float | None:
    """The summarizer's own call(s) of a fold (Fold.cost), in dollars at list price."""
    spent = fold.cost or {}
    if not spent:
        return None
    return cost(
        [
            {
                "model": spent.get("model") or "",
                "band": 0,
                "input_uncached": spent.get("input_uncached"),
                "cache_write": spent.get("cache_write"),
                "cache_write_5m": None,
                "cache_write_1h": None,
                "cache_read": spent.get("cache_read"),
                "output": spent.get("output"),
            }
        ],
        window,
    )


def recorded_cost(conversation: Conversation) -> float | None:
    """The session's cost as the agent recorded it, for a log that keeps usage per session only
    (Crush and Go-era opencode: ``flags["session_totals"]`` on the session's first message, where
    the importer puts it). None when the log holds none."""
    for flags in conversation.messages.order_by("position").values_list("flags", flat=True)[:2]:
        cost = ((flags or {}).get("session_totals") or {}).get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
            return float(cost)
    return None

